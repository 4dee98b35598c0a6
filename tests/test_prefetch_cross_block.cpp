// The what-if driver.prefetch_cross_block: the tree prefetcher's density tree extended above the
// 2 MB block (4 MB, 8 MB, ... up to driver.prefetch_cross_block_max_mb, aligned to the
// allocation). The real driver never crosses the block (uvm_perf_prefetch.c); with the knob off
// nothing may change. Unit tests run the `tree` policy against the scripted engine with crafted
// residency; the end-to-end tests run the `touch` micro-test generator (one GPU thread, each
// fault serviced alone) and check the exact bytes migrated.
#include <gtest/gtest.h>

#include "core/error.h"
#include "policies/policy.h"
#include "policies/registry.h"
#include "policy_test_engine.h"
#include "test_util.h"

namespace uvmsim::test {
namespace {

/// Marks the even 64 KB big pages of `b` (16 of 32, 256 pages) GPU-resident: every node of
/// its own tree is then exactly half full, which never passes the strict 51 % rule.
void half_resident(VaBlock& b) {
  for (unsigned k = 0; k < kPagesPerBlock; k += 2 * kPagesPerBigPage)
    b.gpu(0).resident.set_range(k, k + kPagesPerBigPage);
  b.gpu(0).count = b.gpu(0).resident.count();
}

void full_resident(VaBlock& b) {
  b.gpu(0).resident = b.valid_mask();
  b.gpu(0).count = b.gpu(0).resident.count();
}

struct Rig {
  SimConfig cfg;
  VaSpace va;
  TestEngine engine;
  explicit Rig(std::uint32_t blocks, std::vector<std::uint64_t> more = {}, bool on = true,
               std::uint32_t max_mb = 32)
      : va(make_va(blocks, std::move(more))), engine(va) {
    cfg.driver.prefetch_cross_block = on;
    cfg.driver.prefetch_cross_block_max_mb = max_mb;
  }
  VaBlock& b(std::uint32_t i) { return va.blocks()[i]; }
  /// The `tree` policy's prefetch mask for one faulted page of block `i` (4 KB page `page`).
  PageMask fault(std::uint32_t i, unsigned page) {
    auto tree = make_prefetch_policy("tree", engine.ctx(cfg));
    PageMask faulted, none, out;
    faulted.set(page);
    tree->compute({b(i), Processor::Gpu, b(i).gpu(0).resident, faulted, none, 0}, out);
    return out;
  }
};

// Block 0 half resident plus a fault in its odd big page 1: its leaves are 17 big pages (272
// pages, 53 % of the block, so the in-block root passes); with block 1 half resident the 4 MB
// node holds 272 + 256 = 528 pages > 51 % of 1024 (522.24).
TEST(PrefetchCrossBlock, KnobOffStaysInTheBlock) {
  Rig r(2, {}, /*on=*/false);
  half_resident(r.b(0));
  half_resident(r.b(1));
  const PageMask out = r.fault(0, 16);
  EXPECT_EQ(out.count(), 511u);  // the whole block but the faulted page: the in-block root
  EXPECT_TRUE(r.engine.cross_block_requests.empty());
  EXPECT_TRUE(r.engine.region_requests.empty());
}

TEST(PrefetchCrossBlock, KnobOnPrefetchesTheNeighbour) {
  Rig r(2);
  half_resident(r.b(0));
  half_resident(r.b(1));
  const PageMask out = r.fault(0, 16);
  EXPECT_EQ(out.count(), 511u);
  EXPECT_EQ(r.engine.cross_block_requests, (std::vector<std::uint32_t>{1}));
  // One big page fewer in block 1 (240 pages): 512 < 522.24, the 4 MB node fails.
  Rig less(2);
  half_resident(less.b(0));
  half_resident(less.b(1));
  for (unsigned p = 0; p < kPagesPerBigPage; ++p) less.b(1).gpu(0).resident.reset(p);
  less.b(1).gpu(0).count = less.b(1).gpu(0).resident.count();
  less.fault(0, 16);
  EXPECT_TRUE(less.engine.cross_block_requests.empty());
}

TEST(PrefetchCrossBlock, PassingNodeAboveTheBlockTakesTheFaultingBlockWhole) {
  // Block 0 empty but for one fault (16 leaves after the 64 KB upgrade); block 1 fully
  // resident: 528 > 522.24, so the 4 MB node passes and block 0 comes whole although its own
  // tree stops at the 64 KB big page. Block 1 is resident: nothing to ask for.
  Rig r(2);
  full_resident(r.b(1));
  const PageMask out = r.fault(0, 0);
  EXPECT_EQ(out.count(), 511u);
  EXPECT_TRUE(r.engine.cross_block_requests.empty());
  Rig off(2, {}, false);
  full_resident(off.b(1));
  EXPECT_EQ(off.fault(0, 0).count(), 15u);  // the driver: the faulted page's 64 KB big page
}

TEST(PrefetchCrossBlock, CountsPagesFaultedInTheBatchNotYetServiced) {
  Rig r(2);
  half_resident(r.b(0));
  r.engine.pending = {0, 256};  // block 1: 256 faulted pages later in this batch
  r.fault(0, 16);
  EXPECT_EQ(r.engine.cross_block_requests, (std::vector<std::uint32_t>{1}));
}

TEST(PrefetchCrossBlock, LargestPassingNodeUpToTheCap) {
  // 8 blocks (16 MB). Blocks 4-7 fully resident, 1-3 empty, block 0 with 272 leaves:
  // 4 MB: 272 / 1024 and 8 MB: 272 / 2048 fail; 16 MB: 272 + 2048 = 2320 > 2088.96 passes.
  auto setup = [](Rig& r) {
    half_resident(r.b(0));
    for (std::uint32_t i = 4; i < 8; ++i) full_resident(r.b(i));
  };
  Rig r(8);  // default cap 32 MB
  setup(r);
  r.fault(0, 16);
  EXPECT_EQ(r.engine.cross_block_requests, (std::vector<std::uint32_t>{1, 2, 3}));
  Rig capped(8, {}, true, 8);  // the 16 MB node is above the cap
  setup(capped);
  capped.fault(0, 16);
  EXPECT_TRUE(capped.engine.cross_block_requests.empty());
  Rig at16(8, {}, true, 16);
  setup(at16);
  at16.fault(0, 16);
  EXPECT_EQ(at16.engine.cross_block_requests, (std::vector<std::uint32_t>{1, 2, 3}));
  // The 4 MB cap: only 4 MB nodes. Block 1 half resident: 528 > 522.24.
  Rig four(8, {}, true, 4);
  setup(four);
  half_resident(four.b(1));
  four.fault(0, 16);
  EXPECT_EQ(four.engine.cross_block_requests, (std::vector<std::uint32_t>{1}));
}

TEST(PrefetchCrossBlock, NodesAreCutAtTheAllocationsEnd) {
  // "buf" has 3 blocks (0-2); a second allocation of 4 MB follows (blocks 3-4), fully resident.
  // A fault in buf's last block: its 4 MB node would be blocks 2-3, but block 3 is another
  // allocation's; cut at buf's end it is block 2 alone (no level above the block), and the
  // 8 MB node [0, 3) holds 272 of 1536 pages. Nothing crosses.
  Rig r(3, {std::uint64_t{4} << 20});
  ASSERT_EQ(r.va.blocks().size(), 5u);
  full_resident(r.b(3));
  full_resident(r.b(4));
  half_resident(r.b(2));
  const PageMask out = r.fault(2, 16);
  EXPECT_EQ(out.count(), 511u);  // its own root
  EXPECT_TRUE(r.engine.cross_block_requests.empty());

  // The cut node's size is what is left of it: block 0 faulting (272 leaves), block 1 fully
  // resident, block 2 empty. The 8 MB node [0, 3) has 784 of 1536 pages: 784 > 783.36 passes
  // (uncut, 2048 pages, it would not), so block 2 is requested and the next allocation's
  // blocks never are.
  Rig cut(3, {std::uint64_t{4} << 20});
  half_resident(cut.b(0));
  full_resident(cut.b(1));
  cut.fault(0, 16);
  EXPECT_EQ(cut.engine.cross_block_requests, (std::vector<std::uint32_t>{2}));
}

TEST(PrefetchCrossBlock, CpuDestinationAndThrashingPagesStayInTheBlock) {
  Rig r(2);
  half_resident(r.b(0));
  half_resident(r.b(1));
  auto tree = make_prefetch_policy("tree", r.engine.ctx(r.cfg));
  PageMask faulted, none, out;
  faulted.set(16);
  // A CPU fault's prefetch (towards the host) never uses the levels above the block.
  tree->compute({r.b(0), Processor::Cpu, r.b(0).cpu_resident, faulted, none, 0}, out);
  EXPECT_TRUE(r.engine.cross_block_requests.empty());
  // A thrashing faulted page starts no walk, as in the block.
  out.clear();
  tree->compute({r.b(0), Processor::Gpu, r.b(0).gpu(0).resident, faulted, faulted, 0}, out);
  EXPECT_TRUE(r.engine.cross_block_requests.empty());
}

TEST(PrefetchCrossBlock, MaxMbKnobIsAPowerOfTwoInRange) {
  SimConfig c;
  EXPECT_EQ(c.driver.prefetch_cross_block_max_mb, 32u);
  EXPECT_FALSE(c.driver.prefetch_cross_block);
  c.set_from_string("driver.prefetch_cross_block_max_mb=64");
  EXPECT_EQ(c.driver.prefetch_cross_block_max_mb, 64u);
  EXPECT_EQ(error_of([&] { c.set_from_string("driver.prefetch_cross_block_max_mb=48"); }),
            "--set: driver.prefetch_cross_block_max_mb: value 48 is not a power of two");
  EXPECT_EQ(error_of([&] { c.set_from_string("driver.prefetch_cross_block_max_mb=2"); }),
            "--set: driver.prefetch_cross_block_max_mb: value 2 out of range [4, 1024]");
  EXPECT_EQ(error_of([&] { c.set_from_string("driver.prefetch_cross_block_max_mb=2048"); }),
            "--set: driver.prefetch_cross_block_max_mb: value 2048 out of range [4, 1024]");
  EXPECT_EQ(find_config_knob("driver.prefetch_cross_block_max_mb")->range(),
            "4 .. 1024, a power of 2");
}

// ---------------------------------------------------------------- end to end, `touch`

/// Appends ",<k>K" (no comma first) to a `touch` offset list.
void append_offset(std::string& list, unsigned k) {
  if (!list.empty()) list += ',';
  list += std::to_string(k);
  list += 'K';
}

/// Offsets of the even 64 KB big pages of the 2 MB block at `base_k` KB.
std::string even_big_pages(unsigned base_k) {
  std::string s;
  for (unsigned i = 0; i < 16; ++i) append_offset(s, base_k + 128 * i);
  return s;
}

nlohmann::json run_touch(const TempDir& d, const std::string& size, const std::string& offsets,
                         std::vector<std::string> extra) {
  const auto trace = d.file("t.uvt"), stats = d.file("s.json");
  cli_ok({"gen", "touch", "--param", "size=" + size, "--param", "offsets=" + offsets, "--param",
          "delay_us=500", "-o", trace});
  std::vector<std::string> args = {"run", "--gpu",       "titanv", "--trace",
                                   trace, "--stats-out", stats,    "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  cli_ok(args);
  return read_json(stats);
}

// A 4 MB allocation (one 4 MB-aligned pair of blocks): the even big pages of block 1, then of
// block 0, then block 0's big page 1. The last fault fills block 0 by its own tree (272 of 512
// pages); the pair then holds 272 + 256 = 528 > 522.24 pages.
const std::string kPairPattern = even_big_pages(2048) + "," + even_big_pages(0) + ",64K";

TEST(PrefetchCrossBlockRun, KnobOffPrefetchesNothingBeyondTheFaultingBlock) {
  TempDir d;
  const auto s = run_touch(d, "4M", kPairPattern, {});
  // 32 faults of 64 KB each, then the rest of block 0 (256 pages): 3 MB; block 1 keeps 1 MB.
  EXPECT_EQ(s["htod_bytes"], 3u << 20);
  EXPECT_EQ(s["htod_bytes_by_cause"]["region_prefetch"], 0u);
  EXPECT_EQ(s["driver"]["cross_block_prefetches"], 0u);
  EXPECT_EQ(s["gpu_faults"], 33u);
}

TEST(PrefetchCrossBlockRun, KnobOnPrefetchesTheNeighbouringBlock) {
  TempDir d;
  const auto s = run_touch(d, "4M", kPairPattern, {"--set", "driver.prefetch_cross_block=true"});
  // Block 1's other 256 pages (1 MB, CPU-initialised) come by the region prefetch.
  EXPECT_EQ(s["htod_bytes"], 4u << 20);
  EXPECT_EQ(s["htod_bytes_by_cause"]["region_prefetch"], 1u << 20);
  EXPECT_EQ(s["driver"]["region_prefetches"], 1u);
  EXPECT_EQ(s["driver"]["cross_block_prefetches"], 1u);
  EXPECT_EQ(s["driver"]["cross_block_prefetch_bytes"], 1u << 20);
  EXPECT_EQ(s["gpu_faults"], 33u);
}

TEST(PrefetchCrossBlockRun, CapIsRespected) {
  // 8 MB, 4 blocks: every big page of blocks 2 and 3 is touched first (they end fully
  // resident), then block 0's pattern. With a 4 MB cap only the pair [0, 1] is a node above
  // block 0, and it never holds more than 272 < 522.24 pages: nothing crosses.
  std::string offs;
  for (unsigned k = 4096; k < 8192; k += 64) append_offset(offs, k);
  offs += ',';
  offs += even_big_pages(0);
  offs += ",64K";
  TempDir d1;
  const auto capped = run_touch(d1, "8M", offs,
                                {"--set", "driver.prefetch_cross_block=true", "--set",
                                 "driver.prefetch_cross_block_max_mb=4"});
  EXPECT_EQ(capped["driver"]["cross_block_prefetches"], 0u);
  EXPECT_EQ(capped["htod_bytes"], 6u << 20);  // blocks 0, 2 and 3
  // With 8 MB nodes, block 0's second fault gives [0, 4) 32 + 1024 = 1056 > 1044.48 pages:
  // block 0 comes whole and block 1 (2 MB, CPU-initialised) by a region prefetch.
  TempDir d2;
  const auto wide = run_touch(d2, "8M", offs,
                              {"--set", "driver.prefetch_cross_block=true", "--set",
                               "driver.prefetch_cross_block_max_mb=8"});
  EXPECT_EQ(wide["driver"]["cross_block_prefetches"], 1u);
  EXPECT_EQ(wide["driver"]["cross_block_prefetch_bytes"], 2u << 20);
  EXPECT_EQ(wide["htod_bytes"], 8u << 20);
}

}  // namespace
}  // namespace uvmsim::test
