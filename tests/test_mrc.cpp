// `uvmsim analyze --mrc` (issue 16, item 3): LRU capacity curves from one pass of stack
// distances. Exact values on a crafted trace, the one-pass curve against a brute-force LRU of
// the same use stream at every size, SHARDS sampling, the suggested levels, and the errors.
#include <gtest/gtest.h>

#include <list>

#include "models/occupancy.h"
#include "policies/eviction/opt/program_order.h"
#include "sim/mrc.h"
#include "tests/policy_test_engine.h"
#include "tests/sweep_test_util.h"
#include "tests/test_util.h"

namespace uvmsim::test {
namespace {

TEST(Mrc, ExactCurveOfACraftedTrace) {
  TempDir d;
  const auto t = d.file("c.uvt"), csv = d.file("c.csv");
  // Stack distances: 0 1 2 3 cold, then 0 (3 since), 1 (3), 4 cold, 2 (4).
  write_one_warp_trace(t, {0, 1, 2, 3, 0, 1, 4, 2});
  const auto r = cli_ok({"analyze", "--mrc", t, "--bucket-steps", "1", "-o", csv});
  EXPECT_EQ(r.out, "mrc: " + t +
                       ": 8 managed 2 MB chunks, 5 used; 8 region uses in buckets of 1 steps (8 "
                       "records, concurrent schedule); exact\n"
                       "suggested oversubscription levels (GPU memory: chunk misses, evictions):\n"
                       "  --oversub 100      4 chunks: 6 misses, 2 evictions\n"
                       "  --oversub 166      3 chunks: 8 misses, 5 evictions\n"
                       "suggested: 100,166\n"
                       "mrc: wrote " +
                       csv + "\n");
  EXPECT_EQ(read_text(csv),
            "chunks,gpu_bytes,oversub_pct,misses,evictions,htod_bytes,dtoh_bytes,suggested\n"
            "1,2097152,700.0000,8,7,32768,28672,0\n"
            "2,4194304,300.0000,8,6,32768,24576,0\n"
            "3,6291456,166.6667,8,5,32768,20480,1\n"
            "4,8388608,100.0000,6,2,24576,8192,1\n"
            "5,10485760,60.0000,5,0,20480,0,0\n"
            "6,12582912,33.3333,5,0,20480,0,0\n"
            "7,14680064,14.2857,5,0,20480,0,0\n"
            "8,16777216,0.0000,5,0,20480,0,0\n");
  // Without -o: the CSV on stdout (here nothing suggested), the summary on stderr.
  const auto s = cli_ok({"analyze", "--mrc", t, "--bucket-steps", "1", "--suggest", "0"});
  std::string unmarked = read_text(csv);
  for (std::size_t i = 0; (i = unmarked.find(",1\n", i)) != std::string::npos;)
    unmarked.replace(i, 3, ",0\n");
  EXPECT_EQ(s.out, unmarked);
  EXPECT_EQ(s.err.rfind("mrc: " + t + ": 8 managed", 0), 0u) << s.err;
}

/// LRU misses of `uses` (regions, in order) in a memory of `c` chunks, by simulation.
std::uint64_t lru_misses(const std::vector<std::uint32_t>& uses, std::size_t c) {
  std::list<std::uint32_t> lru;  // most recent first
  std::uint64_t misses = 0;
  for (const auto r : uses) {
    auto it = std::find(lru.begin(), lru.end(), r);
    if (it != lru.end()) {
      lru.erase(it);
    } else {
      ++misses;
      if (lru.size() == c) lru.pop_back();
    }
    lru.push_front(r);
  }
  return misses;
}

TEST(Mrc, OnePassEqualsLruSimulatedAtEverySize) {
  TempDir d;
  const auto t = d.file("cfd.uvt");
  cli_ok({"gen", "cfd", "--footprint", "24M", "--param", "iters=2", "-o", t});
  const SimConfig cfg = SimConfig::from_preset("titanv");
  trace::TraceReader reader(t);
  mrc::Options o;
  o.run_keys = 4096;  // spilled and merged
  mrc::Curve c = mrc::compute(reader, cfg, o);
  // The same use stream, brute force.
  trace::TraceReader again(t);
  VaSpace va;
  va.build(again.metadata().allocations, cfg.driver.managed_tail_pow2);
  opt::ProgramOrderOptions po;
  po.threadblocks = false;
  po.tmpdir = d.file("");
  opt::ProgramOrder order(
      again, va,
      [&](const trace::KernelInfo* k) {
        return k ? threadblocks_per_sm(cfg.gpu, *k) * cfg.gpu.num_sms : 1;
      },
      po);
  std::vector<std::uint32_t> uses;
  order.uses().visit(false, [&](std::uint64_t k) { uses.push_back(opt::key_region(k)); });
  ASSERT_EQ(c.uses, uses.size());
  ASSERT_EQ(c.points.size(), c.managed_chunks);
  for (const auto& p : c.points) {
    EXPECT_EQ(p.misses, static_cast<double>(lru_misses(uses, p.chunks))) << p.chunks << " chunks";
    EXPECT_EQ(p.evictions, p.misses - std::min<double>(static_cast<double>(p.chunks),
                                                       static_cast<double>(c.regions_used)));
  }
  EXPECT_EQ(c.managed_chunks, 15u);
  EXPECT_EQ(c.regions_used, 15u);
  // --oversub values that give each size back exactly.
  for (const auto& p : c.points) {
    const double pct = std::stod(c.oversub_for(p.chunks));
    EXPECT_EQ(static_cast<std::uint64_t>(
                  std::floor(static_cast<double>(c.managed_chunks) / (1.0 + pct / 100.0))),
              p.chunks);
  }
}

TEST(Mrc, ShardsSamplingScalesTheKeptRegions) {
  TempDir d;
  const auto t = d.file("bs.uvt");
  cli_ok({"gen", "blackscholes", "--footprint", "128M", "--param", "iters=3", "-o", t});
  const SimConfig cfg = SimConfig::from_preset("titanv");
  mrc::Options exact_o, half_o;
  half_o.sample = 0.5;
  trace::TraceReader r1(t), r2(t);
  const mrc::Curve exact = mrc::compute(r1, cfg, exact_o);
  const mrc::Curve half = mrc::compute(r2, cfg, half_o);
  EXPECT_EQ(exact.sampled_regions, 65u);
  EXPECT_EQ(half.sampled_regions, 27u);  // hash(region) < R * 2^24: 27 of 65, not 32.5
  EXPECT_EQ(exact.regions_used, 65u);
  EXPECT_EQ(half.regions_used, 65u);  // known exactly either way
  EXPECT_EQ(half.sampled_used, 27u);
  EXPECT_LT(half.uses, exact.uses);
  // A cyclic sweep: every size below the footprint misses on every use. Scaled by the kept
  // fraction (27/65), not by R, the estimate is exact here; scaled by R it was 17 % low.
  const auto& e = exact.points[31];
  const auto& h = half.points[31];
  EXPECT_EQ(e.misses, 195);
  EXPECT_DOUBLE_EQ(h.misses, 195);
  EXPECT_EQ(exact.points.back().misses, 65);
}

TEST(Mrc, FigureIsDrawnByTheReportScript) {
  TempDir d;
  const auto t = d.file("c.uvt"), csv = d.file("c.csv"), fig = d.file("fig");
  write_one_warp_trace(t, {0, 1, 2, 3, 0, 1, 4, 2});
  const auto r = cli_ok({"analyze", "--mrc", t, "--bucket-steps", "1", "-o", csv, "--figure", fig});
  EXPECT_NE(r.out.find("wrote " + fig + "/mrc.png\n"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(fig + "/mrc.svg"));
  const auto j = read_json(fig + "/figures.json");
  EXPECT_EQ(j["figures"]["mrc"]["sizes"], 8);
  EXPECT_EQ(j["figures"]["mrc"]["max_misses"], 8);
  EXPECT_EQ(j["figures"]["mrc"]["suggested_oversub_pct"].size(), 2u);
  // `uvmsim report` draws the same file.
  EXPECT_EQ(uvmsim({"report", csv, "--out", d.file("again")}).status.ok(), true);
  EXPECT_TRUE(std::filesystem::exists(d.file("again") + "/mrc.png"));
}

TEST(Mrc, UsageErrors) {
  TempDir d;
  const auto t = d.file("c.uvt");
  write_one_warp_trace(t, {0, 1});
  auto r = cli({"analyze", "--mrc", t, "--sample", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "uvmsim analyze: error: --sample: value must be in (0, 1], got 0.000000\n");
  r = cli({"analyze", "--mrc", t, "--figure", d.file("fig")});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "uvmsim analyze: error: --figure: needs -o CSV (the figure is drawn from the file)\n");
  r = cli({"analyze", t, "--figure", d.file("fig")});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "uvmsim analyze: error: --figure: only with --mrc\n");
  r = cli({"analyze", "--mrc", t, "--gpu", "nosuchgpu"});
  EXPECT_EQ(r.code, 2);
  r = cli({"analyze", "--mrc", t, "-o", "/nonexistent/x.csv"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/x.csv"), std::string::npos);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  // --help lists every option.
  const auto h = cli_ok({"analyze", "--help"});
  for (const char* o : {"--mrc", "--gpu", "--sample", "--suggest", "--figure", "--schedule",
                        "--bucket-steps", "--tmpdir", "--python", "--script"})
    EXPECT_NE(h.out.find(o), std::string::npos) << o;
}

}  // namespace
}  // namespace uvmsim::test
