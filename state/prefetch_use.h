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

/// `pages` of `b` became GPU-resident because `cause` asked for them before any access did.
inline void mark_prefetched(VaBlock& b, const PageMask& pages, PrefetchCause cause,
                            PrefetchUseStats& s) {
  if (pages.none()) return;
  const auto c = static_cast<std::size_t>(cause);
  s.pages[c] += pages.count();
  b.prefetch_unused |= pages;
  b.prefetch_unused_by_cause[c] |= pages;
}

/// A GPU access found `page` of `b` resident: a still-unused prefetched page becomes useful.
inline void note_gpu_access(VaBlock& b, unsigned page, PrefetchUseStats& s) {
  if (!b.prefetch_unused.test(page)) return;
  b.prefetch_unused.reset(page);
  for (std::size_t c = 0; c < PrefetchUseStats::kCauses; ++c) {
    if (b.prefetch_unused_by_cause[c].test(page)) {
      b.prefetch_unused_by_cause[c].reset(page);
      ++s.useful[c];
      return;
    }
  }
}

/// `pages` of `b` leave the GPU: those never accessed since their prefetch were useless.
inline void note_leaving_gpu(VaBlock& b, const PageMask& pages, PrefetchUseStats& s) {
  const PageMask gone = b.prefetch_unused & pages;
  if (gone.none()) return;
  b.prefetch_unused.and_not(gone);
  for (std::size_t c = 0; c < PrefetchUseStats::kCauses; ++c) {
    PageMask& m = b.prefetch_unused_by_cause[c];
    s.useless[c] += (m & gone).count();
    m.and_not(gone);
  }
}

}  // namespace uvmsim
