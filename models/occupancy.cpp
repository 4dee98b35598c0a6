#include "models/occupancy.h"

#include <algorithm>

namespace uvmsim {

std::uint64_t threadblocks_per_sm(const GpuConfig& g, const trace::KernelInfo& k) {
  const std::uint64_t threads = k.block.count();
  std::uint64_t per_sm = g.max_blocks_per_sm;
  per_sm = std::min<std::uint64_t>(per_sm, g.max_warps_per_sm / std::max(1u, k.warps_per_block()));
  per_sm =
      std::min<std::uint64_t>(per_sm, g.max_threads_per_sm / std::max<std::uint64_t>(1, threads));
  if (k.regs_per_thread)
    per_sm = std::min<std::uint64_t>(
        per_sm, g.regs_per_sm / std::max<std::uint64_t>(1, k.regs_per_thread * threads));
  if (k.shared_mem_bytes)
    per_sm = std::min<std::uint64_t>(per_sm, g.smem_per_sm / k.shared_mem_bytes);
  return per_sm;
}

}  // namespace uvmsim
