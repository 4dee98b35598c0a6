// The UVM driver's tree-based ("density") prefetcher, uvm_perf_prefetch.c (uvm-driver.md §1):
//  1. bitmap = pages resident on the destination | pages faulted to it in this batch;
//  2. 64 KB upgrade: each big page holding a faulted, non-thrashing page is filled completely
//     (a partial prefix/suffix of the region counts as one unit);
//  3. for each faulted page, every tree level from the 4 KB leaf to the root (the block's max
//     prefetch region) is tested with the STRICT rule count*100 > size*threshold, and the
//     largest passing node wins even if a smaller one failed; the union over faulted pages is
//     the prefetch mask. The bitmap is not updated between faulted pages of one batch. Tree
//     nodes are aligned to the region's first 64 KB boundary at or below it (offset shift);
//  4. the faulted and thrashing pages are removed. Nothing crosses the 2 MB block.
// The algorithm is the driver's mechanism (PrefetchPolicy::tree_prefetch), which every prefetch
// policy may run at a threshold of its choice (ObservUVM's setPrefetchThreshold, §VI-C).
//
// What-if driver.prefetch_cross_block (off by default): the tree goes on above the 2 MB root,
// with nodes of 4 MB, 8 MB, ... up to driver.prefetch_cross_block_max_mb, aligned to the
// allocation (VA range) and cut at its end; see tree_prefetch_cross_block below.
#include <algorithm>
#include <bit>
#include <optional>

#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {

void PrefetchPolicy::tree_prefetch_block(const Request& r, unsigned threshold, PageMask& out,
                                         PageMask* leaves) {
  const unsigned lo = r.block.first_page, hi = r.block.end_page;
  PageMask bitmap = r.resident_on_dest | r.faulted;
  // Big-page upgrade (grow_fault_granularity). The region is cut into a prefix up to the first
  // 64 KB boundary, whole 64 KB big pages, and a suffix after the last one; each part holding a
  // faulted, non-thrashing page is filled. A region holding no whole big page is one part.
  auto grow = [&](unsigned b0, unsigned b1) {
    if (b1 > b0 && r.faulted.count_range(b0, b1) && !r.thrashing.count_range(b0, b1))
      bitmap.set_range(b0, b1);
  };
  const unsigned big0 = (lo + kPagesPerBigPage - 1) / kPagesPerBigPage * kPagesPerBigPage;
  const unsigned big1 = hi / kPagesPerBigPage * kPagesPerBigPage;
  if (big1 <= big0) {
    grow(lo, hi);
  } else {
    grow(lo, big0);
    bitmap.fill_big_pages(r.faulted, r.thrashing, big0 / kPagesPerBigPage, big1 / kPagesPerBigPage);
    grow(big1, hi);
  }
  // The tree's leaves start at the region's first page shifted left to a 64 KB boundary
  // (update_bitmap_tree_from_va_block's bitmap_tree->offset), not at the 2 MB window: a node of
  // `size` leaves covers [base + k*size, base + (k+1)*size), cut at the last leaf
  // (uvm_perf_tree_iter_leaf_range). The leaves before `lo` count in a node's size but are never
  // set; the chosen node is then clamped to the region (compute_prefetch_region).
  const unsigned base = lo & ~(kPagesPerBigPage - 1);
  const unsigned leaf_count = hi - base;
  const unsigned max_level_pages = std::min(kPagesPerBlock, std::bit_ceil(leaf_count));
  // A node's count, for every faulted page and level, over the pages of the region only
  // (`counted`; pages past the region's end are clear, so a node cut at the last leaf counts as
  // the whole aligned node does). A node inside one 64-bit word takes one masked popcount; a
  // larger one, when `base` is word-aligned (every whole block), the difference of two prefix
  // sums over the words; anything else a range count. A sparsely faulted block (`random`: one
  // or two faulted pages) walks the tree once or twice, so the sums are over 8 words, not over
  // the 32 big pages (this function was ~1,600 instructions per serviced block there).
  PageMask counted;
  counted.set_range(lo, hi);
  counted &= bitmap;
  unsigned prefix[PageMask::kWords + 1];
  prefix[0] = 0;
  for (unsigned j = 0; j < PageMask::kWords; ++j)
    prefix[j + 1] = prefix[j] + static_cast<unsigned>(std::popcount(counted.word(j)));
  const bool word_aligned = base % 64 == 0;
  const bool thrash = r.thrashing.any();
  for (unsigned p = r.faulted.find_next(lo); p < hi; p = r.faulted.find_next(p + 1)) {
    // A faulted page inside the region already chosen for another faulted page gets that
    // same region: nodes are aligned and nested, so its largest passing node is that one.
    if ((thrash && r.thrashing.test(p)) || out.test(p)) continue;
    unsigned best0 = 0, best1 = 0;
    for (unsigned size = 1; size <= max_level_pages; size <<= 1) {
      const unsigned l0 = (p - base) & ~(size - 1);
      const unsigned l1 = std::min(l0 + size, leaf_count);
      const unsigned first = base + l0;
      unsigned count;
      if ((first & 63) + size <= 64) {
        const std::uint64_t m = size < 64 ? (std::uint64_t{1} << size) - 1 : ~std::uint64_t{0};
        count =
            static_cast<unsigned>(std::popcount((counted.word(first >> 6) >> (first & 63)) & m));
      } else if (word_aligned) {
        count = prefix[std::min(PageMask::kWords, (first + size) / 64)] - prefix[first / 64];
      } else {
        count = counted.count_range(first, std::min(first + size, PageMask::kBits));
      }
      if (count * 100u > (l1 - l0) * threshold) best0 = std::max(lo, base + l0), best1 = base + l1;
    }
    if (best1 > best0) out.set_range(best0, best1);
  }
  out.and_not(r.faulted);
  out.and_not(r.thrashing);
  if (leaves) *leaves = bitmap;
}

