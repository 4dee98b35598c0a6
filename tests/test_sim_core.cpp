// End-to-end behaviour of the simulation core: batch structure, oversubscription, counter
// identities and determinism.
#include <gtest/gtest.h>
#include <map>

#include "test_util.h"

namespace uvmsim::test {
namespace {

nlohmann::json run_json(const TempDir& d, const std::string& trace, std::vector<std::string> extra,
                        const std::string& tag = "s") {
  const auto stats = d.file(tag + ".json");
  std::vector<std::string> args = {"run", "--gpu",       "titanv", "--trace",
                                   trace, "--stats-out", stats,    "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  cli_ok(args);
  return read_json(stats);
}

void expect_counters_add_up(const nlohmann::json& s) {
  const auto& in = s["htod_bytes_by_cause"];
  EXPECT_EQ(s["htod_bytes"].get<std::uint64_t>(), in["demand"].get<std::uint64_t>() +
                                                      in["prefetch"].get<std::uint64_t>() +
                                                      in["user_prefetch"].get<std::uint64_t>() +
                                                      in["access_counter"].get<std::uint64_t>());
  const auto& out = s["dtoh_bytes_by_cause"];
  EXPECT_EQ(s["dtoh_bytes"].get<std::uint64_t>(), out["eviction"].get<std::uint64_t>() +
                                                      out["cpu_fault"].get<std::uint64_t>() +
                                                      out["user_prefetch"].get<std::uint64_t>());
  // No read duplication and no dirty-only what-if: every evicted page is copied back.
  EXPECT_EQ(out["eviction"].get<std::uint64_t>(), s["evicted_pages"].get<std::uint64_t>() * 4096);
  // Every fault-buffer entry the GMMU wrote was fetched into a batch or flushed unread.
  EXPECT_EQ(s["gpu_faults"].get<std::uint64_t>(), s["faults"]["fetched"].get<std::uint64_t>() +
                                                      s["faults"]["flushed"].get<std::uint64_t>());
}

TEST(VectorAdd, BatchesAreCappedByTheUtlbAndWritesComeAfterReads) {
  // Allen & Ge (SC'21), 32 threads, one page per thread: 56 faults (all of a, most of b: the
  // uTLB limit), then the 8 remaining reads of b, then the 32 writes of c.
  TempDir d;
  const auto trace = d.file("v.uvt"), events = d.file("e.csv");
  cli_ok({"gen", "vecadd", "--param", "threads=32", "-o", trace});
  cli_ok({"run", "--gpu", "titanv", "--trace", trace, "--prefetch", "none", "--events-out", events,
          "--quiet"});
  const auto rows = read_events(events);
  EXPECT_EQ(batch_sizes(rows), (std::vector<unsigned long long>{56, 8, 32}));
  // The first two batches migrate a and b (CPU-initialised, 4 KB each); c is zero-filled on the
  // GPU, so the third batch copies nothing.
  const auto by_batch = htod_by_batch(rows);
  ASSERT_EQ(by_batch.size(), 3u);
  EXPECT_EQ(by_batch[0].size(), 2u);  // a: one 128 KB run, b: one 96 KB run
  EXPECT_EQ(by_batch[0], (std::vector<std::string>{"128K:demand", "96K:demand"}));
  EXPECT_EQ(by_batch[1], (std::vector<std::string>{"32K:demand"}));
  EXPECT_TRUE(by_batch[2].empty());
}

TEST(VectorAdd, PrefetchAbsorbsTheHeldBackReads) {
  // With the default tree prefetcher the 64 KB upgrade brings all of b in the first batch, so
  // the 8 held-back reads hit after the replay and only the writes fault again.
  TempDir d;
  const auto trace = d.file("v.uvt"), events = d.file("e.csv");
  cli_ok({"gen", "vecadd", "--param", "threads=32", "-o", trace});
  cli_ok({"run", "--gpu", "titanv", "--trace", trace, "--events-out", events, "--quiet"});
  EXPECT_EQ(batch_sizes(read_events(events)), (std::vector<unsigned long long>{56, 32}));
}

TEST(Oversubscription, RegularEvictsAndRandomThrashesFarWorse) {
  TempDir d;
  const auto reg = d.file("reg.uvt"), rnd = d.file("rnd.uvt");
  cli_ok({"gen", "regular", "--footprint", "128M", "-o", reg});
  cli_ok({"gen", "random", "--footprint", "128M", "--seed", "7", "-o", rnd});

  // 4 SMs hold 32 threadblocks of 1 MB each: the grid's in-flight window (32 MB) fits in the
  // 84 MB of HBM, as it does for the real 32 GB runs (Allen & Ge, IPDPS'21 Sec. V-A). With all
  // 80 of titanv's SMs the whole 128 MB grid is in flight at once, and the round-robin replay
  // service makes it the working set (see WholeGridInFlightThrashesEvenInOrder).
  const std::vector<std::string> sms = {"--set", "gpu.num_sms=4"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), sms.begin(), sms.end());
    return a;
  };
  const auto reg0 = run_json(d, reg, with({"--oversub", "0"}), "reg0");
  const auto reg50 = run_json(d, reg, with({"--oversub", "50"}), "reg50");
  const auto rnd0 = run_json(d, rnd, with({"--oversub", "0"}), "rnd0");
  const auto rnd50 = run_json(d, rnd, with({"--oversub", "50"}), "rnd50");

