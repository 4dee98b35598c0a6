// Per-batch statistics (Allen & Ge, SC'21 Tables 2 and 3) and the paced reporting of far faults
// by the uTLBs and the GMMU (gpu.utlb_fault_interval_ns, gpu.fault_write_interval_ns).
#include <gtest/gtest.h>

#include <algorithm>

#include "core/stats.h"
#include "placement_test_util.h"
#include "sim/simulator.h"

namespace uvmsim::test {
namespace {

// Runs `trace` on the titanv preset without prefetching, with the knob settings `sets`.
nlohmann::json run_titanv(const std::string& trace, std::vector<std::string> sets = {}) {
  sets.insert(sets.begin(), "engine.prefetch=none");
  return run_preset("titanv", trace, sets);
}

TEST(RunningStat, MeanStdMinMaxOfASeries) {
  RunningStat s;
  for (double x : {2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0}) s.add(x);
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.stddev(), 2.0);
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  const auto j = s.to_json();
  EXPECT_EQ(j["count"].get<std::uint64_t>(), 8u);
  EXPECT_DOUBLE_EQ(j["std"].get<double>(), 2.0);
}

// One warp touching one page at a time, each access waiting for the previous one: every batch
// holds exactly one fault of one VA block from one uTLB.
TEST(BatchStats, OneWarpWalkGivesOneFaultPerBatch) {
  TempDir d;
  Program p({{"a", 8 << 20}});
  const auto t = d.file("walk.uvt");
  p.open(t);
  p.walk(0, {{0, 0, 64 * 4096}});
  p.finish();
  const auto j = run_sim(t, {"engine.prefetch=none"});
  const auto& b = j["batch_stats"];
  EXPECT_EQ(num(b["va_blocks_per_batch"]["count"]), 64u);
  EXPECT_DOUBLE_EQ(b["va_blocks_per_batch"]["mean"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(b["va_blocks_per_batch"]["std"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(b["faults_per_va_block"]["max"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(b["sources_per_batch"]["max"].get<double>(), 1.0);
  // gtx1080ti has 28 SMs: one entry per batch is 1/28 per SM.
  EXPECT_DOUBLE_EQ(b["faults_per_sm_per_batch"]["mean"].get<double>(), 1.0 / 28);
}

// The per-batch statistics count what the driver logs: the entries left after the fetch's
// coalescing (num_coalesced_faults), one per line of Allen & Ge's instrumented driver, not the
// raw entries fetched. sgemm's blocks miss on the same pages of A and B again after every
// replay, so most of its raw entries merge at the fetch (into their uTLB's previous entry for the
// page, or into another SM's entry for it just before them).
TEST(BatchStats, CountTheEntriesLeftAfterCoalescingAsTheDriverLogsThem) {
  TempDir d;
  const auto j = run_titanv(gen(d, "sgemm", "3M"));
  const auto& b = j["batch_stats"];
  EXPECT_EQ(num(j["faults"]["fetched"]), 10224u);
  EXPECT_EQ(num(j["faults"]["coalesced"]), 9364u);
  const double logged = 10224 - 9364;
  const double batches = num(b["va_blocks_per_batch"]["count"]);
  EXPECT_EQ(batches, 75u);
  EXPECT_NEAR(
      b["faults_per_va_block"]["mean"].get<double>() * num(b["faults_per_va_block"]["count"]),
      logged, 1e-6);
  EXPECT_NEAR(b["faults_per_sm_per_batch"]["mean"].get<double>() * batches * 80, logged, 1e-6);
}

// Allen & Ge's batch driver counts every fetched instance but one per page as a duplicate
// (num_duplicate_faults), and the sgemm-duplicate-fraction row reads that as (coalesced +
// duplicate) / fetched: so every fetched entry must be merged at the fetch, a duplicate after
// the sort, or the one entry of a distinct page, which is either serviced or already resident.
TEST(BatchStats, EveryFetchedEntryIsMergedDuplicateOrOneDistinctPage) {
  TempDir d;
  // Shared pages (sgemm, stream) give merges and duplicates; a page per thread (regular) gives
  // none, only pages fetched again after they became resident.
  const std::pair<std::string, bool> cases[] = {{gen(d, "sgemm", "3M"), true},
                                                {gen(d, "stream", "24M", {"iters=1"}), true},
                                                {gen(d, "regular", "16M", {"init=cpu"}), false}};
  std::uint64_t already_resident = 0;
  for (const auto& [trace, shared] : cases) {
    SCOPED_TRACE(trace);
    const auto j = run_titanv(trace);
    const auto& f = j["faults"];
    EXPECT_EQ(num(f["fetched"]) - num(f["coalesced"]) - num(f["duplicate"]),
              num(f["serviced"]) + num(f["already_resident"]));
    EXPECT_EQ(num(f["coalesced"]) + num(f["duplicate"]) > 0, shared);
    already_resident += num(f["already_resident"]);
  }
  // The identity's last term occurs (sgemm and stream; regular at 16 MB has none).
  EXPECT_GT(already_resident, 0u);
}

// The page-touch kernel: every thread touches its own page, so a warp instruction misses on 32
// pages at once. Without pacing the uTLB of the first SM raises its whole burst in one tick and
// the batch fills from a few SMs; with a per-uTLB reporting interval the GMMU interleaves them.
TEST(FaultPacing, InterleavesTheUtlbsOfAllSms) {
  TempDir d;
  const auto t = gen(d, "regular", "16M");
  const auto burst = run_sim(t, {"engine.prefetch=none", "gpu.utlb_fault_interval_ns=0"});
  const auto paced = run_sim(t, {"engine.prefetch=none", "gpu.utlb_fault_interval_ns=400"});
  const double burst_sources = burst["batch_stats"]["sources_per_batch"]["mean"].get<double>();
  const double paced_sources = paced["batch_stats"]["sources_per_batch"]["mean"].get<double>();
  EXPECT_GT(paced_sources, 3 * burst_sources);
  EXPECT_GT(paced["batch_stats"]["va_blocks_per_batch"]["mean"].get<double>(),
            2 * burst["batch_stats"]["va_blocks_per_batch"]["mean"].get<double>());
  // Every page is still serviced exactly once, whatever the order of the reports.
  EXPECT_EQ(num(burst["faults"]["serviced"]), 4096u);
  EXPECT_EQ(num(paced["faults"]["serviced"]), 4096u);
}

// A GMMU that writes one entry per millisecond gives the driver one entry per batch: the batch
// starts as soon as the first entry is visible and the next one arrives long after it ends.
TEST(FaultPacing, GmmuWriteIntervalBoundsTheEntriesPerBatch) {
  TempDir d;
  const auto t = gen(d, "regular", "2M");
  const auto j = run_sim(t, {"engine.prefetch=none", "gpu.fault_write_interval_ns=1000000"});
  const auto& b = j["batch_stats"];
  EXPECT_DOUBLE_EQ(b["faults_per_va_block"]["max"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(b["sources_per_batch"]["max"].get<double>(), 1.0);
  EXPECT_EQ(num(j["faults"]["serviced"]), 512u);
  // 512 pages, one entry per millisecond: the run lasts at least 511 ms.
  EXPECT_GE(j["sim_time_ns"].get<double>(), 511e6);
}

TEST(FaultPacing, Deterministic) {
  TempDir d;
  const auto t = gen(d, "random", "8M");
  const std::vector<std::string> sets = {"engine.prefetch=none", "gpu.utlb_fault_interval_ns=700",
                                         "gpu.fault_write_interval_ns=20"};
  auto a = run_sim(t, sets), b = run_sim(t, sets);
  a.erase("wall_seconds");
  b.erase("wall_seconds");
  a.erase("accesses_per_second");
  b.erase("accesses_per_second");
  EXPECT_EQ(a.dump(), b.dump());
}

// gpu.utlb_replay_order: which held-back misses a uTLB raises after a replay. Two warps of one
// threadblock (one SM, one uTLB) miss on two pages each, in one instruction: warp 0 on pages
// 0 and 1, warp 1 on pages 2 and 3. The uTLB holds 2 outstanding faults and a batch takes 1
// entry, so every batch services one page and BATCH_FLUSH discards the other raised entry.
// `age` raises the oldest misses again (page 1 before warp 1's pages), so the pages come in
// fault order. `round_robin`: the first replay raises pages 1 and 2 (page 3 stays held) and
// sends both behind page 3; batch 2 takes page 1, and the next replay raises page 3 before
// page 2, so warp 1's second page overtakes its first.
std::vector<unsigned long long> migrated_pages(const std::string& order) {
  TempDir d;
  Program p({{"a", 2 << 20}});
  p.meta.kernels[0].block = {64, 1, 1};
  const auto t = d.file("two-warps.uvt");
  p.open(t);
  p.cpu_write(0, 0, 4 * 4096);  // host-resident, so every serviced page is a migration
  p.w->begin_launch(0);
  p.w->begin_block(2);
  for (std::uint32_t warp = 0; warp < 2; ++warp) {
    for (std::uint64_t page = 2 * warp; page < 2 * warp + 2; ++page) {
      trace::AccessRecord r;
      r.va = p.base(0) + page * 4096;
      r.bytes = 4;
      r.gap_cycles = 0;  // one instruction: both misses at once
      p.w->access(warp, r);
    }
  }
  p.w->end_block();
  p.finish();
  const auto events = d.file("e.csv");
  run_sim(
      t,
      {"engine.prefetch=none", "gpu.utlb_fault_interval_ns=0", "gpu.utlb_max_outstanding_faults=2",
       "driver.fault_batch_count=1", "gpu.utlb_replay_order=" + order},
      std::nullopt, std::nullopt, events);
  std::vector<unsigned long long> pages;
  for (const auto& r : read_events(events))
    if (r.event == "migration") pages.push_back((r.va - p.base(0)) / 4096);
  return pages;
}

TEST(UtlbReplayOrder, AgeKeepsFaultOrderRoundRobinSendsRaisedMissesBack) {
  EXPECT_EQ(migrated_pages("age"), (std::vector<unsigned long long>{0, 1, 2, 3}));
  EXPECT_EQ(migrated_pages("round_robin"), (std::vector<unsigned long long>{0, 1, 3, 2}));
}

// The GMMU writes one entry per gpu.fault_write_interval_ns and serves the uTLBs waiting for it
// in the order their reports became due: two threadblocks on two SMs (two uTLBs) each miss on
// two pages in one instruction (SM 0 on pages 0 and 1, SM 1 on pages 2 and 3). The interrupt
// comes after all four entries are written and the first batch takes two: pages 0 and 2, one
// of each uTLB, not one uTLB's pair.
std::vector<unsigned long long> first_batch_pages(double write_interval_ns) {
  TempDir d;
  Program p({{"a", 2 << 20}});
  p.meta.kernels[0].grid = {2, 1, 1};
  const auto t = d.file("two-sms.uvt");
  p.open(t);
  p.cpu_write(0, 0, 4 * 4096);
  p.w->begin_launch(0);
  for (std::uint64_t tb = 0; tb < 2; ++tb) {
    p.w->begin_block(1);
    for (std::uint64_t page = 2 * tb; page < 2 * tb + 2; ++page) {
      trace::AccessRecord r;
      r.va = p.base(0) + page * 4096;
      r.bytes = 4;
      r.gap_cycles = 0;
      p.w->access(0, r);
    }
    p.w->end_block();
  }
  p.finish();
  const auto events = d.file("e.csv");
  run_sim(t,
          {"engine.prefetch=none", "gpu.utlb_fault_interval_ns=0",
           "gpu.fault_write_interval_ns=" + std::to_string(write_interval_ns),
           "gpu.interrupt_latency_ns=1000000", "driver.fault_batch_count=2"},
          std::nullopt, std::nullopt, events);
  std::vector<unsigned long long> pages;
  for (const auto& r : read_events(events)) {
    if (r.event != "migration" || r.batch != 1) continue;
    for (unsigned long long i = 0; i < r.pages; ++i)  // a copy run covers contiguous pages
      pages.push_back((r.va - p.base(0)) / 4096 + i);
  }
  std::sort(pages.begin(), pages.end());
  return pages;
}

TEST(FaultPacing, GmmuServesWaitingUtlbsInTurn) {
  EXPECT_EQ(first_batch_pages(100000), (std::vector<unsigned long long>{0, 2}));
  // Without the GMMU limit (and the uTLB's), each SM's burst lands in SM order.
  EXPECT_EQ(first_batch_pages(0), (std::vector<unsigned long long>{0, 1}));
}

// gpu_faults counts the entries written to the buffer: each is fetched into a batch or discarded
// by BATCH_FLUSH. A report that a replay drops before the GMMU writes it is not an entry.
TEST(FaultPacing, EveryWrittenEntryIsFetchedOrFlushed) {
  TempDir d;
  const auto t = gen(d, "regular", "16M");
  for (const char* interval : {"0", "1000"}) {
    const auto j = run_sim(
        t, {"engine.prefetch=none", std::string("gpu.fault_write_interval_ns=") + interval});
    EXPECT_EQ(num(j["gpu_faults"]), num(j["faults"]["fetched"]) + num(j["faults"]["flushed"]))
        << interval;
    EXPECT_GT(num(j["faults"]["retries"]), 0u) << interval;
  }
}

// The Titan V preset's GMMU writes one entry per 100 ns (fitted to Allen & Ge, SC'21, Tables 2-3
// and IPDPS'21 Table I; docs/driver-model.md, "Paced fault reporting"), and every access that
// misses writes its own entry (gpu.utlb_fault_per_access). Allen & Ge's stream (the double
// build, all three arrays written on the host) then has fewer faults per batch than a batch
// holds once the driver coalesces each uTLB's repeats (real: 0.75 per SM per batch), while the
// page-touch kernel, whose warps miss on 32 pages per instruction, still fills its batches
// (real: 3.06).
TEST(FaultPacing, TitanVGmmuKeepsStreamBatchesSmallAndPageTouchBatchesFull) {
  TempDir d;
  const auto stream = gen(d, "stream", "24M", {"iters=1", "elem=8", "init=all"});
  const auto regular = gen(d, "regular", "64M", {"init=cpu"});
  const auto run = run_titanv;
  auto per_sm = [](const nlohmann::json& j) {
    return j["batch_stats"]["faults_per_sm_per_batch"]["mean"].get<double>();
  };
  EXPECT_LT(per_sm(run(stream, {})), 1.125);  // within issue 13's x1.5 of the real 0.75
  EXPECT_GT(per_sm(run(regular, {})), 3.0);
  // Without the GMMU limit every SM's misses are in the buffer at the fetch: every batch is
  // full of raw entries, most of which the fetch merges.
  const auto burst = run(stream, {"gpu.fault_write_interval_ns=0"});
  EXPECT_EQ(num(burst["faults"]["fetched"]),
            256 * num(burst["batch_stats"]["va_blocks_per_batch"]["count"]));
  EXPECT_GT(num(burst["faults"]["coalesced"]) * 2, num(burst["faults"]["fetched"]));
  // With one entry per page the same GMMU rate fills stream's batches with distinct faults.
  EXPECT_GT(per_sm(run(stream, {"gpu.utlb_fault_per_access=false"})), 2.5);
}

// Every access that misses writes a fault entry (gpu.utlb_fault_per_access), as the driver's
// fetch expects ("duplicates due to local reuse", fetch_fault_buffer_entries): the warps of a
// float triad block share each page, so a uTLB writes a page's miss once per warp and the
// driver merges the repeats. One entry per page instead leaves almost nothing to coalesce.
TEST(FaultPacing, EveryMissingAccessWritesAnEntryTheFetchCoalesces) {
  TempDir d;
  const auto stream = gen(d, "stream", "24M", {"iters=1"});
  auto run = [&](const char* per_access) {
    return run_titanv(stream, {std::string("gpu.utlb_fault_per_access=") + per_access});
  };
  const auto each = run("true"), once = run("false");
  EXPECT_EQ(num(each["faults"]["fetched"]), 29086u);
  EXPECT_EQ(num(each["faults"]["coalesced"]), 18314u);
  EXPECT_EQ(num(once["faults"]["fetched"]), 6144u);
  EXPECT_EQ(num(once["faults"]["coalesced"]), 0u);
  for (const auto* j : {&each, &once}) EXPECT_EQ(num((*j)["faults"]["serviced"]), 6144u);
  // Held-back misses are counted per miss, not per entry: a miss with several waiting accesses
  // raises several entries at a replay, so the uTLB's outstanding entries can exceed its live
  // misses (counting live - outstanding wrapped around to ~2^32 per uTLB and replay).
  EXPECT_EQ(num(each["faults"]["utlb_stalls"]), 57722u);
  EXPECT_EQ(num(once["faults"]["utlb_stalls"]), 0u);
}

// The GMMU walks when it serves a report (gpu.fault_write_rechecks_pte): a page that a batch
// mapped after the miss was raised but before the GMMU got to its report writes no entry, and
// the accesses waiting on that miss complete at once. Stream's triad, whose warps on other SMs
// keep missing on the pages a batch is servicing, has many such reports on the Titan V's paced
// GMMU; the entries they would have written are the ones the next batch finds already resident.
TEST(FaultPacing, WalkWhenServedDropsReportsOfPagesMappedMeanwhile) {
  TempDir d;
  const auto stream = gen(d, "stream", "24M", {"iters=1"});
  auto run = [&](const char* recheck) {
    return run_titanv(stream, {std::string("gpu.fault_write_rechecks_pte=") + recheck});
  };
  const auto walk = run("true"), old = run("false");
  EXPECT_EQ(num(old["faults"]["resolved_at_walk"]), 0u);
  EXPECT_EQ(num(walk["faults"]["resolved_at_walk"]), 15477u);
  // Exact outcomes: fewer entries written, fewer of them already resident when fetched.
  EXPECT_EQ(num(walk["faults"]["fetched"]), 29086u);
  EXPECT_EQ(num(old["faults"]["fetched"]), 32473u);
  EXPECT_EQ(num(walk["faults"]["already_resident"]), 4436u);
  EXPECT_EQ(num(old["faults"]["already_resident"]), 6130u);
  for (const auto* j : {&walk, &old}) {
    // Every page is serviced once and every access completes, whichever way the walk goes.
    EXPECT_EQ(num((*j)["faults"]["serviced"]), 6144u);
    EXPECT_EQ(num((*j)["accesses"]), num(walk["accesses"]));
    EXPECT_EQ(num((*j)["gpu_faults"]),
              num((*j)["faults"]["fetched"]) + num((*j)["faults"]["flushed"]));
  }
}

// gpu.gmmu_arbitration: which waiting uTLB's report the GMMU writes next. The sgemm blocks that
// share a panel of B run in lockstep on their SMs and miss on the same pages in the same order,
// so when the GMMU takes the uTLBs in turn it writes a page's entries from many SMs back to back
// and the fetch merges them into one ("reuse across CTAs", fetch_fault_buffer_entries). Drawn
// at random, the same entries land apart: few merge, and the batches hold many more distinct
// faults (docs/driver-model.md, "Which uTLB the GMMU serves next").
TEST(GmmuArbitration, InTurnKeepsSharedPagesAdjacentAtRandomSpreadsThem) {
  TempDir d;
  const auto t = gen(d, "sgemm", "3M");
  const auto in_turn = run_titanv(t);
  const auto random = run_titanv(t, {"gpu.gmmu_arbitration=random"});
  auto per_sm = [](const nlohmann::json& j) {
    return j["batch_stats"]["faults_per_sm_per_batch"]["mean"].get<double>();
  };
  EXPECT_EQ(num(in_turn["faults"]["fetched"]), 10224u);
  EXPECT_EQ(num(in_turn["faults"]["coalesced"]), 9364u);
  EXPECT_EQ(num(random["faults"]["fetched"]), 10016u);
  EXPECT_EQ(num(random["faults"]["coalesced"]), 5130u);
  EXPECT_GT(per_sm(random), 5 * per_sm(in_turn));  // 0.81 against 0.14
  for (const auto* j : {&in_turn, &random}) EXPECT_EQ(num((*j)["faults"]["serviced"]), 768u);
  // The draws come from engine.seed: the same seed gives the same run.
  const auto again = run_titanv(t, {"gpu.gmmu_arbitration=random"});
  EXPECT_EQ(again["faults"].dump(), random["faults"].dump());
  EXPECT_EQ(again["batch_stats"].dump(), random["batch_stats"].dump());
  EXPECT_EQ(again["sim_time_ns"], random["sim_time_ns"]);
  const auto other = run_titanv(t, {"gpu.gmmu_arbitration=random", "engine.seed=2"});
  EXPECT_NE(num(other["faults"]["fetched"]), num(random["faults"]["fetched"]));
}

}  // namespace
}  // namespace uvmsim::test