void PrefetchPolicy::tree_prefetch(const Request& r, unsigned threshold, PageMask& out) {
  if (cross_block_max_blocks_ < 2 || r.dest != Processor::Gpu || engine_ == nullptr) {
    tree_prefetch_block(r, threshold, out);  // the real driver
    return;
  }
  PageMask leaves;
  tree_prefetch_block(r, threshold, out, &leaves);
  tree_prefetch_cross_block(r, threshold, leaves, out);
}

// The real driver never prefetches across its 2 MB VA block: uvm_perf_prefetch_get_hint_va_block
// is called by the block's servicing (uvm_va_block_service_locked) with the block locked, builds
// the bitmap tree of that block only (update_bitmap_tree_from_va_block), and
// compute_prefetch_region clamps the chosen node to the block's max prefetch region. The block is
// the driver's unit of locking, residency tracking and chunk allocation: a prefetch into another
// block would take that block's lock, allocate it a 2 MB root chunk and, when memory is full,
// evict one. This what-if lifts the limit to measure what it would buy: for the faulting block
// and every level of 2, 4, ... blocks up to the cap, the node containing it (aligned to the
// allocation's first block and cut at its last one, as the in-block nodes are cut at the last
// leaf) counts the faulting block's leaves plus each other block's GPU-resident pages and its
// pages faulted in this batch but not yet serviced. The largest node passing the same strict
// rule count*100 > pages*threshold wins; its other blocks that are not fully GPU-resident are
// prefetched whole by the engine's region prefetch (the mechanism policies' setPrefetchRegion
// uses: serviced before the next fault batch, evicting if needed, cause region_prefetch, counted
// again as driver.cross_block_prefetches), and the faulting block itself is prefetched whole.
void PrefetchPolicy::tree_prefetch_cross_block(const Request& r, unsigned threshold,
                                               const PageMask& leaves, PageMask& out) {
  // Like the in-block tree, only a faulted page that is not thrashing starts a walk to the root.
  if (minus(r.faulted, r.thrashing).none()) return;
  const VaRange& range = va_->ranges()[r.block.range];
  const std::uint32_t idx = r.block.id - range.first_block;
  const std::uint32_t top = std::min(cross_block_max_blocks_, std::bit_ceil(range.num_blocks));
  const std::uint64_t own = leaves.count();
  std::uint32_t best0 = 0, best1 = 0;
  for (std::uint32_t size = 2; size <= top; size <<= 1) {
    const std::uint32_t n0 = idx & ~(size - 1), n1 = std::min(n0 + size, range.num_blocks);
    if (n1 - n0 < 2) continue;  // cut at the allocation's end down to the block itself
    std::uint64_t count = 0, pages = 0;
    for (std::uint32_t i = n0; i < n1; ++i) {
      const VaBlock& b = va_->blocks()[range.first_block + i];
      pages += b.num_pages();
      count += i == idx
                   ? own
                   : std::min<std::uint64_t>(
                         b.num_pages(), b.gpu(gpu()).count + engine_->pending_fault_pages(b.id));
    }
    if (count * 100u > pages * threshold) best0 = n0, best1 = n1;
  }
  if (best1 == best0) return;
  for (std::uint32_t i = best0; i < best1; ++i) {
    const VaBlock& b = va_->blocks()[range.first_block + i];
    if (i != idx && b.gpu(gpu()).count < b.num_pages()) engine_->prefetch_cross_block(b.id);
  }
  out |= r.block.valid_mask();
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
                         Knob::integer("threshold", nullptr, 0, 100,
                                       "occupancy threshold in %; default "
                                       "driver.prefetch_threshold (51)"));

}  // namespace uvmsim
