// Prefetch accuracy and coverage (issue 15): what became of each page a prefetch mechanism
// brought to the GPU. A page is marked when it arrives ahead of an access, resolved as useful by
// the first GPU access that finds it resident, and as useless when it leaves the GPU first
// (eviction: uvm_va_block_evict_chunks; migration to the host: CPU fault, user prefetch,
// placement). The marks are bits in the block's page state, so nothing is allocated and the
// access path pays one bit test (docs/stats.md, `prefetch_use`).
#pragma once

#include "core/stats.h"
#include "state/va_space.h"

namespace uvmsim {

/// `pages` of a block became GPU-resident because `cause` asked for them before any access did.
inline void mark_prefetched(GpuBlockState& g, const PageMask& pages, PrefetchCause cause,
                            PrefetchUseStats& s) {
  if (pages.none()) return;
  const auto c = static_cast<std::size_t>(cause);
  s.pages[c] += pages.count();
  g.prefetch_unused |= pages;
  g.prefetch_unused_by_cause[c] |= pages;
}

/// A GPU access found `page` of a block resident: a still-unused prefetched page becomes useful.
inline void note_gpu_access(GpuBlockState& g, unsigned page, PrefetchUseStats& s) {
  if (!g.prefetch_unused.test(page)) return;
  g.prefetch_unused.reset(page);
  for (std::size_t c = 0; c < PrefetchUseStats::kCauses; ++c) {
    if (g.prefetch_unused_by_cause[c].test(page)) {
      g.prefetch_unused_by_cause[c].reset(page);
      ++s.useful[c];
      return;
    }
  }
}

/// `pages` of a block leave the GPU: those never accessed since their prefetch were useless.
inline void note_leaving_gpu(GpuBlockState& g, const PageMask& pages, PrefetchUseStats& s) {
  const PageMask gone = g.prefetch_unused & pages;
  if (gone.none()) return;
  g.prefetch_unused.and_not(gone);
  for (std::size_t c = 0; c < PrefetchUseStats::kCauses; ++c) {
    PageMask& m = g.prefetch_unused_by_cause[c];
    s.useless[c] += (m & gone).count();
    m.and_not(gone);
  }
}

}  // namespace uvmsim
