// Threadblock occupancy: how many threadblocks of a kernel one SM holds at once, limited by every
// per-SM resource the kernel uses (threads, warps, blocks, registers, shared memory). The GPU
// model dispatches threadblocks into exactly this many slots per SM, and placement policies use
// it for SUV's concurrent-threadblock estimate (TBs per SM x SMs, SUV §V-B "Estimating working set
// size").
#pragma once

#include <algorithm>
#include <cstdint>

#include "sim/config.h"
#include "traces/trace.h"

namespace uvmsim {

/// Threadblocks of `k` resident on one SM of `g`; 0 if one threadblock does not fit.
inline std::uint32_t tbs_per_sm(const GpuConfig& g, const trace::KernelInfo& k) {
  const std::uint64_t threads = std::max<std::uint64_t>(1, k.block.count());
  const std::uint64_t warps = std::max<std::uint32_t>(1, k.warps_per_block());
  std::uint64_t per_sm = g.max_blocks_per_sm;
  per_sm = std::min<std::uint64_t>(per_sm, g.max_warps_per_sm / warps);
  per_sm = std::min<std::uint64_t>(per_sm, g.max_threads_per_sm / threads);
  if (k.regs_per_thread)
    per_sm = std::min<std::uint64_t>(per_sm,
                                     g.regs_per_sm / (std::uint64_t{k.regs_per_thread} * threads));
  if (k.shared_mem_bytes)
    per_sm = std::min<std::uint64_t>(per_sm, g.smem_per_sm / k.shared_mem_bytes);
  return static_cast<std::uint32_t>(per_sm);
}

/// Threadblocks of `k` the whole GPU runs concurrently: TBs per SM x SMs.
inline std::uint64_t concurrent_tbs(const GpuConfig& g, const trace::KernelInfo& k) {
  return std::uint64_t{tbs_per_sm(g, k)} * g.num_sms;
}

}  // namespace uvmsim
