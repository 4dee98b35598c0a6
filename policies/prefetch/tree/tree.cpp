// The UVM driver's tree-based ("density") prefetcher, uvm_perf_prefetch.c (uvm-driver.md §1):
//  1. bitmap = pages resident on the destination | pages faulted to it in this batch;
//  2. 64 KB upgrade: each big page holding a faulted, non-thrashing page is filled completely;
//  3. for each faulted page, every tree level from the 4 KB leaf to the root (the block's max
//     prefetch region) is tested with the STRICT rule count*100 > size*threshold, and the
//     largest passing node wins even if a smaller one failed; the union over faulted pages is
//     the prefetch mask. The bitmap is not updated between faulted pages of one batch;
//  4. the faulted and thrashing pages are removed. Nothing crosses the 2 MB block.
// The algorithm is the driver's mechanism (PrefetchPolicy::tree_prefetch), which every prefetch
// policy may run at a threshold of its choice (ObservUVM's setPrefetchThreshold, §VI-C).
#include <algorithm>
#include <bit>
#include <optional>

#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {

void PrefetchPolicy::tree_prefetch(const Request& r, unsigned threshold, PageMask& out) {
  const unsigned lo = r.block.first_page, hi = r.block.end_page;
  PageMask bitmap = r.resident_on_dest | r.faulted;
  // Big-page upgrade (grow_fault_granularity). Big pages are aligned in the block's 2 MB VA
  // window, clipped to the region, so a region without whole big pages is filled entirely.
  for (unsigned bp = lo / kPagesPerBigPage; bp * kPagesPerBigPage < hi; ++bp) {
    const unsigned b0 = std::max(lo, bp * kPagesPerBigPage);
    const unsigned b1 = std::min(hi, (bp + 1) * kPagesPerBigPage);
    if (r.faulted.count_range(b0, b1) && !r.thrashing.count_range(b0, b1)) bitmap.set_range(b0, b1);
  }
  const unsigned region_pages = hi - lo;
  const unsigned max_level_pages = std::min(kPagesPerBlock, std::bit_ceil(region_pages));
  for (unsigned p = r.faulted.find_next(lo); p < hi; p = r.faulted.find_next(p + 1)) {
    // A faulted page inside the region already chosen for another faulted page gets that
    // same region: nodes are aligned and nested, so its largest passing node is that one.
    if (r.thrashing.test(p) || out.test(p)) continue;
    unsigned best0 = 0, best1 = 0;
    for (unsigned size = 1; size <= max_level_pages; size <<= 1) {
      const unsigned n0 = std::max(lo, p & ~(size - 1));
      const unsigned n1 = std::min(hi, (p & ~(size - 1)) + size);
      const unsigned count = bitmap.count_range(n0, n1);
      if (count * 100u > (n1 - n0) * threshold) best0 = n0, best1 = n1;
    }
    if (best1 > best0) out.set_range(best0, best1);
  }
  out.and_not(r.faulted);
  out.and_not(r.thrashing);
}

namespace {

class TreePrefetcher final : public PrefetchPolicy {
 public:
  explicit TreePrefetcher(const PolicyContext& ctx) : PrefetchPolicy(ctx) {
    if (!ctx.params.value("threshold", nlohmann::json()).is_null())
      threshold_ = ctx.params["threshold"].get<unsigned>();
  }
  unsigned prefetch_threshold() const override {
    return threshold_ ? *threshold_ : PrefetchPolicy::prefetch_threshold();
  }

 private:
  std::optional<unsigned> threshold_;
};

}  // namespace

UVMSIM_REGISTER_PREFETCH("tree",
                         "NVIDIA driver default: 64 KB upgrade + density tree over the 2 MB "
                         "block, strict count*100 > size*threshold (driver.prefetch_threshold)",
                         TreePrefetcher,
                         PolicyKnob::integer("threshold", nullptr, 0, 100,
                                             "occupancy threshold in %; default "
                                             "driver.prefetch_threshold (51)"));

}  // namespace uvmsim
