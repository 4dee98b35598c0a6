// `uvmsim validate` (docs/validation.md): expression functions and templates, the data-file
// loader and its one-line errors, scoring (ratio error, geomean, Spearman), and the command end
// to end on a small data file and on the project's CI subset.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "sim/check/relation.h"
#include "sim/validate/dataset.h"
#include "sim/validate/score.h"
#include "tests/sweep_test_util.h"
#include "tests/test_util.h"

namespace uvmsim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using OJ = nlohmann::ordered_json;
using test::TempDir;
using validate::Source;
using validate::Subset;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

double eval(const std::string& text, const std::map<std::string, double>& vals = {}) {
  const auto e = check::Expression::parse(text, "t");
  return e.evaluate([&](const check::Relation::Ref& r) { return vals.at(r.metric + "@" + r.run); });
}

TEST(ValidateExpression, FunctionsOverArguments) {
  EXPECT_DOUBLE_EQ(eval("geomean(2, 8)"), 4.0);
  EXPECT_DOUBLE_EQ(eval("mean(1, 2, 6)"), 3.0);
  EXPECT_DOUBLE_EQ(eval("min(3, 1 + 1, 5)"), 2.0);
  EXPECT_DOUBLE_EQ(eval("max(3, 10 / 2)"), 5.0);
  EXPECT_DOUBLE_EQ(eval("100 * (1 - a(x) / a(y))", {{"a@x", 25}, {"a@y", 100}}), 75.0);
  EXPECT_DOUBLE_EQ(eval("geomean(a.b(x) / a.b(y), 4)", {{"a.b@x", 9}, {"a.b@y", 1}}), 6.0);
  EXPECT_TRUE(std::isnan(eval("geomean(2, 0 - 2)")));  // undefined, not a silent number
  const auto e = check::Expression::parse("max(f(r1), g(r2))", "t");
  ASSERT_EQ(e.refs().size(), 2u);
  EXPECT_EQ(e.refs()[1].metric, "g");
  EXPECT_EQ(e.refs()[1].run, "r2");
}

TEST(ValidateExpression, ParseErrorsNameWhere) {
  EXPECT_TRUE(contains(test::error_of([] { check::Expression::parse("geomean(1, ", "f.json: x"); }),
                       "f.json: x"));
  EXPECT_NE(test::error_of([] { check::Expression::parse("geomean 1", "w"); }), "");
  EXPECT_NE(test::error_of([] { check::Expression::parse("1 + 2 )", "w"); }), "");
  EXPECT_NE(test::error_of([] { check::Expression::parse("", "w"); }), "");
  // A relation still refuses a bare expression and an expression refuses a relation.
  EXPECT_NE(test::error_of([] { check::Expression::parse("1 < 2", "w"); }), "");
  EXPECT_NE(test::error_of([] { check::Relation::parse("geomean(1, 2)", "w"); }), "");
  EXPECT_TRUE(check::Relation::parse("max(f(r), 3) > 2", "w")
                  .evaluate([](const check::Relation::Ref&) { return 1.0; })
                  .holds);
}

TEST(ValidateTemplates, ExpandOverNamedLists) {
  const std::map<std::string, std::vector<std::string>> lists = {{"l", {"a", "b"}}, {"one", {"z"}}};
  EXPECT_EQ(validate::expand_templates("geomean{l}(t({w}-x) / t({w}-y))", lists, "w"),
            "geomean(t(a-x) / t(a-y), t(b-x) / t(b-y))");
  EXPECT_EQ(validate::expand_templates("1 - mean{one}(f({w})) + max{l}((g({w})))", lists, "w"),
            "1 - mean(f(z)) + max((g(a)), (g(b)))");
  EXPECT_EQ(validate::expand_templates("plain(r) / 2", lists, "w"), "plain(r) / 2");
  EXPECT_EQ(validate::expand_templates("mygeomean{l}(x)", lists, "w"), "mygeomean{l}(x)");
  EXPECT_EQ(
      test::error_of([&] { validate::expand_templates("geomean{nope}(f({w}))", lists, "F"); }),
      "F: unknown list 'nope' in geomean{nope} (defined: l, one)");
  EXPECT_EQ(test::error_of([&] { validate::expand_templates("geomean{l}(f({w})", lists, "F"); }),
            "F: unbalanced parentheses in geomean{l}(...)");
  EXPECT_EQ(test::error_of([&] { validate::expand_templates("min{l} f", lists, "F"); }),
            "F: expected '(' after min{l}");
}

