// Bad input never crashes: corrupt, truncated and wrong-version traces, unknown or invalid
// configuration values each give a one-line error naming the file or field, and a non-zero exit.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/error.h"
#include "tests/sweep_test_util.h"
#include "tests/test_util.h"

namespace uvmsim::test {
namespace {

std::string make_trace(const TempDir& d) {
  const auto t = d.file("ok.uvt");
  cli_ok({"gen", "regular", "--footprint", "8M", "-o", t});
  return t;
}

std::string read_all(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_all(const std::string& p, const std::string& data) {
  std::ofstream(p, std::ios::binary) << data;
}

void expect_one_line_error(const CliResult& r, const std::string& needle) {
  EXPECT_NE(r.code, 0);
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
}

CliResult run_on(const std::string& trace, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"run", "--gpu", "gtx1080ti", "--trace", trace, "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return cli(a);
}

TEST(RunErrors, CorruptTrace) {
  TempDir d;
  const auto ok = make_trace(d);
  std::string data = read_all(ok);
  const auto bad = d.file("corrupt.uvt");
  data[data.size() / 2] ^= 0x5a;  // inside the compressed chunks
  write_all(bad, data);
  expect_one_line_error(run_on(bad), bad);
}

TEST(RunErrors, TruncatedTrace) {
  TempDir d;
  const std::string data = read_all(make_trace(d));
  const auto bad = d.file("truncated.uvt");
  for (std::size_t cut : {std::size_t{3}, data.size() / 3, data.size() - 5}) {
    write_all(bad, data.substr(0, cut));
    expect_one_line_error(run_on(bad), bad);
  }
}

TEST(RunErrors, WrongVersionTrace) {
  TempDir d;
  std::string data = read_all(make_trace(d));
  const auto bad = d.file("v99.uvt");
  data[8] = 99;  // u32 format version follows the 8-byte magic
  write_all(bad, data);
  expect_one_line_error(run_on(bad), "version");
}

TEST(RunErrors, NotATrace) {
  TempDir d;
  const auto bad = d.file("junk.uvt");
  write_all(bad, "this is not a trace file at all, just some text\n");
  expect_one_line_error(run_on(bad), bad);
  expect_one_line_error(run_on(d.file("missing.uvt")), "missing.uvt");
}

TEST(RunErrors, UnknownSetKey) {
  TempDir d;
  expect_one_line_error(run_on(make_trace(d), {"--set", "driver.no_such_knob=3"}),
                        "driver.no_such_knob");
}

TEST(RunErrors, InvalidValues) {
  TempDir d;
  const auto t = make_trace(d);
  expect_one_line_error(run_on(t, {"--set", "driver.prefetch_threshold=101"}),
                        "driver.prefetch_threshold");
  expect_one_line_error(run_on(t, {"--set", "driver.replay_policy=sometimes"}),
                        "driver.replay_policy");
  expect_one_line_error(run_on(t, {"--set", "gpu.num_sms=2.5"}), "gpu.num_sms");
  expect_one_line_error(run_on(t, {"--set", "thrashing.enable=maybe"}), "thrashing.enable");
  expect_one_line_error(run_on(t, {"--set", "novalue"}), "KEY=VALUE");
  expect_one_line_error(run_on(t, {"--oversub", "-5"}), "--oversub");
  expect_one_line_error(run_on(t, {"--hbm", "lots"}), "--hbm");
  expect_one_line_error(run_on(t, {"--eviction", "nonesuch"}), "nonesuch");
  expect_one_line_error(run_on(t, {"--prefetch", "nonesuch"}), "nonesuch");
  expect_one_line_error(cli({"run", "--gpu", "gtx9999", "--trace", t}), "gtx9999");
  expect_one_line_error(cli({"run", "--gpu", "gtx1080ti"}), "--trace");
  expect_one_line_error(run_on(t, {"--bogus-flag"}), "bogus");
}

TEST(RunErrors, LivelockStopsWithOneLineError) {
  // Random page touch over four 2 MB blocks with room for two: under the BATCH replay policy
  // the driver fetches the next batch before the last one's replay, and every batch evicts
  // what the previous one brought in before its warps retry, so no access ever completes.
  // Without the watchdog this ran to the clock's horizon (1e6 s) with a growing copy backlog.
  TempDir d;
  const auto t = d.file("r8.uvt");
  cli_ok({"gen", "random", "--footprint", "8M", "-o", t});
  const std::vector<std::string> base = {
      "run", "--gpu",     "titanv", "--trace", t,
      "-q",  "--oversub", "50",     "--set",   "driver.replay_policy=batch"};
  auto args = base;
  args.insert(args.end(), {"--set", "engine.livelock_batches=300"});
  auto r = cli(args);
  expect_one_line_error(r, t + ": engine.livelock_batches: livelock: 300 fault batches in a row "
                               "completed no warp access (none yet; 0 accesses "
                               "completed");
  EXPECT_EQ(r.code, 1);
  // Switched off, the run goes on until something else stops it (here the time limit).
  args = base;
  args.insert(args.end(), {"--set", "engine.livelock_batches=0", "--set", "engine.max_sim_time_s=1",
                           "--stats-out", d.file("s.json")});
  r = cli(args);
  EXPECT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_all(d.file("s.json")));
  EXPECT_TRUE(j["truncated"].get<bool>());
  EXPECT_EQ(j["accesses"].get<std::uint64_t>(), 0u);
  EXPECT_GT(j["fault_batches"].get<std::uint64_t>(), 300u);
  // The driver's default policy waits for each replay and completes every access.
  r = cli({"run", "--gpu", "titanv", "--trace", t, "-q", "--oversub", "50", "--stats-out",
           d.file("f.json")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_all(d.file("f.json")))["accesses"].get<std::uint64_t>(),
            2048u);
}

TEST(RunErrors, BadPresetFileNamesFileAndKey) {
  TempDir d;
  const auto t = make_trace(d);
  const auto p = d.file("mygpu.json");
  write_all(p, R"({"gpu": {"num_sms": 8, "warp_size": 32}})");
  expect_one_line_error(cli({"run", "--gpu", p, "--trace", t}), "gpu.warp_size");
  expect_one_line_error(cli({"run", "--gpu", p, "--trace", t}), p);
  write_all(p, R"({"hbm": {"capacity": -1}})");
  expect_one_line_error(cli({"run", "--gpu", p, "--trace", t}), "hbm.capacity");
  write_all(p, "{ not json");
  expect_one_line_error(cli({"run", "--gpu", p, "--trace", t}), p);
}

TEST(RunErrors, UsageErrorsExitTwoDataErrorsOne) {
  TempDir d;
  const auto t = make_trace(d);
  // What the user asked for: options, presets, knob values.
  EXPECT_EQ(run_on(t, {"--set", "driver.prefetch_threshold=101"}).code, 2);
  EXPECT_EQ(run_on(t, {"--eviction", "nonesuch"}).code, 2);
  EXPECT_EQ(cli({"run", "--gpu", "gtx9999", "--trace", t}).code, 2);
  EXPECT_EQ(cli({"run", "--gpu", "gtx1080ti"}).code, 2);
  EXPECT_EQ(run_on(t, {"--oversub", "-5"}).code, 2);
  EXPECT_EQ(run_on(t, {"--bogus-flag"}).code, 2);
  // The data: a trace that is missing or damaged.
  EXPECT_EQ(run_on(d.file("missing.uvt")).code, 1);
  write_all(d.file("junk.uvt"), "junk");
  EXPECT_EQ(run_on(d.file("junk.uvt")).code, 1);
}

TEST(RunErrors, ValuesWithNewlinesGiveOneLineErrors) {
  // Fuzzing defect 12: a value quoted in an error could split it over two lines.
  TempDir d;
  const auto t = make_trace(d);
  expect_one_line_error(run_on(t, {"--set", "driver.replay_policy=once\nbatch"}),
                        "driver.replay_policy");
  expect_one_line_error(run_on(t, {"--set", "x.y\n=1"}), "x.y\\n");
  expect_one_line_error(run_on(t, {"--eviction", "lru\r\nx"}), "lru\\r\\nx");
  expect_one_line_error(cli({"run", "--gpu", "gtx\n1080ti", "--trace", t}), "gtx\\n1080ti");
  expect_one_line_error(run_on(t, {"--oversub", "1\n2"}), "'1\\n2'");
  expect_one_line_error(run_on(d.file("a\nb.uvt")), "a\\nb.uvt");
  expect_one_line_error(cli({"no\ncommand"}), "unknown command 'no\\ncommand'");
  // Other control characters are shown escaped too (no terminal escape sequences).
  expect_one_line_error(run_on(t, {"--eviction", "a\x1b[2Jb"}), "a\\x1b[2Jb");
  EXPECT_EQ(one_line("tab\there\x7f"), "tab\\there\\x7f");
}

TEST(RunErrors, FullDiskLeavesNoTruncatedStatsOrEvents) {
  // Fuzzing defect 11: --stats-out / --events-out on a full disk left truncated files.
  TempDir d;
  const auto t = make_trace(d);
  const std::string dir = d.file("disk");
  SmallTmpfs disk(dir, 64 << 20);
  ASSERT_EQ(disk.error(), "");
  const std::string stats = dir + "/stats.json", events = dir + "/events.csv";
  write_all(stats, "previous content\n");
  ASSERT_TRUE(disk.resize(disk.used()));  // full
  auto r = run_on(t, {"--stats-out", stats});
  expect_one_line_error(r, stats + ": --stats-out: write failed (No space left on device)");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(read_all(stats), "previous content\n");  // the old file is intact
  r = run_on(t, {"--events-out", events});
  expect_one_line_error(r, events + ": --events-out: write failed (No space left on device)");
  EXPECT_FALSE(std::filesystem::exists(events));
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.exists();
  EXPECT_EQ(files, 1u);  // no temporaries left
  // Space freed: both are written completely.
  ASSERT_TRUE(disk.resize(64 << 20));
  r = run_on(t, {"--stats-out", stats, "--events-out", events});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_json(stats)["accesses"], 2048);
  const std::string csv = read_all(events);
  EXPECT_EQ(csv.rfind("time_ns,event,batch,va,bytes,direction,cause,pages,duration_ns\n", 0), 0u);
  EXPECT_EQ(csv.back(), '\n');
  // A directory that does not exist fails before simulating, naming the file.
  expect_one_line_error(run_on(t, {"--stats-out", d.file("no/such/s.json")}),
                        d.file("no/such/s.json") + ": --stats-out: cannot create");
}

TEST(Config, SetAndResolveKnobs) {
  SimConfig c = SimConfig::from_preset("gtx1080ti");
  EXPECT_EQ(c.gpu.num_sms, 28u);
  EXPECT_EQ(c.hbm.capacity, std::uint64_t{11} << 30);
  c.set_from_string("driver.replay_policy=once");
  EXPECT_EQ(c.driver.replay_policy, ReplayPolicy::Once);
  c.set_from_string("access_counters.granularity=64K");
  EXPECT_EQ(c.access_counters.granularity, 64u << 10);
  EXPECT_THROW(c.set_from_string("access_counters.granularity=1G"), UserError);
  c.set_from_string("policy.lfu.decay=0.5");
  EXPECT_EQ(c.to_json()["policy"]["lfu"]["decay"].get<double>(), 0.5);
  // Round trip: the resolved configuration re-applies to the same configuration.
  SimConfig d;
  d.apply_json(c.to_json(), "roundtrip");
  EXPECT_EQ(d.to_json().dump(), c.to_json().dump());
  for (const auto& name : {"gtx1080ti", "titanv", "rtx3090"})
    EXPECT_NO_THROW(SimConfig::from_preset(name)) << name;
}

TEST(Config, TransferCurveInterpolates) {
  TransferCurve c;
  c.points = {{4096, 1000.0}, {65536, 5000.0}};
  EXPECT_EQ(c.time_ps(4096), 1000000u);
  EXPECT_EQ(c.time_ps(65536), 5000000u);
  EXPECT_EQ(c.time_ps((4096 + 65536) / 2), 3000000u);
  EXPECT_EQ(c.time_ps(65536 + 61440), 9000000u);  // extrapolated at the last slope
  EXPECT_EQ(c.time_ps(1024), 500000u);            // never below half the first point
}

}  // namespace
}  // namespace uvmsim::test
