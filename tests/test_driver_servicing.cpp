// The driver's servicing costs and paths against the driver source (issue 18 points 3, 6, 8, 11
// and issue 13's eviction host cost), on hand-written micro-traces with exact expected values.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/config.h"
#include "policies/policy.h"
#include "sim/simulator.h"
#include "test_util.h"
#include "traces/trace.h"

namespace uvmsim::test {
namespace {

constexpr Addr kBase = 0x7f0000000000;
constexpr std::uint64_t k2M = std::uint64_t{2} << 20;

/// One managed allocation of `bytes`; launches of one warp reading or writing every page in
/// address order.
struct MicroTrace {
  std::unique_ptr<trace::TraceWriter> w;
  std::uint64_t bytes;

  MicroTrace(const std::string& path, std::uint64_t bytes_, std::uint32_t threads = 32,
             const trace::WriterOptions& opts = {})
      : bytes(bytes_) {
    trace::Metadata meta;
    meta.workload = "handwritten";
    meta.allocations.push_back({0, "buf", kBase, bytes, true, false});
    trace::KernelInfo k;
    k.id = 0;
    k.name = "sweep";
    k.grid = {1, 1, 1};
    k.block = {threads, 1, 1};
    meta.kernels.push_back(k);
    w = std::make_unique<trace::TraceWriter>(path, meta, opts);
  }
  void host(trace::HostEventType t, Addr va, std::uint64_t size,
            AccessKind kind = AccessKind::Write) {
    trace::HostEvent e;
    e.type = t;
    e.va = va;
    e.size = size;
    e.device = Processor::Gpu;
    e.kind = kind;
    w->host_event(e);
  }
  void sweep(AccessKind kind) {
    w->begin_launch(0, -1);
    w->begin_block(1);
    for (std::uint64_t off = 0; off < bytes; off += 4096) {
      trace::AccessRecord r;
      r.va = kBase + off;
      r.kind = kind;
      r.bytes = 128;
      r.gap_cycles = 10;
      w->access(0, r);
    }
    w->end_block();
  }
  void finish() { w->finish(); }
};

nlohmann::json simulate(const std::string& gpu, const std::string& trace,
                        std::vector<std::string> sets, std::optional<double> oversub) {
  SimConfig cfg = SimConfig::from_preset(gpu);
  for (const auto& s : sets) cfg.set_from_string(s);
  RunOptions o;
  o.trace = trace;
  o.oversub_pct = oversub;
  Simulator sim(cfg, o);
  sim.run();
  return sim.to_json();
}

std::uint64_t u(const nlohmann::json& j) { return j.get<std::uint64_t>(); }
double sim_ns(const nlohmann::json& j) { return j["sim_time_ns"].get<double>(); }

/// Two 2 MB blocks read in order by one warp with room for one chunk: the second block's fault
/// evicts the first (512 GPU-resident pages), all on the critical path.
std::string two_blocks_one_chunk(const TempDir& d, bool host_initialised) {
  const auto t = d.file(host_initialised ? "init.uvt" : "fresh.uvt");
  MicroTrace m(t, 2 * k2M);
  if (host_initialised) m.host(trace::HostEventType::CpuAccess, kBase, 2 * k2M);
  m.sweep(host_initialised ? AccessKind::Read : AccessKind::Write);
  m.finish();
  return t;
}

TEST(EvictionHostCost, PerPageUnmapCostIsOnTheCriticalPathOfEachEvictedPage) {
  TempDir d;
  const auto t = two_blocks_one_chunk(d, true);
  const auto zero = simulate("gtx1080ti", t, {"cost.eviction_page_ns=0"}, 100.0);
  const auto with = simulate("gtx1080ti", t, {"cost.eviction_page_ns=100"}, 100.0);
  ASSERT_EQ(u(zero["evictions"]), 1u);
  ASSERT_EQ(u(with["evicted_pages"]), 512u);
  // Host-initialised data keeps its host pages: nothing to allocate.
  EXPECT_EQ(u(with["cpu_backing_pages"]), 0u);
  EXPECT_NEAR(sim_ns(with) - sim_ns(zero), 512 * 100.0, 1e-6);
}

TEST(EvictionHostCost, PagesThatNeverHadHostMemoryGetItAllocatedOnEviction) {
  TempDir d;
  const auto fresh = two_blocks_one_chunk(d, false);  // first touched (written) on the GPU
  const auto a = simulate("gtx1080ti", fresh, {"cost.cpu_page_alloc_ns=0"}, 100.0);
  const auto b = simulate("gtx1080ti", fresh, {"cost.cpu_page_alloc_ns=300"}, 100.0);
  EXPECT_EQ(u(b["evictions"]), 1u);
  EXPECT_EQ(u(b["cpu_backing_pages"]), 512u);
  EXPECT_NEAR(sim_ns(b) - sim_ns(a), 512 * 300.0, 1e-6);
  // Host-initialised pages already have host memory (block_populate_pages_cpu skips them).
  const auto init = two_blocks_one_chunk(d, true);
  const auto c = simulate("gtx1080ti", init, {"cost.cpu_page_alloc_ns=0"}, 100.0);
  const auto e = simulate("gtx1080ti", init, {"cost.cpu_page_alloc_ns=300"}, 100.0);
  EXPECT_DOUBLE_EQ(sim_ns(e), sim_ns(c));
}

TEST(EvictionHostCost, Rtx3080TiHostPartOfOneTwoMegabyteEvictionIsTheFittedModel) {
  // Host part = cost.eviction_ns + 512 x cost.eviction_page_ns = 6 us + 88.2 us; with the
  // 2 MB DtoH copy (90.45 us + 2.61 us run set-up) one eviction costs 187.3 us (measured
  // 210-220 us on PCIe 4, docs/cost-model.md "Eviction").
  TempDir d;
  const auto t = two_blocks_one_chunk(d, true);
  const auto real = simulate("rtx3080ti", t, {}, 100.0);
  const auto free_host = simulate(
      "rtx3080ti", t, {"cost.eviction_ns=0", "cost.eviction_page_ns=0", "cost.cpu_page_alloc_ns=0"},
      100.0);
  ASSERT_EQ(u(real["evictions"]), 1u);
  // sim_time_ns is whole nanoseconds.
  EXPECT_NEAR(sim_ns(real) - sim_ns(free_host), 6000.0 + 512 * 172.3, 1.0);
}

// ---- Tree prefetcher on ranges that do not start 2 MB-aligned (issue 18 point 6) --------------

/// The prefetch mask of the driver's tree for a block whose valid pages are [first, end) of its
/// 2 MB window, nothing resident, `faulted` faulted, at threshold 51.
std::vector<unsigned> tree(unsigned first, unsigned end, std::vector<unsigned> faulted) {
  VaBlock b;
  b.first_page = first;
  b.end_page = end;
  PageMask resident, f, thrashing, out;
  for (unsigned p : faulted) f.set(p);
  PrefetchPolicy::tree_prefetch_block({b, Processor::Gpu, resident, f, thrashing, 0}, 51, out);
  std::vector<unsigned> pages;
  for (unsigned p = out.find_next(0); p < kPagesPerBlock; p = out.find_next(p + 1))
    pages.push_back(p);
  return pages;
}

std::vector<unsigned> range(unsigned a, unsigned e, std::vector<unsigned> except = {}) {
  std::vector<unsigned> v;
  for (unsigned p = a; p < e; ++p)
    if (std::find(except.begin(), except.end(), p) == except.end()) v.push_back(p);
  return v;
}

TEST(TreePrefetchAlignment, NodesAreAlignedToTheRangeStartNotTheTwoMegabyteWindow) {
  // A range starting 64 KB into its 2 MB window: update_bitmap_tree_from_va_block's leaves start
  // at the range's first page, so the 32-page node of page 40 is [16, 48) (32 of 32 set after
  // the 64 KB upgrades of pages 16 and 40) and the 64-page node [16, 80) fails (32/64). A tree
  // aligned to the window would take [32, 64) (16/32, fails) and then [0, 64) clipped to
  // [16, 64) (32/48, passes): 16 pages too many.
  EXPECT_EQ(tree(16, 512, {16, 40}), range(16, 48, {16, 40}));
  // Aligned ranges are unchanged: the same two faults at window pages 0 and 24.
  EXPECT_EQ(tree(0, 512, {0, 24}), range(0, 32, {0, 24}));
}

TEST(TreePrefetchAlignment, LeavesBeforeTheRangeCountInANodesSize) {
  // Pages [10, 20): no whole 64 KB big page, so the upgrade fills the whole region (the driver's
  // "no big pages" case); the tree is shifted to the 64 KB boundary at page 0 (offset 10), so the
  // 16-leaf node [0, 16) holds 6 set leaves of 16 (fails) and the 20-leaf root 10 of 20 (fails):
  // the largest passing node is [8, 16), clamped to [10, 16).
  EXPECT_EQ(tree(10, 20, {12}), range(10, 16, {12}));
  // A second fault at page 17 reaches [16, 20) through its own 16-leaf node, cut at the last
  // leaf (4 of 4); the root still fails.
  EXPECT_EQ(tree(10, 20, {12, 17}), range(10, 20, {12, 17}));
}

// ---- Replay policies: only BATCH_FLUSH waits for the copies between batches (point 3) --------

/// A writer of one managed allocation of `bytes` that the host writes first (faults copy it in)
/// and one kernel of `grid` threadblocks of `threads` threads, its launch begun.
std::unique_ptr<trace::TraceWriter> host_initialised_launch(const std::string& path,
                                                            std::uint64_t bytes, std::uint32_t grid,
                                                            std::uint32_t threads) {
  trace::Metadata meta;
  meta.workload = "handwritten";
  meta.allocations.push_back({0, "buf", kBase, bytes, true, false});
  trace::KernelInfo k;
  k.id = 0;
  k.name = "handwritten";
  k.grid = {grid, 1, 1};
  k.block = {threads, 1, 1};
  meta.kernels.push_back(k);
  auto w = std::make_unique<trace::TraceWriter>(path, meta);
  trace::HostEvent init;
  init.type = trace::HostEventType::CpuAccess;
  init.va = kBase;
  init.size = bytes;
  init.kind = AccessKind::Write;
  w->host_event(init);
  w->begin_launch(0, -1);
  return w;
}

/// `n` threadblocks of one warp, block i reading one page of 2 MB VA block i: n faults at once.
std::string n_blocks_one_fault_each(const TempDir& d, std::uint32_t n) {
  const auto path = d.file("n.uvt");
  const auto w = host_initialised_launch(path, n * k2M, n, 32);
  for (std::uint32_t b = 0; b < n; ++b) {
    w->begin_block(1);
    trace::AccessRecord r;
    r.va = kBase + b * k2M;
    r.kind = AccessKind::Read;
    r.bytes = 128;
    r.gap_cycles = 10;
    w->access(0, r);
    w->end_block();
  }
  w->finish();
  return path;
}

/// Start times (ns) of the fault batches.
std::vector<double> batch_starts(const std::string& trace, const std::string& policy,
                                 const std::string& copy_run_ns, double* sim_time) {
  TempDir d;
  const auto ev = d.file("e.csv"), stats = d.file("s.json");
  cli_ok({"run", "--gpu", "gtx1080ti", "--trace", trace, "--events-out", ev, "--stats-out", stats,
          "--quiet", "--set", "driver.replay_policy=" + policy, "--set",
          "driver.fault_batch_count=1", "--set", "cost.copy_run_ns=" + copy_run_ns});
  std::vector<double> starts;
  for (const auto& r : read_events(ev))
    if (r.event == "batch") starts.push_back(r.time_ns);
  *sim_time = read_json(stats)["sim_time_ns"].get<double>();
  return starts;
}

TEST(ReplayPolicyWaits, OnlyBatchFlushWaitsForTheCopiesBeforeTheNextBatch) {
  // Two faults at once, one batch each (fault_batch_count=1). Slower copies (a larger copy-engine
  // set-up per run) delay the second batch only under BATCH_FLUSH; under BATCH, BLOCK and ONCE
  // the second batch starts when the first batch's host work ends, whatever the copies take,
  // and the warps still wait for the copies (the replay follows them).
  TempDir d;
  const auto t = n_blocks_one_fault_each(d, 2);
  for (const std::string policy : {"batch", "block", "once"}) {
    double fast_end = 0, slow_end = 0;
    const auto fast = batch_starts(t, policy, "2000", &fast_end);
    const auto slow = batch_starts(t, policy, "102000", &slow_end);
    // (A third batch may follow: a re-fault raised by the first replay before the second
    // batch's pages are mapped; its replay then waits for them, service_fault_batch_block.)
    ASSERT_GE(fast.size(), 2u) << policy;
    ASSERT_GE(slow.size(), 2u) << policy;
    EXPECT_EQ(fast[0], slow[0]) << policy;
    EXPECT_EQ(fast[1], slow[1]) << policy;  // not delayed by the copies
    // The second batch follows the first one's host work only (gtx1080ti): fetch of one entry,
    // the process's first-fault cost, one block, one PMA call, 16 pages of the 64 KB upgrade.
    EXPECT_NEAR(fast[1] - fast[0], 3740.5 + 37.2 + 138249.2 + 4502.4 + 20628.2 + 16 * 208.1, 1e-3)
        << policy;
    // Each batch copies two runs (4 KB demand, 60 KB prefetch) on the one HtoD engine, 100 us of
    // set-up each when slow: the warps still wait for them (the replay follows the copies), so
    // the run cannot end before the second batch's copies, >= 2 x 100 us after it started.
    EXPECT_GT(slow_end, slow[1] + 2 * 100000.0) << policy;
    EXPECT_GT(slow_end - fast_end, 3 * 100000.0) << policy;
  }
  double fast_end = 0, slow_end = 0;
  const auto fast = batch_starts(t, "batch_flush", "2000", &fast_end);
  const auto slow = batch_starts(t, "batch_flush", "102000", &slow_end);
  ASSERT_GE(fast.size(), 2u);
  ASSERT_EQ(slow.size(), fast.size());
  // BATCH_FLUSH waits for the first batch's two copy runs (2 x 100 us slower) before the next.
  EXPECT_NEAR(slow[1] - fast[1], 2 * 100000.0, 1e-3);
}

TEST(ReplayPolicyWaits, BatchFlushReadsPutWhenTheHostWorkEndsNotWhenTheCopiesDo) {
  // uvm_parent_gpu_service_replayable_faults calls fault_buffer_flush_locked as soon as
  // service_fault_batch returns, with the batch's copies still running; only the replay push
  // waits for them (on the GPU), and the thread waits for the replay. Threadblock 0's four warps
  // miss on page 0 (four entries, three of them duplicates: more than
  // driver.replay_update_put_ratio, so the flush re-reads PUT); the batch copies page 0 and the
  // rest of its 64 KB big page, 2 ms of copies here. Threadblock 1's four warps miss on page 5
  // ~630 us later, while those copies run: their entries are written after the flush read PUT,
  // so they stay for a second batch, which finds page 5 resident. Were PUT read after the
  // copies, the flush would discard them, and the replay would find page 5 mapped: one batch.
  TempDir d;
  const auto path = d.file("late.uvt");
  {
    const auto w = host_initialised_launch(path, k2M, 2, 128);
    for (std::uint32_t b = 0; b < 2; ++b) {
      w->begin_block(4);
      for (std::uint32_t warp = 0; warp < 4; ++warp) {
        trace::AccessRecord r;
        r.va = kBase + (b == 0 ? 0 : 5 * 4096);
        r.kind = AccessKind::Read;
        r.bytes = 128;
        r.gap_cycles = b == 0 ? 10 : 1000000;  // one warp issues one slot per cycle: ~630 us
        w->access(warp, r);
      }
      w->end_block();
    }
    w->finish();
  }
  const auto j = simulate("gtx1080ti", path, {"cost.copy_run_ns=1000000"}, std::nullopt);
  EXPECT_EQ(u(j["fault_batches"]), 2u);
  EXPECT_EQ(u(j["gpu_faults"]), 8u);
  EXPECT_EQ(u(j["faults"]["fetched"]), 8u);
  EXPECT_EQ(u(j["faults"]["flushed"]), 0u);
  EXPECT_EQ(u(j["faults"]["coalesced"]), 6u);
  EXPECT_EQ(u(j["faults"]["already_resident"]), 1u);
  EXPECT_EQ(u(j["accesses"]), 8u);
}

TEST(UtlbLimit, RepeatsOfAReportedPageTakeNoSlotWhenTheLimitCountsMisses) {
  // One threadblock of 8 warps on one SM: warps 0-5 read page 0, warps 6 and 7 pages 1 and 2;
  // the uTLB may hold 4 outstanding faults. Counting misses (gpu.utlb_limit_counts_misses, as
  // titanv does), page 0's six entries take one slot, so all three pages are reported before the
  // first fetch: one batch of 8 entries. Counting entries, page 0's first four fill the uTLB;
  // the other four accesses wait for the replay, after which warps 4 and 5 find page 0 mapped and
  // warps 6 and 7 fault again: two batches.
  TempDir d;
  const auto path = d.file("limit.uvt");
  {
    const auto w = host_initialised_launch(path, k2M, 1, 256);
    w->begin_block(8);
    for (std::uint32_t warp = 0; warp < 8; ++warp) {
      trace::AccessRecord r;
      r.va = kBase + (warp < 6 ? 0 : warp - 5) * 4096;
      r.kind = AccessKind::Read;
      r.bytes = 128;
      r.gap_cycles = 10;
      w->access(warp, r);
    }
    w->end_block();
    w->finish();
  }
  const std::vector<std::string> sets = {"driver.prefetch_enable=false",
                                         "gpu.utlb_max_outstanding_faults=4"};
  auto with = [&](const char* misses) {
    auto s = sets;
    s.push_back(std::string("gpu.utlb_limit_counts_misses=") + misses);
    return simulate("gtx1080ti", path, s, std::nullopt);
  };
  const auto m = with("true"), e = with("false");
  EXPECT_EQ(u(m["fault_batches"]), 1u);
  EXPECT_EQ(u(m["gpu_faults"]), 8u);
  EXPECT_EQ(u(m["faults"]["coalesced"]), 5u);
  EXPECT_EQ(u(m["faults"]["utlb_stalls"]), 0u);
  EXPECT_EQ(u(e["fault_batches"]), 2u);
  EXPECT_EQ(u(e["gpu_faults"]), 6u);
  EXPECT_EQ(u(e["faults"]["utlb_stalls"]), 4u);
  for (const auto* j : {&m, &e}) {
    EXPECT_EQ(u((*j)["accesses"]), 8u);
    EXPECT_EQ(u((*j)["faults"]["serviced"]), 3u);
  }
}

TEST(MappingDuringCopies, PagesAlreadyMappedStayUsableWhileMorePagesAreCopiedIntoTheBlock) {
  // uvm_va_block_service_locked migrates the faulted pages first and then maps them for the
  // faulting GPU; the PTEs it wrote for the block's earlier pages stay valid meanwhile. Warp 0
  // faults on page 0 and then reads it 4,000 times, 100 issue slots apart (~240 us on rtx3090).
  // Warp 1 reads page 256 of the same block once, after warp 0's page is mapped: its batch copies
  // page 256 into the block while warp 0 keeps reading page 0. Exactly two faults: warp 0 must
  // not fault again during the second batch's copy (it did when one time gated the whole block).
  TempDir d;
  const auto t = d.file("two_warps.uvt");
  {
    trace::WriterOptions opts;
    opts.fold_repeats = false;  // every read is its own access, checked against the mapping
    MicroTrace m(t, k2M, 64, opts);
    trace::TraceWriter& w = *m.w;
    w.begin_launch(0, -1);
    w.begin_block(2);
    trace::AccessRecord r;
    r.bytes = 4;
    r.va = kBase;
    w.access(0, r);
    r.gap_cycles = 100;
    for (int i = 0; i < 4000; ++i) w.access(0, r);
    r.va = kBase + 256 * 4096;
    r.gap_cycles = 400000;  // ~236 us at 1,695 MHz: after the first batch (its first-fault cost)
    w.access(1, r);
    w.end_block();
    m.finish();
  }
  const auto j = simulate("rtx3090", t, {"driver.prefetch_enable=false"}, std::nullopt);
  EXPECT_EQ(u(j["fault_batches"]), 2u);
  EXPECT_EQ(u(j["faults"]["fetched"]), 2u);
  EXPECT_EQ(u(j["gpu_faults"]), 2u);
  EXPECT_EQ(u(j["accesses"]), 4002u);
}

}  // namespace
}  // namespace uvmsim::test