TEST(ValidateScore, SpearmanExactValues) {
  EXPECT_DOUBLE_EQ(validate::spearman({1, 2, 3}, {10, 20, 30}), 1.0);
  EXPECT_DOUBLE_EQ(validate::spearman({1, 2, 3}, {3, 2, 1}), -1.0);
  EXPECT_NEAR(validate::spearman({1, 2, 3, 4}, {1, 3, 2, 4}), 0.8, 1e-12);
  // Ties get average ranks: x ranks 1, 2.5, 2.5, 4.
  EXPECT_NEAR(validate::spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 0.9486832980505138, 1e-12);
  EXPECT_TRUE(std::isnan(validate::spearman({5, 5, 5}, {1, 2, 3})));
}

// A data file exercising every feature; `patch` edits it before writing (for the error tests).
OJ base_doc() {
  return OJ::parse(R"J({
    "source": "demo",
    "title": "A. Author: A Paper, Venue 2024",
    "citation": {"gpu": "GTX 1080 Ti", "driver": "not stated", "where": "Table 1"},
    "gpu": "gtx1080ti",
    "lists": {"ws": ["p1", "p3"]},
    "workloads": {
      "p1": {"generator": "touch", "params": {"size": "2M", "offsets": "0K,64K,128K,256K,512K,1024K", "delay_us": "500"}},
      "p3": {"generator": "touch", "params": {"size": "2M", "offsets": "64K,192K,320K,448K,0K,512K,1024K", "delay_us": "500"}},
      "big": {"generator": "regular", "footprint": "64M", "ci_footprint": "4M"}
    },
    "defaults": {"oversub": 0},
    "runs": {
      "{w}": {"for": "ws", "workload": "{w}"},
      "{w}-none": {"for": "ws", "workload": "{w}", "prefetch": "none"},
      "big": {"workload": "big", "prefetch": "none"}
    },
    "rows": [
      {"id": "p1-groups", "figure": "Table 1", "workload": "P1", "metric": "fault groups",
       "measured": 6, "expr": "fault_batches(p1)", "ci": true, "max_error": 1.01},
      {"id": "p3-groups", "figure": "Table 1", "workload": "P3", "metric": "fault groups",
       "measured": 14, "expr": "fault_batches(p3)", "ci": true, "max_error": 2.5},
      {"id": "reduction", "figure": "Table 2", "workload": "both", "metric": "fault ratio",
       "measured": 0.5, "expr": "geomean{ws}(gpu_faults({w}) / gpu_faults({w}-none))", "ci": true},
      {"id": "big-faults", "figure": "Fig. 3", "workload": "big", "metric": "faults",
       "measured": 1000, "expr": "gpu_faults(big)"},
      {"id": "copy", "figure": "Fig. 4", "workload": "memcpy", "metric": "GB/s", "measured": 3.2,
       "skip": "no memcpy in traces"}
    ]
  })J");
}

std::string write_doc(const TempDir& d, const OJ& doc, const std::string& name = "demo.json") {
  const std::string p = d.file(name);
  test::write_text(p, doc.dump(2));
  return p;
}

TEST(ValidateDataset, LoadsSubsetsAndExpandsTemplates) {
  TempDir d;
  const std::string p = write_doc(d, base_doc());
  const Source full = Source::load(p, Subset::Full);
  EXPECT_EQ(full.name, "demo");
  ASSERT_EQ(full.runs.size(), 5u);  // p1, p3, p1-none, p3-none, big
  EXPECT_EQ(full.runs[1].name, "p3");
  EXPECT_EQ(full.runs[2].name, "p1-none");
  EXPECT_EQ(full.runs[2].workload, "p1");
  EXPECT_EQ(full.runs[2].settings.prefetch.value_or(""), "none");
  EXPECT_EQ(full.runs[0].settings.gpu, "gtx1080ti");
  EXPECT_EQ(full.workloads.at("big").footprint, 64ull << 20);
  EXPECT_EQ(full.rows_of(Subset::Full).size(), 5u);
  EXPECT_EQ(full.rows[4].skip, "no memcpy in traces");
  EXPECT_FALSE(full.rows[4].expr);
  EXPECT_EQ(full.rows[0].gpu, "GTX 1080 Ti");  // the citation's unless the row names one
  EXPECT_EQ(full.rows[2].expr->text(),
            "geomean(gpu_faults(p1) / gpu_faults(p1-none), "
            "gpu_faults(p3) / gpu_faults(p3-none))");
  EXPECT_EQ(full.runs_read_by(full.rows_of(Subset::Full)),
            (std::vector<std::string>{"p1", "p3", "p1-none", "p3-none", "big"}));

  const Source ci = Source::load(p, Subset::Ci);
  EXPECT_EQ(ci.workloads.at("big").footprint, 4ull << 20);
  const auto rows = ci.rows_of(Subset::Ci);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(ci.runs_read_by(rows), (std::vector<std::string>{"p1", "p3", "p1-none", "p3-none"}));
}

