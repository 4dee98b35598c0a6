// `uvmsim run --interval-out FILE --interval-us N` (docs/stats.md, "Interval statistics"): one
// JSON line per N us of simulated time whose counters add up to the run's totals, and a run
// that writes them computes exactly the same statistics as one that does not.
#include <gtest/gtest.h>

#include <fstream>

#include "placement_test_util.h"

namespace uvmsim::test {
namespace {

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

nlohmann::json without_wall_clock(nlohmann::json j) {
  j.erase("wall_seconds");
  j.erase("accesses_per_second");
  j["trace"].erase("path");
  return j;
}

TEST(IntervalStats, LinesPartitionTheRunAndSumToTheTotals) {
  TempDir d;
  const auto t = gen(d, "random", "8M");
  const auto lines_path = d.file("i.jsonl"), with = d.file("with.json"), plain = d.file("p.json");
  cli_ok({"run", "--gpu", "gtx1080ti", "--trace", t, "--oversub", "50", "--interval-out",
          lines_path, "--interval-us", "20", "--stats-out", with, "-q"});
  cli_ok(
      {"run", "--gpu", "gtx1080ti", "--trace", t, "--oversub", "50", "--stats-out", plain, "-q"});
  const auto s = read_json(with);
  EXPECT_EQ(without_wall_clock(s), without_wall_clock(read_json(plain)));

  const auto lines = read_lines(lines_path);
  ASSERT_GT(lines.size(), 3u);
  std::uint64_t faults = 0, batches = 0, evictions = 0, htod = 0, dtoh = 0, accesses = 0,
                demand = 0;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const auto& l = lines[k];
    EXPECT_EQ(l["interval"].get<std::uint64_t>(), k);
    EXPECT_DOUBLE_EQ(l["start_ns"].get<double>(), 20000.0 * static_cast<double>(k));
    if (k + 1 < lines.size()) {
      EXPECT_DOUBLE_EQ(l["end_ns"].get<double>(), 20000.0 * (k + 1));
    }
    faults += l["gpu_faults"].get<std::uint64_t>();
    batches += l["fault_batches"].get<std::uint64_t>();
    evictions += l["evictions"].get<std::uint64_t>();
    htod += l["htod_bytes"].get<std::uint64_t>();
    dtoh += l["dtoh_bytes"].get<std::uint64_t>();
    accesses += l["accesses"].get<std::uint64_t>();
    demand += l["htod_bytes_by_cause"]["demand"].get<std::uint64_t>();
  }
  // sim_time_ns is whole nanoseconds; the lines keep the picoseconds.
  EXPECT_NEAR(lines.back()["end_ns"].get<double>(), s["sim_time_ns"].get<double>(), 1.0);
  EXPECT_EQ(faults, num(s["gpu_faults"]));
  EXPECT_EQ(batches, num(s["fault_batches"]));
  EXPECT_GT(evictions, 0u);
  EXPECT_EQ(evictions, num(s["evictions"]));
  EXPECT_EQ(htod, num(s["htod_bytes"]));
  EXPECT_EQ(dtoh, num(s["dtoh_bytes"]));
  EXPECT_EQ(accesses, num(s["accesses"]));
  EXPECT_EQ(demand, num(s["htod_bytes_by_cause"]["demand"]));
}

TEST(IntervalStats, ABusyGmmuWritesNoEntryIntoAnEarlierInterval) {
  // Under thrash the GMMU writes entry after entry without a trip through the event queue
  // (Gpu::on_gmmu_free) while nothing else is due. It must stop at every interval boundary: at
  // one entry per 500 ns no 1 us interval may count more than two, and the statistics are the
  // same with and without the lines.
  TempDir d;
  const auto t = gen(d, "random", "16M");
  const auto lines_path = d.file("i.jsonl"), with = d.file("with.json"), plain = d.file("p.json");
  const std::vector<std::string> run = {"run",     "--gpu", "titanv",
                                        "--trace", t,       "--oversub",
                                        "50",      "--set", "gpu.fault_write_interval_ns=500",
                                        "-q"};
  auto args = run;
  args.insert(args.end(),
              {"--interval-out", lines_path, "--interval-us", "1", "--stats-out", with});
  cli_ok(args);
  args = run;
  args.insert(args.end(), {"--stats-out", plain});
  cli_ok(args);
  const auto s = read_json(with);
  EXPECT_EQ(without_wall_clock(s), without_wall_clock(read_json(plain)));
  std::uint64_t faults = 0, most = 0, full = 0;
  for (const auto& l : read_lines(lines_path)) {
    const auto f = l["gpu_faults"].get<std::uint64_t>();
    faults += f;
    most = std::max(most, f);
    full += f == 2;
  }
  EXPECT_EQ(faults, num(s["gpu_faults"]));
  EXPECT_EQ(most, 2u);
  EXPECT_GT(full, 1000u);  // the GMMU is busy for long stretches
}

TEST(IntervalStats, BadFlagsAreUsageErrors) {
  TempDir d;
  const auto t = gen(d, "regular", "4M");
  auto r = cli({"run", "--gpu", "gtx1080ti", "--trace", t, "--interval-us", "10"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--interval-us: needs --interval-out FILE"), std::string::npos) << r.err;
  r = cli({"run", "--gpu", "gtx1080ti", "--trace", t, "--interval-out", d.file("i"),
           "--interval-us", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--interval-us: value must be in [0.001, 1e9]"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(d.file("i")));
  r = cli({"run", "--gpu", "gtx1080ti", "--trace", t, "--interval-out", d.file("no/such/dir/i")});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("no/such/dir/i"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace uvmsim::test
