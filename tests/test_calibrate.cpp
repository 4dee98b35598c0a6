// `uvmsim calibrate`: the fit on the GTX 1080 Ti measurements derived from calibration-facts.md,
// parameter recovery from simulated measurements, hold-out validation, error paths, and the
// provenance of every shipped GPU preset.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/config.h"
#include "test_util.h"

namespace uvmsim::test {
namespace {

const std::string kCal = std::string(UVMSIM_SOURCE_DIR) + "/configs/calibration/gtx1080ti/";

struct PTraces {
  std::string p1, p2, p3;
};

PTraces make_ptraces(const TempDir& d) {
  PTraces t{d.file("p1.uvt"), d.file("p2.uvt"), d.file("p3.uvt")};
  cli_ok({"gen", "touch", "--param", "offsets=0K,64K,128K,256K,512K,1024K", "--param",
          "delay_us=500", "-o", t.p1});
  cli_ok({"gen", "touch", "--param", "offsets=64K,192K,0K,256K,512K,1024K", "--param",
          "delay_us=500", "-o", t.p2});
  cli_ok({"gen", "touch", "--param", "offsets=64K,192K,320K,448K,0K,512K,1024K", "--param",
          "delay_us=500", "-o", t.p3});
  return t;
}

std::vector<std::string> gtx_args(const PTraces& t, const std::string& gpu = kCal + "base.json") {
  return {"calibrate",
          "--gpu",
          gpu,
          "--measured",
          kCal + "p1.jsonl",
          kCal + "p2.jsonl",
          kCal + "p3.jsonl",
          kCal + "dtoh-readback.jsonl",
          kCal + "memcpy-htod.jsonl",
          "--trace",
          t.p1,
          t.p2,
          t.p3,
          "none",
          "none"};
}

/// Every residual of the fit on the derived GTX 1080 Ti data is within 10 %, except the one
/// measurement no additive cost model reproduces (P2's third fault group, see docs/calibration.md).
void expect_within_ten_percent(const nlohmann::json& residuals) {
  int groups = 0, transfers = 0;
  for (const auto& r : residuals) {
    const std::string fam = r["family"];
    const double rel = r["rel"];
    const bool outlier = fam == "fault_group_time" && r["run"] == "p2" && r["index"] == 2;
    if (outlier) {
      EXPECT_LT(std::fabs(rel), 0.25) << r.dump();
      EXPECT_LT(rel, -0.15) << "the P2 outlier is under-predicted: " << r.dump();
      continue;
    }
    EXPECT_LE(std::fabs(rel), 0.10) << r.dump();
    groups += fam == "fault_group_time";
    transfers += fam.rfind("transfer_time", 0) == 0;
    if (fam.rfind("bytes.", 0) == 0 || fam == "fault_group_count") {
      EXPECT_EQ(rel, 0.0) << r.dump();
    }
  }
  EXPECT_EQ(groups, 18);     // 6 + 6 + 7 fault groups, one of them the outlier
  EXPECT_EQ(transfers, 20);  // HtoD sizes per run + three DtoH sizes
}

TEST(CalibrateGtx1080ti, FitReproducesTheDerivedMeasurementsAndIsTheShippedPreset) {
  TempDir d;
  const PTraces t = make_ptraces(d);
  auto args = gtx_args(t);
  const auto out = d.file("fit.json"), rep = d.file("rep.json");
  // Exactly what scripts/calibrate-gtx1080ti.sh runs to produce configs/gpus/gtx1080ti.json.
  args.insert(args.end(),
              {"--name", "gtx1080ti", "--max-evals", "400", "-o", out, "--report-json", rep});
  const auto r = cli_ok(args);
  EXPECT_NE(r.out.find("wrote calibrated preset"), std::string::npos);
  const auto report = read_json(rep);
  expect_within_ten_percent(report["fitted"]["residuals"]);
  EXPECT_EQ(report["curve_source"]["htod"], "migrations");
  EXPECT_EQ(report["curve_source"]["dtoh"], "migrations");

  // The shipped preset is this fit: same knob values, and evaluating it reproduces the data.
  const auto fitted = read_json(out),
             shipped = read_json(std::string(UVMSIM_SOURCE_DIR) + "/configs/gpus/gtx1080ti.json");
  for (const auto& p : report["parameters"]) {
    const std::string knob = p["knob"];
    const auto dot = knob.find('.');
    const auto g = knob.substr(0, dot), k = knob.substr(dot + 1);
    EXPECT_EQ(shipped[g][k], fitted[g][k]) << knob;
  }
  EXPECT_EQ(shipped["link"]["htod_curve"], fitted["link"]["htod_curve"]);
  EXPECT_EQ(shipped["link"]["dtoh_curve"], fitted["link"]["dtoh_curve"]);
  EXPECT_EQ(shipped["provenance"]["cost.page_ns"]["kind"], "fitted");

  EXPECT_EQ(fitted["gpu"]["name"], "gtx1080ti");
  auto eval = gtx_args(t, "gtx1080ti");
  const auto rep2 = d.file("eval.json");
  eval.insert(eval.end(), {"--evaluate", "--report-json", rep2});
  cli_ok(eval);
  expect_within_ten_percent(read_json(rep2)["fitted"]["residuals"]);
}

TEST(CalibrateGtx1080ti, MemcpyTableFitsTheCopyCurveWhenNoMigrationIsMeasured) {
  TempDir d;
  const auto rep = d.file("rep.json");
  cli_ok({"calibrate", "--gpu", "gtx1080ti", "--measured", kCal + "memcpy-htod.jsonl", "--trace",
          "none", "--report-json", rep});
  const auto report = read_json(rep);
  EXPECT_EQ(report["curve_source"]["htod"], "memcpy");
  int n = 0;
  for (const auto& r : report["fitted"]["residuals"]) {
    if (r["family"] != "memcpy_time.htod") continue;
    ++n;
    EXPECT_LE(std::fabs(r["rel"].get<double>()), 0.10) << r.dump();
  }
  EXPECT_EQ(n, 9);  // 4 KB ... 1 MB
}

TEST(Calibrate, RecoversKnownCostsFromSimulatedMeasurements) {
  // Ground truth: the simulator itself with changed costs. The fit must find them again.
  TempDir d;
  const auto trace = d.file("w.uvt"), m = d.file("truth.jsonl"), rep = d.file("rep.json");
  cli_ok({"gen", "stream", "--footprint", "4M", "--param", "iters=3", "-o", trace});
  cli_ok({"calibrate", "simulate", "--gpu", "gtx1080ti", "--trace", trace, "-o", m, "--set",
          "cost.batch_fixed_ns=9000", "--set", "cost.launch_overhead_ns=12000", "--set",
          "hbm.latency_ns=700"});
  cli_ok({"calibrate", "--gpu", "gtx1080ti", "--measured", m, "--trace", trace, "--fit",
          "cost.batch_fixed_ns,cost.launch_overhead_ns,hbm.latency_ns", "--max-evals", "200",
          "--no-curves", "--report-json", rep});
  const auto report = read_json(rep);
  std::map<std::string, double> got;
  for (const auto& p : report["parameters"]) got[p["knob"]] = p["value"];
  EXPECT_NEAR(got["cost.batch_fixed_ns"], 9000, 9000 * 0.05);
  EXPECT_NEAR(got["cost.launch_overhead_ns"], 12000, 12000 * 0.05);
  EXPECT_NEAR(got["hbm.latency_ns"], 700, 700 * 0.05);
  for (const auto& [fam, s] : report["fitted"]["summary"].items())
    EXPECT_LT(s["max_abs_rel"].get<double>(), 0.01) << fam;
}

TEST(Calibrate, HoldOutAndCrossValidationReportUnseenRuns) {
  TempDir d;
  const PTraces t = make_ptraces(d);
  auto args = gtx_args(t);
  const auto rep = d.file("rep.json");
  args.insert(args.end(),
              {"--holdout", "p3", "--cross-validate", "--max-evals", "60", "--report-json", rep});
  const auto r = cli_ok(args);
  EXPECT_NE(r.out.find("residuals on held-out runs"), std::string::npos);
  EXPECT_NE(r.out.find("cross-validation"), std::string::npos);
  const auto report = read_json(rep);
  bool p3 = false;
  for (const auto& x : report["held_out"]["residuals"]) {
    EXPECT_EQ(x["run"], "p3");
    p3 = true;
  }
  EXPECT_TRUE(p3);
  EXPECT_TRUE(report["cross_validation"].contains("p1"));
  EXPECT_TRUE(report["cross_validation"].contains("p2"));
  EXPECT_FALSE(report["cross_validation"].contains("p3"));  // already held out

  // Deterministic: the same inputs give the same report.
  const auto rep2 = d.file("rep2.json");
  args.back() = rep2;
  cli_ok(args);
  EXPECT_EQ(read_json(rep), read_json(rep2));
}

TEST(Calibrate, BadArgumentsAreOneLineErrors) {
  TempDir d;
  const auto m = kCal + "p1.jsonl";
  auto err = [&](std::vector<std::string> a) {
    a.insert(a.begin(), "calibrate");
    const auto r = cli(a);
    EXPECT_NE(r.code, 0);
    return r.err;
  };
  EXPECT_NE(err({"--gpu", "gtx1080ti", "--measured", m}).find("0 trace(s) for 1 measurement(s)"),
            std::string::npos);
  EXPECT_NE(err({"--gpu", "gtx1080ti", "--measured", m, "--trace", d.file("none.uvt")})
                .find("none.uvt: --trace: file not found"),
            std::string::npos);
  EXPECT_NE(err({"--gpu", "gtx1080ti", "--measured", m, "--trace", "none", "--fit", "cost.nope"})
                .find("--fit: cost.nope: unknown configuration key"),
            std::string::npos);
  EXPECT_NE(err({"--gpu", "gtx1080ti", "--measured", m, "--trace", "none", "--fit", "gpu.num_sms"})
                .find("only real-valued knobs"),
            std::string::npos);
  EXPECT_NE(err({"--gpu", "gtx1080ti", "--measured", m, "--trace", "none", "--holdout", "p9"})
                .find("--holdout: p9: no measured run"),
            std::string::npos);
  EXPECT_NE(err({"--gpu", "gtx1080ti", "--measured", m, "--trace", "none", "--holdout", "0"})
                .find("every run is held out"),
            std::string::npos);
  EXPECT_NE(err({"--gpu", "gtx1080ti", "--measured", m, "--trace", "none", "--bound", "x"})
                .find("expected KNOB=LO:HI"),
            std::string::npos);
  EXPECT_NE(err({"--gpu", "gtx1080ti", "--measured", m, "--trace", "none", "--algorithm", "sgd"})
                .find("unknown optimizer 'sgd'"),
            std::string::npos);
  EXPECT_NE(err({"--measured", m, "--trace", "none"}).find("--gpu: required"), std::string::npos);
  EXPECT_EQ(cli({"calibrate", "--help"}).code, 0);
}

// ----------------------------------------------------------------------------------------------
// GPU presets.

const std::vector<std::string> kPresets = {"gtx1080ti", "titanv",    "v100",      "rtx3080ti",
                                           "rtx3090",   "a100-40gb", "a100-80gb", "h100-pcie",
                                           "h100-sxm",  "gh200"};

TEST(Presets, AllTenLoadWithPublishedShapes) {
  std::map<std::string, std::pair<unsigned, double>> sms_bw = {
      {"gtx1080ti", {28, 484}},   {"titanv", {80, 652.8}},    {"v100", {80, 900}},
      {"rtx3080ti", {80, 912}},   {"rtx3090", {82, 936}},     {"a100-40gb", {108, 1555}},
      {"a100-80gb", {108, 2039}}, {"h100-pcie", {114, 2000}}, {"h100-sxm", {132, 3350}},
      {"gh200", {132, 3400}}};
  for (const auto& name : kPresets) {
    const SimConfig c = SimConfig::from_preset(name);
    EXPECT_EQ(c.gpu.name, name);
    EXPECT_EQ(c.gpu.num_sms, sms_bw[name].first) << name;
    EXPECT_DOUBLE_EQ(c.hbm.bandwidth_gbps, sms_bw[name].second) << name;
    EXPECT_FALSE(c.link.htod_curve.points.empty());
  }
  const auto names = SimConfig::preset_names();
  for (const auto& name : kPresets)
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

TEST(Presets, EveryNumberStatesWhereItComesFrom) {
  for (const auto& name : kPresets) {
    const auto doc = read_json(SimConfig::find_preset(name).string());
    ASSERT_TRUE(doc.contains("provenance")) << name;
    const auto& prov = doc["provenance"];
    for (const auto& [group, body] : doc.items()) {
      if (!body.is_object() || group == "provenance" || group == "calibration") continue;
      for (const auto& [key, v] : body.items()) {
        const std::string knob = group + "." + key;
        EXPECT_TRUE(prov.contains(knob) || prov.contains(group + ".*"))
            << name << ": " << knob << " has no provenance";
      }
    }
  }
}

TEST(Presets, ProvenanceIsValidatedAndUnknownKeysStillRejected) {
  TempDir d;
  auto load = [&](const std::string& body) -> std::string {
    const auto p = d.file("g.json");
    std::ofstream(p) << body;
    try {
      SimConfig::from_preset(p);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(load(R"({"gpu": {"num_sms": 4}, "provenance": {"gpu.num_sms": "published",
                 "cost.*": {"kind": "fitted", "source": "x"}}, "calibration": {"any": 1},
                 "link": {"htod_curve": [[4096, 5000]], "dtoh_curve": [[4096, 5000]]}})"),
            "");
  EXPECT_NE(load(R"({"provenance": {"gpu.nope": "measured"}})")
                .find("provenance.gpu.nope: not a configuration key"),
            std::string::npos);
  EXPECT_NE(load(R"({"provenance": {"gpu.num_sms": "guessed"}})").find("provenance must be one of"),
            std::string::npos);
  EXPECT_NE(load(R"({"provenance": {"gpu.num_sms": {"kind": "measured", "by": "me"}}})")
                .find("provenance.gpu.num_sms.by: unknown field"),
            std::string::npos);
  EXPECT_NE(load(R"({"provenance": {"zzz.*": "default"}})").find("not a configuration key"),
            std::string::npos);
  EXPECT_NE(load(R"({"gpu": {"num_sms": 4}, "extras": {"a": 1}})")
                .find("extras.a: unknown configuration key"),
            std::string::npos);
  const SimConfig c = SimConfig::from_preset("h100-sxm");
  EXPECT_EQ(c.provenance["link.htod_curve"]["kind"], "extrapolated");
}

}  // namespace
}  // namespace uvmsim::test