// Each malformed file is a one-line error naming the file and the field.
TEST(ValidateDataset, BadFilesGiveOneLineErrors) {
  TempDir d;
  auto err = [&](const std::function<void(OJ&)>& patch) {
    OJ doc = base_doc();
    patch(doc);
    const std::string p = write_doc(d, doc, "bad.json");
    const std::string e = test::error_of([&] { Source::load(p, Subset::Full); });
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_EQ(e.rfind(p + ": ", 0), 0u) << doc.dump() << "\n" << e;
    return e.size() > p.size() + 2 ? e.substr(p.size() + 2) : "(no error)";
  };
  EXPECT_TRUE(contains(err([](OJ& j) { j["colour"] = 1; }), "colour: unknown key")) << "";
  EXPECT_TRUE(
      contains(err([](OJ& j) { j["rows"][1]["measurd"] = 3; }), "rows[1].measurd: unknown key"));
  EXPECT_TRUE(contains(err([](OJ& j) { j.erase("citation"); }), "citation: required"));
  EXPECT_TRUE(
      contains(err([](OJ& j) { j["citation"].erase("driver"); }), "citation.driver: required"));
  EXPECT_TRUE(contains(err([](OJ& j) { j["rows"][0].erase("figure"); }),
                       "rows.p1-groups.figure: required"));
  EXPECT_TRUE(contains(err([](OJ& j) { j["rows"][0]["expr"] = "fault_batches(p1) +"; }),
                       "rows.p1-groups.expr"));
  EXPECT_TRUE(contains(err([](OJ& j) { j["rows"][0]["expr"] = "fault_batches(p9)"; }),
                       "rows.p1-groups.expr: unknown run 'p9'"));
  EXPECT_TRUE(contains(err([](OJ& j) { j["rows"][2]["expr"] = "geomean{xs}(f({w}))"; }),
                       "rows.reduction.expr: unknown list 'xs'"));
  EXPECT_TRUE(contains(err([](OJ& j) { j["runs"]["big"]["workload"] = "huge"; }),
                       "runs.big.workload: unknown workload 'huge'"));
  EXPECT_TRUE(
      contains(err([](OJ& j) { j["workloads"]["big"]["generator"] = "nosuch"; }), "workloads.big"));
  EXPECT_TRUE(contains(err([](OJ& j) { j["rows"][0]["measured"] = 0; }),
                       "rows.p1-groups.measured: required: the published value"));
  EXPECT_TRUE(contains(err([](OJ& j) { j["rows"][4]["expr"] = "gpu_faults(big)"; }),
                       "rows.copy.skip: give either"));
  EXPECT_TRUE(
      contains(err([](OJ& j) { j["rows"][3].erase("expr"); }), "rows.big-faults.expr: required"));
  EXPECT_TRUE(contains(err([](OJ& j) { j["rows"][1]["id"] = "p1-groups"; }),
                       "rows.p1-groups.id: duplicate row id"));
  EXPECT_TRUE(
      contains(err([](OJ& j) { j["rows"][0]["max_error"] = 0.5; }), "rows.p1-groups.max_error"));
  EXPECT_TRUE(contains(err([](OJ& j) {
                         j["runs"]["big"]["set"] = {{"no.such.knob", 1}};
                       }),
                       "no.such.knob"));
  EXPECT_TRUE(contains(err([](OJ& j) { j["rows"][4]["ci"] = true; }),
                       "rows.copy.ci: a skipped row cannot be in the CI subset"));
  EXPECT_TRUE(contains(err([](OJ& j) { j["runs"]["{w}"]["for"] = "nolist"; }), "runs.{w}.for"));

  const std::string p = d.file("trunc.json");
  test::write_text(p, base_doc().dump().substr(0, 100));
  EXPECT_TRUE(
      contains(test::error_of([&] { Source::load(p, Subset::Full); }), p + ": not valid JSON"));
}

