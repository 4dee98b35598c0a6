// Unit tests of the default policies against the driver rules in uvm-driver.md §1 and §5.
#include <gtest/gtest.h>

#include "tests/detached_engine.h"

#include "core/error.h"
#include "policies/policy.h"
#include "policies/registry.h"
#include "state/va_space.h"

namespace uvmsim {
namespace {

struct Fixture {
  SimConfig cfg;
  VaSpace va;
  test::DetachedEngine engine{va};
  explicit Fixture(std::uint64_t bytes = 8 << 20) {
    trace::Allocation a;
    a.name = "buf";
    a.base = 0x7f0000000000;
    a.size = bytes;
    va.build({a}, true);
  }
  PolicyContext ctx(nlohmann::json params = nlohmann::json::object()) {
    return PolicyContext{cfg, va, 1, std::move(params), &engine};
  }
};

PageMask pages(std::initializer_list<std::pair<unsigned, unsigned>> ranges) {
  PageMask m;
  for (auto [a, b] : ranges) m.set_range(a, b);
  return m;
}

// The policy may leave already-resident pages in its mask (the driver drops them); compare
// what would actually migrate.
PageMask prefetch(PrefetchPolicy& p, const VaBlock& b, const PageMask& resident,
                  const PageMask& faulted, const PageMask& thrashing = {}) {
  PageMask out;
  p.compute({b, Processor::Gpu, resident, faulted, thrashing, 0}, out);
  return minus(out, resident);
}

TEST(TreePrefetcher, IsolatedFaultMigratesItsBigPage) {
  Fixture f;
  auto p = make_prefetch_policy("tree", f.ctx());
  const auto& b = f.va.blocks()[0];
  // Page 5 faulted: its 64 KB big page (pages 0..15) is filled, 128 KB fails at 16/32.
  EXPECT_EQ(prefetch(*p, b, {}, pages({{5, 6}})), minus(pages({{0, 16}}), pages({{5, 6}})));
}

TEST(TreePrefetcher, StrictThresholdAtEveryLevel) {
  Fixture f;
  auto p = make_prefetch_policy("tree", f.ctx());
  const auto& b = f.va.blocks()[0];
  // Resident: 16 of 32 pages of the 128 KB node after the fault's big page -> 50 %, not > 51 %.
  EXPECT_EQ(prefetch(*p, b, pages({{0, 16}}), pages({{16, 17}})), pages({{17, 32}}));
  // 48/64 > 51 %: the 256 KB node wins over the failing 128 KB one (largest passing level).
  EXPECT_EQ(prefetch(*p, b, pages({{16, 32}, {48, 64}}), pages({{0, 1}})),
            pages({{1, 16}, {32, 48}}));
  // 1 MB needs >= 131/256: 130 resident + faulted big page (16) = 146 passes.
  EXPECT_EQ(prefetch(*p, b, pages({{0, 130}}), pages({{200, 201}})).count(), 256u - 130 - 1);
}

TEST(TreePrefetcher, ThrashingPagesAreExcluded) {
  Fixture f;
  auto p = make_prefetch_policy("tree", f.ctx());
  const auto& b = f.va.blocks()[0];
  // A thrashing page in the big page stops the 64 KB upgrade and is never prefetched.
  EXPECT_TRUE(prefetch(*p, b, {}, pages({{5, 6}}), pages({{9, 10}})).none());
}

TEST(TreePrefetcher, ThresholdParameter) {
  Fixture f;
  auto p = make_prefetch_policy("tree", f.ctx({{"threshold", 10}}));
  const auto& b = f.va.blocks()[0];
  // 16/64 = 25 % > 10 %: the 256 KB node passes; 16/128 = 12.5 % passes too; 16/256 fails.
  EXPECT_EQ(prefetch(*p, b, {}, pages({{0, 1}})), pages({{1, 128}}));
}

TEST(TreePrefetcher, PartialTailBlockIsClippedToTheRegion) {
  Fixture f(2 * 1024 * 1024 + 256 * 1024);  // tail block of 64 pages
  auto p = make_prefetch_policy("tree", f.ctx());
  const auto& tail = f.va.blocks()[1];
  ASSERT_EQ(tail.num_pages(), 64u);
  const auto out = prefetch(*p, tail, pages({{0, 48}}), pages({{48, 49}}));
  EXPECT_EQ(out, pages({{49, 64}}));  // 64/64 at the root: all of the region, nothing beyond
}

TEST(NoPrefetch, NeverPrefetches) {
  Fixture f;
  auto p = make_prefetch_policy("none", f.ctx());
  EXPECT_TRUE(prefetch(*p, f.va.blocks()[0], pages({{0, 300}}), pages({{300, 301}})).none());
}

TEST(DriverEviction, OldestUnusedThenOldestUsed) {
  Fixture f;  // 4 blocks
  auto e = make_eviction_policy("driver", f.ctx());
  auto& bl = f.va.blocks();
  for (auto& b : bl) e->on_chunk_allocated(b, 0);  // USED: 0 1 2 3
  EXPECT_EQ(e->select_victim(99, 0), 0u);
  EXPECT_EQ(e->select_victim(0, 0), 1u);  // never the requester
  // Faults and accesses into resident blocks do not move them (not LRU).
  e->on_page_fault(bl[0], 3, 0);
  e->on_access(AccessEvent{bl[0], 3, bl[0].page_va(3), 0, 4, 1, AccessKind::Read, false, 0});
  EXPECT_EQ(e->select_victim(99, 0), 0u);
  // An emptied block goes to UNUSED and is preferred.
  e->on_emptied(bl[2], 0);
  EXPECT_EQ(e->select_victim(99, 0), 2u);
  // Repopulated: back to the tail of USED.
  e->on_populated(bl[2], 0);
  EXPECT_EQ(e->select_victim(99, 0), 0u);
  e->on_eviction(bl[0], 0);
  e->on_eviction(bl[1], 0);
  EXPECT_EQ(e->select_victim(99, 0), 3u);
  e->on_eviction(bl[3], 0);
  e->on_eviction(bl[2], 0);
  EXPECT_EQ(e->select_victim(99, 0), kNoBlock);
}

TEST(Registry, APolicyReadsTheBlockStateOfTheGpuItServes) {
  // One instance per GPU: "resident" means resident on the policy's GPU. A chunk that comes
  // back (EvictionPolicy::on_chunk_returned) counts as populated if its GPU holds pages of it.
  Fixture f;  // 4 blocks
  f.va.set_gpus(2);
  VaBlock& b0 = f.va.blocks()[0];
  f.va.add_gpu_states(b0);
  b0.gpu(1).count = 5;  // GPU 1 holds pages of block 0, GPU 0 none
  for (const unsigned gpu : {0u, 1u}) {
    PolicyContext c = f.ctx();
    c.gpu = gpu;
    auto e = make_eviction_policy("driver", c);
    EXPECT_EQ(e->gpu(), gpu);
    for (const auto& b : f.va.blocks()) e->on_chunk_allocated(b, 0);  // USED: 0 1 2 3
    e->on_chunk_withheld(b0, 0);
    e->on_chunk_returned(b0, 0);
    // GPU 0: block 0 is empty there, so it is UNUSED and goes first; GPU 1: populated, it goes
    // to the tail of USED behind 1 2 3.
    EXPECT_EQ(e->select_victim(99, 0), gpu == 0 ? 0u : 1u) << "GPU " << gpu;
  }
  PolicyContext c = f.ctx();
  c.gpu = 1;
  EXPECT_EQ(make_eviction_policy("tournament", c)->gpu(), 1u);
  EXPECT_EQ(make_prefetch_policy("tree", c)->gpu(), 1u);
  EXPECT_EQ(make_placement_policy("driver", c)->gpu(), 1u);
}

TEST(Registry, UnknownPolicyListsKnownOnes) {
  Fixture f;
  try {
    make_eviction_policy("nope", f.ctx());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("driver"), std::string::npos);
  }
  EXPECT_NE(EvictionRegistry::find("driver"), nullptr);
  EXPECT_NE(PrefetchRegistry::find("tree"), nullptr);
  EXPECT_NE(PlacementRegistry::find("driver"), nullptr);
}

}  // namespace
}  // namespace uvmsim
