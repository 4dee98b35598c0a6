// Prefetch accuracy and coverage counters (issue 15, docs/stats.md `prefetch_use`): micro-traces
// whose accesses, prefetches and evictions are known page by page, each checked exactly.
#include <gtest/gtest.h>

#include "placement_test_util.h"

namespace uvmsim::test {
namespace {

std::uint64_t at(const nlohmann::json& s, const char* cause, const char* what) {
  return s["prefetch_use"][cause][what].get<std::uint64_t>();
}

void user_prefetch(Program& p, std::uint32_t alloc, std::uint64_t off, std::uint64_t size) {
  trace::HostEvent e;
  e.type = trace::HostEventType::MemPrefetch;
  e.va = p.base(alloc) + off;
  e.size = size;
  e.device = Processor::Gpu;
  p.w->host_event(e);
}

// One fault on a host-resident page brings its 64 KB neighbourhood (P1 of calibration-facts.md:
// 4 KB demand + 60 KB prefetch); three of the 15 prefetched pages are then read.
TEST(PrefetchUse, TreePrefetchUsefulAndUnresolvedPages) {
  TempDir d;
  const auto t = d.file("t.uvt");
  Program p({{"a", 2 << 20}});
  p.open(t);
  p.cpu_write(0, 0, 2 << 20);
  p.walk(0, {{0, 0, 4 * 4096}});
  p.finish();
  const auto s = run_sim(t, {});
  EXPECT_EQ(num(s["htod_bytes_by_cause"]["prefetch"]), 15u * 4096);
  EXPECT_EQ(at(s, "prefetch", "pages"), 15u);
  EXPECT_EQ(at(s, "prefetch", "useful"), 3u);
  EXPECT_EQ(at(s, "prefetch", "useless"), 0u);
  EXPECT_EQ(at(s, "prefetch", "unresolved"), 12u);
  EXPECT_DOUBLE_EQ(s["prefetch_use"]["prefetch"]["accuracy"].get<double>(), 1.0);
  EXPECT_EQ(num(s["prefetch_use"]["demand_pages"]), 1u);
  EXPECT_DOUBLE_EQ(s["prefetch_use"]["coverage"].get<double>(), 3.0 / 4.0);
  // Mechanisms that did nothing have no ratio, not a ratio of 0.
  EXPECT_EQ(at(s, "user_prefetch", "pages"), 0u);
  EXPECT_TRUE(s["prefetch_use"]["user_prefetch"]["accuracy"].is_null());
}

// With one chunk of memory, touching b evicts a: a's 14 untouched prefetched pages were useless.
TEST(PrefetchUse, EvictionMakesUntouchedPrefetchedPagesUseless) {
  TempDir d;
  const auto t = d.file("t.uvt");
  Program p({{"a", 2 << 20}, {"b", 2 << 20}});
  p.open(t);
  p.cpu_write(0, 0, 2 << 20);
  p.cpu_write(1, 0, 2 << 20);
  p.walk(0, {{0, 0, 2 * 4096}, {1, 0, 4096}});
  p.finish();
  const auto s = run_sim(t, {}, std::uint64_t{2} << 20);
  ASSERT_EQ(num(s["evictions"]), 1u);
  EXPECT_EQ(at(s, "prefetch", "pages"), 30u);
  EXPECT_EQ(at(s, "prefetch", "useful"), 1u);
  EXPECT_EQ(at(s, "prefetch", "useless"), 14u);
  EXPECT_EQ(at(s, "prefetch", "unresolved"), 15u);
  EXPECT_DOUBLE_EQ(s["prefetch_use"]["prefetch"]["accuracy"].get<double>(), 1.0 / 15.0);
  EXPECT_EQ(num(s["prefetch_use"]["demand_pages"]), 2u);
}

// cudaMemPrefetchAsync of 1 MB, 10 pages read, then 64 KB of it migrated back to the host by a
// user prefetch: those 16 pages (none read) are useless, the rest stay unresolved.
TEST(PrefetchUse, UserPrefetchPerCause) {
  TempDir d;
  const auto t = d.file("t.uvt");
  Program p({{"a", 2 << 20}});
  p.open(t);
  p.cpu_write(0, 0, 2 << 20);
  user_prefetch(p, 0, 0, 1 << 20);
  p.walk(0, {{0, 0, 10 * 4096}});
  trace::HostEvent back;
  back.type = trace::HostEventType::MemPrefetch;
  back.va = p.base(0) + (512 << 10);
  back.size = 64 << 10;
  back.device = Processor::Cpu;
  p.w->host_event(back);
  p.finish();
  const auto s = run_sim(t, {});
  EXPECT_EQ(num(s["gpu_faults"]), 0u);
  EXPECT_EQ(at(s, "user_prefetch", "pages"), 256u);
  EXPECT_EQ(at(s, "user_prefetch", "useful"), 10u);
  EXPECT_EQ(at(s, "user_prefetch", "useless"), 16u);
  EXPECT_EQ(at(s, "user_prefetch", "unresolved"), 230u);
  EXPECT_EQ(at(s, "prefetch", "pages"), 0u);
  EXPECT_EQ(num(s["prefetch_use"]["demand_pages"]), 0u);
  EXPECT_DOUBLE_EQ(s["prefetch_use"]["coverage"].get<double>(), 1.0);
}

// On a thrashing workload every mechanism's pages split exactly into the three outcomes, and
// the tree prefetcher's pages equal its HtoD bytes (no zero-fill in a CPU-initialised trace is
// not assumed: zero-filled prefetched pages count too, so pages * 4 KB >= bytes).
TEST(PrefetchUse, OutcomesPartitionThePrefetchedPages) {
  TempDir d;
  const auto t = gen(d, "random", "16M");
  const auto s = run_sim(t, {}, std::nullopt, 50.0);
  ASSERT_GT(num(s["evictions"]), 0u);
  for (const char* c : {"prefetch", "region_prefetch", "user_prefetch", "placement"}) {
    EXPECT_EQ(at(s, c, "pages"), at(s, c, "useful") + at(s, c, "useless") + at(s, c, "unresolved"))
        << c;
  }
  EXPECT_GT(at(s, "prefetch", "useless"), 0u);
  EXPECT_GE(at(s, "prefetch", "pages") * 4096, num(s["htod_bytes_by_cause"]["prefetch"]));
}

// The run summary shows the achieved and requested oversubscription, zero-copy traffic, placement
// bytes in the HtoD line and the prefetch outcome.
TEST(PrefetchUse, RunSummaryShowsAchievedOversubRemoteTrafficAndPrefetchUse) {
  TempDir d;
  const auto t = gen(d, "regular", "24M");  // 12 chunks: --oversub 75 gives 6, i.e. 100 %
  const auto r = cli_ok({"run", "--gpu", "gtx1080ti", "--trace", t, "--oversub", "75",
                         "--stats-out", d.file("s.json")});
  EXPECT_NE(r.out.find("(100.0% oversubscribed, 75.0% requested: memory is whole 2 MB chunks)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("remote (link) : 0 B in 0 zero-copy accesses (read 0 B, write 0 B)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(", placement 0 B)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("prefetch use  : prefetch "), std::string::npos) << r.out;
  // The process's own peak memory, in the text only (the JSON keeps to deterministic values).
  const std::string rss_line = "host memory   : peak RSS ";
  const auto rss = r.out.find(rss_line);
  ASSERT_NE(rss, std::string::npos) << r.out;
  EXPECT_GT(std::stod(r.out.substr(rss + rss_line.size())), 0.0) << r.out;
  const auto s = read_json(d.file("s.json"));
  EXPECT_EQ(s.dump().find("rss"), std::string::npos);
  EXPECT_DOUBLE_EQ(s["memory"]["oversubscription_pct"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(s["memory"]["oversubscription_requested_pct"].get<double>(), 75.0);
  EXPECT_EQ(num(s["memory"]["capacity_chunks"]), 6u);
}

// The host placement scheme maps everything remotely: every byte read crosses the link as
// zero-copy traffic, none as a migration, and the split by kind adds up.
TEST(RemoteTraffic, ZeroCopyReadsAndWritesAreCountedByKind) {
  TempDir d;
  const auto t = d.file("t.uvt");
  Program p({{"a", 2 << 20}});
  p.open(t);
  p.cpu_write(0, 0, 2 << 20);
  p.walk(0, {{0, 0, 16 * 4096}});
  p.finish();
  const auto s = run_sim(t, {"engine.placement=host"});
  EXPECT_EQ(num(s["htod_bytes"]), 0u);
  EXPECT_EQ(num(s["remote_accesses"]), 16u);
  EXPECT_EQ(num(s["remote_bytes"]), 16u * 128);
  EXPECT_EQ(num(s["remote_bytes_by_kind"]["read"]), 16u * 128);
  EXPECT_EQ(num(s["remote_bytes_by_kind"]["write"]), 0u);
}

}  // namespace
}  // namespace uvmsim::test