TEST(ValidateScore, RatioErrorsGeomeanAndStatus) {
  TempDir d;
  const Source s = Source::load(write_doc(d, base_doc()), Subset::Full);
  const std::map<std::string, double> m = {{"fault_batches@p1", 6}, {"fault_batches@p3", 7},
                                           {"gpu_faults@p1", 10},   {"gpu_faults@p1-none", 40},
                                           {"gpu_faults@p3", 10},   {"gpu_faults@p3-none", 10}};
  const auto sc =
      validate::score(s, s.rows_of(Subset::Full),
                      [&](const std::string& run, const std::string& metric, std::string& why) {
                        const auto it = m.find(metric + "@" + run);
                        if (it == m.end()) {
                          why = "run " + run + " failed: boom";
                          return std::optional<double>();
                        }
                        return std::optional<double>(it->second);
                      });
  ASSERT_EQ(sc.rows.size(), 5u);
  EXPECT_EQ(sc.rows[0].status, "within");  // 6 vs 6
  EXPECT_DOUBLE_EQ(*sc.rows[0].error, 0.0);
  EXPECT_EQ(sc.rows[1].status, "within");  // 7 vs 14: a factor of 2 <= 2.5
  EXPECT_DOUBLE_EQ(*sc.rows[1].ratio, 0.5);
  EXPECT_DOUBLE_EQ(*sc.rows[2].simulated, 0.5);  // geomean(0.25, 1)
  EXPECT_EQ(sc.rows[2].status, "compared");
  EXPECT_EQ(sc.rows[3].status, "no-value");
  EXPECT_EQ(sc.rows[3].reason, "run big failed: boom");
  EXPECT_EQ(sc.rows[4].status, "skipped");
  EXPECT_EQ(sc.scored, 3u);
  EXPECT_EQ(sc.failed, 0u);
  // exp(mean(|ln 1|, |ln 0.5|, |ln 1|)) = 2^(1/3).
  EXPECT_NEAR(*sc.geomean_error_factor, std::cbrt(2.0), 1e-12);
  ASSERT_EQ(sc.ranks.size(), 0u);  // no quantity has 3 compared rows

  const json j = validate::report_json({sc}, Subset::Full);
  EXPECT_EQ(j["format"], "uvmsim-validate/1");
  EXPECT_EQ(j["sources"][0]["rows"][1]["error_factor"], 2.0);
  EXPECT_EQ(j["sources"][0]["rows"][3]["simulated"], nullptr);
  EXPECT_EQ(j["sources"][0]["summary"]["compared"], 3);
  EXPECT_EQ(j["summary"]["rows"], 5);
  EXPECT_EQ(j["sources"][0]["citation"]["where"], "Table 1");
}

// End to end: the real binary simulates the runs; P1 and P3 behave as measured on the GTX 1080
// Ti (6 and 7 fault groups), so the deliberately wrong P3 value (14) is a factor 2 off.
TEST(ValidateRun, SimulatesScoresAndFailsOutsideBounds) {
  TempDir d;
  OJ doc = base_doc();
  const std::string p = write_doc(d, doc);
  auto r = test::uvmsim({"validate", p, "--subset", "ci", "--jobs", "2", "--progress", "none",
                         "--json", d.file("out.json")});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "p3-groups")) << r.output;
  EXPECT_TRUE(contains(r.output, "error x2.00, within x2.5")) << r.output;
  EXPECT_FALSE(contains(r.output, "big-faults")) << r.output;  // not in the CI subset
  const json j = test::read_json(d.file("out.json"));
  ASSERT_EQ(j["sources"][0]["rows"].size(), 3u);
  EXPECT_EQ(j["sources"][0]["rows"][0]["simulated"], 6);
  EXPECT_EQ(j["sources"][0]["rows"][1]["simulated"], 7);
  EXPECT_EQ(j["subset"], "ci");

  // Same files, same results: bit-identical JSON.
  r = test::uvmsim({"validate", p, "--subset", "ci", "--jobs", "1", "--progress", "none", "--json",
                    d.file("again.json")});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_EQ(test::read_text(d.file("again.json")), test::read_text(d.file("out.json")));

  // `uvmsim report` draws the sim-vs-real scatter plots from the JSON.
  r = test::uvmsim({"report", d.file("out.json")});
  ASSERT_EQ(r.status.code, 0) << r.output;
  for (const char* f :
       {"validation_all.png", "validation_all.svg", "validation_demo.png", "index.html"})
    EXPECT_TRUE(fs::exists(fs::path(d.file("out-report")) / f)) << f << "\n" << r.output;
  EXPECT_TRUE(contains(test::read_text(d.file("out-report/index.html")), "3 of 3 rows compared"));
  test::write_text(d.file("other.json"), R"({"format": "something/1"})");
  r = test::uvmsim({"report", d.file("other.json"), "--out", d.file("o2")});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "format: expected uvmsim-validate/1")) << r.output;

  // A tighter bound fails the command (exit 1) and says which row.
  doc["rows"][1]["max_error"] = 1.5;
  write_doc(d, doc);
  r = test::uvmsim({"validate", p, "--subset", "ci", "--progress", "none"});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "error x2.00, OUTSIDE x1.5")) << r.output;
  EXPECT_TRUE(contains(r.output, "1 failed their bound")) << r.output;
}

