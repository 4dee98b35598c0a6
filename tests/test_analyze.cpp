// `uvmsim analyze` (profile-derived hints, traces/analyze.h) and `uvmsim run --hints FILE`: the
// profile reproduces the generators' exact static hints where those are exact, is labelled
// "profile", and bad hints files are one-line errors naming the file and field.
#include <gtest/gtest.h>

#include <fstream>

#include "placement_test_util.h"
#include "traces/analyze.h"

namespace uvmsim::test {
namespace {

/// The launch sequence with each launch's next uses in allocation order.
std::vector<trace::LaunchHint> sorted(std::vector<trace::LaunchHint> l) {
  for (auto& x : l) std::sort(x.next_use.begin(), x.next_use.end());
  return l;
}

TEST(Analyze, ProfileEqualsExactStaticHints) {
  TempDir d;
  for (const auto& [name, fp, params] :
       std::vector<std::tuple<std::string, std::string, std::vector<std::string>>>{
           {"gramschmidt", "3M", {"iters=3"}},
           {"mm-tiled", "768K", {"tile=16"}},
           {"mvt", "1M", {}},
           {"floyd-warshall", "512K", {"passes=3"}}}) {
    SCOPED_TRACE(name);
    const auto t = gen(d, name, fp, params);
    trace::TraceReader r(t);
    const trace::Hints& st = *r.metadata().hints;
    const trace::Hints p = trace::profile_hints(r);
    EXPECT_EQ(p.source, trace::HintSource::Profile);
    EXPECT_EQ(p.allocations, st.allocations);
    EXPECT_EQ(sorted(p.launches), sorted(st.launches));  // the sequence and next uses are exact
    for (const auto& sk : st.kernels) {
      const trace::KernelHint* pk = p.kernel(sk.kernel);
      ASSERT_NE(pk, nullptr) << sk.name;
      for (const auto& sr : sk.refs) {
        if (sr.conditional || sr.data_dependent) continue;  // static counts are upper bounds
        const auto it = std::find_if(pk->refs.begin(), pk->refs.end(),
                                     [&](const trace::RefHint& x) { return x.id == sr.id; });
        ASSERT_NE(it, pk->refs.end()) << sk.name << " ref " << sr.id;
        EXPECT_EQ(it->alloc, sr.alloc);
        EXPECT_EQ(it->kind, sr.kind);
        for (std::int32_t i = 0; i < 3; ++i) {
          EXPECT_EQ(it->count.at(i) * it->bytes, sr.count.at(i) * sr.bytes)
              << sk.name << " ref " << sr.id << " it " << i;
        }
        // Where the static hints have a window the profile finds the same one, its span exact
        // up to the first-lane-per-page resolution of the records. (It may find windows where
        // the static hints have none: offsets that move only because a guard depends on the
        // iteration, like gramschmidt's j > k.)
        if (sr.window) {
          ASSERT_TRUE(it->window.has_value()) << sk.name << " ref " << sr.id;
          for (std::int32_t i = 0; i < 3; ++i) {
            EXPECT_EQ(it->window->start.at(i), sr.window->start.at(i)) << sk.name << sr.id;
            const auto a = it->window->span.at(i), b = sr.window->span.at(i);
            EXPECT_LE(a > b ? a - b : b - a, 4096u) << sk.name << " ref " << sr.id;
          }
        }
      }
    }
    // A profile validates as a hints file and survives the JSON round trip.
    EXPECT_EQ(trace::Hints::from_json(p.to_json(), "profile"), p);
  }
}

TEST(Analyze, CliWritesProfileHintsUsableByRun) {
  TempDir d;
  const auto t = gen(d, "gramschmidt", "6M", {"iters=4"});
  const auto h = d.file("h.json");
  const auto r = cli_ok({"analyze", t, "-o", h});
  EXPECT_NE(r.out.find("wrote " + h), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(h + ".partial"));
  const trace::Hints loaded = trace::Hints::load(h);
  EXPECT_EQ(loaded.source, trace::HintSource::Profile);
  // Without -o the hints go to standard output.
  const auto o = cli_ok({"analyze", t});
  EXPECT_EQ(trace::Hints::from_json(nlohmann::json::parse(o.out), "stdout"), loaded);
  // SUV on the profile: same decisions as on the exact static hints of this workload.
  const auto st = run_sim(t, {"engine.placement=suv"}, std::nullopt, 50.0);
  const auto pr = run_sim(t, {"engine.placement=suv", "engine.hints=" + h}, std::nullopt, 50.0);
  EXPECT_EQ(pr["trace"]["hints"], h + " (profile)");
  EXPECT_EQ(st["trace"]["hints"], "embedded (static)");
  EXPECT_EQ(pr["policies"]["placement"]["hints"], "profile");
  EXPECT_EQ(num(pr["gpu_faults"]), num(st["gpu_faults"]));
  EXPECT_EQ(pr["sim_time_ns"], st["sim_time_ns"]);
  // --hints on the command line is the same knob.
  const auto run = cli_ok({"run", "--gpu", "gtx1080ti", "--trace", t, "--oversub", "50",
                           "--placement", "suv", "--hints", h, "--stats-out", d.file("s.json")});
  EXPECT_EQ(read_json(d.file("s.json"))["trace"]["hints"], h + " (profile)");
}

TEST(Analyze, Errors) {
  TempDir d;
  const auto help = cli_ok({"analyze", "--help"});
  EXPECT_NE(help.out.find("profile"), std::string::npos);
  EXPECT_NE(help.out.find("--hints"), std::string::npos);
  auto r = cli({"analyze"});
  EXPECT_EQ(r.code, 2);  // a usage error
  EXPECT_NE(r.err.find("a trace file is required"), std::string::npos);
  r = cli({"analyze", d.file("missing.uvt")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("missing.uvt"), std::string::npos);
  const auto t = gen(d, "mvt", "1M");
  r = cli({"analyze", t, "-o", d.file("no/such/dir/h.json")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot write the hints file"), std::string::npos);
}

TEST(Analyze, BadHintsFilesNameTheFileAndField) {
  TempDir d;
  const auto t = gen(d, "mvt", "1M");
  const auto good = d.file("good.json");
  cli_ok({"analyze", t, "-o", good});
  auto write = [&](const std::string& name, const nlohmann::json& j) {
    const auto f = d.file(name);
    std::ofstream(f) << j.dump();
    return f;
  };
  auto run_err = [&](const std::string& hints) {
    const auto r = cli({"run", "--gpu", "gtx1080ti", "--trace", t, "--oversub", "50", "--placement",
                        "suv", "--hints", hints});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
    return r.err;
  };
  nlohmann::json j = read_json(good);
  j["version"] = 2;
  const auto v2 = write("v2.json", j);
  EXPECT_NE(run_err(v2).find(v2 + ": hints.version: unsupported hints version 2"),
            std::string::npos);
  j = read_json(good);
  j["kernels"][0]["uses"][0]["reads"] = "many";
  const auto bad = write("bad.json", j);
  EXPECT_NE(run_err(bad).find(bad + ": hints.kernels[0].uses[0].reads"), std::string::npos);
  // Hints of another program: the allocations do not match this trace.
  const auto other = gen(d, "bicg", "1M");
  const auto oh = d.file("other.json");
  cli_ok({"analyze", other, "-o", oh});
  EXPECT_NE(run_err(oh).find(oh + ": hints.allocations[0]"), std::string::npos);
  EXPECT_NE(run_err(d.file("none.json")).find("none.json: open: cannot read the hints file"),
            std::string::npos);
  const auto garbage = d.file("garbage.json");
  std::ofstream(garbage) << "{ not json";
  EXPECT_NE(run_err(garbage).find(garbage + ": not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace uvmsim::test
