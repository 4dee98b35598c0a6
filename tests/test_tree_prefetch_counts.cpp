// The driver's tree prefetcher counts its nodes with masked word popcounts and per-word prefix
// sums and fills big pages a word at a time (policies/prefetch/tree/tree.cpp). Checked against the
// direct form of the same rules (a count over each node's pages, each big page tested on its own)
// on random blocks: partial regions, thrashing pages, every threshold the knob allows.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>

#include "policies/policy.h"
#include "state/va_space.h"

namespace uvmsim::test {
namespace {

/// uvm_perf_prefetch.c's rules written out page by page (the implementation before the counts
/// were taken from prefix sums).
PageMask reference(const VaBlock& b, const PageMask& resident, const PageMask& faulted,
                   const PageMask& thrashing, unsigned threshold) {
  const unsigned lo = b.first_page, hi = b.end_page;
  PageMask bitmap = resident | faulted, out;
  auto grow = [&](unsigned b0, unsigned b1) {
    if (b1 > b0 && faulted.count_range(b0, b1) && !thrashing.count_range(b0, b1))
      bitmap.set_range(b0, b1);
  };
  const unsigned big0 = (lo + kPagesPerBigPage - 1) / kPagesPerBigPage * kPagesPerBigPage;
  const unsigned big1 = hi / kPagesPerBigPage * kPagesPerBigPage;
  if (big1 <= big0) {
    grow(lo, hi);
  } else {
    grow(lo, big0);
    for (unsigned p = big0; p < big1; p += kPagesPerBigPage) grow(p, p + kPagesPerBigPage);
    grow(big1, hi);
  }
  const unsigned base = lo & ~(kPagesPerBigPage - 1);
  const unsigned leaf_count = hi - base;
  const unsigned max_level_pages = std::min(kPagesPerBlock, std::bit_ceil(leaf_count));
  for (unsigned p = faulted.find_next(lo); p < hi; p = faulted.find_next(p + 1)) {
    if (thrashing.test(p) || out.test(p)) continue;
    unsigned best0 = 0, best1 = 0;
    for (unsigned size = 1; size <= max_level_pages; size <<= 1) {
      const unsigned l0 = (p - base) & ~(size - 1);
      const unsigned l1 = std::min(l0 + size, leaf_count);
      const unsigned count = bitmap.count_range(std::max(lo, base + l0), base + l1);
      if (count * 100u > (l1 - l0) * threshold) best0 = std::max(lo, base + l0), best1 = base + l1;
    }
    if (best1 > best0) out.set_range(best0, best1);
  }
  out.and_not(faulted);
  out.and_not(thrashing);
  return out;
}

TEST(TreePrefetchCounts, AgreeWithTheRulesPageByPage) {
  std::mt19937_64 rng(20261128);
  unsigned nonempty = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    VaBlock b;
    // Whole blocks mostly; otherwise a region that starts or ends inside a big page.
    if (trial % 3 != 0) {
      b.first_page = static_cast<unsigned>(rng() % 300);
      b.end_page =
          b.first_page + 1 + static_cast<unsigned>(rng() % (kPagesPerBlock - b.first_page));
    }
    const unsigned lo = b.first_page, hi = b.end_page;
    PageMask resident, faulted, thrashing;
    const unsigned density = static_cast<unsigned>(rng() % 100);
    for (unsigned p = lo; p < hi; ++p) {
      if (rng() % 100 < density) resident.set(p);
      if (rng() % 100 < 3 + density / 10) faulted.set(p);
      if (rng() % 200 == 0) thrashing.set(p);
    }
    const unsigned threshold = static_cast<unsigned>(rng() % 101);
    const PrefetchPolicy::Request r{b, Processor::Gpu, resident, faulted, thrashing, 0};
    PageMask got, leaves;
    PrefetchPolicy::tree_prefetch_block(r, threshold, got, &leaves);
    const PageMask want = reference(b, resident, faulted, thrashing, threshold);
    ASSERT_EQ(got, want) << "trial " << trial << " region [" << lo << ", " << hi << ") threshold "
                         << threshold;
    nonempty += got.any();
  }
  EXPECT_GT(nonempty, 5000u);  // the comparison is not between empty masks
}

}  // namespace
}  // namespace uvmsim::test