// Exit codes as for `uvmsim check`: 1 and a one-line error for bad input, 2 for a bad option.
TEST(ValidateRun, BadInputAndUsageErrors) {
  TempDir d;
  auto r = test::uvmsim({"validate", "--help"});
  EXPECT_EQ(r.status.code, 0);
  EXPECT_TRUE(contains(r.output, "usage: uvmsim validate")) << r.output;
  r = test::uvmsim({"validate", "--bogus"});
  EXPECT_EQ(r.status.code, 2) << r.output;
  r = test::uvmsim({"validate"});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "missing validation file or directory")) << r.output;
  r = test::uvmsim({"validate", d.file("nope.json")});
  EXPECT_EQ(r.status.code, 2) << r.output;  // a path on the command line: a usage error
  EXPECT_TRUE(contains(r.output, "nope.json: no such file or directory")) << r.output;
  const std::string p = write_doc(d, base_doc());
  r = test::uvmsim({"validate", p, "--subset", "some"});
  EXPECT_EQ(r.status.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--subset: expected ci or full, got 'some'")) << r.output;
  OJ doc = base_doc();
  doc["rows"][0]["expr"] = "fault_batches(nosuch)";
  write_doc(d, doc, "bad.json");
  r = test::uvmsim({"validate", d.file("bad.json")});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_EQ(r.output,
            "uvmsim validate: error: " + d.file("bad.json") +
                ": rows.p1-groups.expr: unknown run 'nosuch' (in fault_batches(nosuch))\n");
}

const std::string kProject = std::string(UVMSIM_SOURCE_DIR) + "/configs/validation";

// Every project data file loads in both subsets; every row cites a figure and every source its
// GPU, driver and place in the paper (the loader enforces it; this keeps the files loadable).
TEST(ValidateProject, DataFilesLoad) {
  std::size_t files = 0, ci_rows = 0;
  for (const auto& e : fs::directory_iterator(kProject)) {
    if (e.path().extension() != ".json") continue;
    ++files;
    const Source full = Source::load(e.path(), Subset::Full);
    const Source ci = Source::load(e.path(), Subset::Ci);
    EXPECT_EQ(full.rows.size(), ci.rows.size());
    ci_rows += ci.rows_of(Subset::Ci).size();
    for (const auto& r : full.runs) r.settings.resolve(e.path().string());  // knobs exist
  }
  EXPECT_GE(files, 6u);
  EXPECT_GE(ci_rows, 15u);
}

// The CI subset as expectations: every bounded row within its (loose) bound, and the GTX 1080 Ti
// micro-tests reproduced exactly (fault groups and migrated bytes of P1-P3).
TEST(ValidateProject, CiSubsetPasses) {
  TempDir d;
  const auto r = test::uvmsim({"validate", kProject, "--subset", "ci", "--jobs", "2", "--progress",
                               "none", "--json", d.file("ci.json")});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, " 0 failed their bound")) << r.output;
  const json j = test::read_json(d.file("ci.json"));
  std::size_t micro = 0;
  for (const auto& s : j["sources"]) {
    for (const auto& row : s["rows"]) {
      EXPECT_EQ(row["status"] == "within" || row["status"] == "compared", true) << row.dump();
      const std::string id = row["id"];
      if (s["source"] == "gtx1080ti-microtests" && !contains(id, "time")) {
        EXPECT_EQ(row["simulated"], row["measured"]) << id;
        ++micro;
      }
    }
  }
  EXPECT_EQ(micro, 6u);
}

}  // namespace
}  // namespace uvmsim