  EXPECT_EQ(reg0["evictions"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(rnd0["evictions"].get<std::uint64_t>(), 0u);
  EXPECT_GT(reg50["evictions"].get<std::uint64_t>(), 0u);
  // 128 MB = 64 chunks, 50 % oversubscribed -> 42 chunks of HBM.
  EXPECT_EQ(reg50["memory"]["capacity_chunks"].get<std::uint64_t>(), 42u);
  // Random page order touches every 2 MB block early and keeps re-faulting evicted ones.
  EXPECT_GT(rnd50["evictions"].get<std::uint64_t>(), 5 * reg50["evictions"].get<std::uint64_t>());
  EXPECT_GT(rnd50["dtoh_bytes"].get<std::uint64_t>(), 5 * reg50["dtoh_bytes"].get<std::uint64_t>());
  EXPECT_GT(rnd50["sim_time_ns"].get<double>(), 2 * reg50["sim_time_ns"].get<double>());
  // Random re-fetches evicted data; regular never comes back to an evicted block.
  EXPECT_EQ(reg50["htod_bytes"].get<std::uint64_t>(), 0u);  // first touch: zero-filled
  EXPECT_GT(rnd50["htod_bytes"].get<std::uint64_t>(), 64u << 20);
  // Oversubscription costs time for both.
  EXPECT_GT(reg50["sim_time_ns"].get<double>(), reg0["sim_time_ns"].get<double>());
  EXPECT_GT(rnd50["sim_time_ns"].get<double>(), rnd0["sim_time_ns"].get<double>());
  for (const auto* s : {&reg0, &reg50, &rnd0, &rnd50}) expect_counters_add_up(*s);
  // Every access of the trace completes: one per thread, one thread per page.
  EXPECT_EQ(reg50["accesses"].get<std::uint64_t>(), 128u * 256);
  EXPECT_EQ(rnd50["accesses"].get<std::uint64_t>(), 128u * 256);
}

// gpu.utlb_replay_order at the scale of SUV's mvt (docs/driver-model.md, "Which misses a uTLB
// raises after a replay"): when the whole grid is in flight and HBM holds only part of it, the
// default round-robin service keeps every warp partly served, so LRM evicts blocks that warps
// are still filling, even for the in-order page touch; oldest-first (`age`) service fills the
// blocks as a wave and evicts each of the 22 surplus blocks once.
TEST(Oversubscription, WholeGridInFlightThrashesEvenInOrder) {
  TempDir d;
  const auto reg = d.file("reg.uvt");
  cli_ok({"gen", "regular", "--footprint", "128M", "-o", reg});
  const auto rr = run_json(d, reg, {"--oversub", "50"}, "rr");
  const auto age =
      run_json(d, reg, {"--oversub", "50", "--set", "gpu.utlb_replay_order=age"}, "age");
  EXPECT_EQ(rr["config"]["gpu"]["utlb_replay_order"], "round_robin");  // the default
  EXPECT_EQ(age["evictions"].get<std::uint64_t>(), 22u);  // 64 blocks, 42 chunks: each once
  EXPECT_EQ(rr["evictions"].get<std::uint64_t>(), 355u);
  EXPECT_EQ(age["sim_time_ns"].get<double>(), 17181274.0);
  EXPECT_EQ(rr["sim_time_ns"].get<double>(), 31317721.0);
}

TEST(Oversubscription, EvictionVictimsFollowTheDriverLists) {
  // Regular streaming at 50 %: the driver evicts the oldest-allocated chunk, so the blocks are
  // evicted in the order they were first given a chunk (their first zero-fill or migration in
  // the service order the events log). With paced fault reporting a batch holds faults of ~40
  // blocks from all SMs, so that order is not the address order.
  TempDir d;
  const auto reg = d.file("reg.uvt"), events = d.file("e.csv");
  cli_ok({"gen", "regular", "--footprint", "64M", "-o", reg});
  cli_ok({"run", "--gpu", "titanv", "--trace", reg, "--oversub", "50", "--events-out", events,
          "--quiet"});
  std::map<unsigned long long, std::size_t> allocated;  // block -> rank of its current chunk
  std::size_t next_rank = 0;
  std::vector<std::size_t> victims;
  for (const auto& r : read_events(events)) {
    const unsigned long long block = r.va >> 21;
    if ((r.event == "zero_fill" || r.event == "migration") && r.direction != "dtoh")
      allocated.emplace(block, next_rank++);
    if (r.event == "eviction") {
      ASSERT_TRUE(allocated.count(block)) << "evicted a block that was never allocated";
      victims.push_back(allocated.at(block));
      allocated.erase(block);  // a later fault allocates it a new chunk
    }
  }
  ASSERT_GT(victims.size(), 2u);
  for (std::size_t i = 1; i < victims.size(); ++i) EXPECT_GT(victims[i], victims[i - 1]);
}

TEST(Determinism, SameInputsGiveIdenticalStats) {
  TempDir d;
  const auto rnd = d.file("rnd.uvt");
  cli_ok({"gen", "random", "--footprint", "32M", "--seed", "3", "-o", rnd});
  auto a = run_json(d, rnd, {"--oversub", "30", "--seed", "5"}, "a");
  auto b = run_json(d, rnd, {"--oversub", "30", "--seed", "5"}, "b");
  for (auto* j : {&a, &b}) {
    j->erase("wall_seconds");
    j->erase("accesses_per_second");
  }
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_GT(a["gpu_faults"].get<std::uint64_t>(), 0u);
}

TEST(StatsJson, HasTheDocumentedFields) {
  TempDir d;
  const auto tr = d.file("s.uvt");
  cli_ok({"gen", "stream", "--footprint", "12M", "--param", "iters=2", "-o", tr});
  const auto s = run_json(d, tr, {"--oversub", "20"});
  for (const char* k :
       {"sim_time_ns", "accesses", "gpu_faults", "fault_batches", "evictions", "htod_bytes",
        "dtoh_bytes", "htod_bytes_by_cause", "dtoh_bytes_by_cause", "remote_accesses", "tlb",
        "kernels", "batch_size_histogram", "wall_seconds", "accesses_per_second", "config"})
    EXPECT_TRUE(s.contains(k)) << k;
  EXPECT_EQ(s["kernels"].size(), 2u);
  EXPECT_EQ(s["kernels"][1]["iteration"].get<int>(), 1);
  EXPECT_EQ(s["config"]["driver"]["replay_policy"], "batch_flush");
  EXPECT_EQ(s["config"]["driver"]["fault_batch_count"].get<int>(), 256);
  std::uint64_t hist_batches = 0;
  for (const auto& h : s["batch_size_histogram"]) hist_batches += h["batches"].get<std::uint64_t>();
  EXPECT_EQ(hist_batches, s["fault_batches"].get<std::uint64_t>());
  // 3 arrays x 4 MB of floats, one record per warp per array: every element read or written.
  EXPECT_EQ(s["accesses"].get<std::uint64_t>(), 2u * 3 * (4u << 20) / 128);
  expect_counters_add_up(s);
}

}  // namespace
}  // namespace uvmsim::test
