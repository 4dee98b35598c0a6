// Occupancy: how many threadblocks of a kernel one SM holds at once, limited by every per-SM
// resource the kernel uses (the CUDA occupancy calculator's rule, without allocation granularity).
#pragma once

#include <cstdint>

#include "core/config.h"
#include "traces/trace.h"

namespace uvmsim {

/// Threadblocks of `k` resident per SM at once (0: one does not fit).
std::uint64_t threadblocks_per_sm(const GpuConfig& g, const trace::KernelInfo& k);

}  // namespace uvmsim
