// Sweep specifications, point identities, result files, the aggregated CSV, relations and
// expectation files, tested in-process with exact expected values.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <functional>

#include "core/error.h"
#include "core/json_input.h"
#include "core/units.h"
#include "sim/check/expectations.h"
#include "sim/check/relation.h"
#include "sim/sweep/files.h"
#include "sim/sweep/identity.h"
#include "sim/sweep/progress.h"
#include "sim/sweep/results.h"
#include "sim/sweep/slurm.h"
#include "sim/sweep/spec.h"
#include "sim/sweep/table.h"
#include "sim/sweep/worker.h"
#include "tests/sweep_test_util.h"
#include "tests/test_util.h"

namespace uvmsim {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using sweep::PointSpec;
using sweep::ResultStore;
using sweep::SweepSpec;
using test::TempDir;

SweepSpec parse(const std::string& text, const std::string& base = ".") {
  return SweepSpec::parse(ordered_json::parse(text), "spec.json", base, "t");
}

// Expects a one-line UserError containing every needle.
template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    for (const auto& n : needles)
      EXPECT_NE(m.find(n), std::string::npos) << "'" << n << "' not in: " << m;
  }
}

constexpr const char* kTwoByTwo = R"J({
  "workloads": [{"name": "reg", "generator": "regular", "footprint": "8M"},
                {"name": "rnd", "generator": "random", "footprint": "8M", "seed": 3}],
  "prefetch": ["tree", "none"],
  "oversub": [0, 50],
  "knobs": {"driver.prefetch_threshold": [51, 90]}
})J";

TEST(SweepSpec, CartesianProductInAxisOrder) {
  const SweepSpec s = parse(kTwoByTwo);
  EXPECT_EQ(s.axis_names(),
            (std::vector<std::string>{"workload", "gpu", "eviction", "prefetch", "placement",
                                      "driver.prefetch_threshold", "oversub", "seed"}));
  EXPECT_EQ(s.varying_axes(), (std::vector<std::string>{"workload", "prefetch",
                                                        "driver.prefetch_threshold", "oversub"}));
  TempDir d;
  const auto pts = s.expand(d.file("traces"));
  ASSERT_EQ(pts.size(), 16u);
  // The last axis varies fastest; labels name the varying axes.
  EXPECT_EQ(pts[0].label, "reg prefetch=tree driver.prefetch_threshold=51 oversub=0");
  EXPECT_EQ(pts[1].label, "reg prefetch=tree driver.prefetch_threshold=51 oversub=50");
  EXPECT_EQ(pts[2].label, "reg prefetch=tree driver.prefetch_threshold=90 oversub=0");
  EXPECT_EQ(pts[15].label, "rnd prefetch=none driver.prefetch_threshold=90 oversub=50");
  EXPECT_EQ(
      json(pts[15].axes).dump(),
      R"J({"driver.prefetch_threshold":90,"eviction":"driver","gpu":"gtx1080ti","oversub":50,"placement":"driver","prefetch":"none","seed":1,"workload":"rnd"})J");
  // Every point has its own id; ids are stable (a function of axes and inputs only).
  std::set<std::string> ids;
  for (const auto& p : pts) ids.insert(p.id);
  EXPECT_EQ(ids.size(), 16u);
  const auto again = parse(kTwoByTwo).expand(d.file("elsewhere"));
  for (std::size_t i = 0; i < pts.size(); ++i) EXPECT_EQ(pts[i].id, again[i].id);
  // The resolved configuration is complete and carries the swept values.
  const json& cfg = pts[15].inputs["config"];
  EXPECT_EQ(cfg["engine"]["prefetch"], "none");
  EXPECT_EQ(cfg["driver"]["prefetch_threshold"], 90);
  EXPECT_EQ(cfg["gpu"]["name"], "gtx1080ti");
  EXPECT_EQ(pts[15].inputs["oversub_pct"], 50.0);
  EXPECT_EQ(pts[15].inputs["workload"]["seed"], 3);
  // Both workloads' traces are generated files in the trace directory, one per workload.
  EXPECT_NE(pts[0].trace, pts[15].trace);
  EXPECT_EQ(pts[0].trace, pts[1].trace);
  EXPECT_EQ(pts[0].trace.parent_path().filename().string(), "traces");
}

TEST(SweepSpec, ExclusionsAndPolicyConfigurations) {
  const SweepSpec s = parse(R"J({
    "workloads": [{"generator": "regular", "footprint": "8M"}],
    "policies": [{"name": "default"},
                 {"name": "no-prefetch", "prefetch": "none"},
                 {"name": "batch-replay", "set": {"driver.replay_policy": "batch"}}],
    "oversub": [0, 25, 50],
    "exclude": [{"policy": "batch-replay", "oversub": [25, 50]}]
  })J");
  TempDir d;
  const auto pts = s.expand(d.file("traces"));
  ASSERT_EQ(pts.size(), 7u);  // 3 x 3 minus 2 excluded
  std::vector<std::string> labels;
  for (const auto& p : pts) labels.push_back(p.label);
  EXPECT_EQ(labels,
            (std::vector<std::string>{
                "regular policy=default oversub=0", "regular policy=default oversub=25",
                "regular policy=default oversub=50", "regular policy=no-prefetch oversub=0",
                "regular policy=no-prefetch oversub=25", "regular policy=no-prefetch oversub=50",
                "regular policy=batch-replay oversub=0"}));
  EXPECT_EQ(pts[3].axes["prefetch"], "none");
  EXPECT_EQ(pts[6].inputs["config"]["driver"]["replay_policy"], "batch");
  EXPECT_EQ(s.baseline_text(), "policy=default eviction=driver prefetch=tree placement=driver");
}

TEST(SweepSpec, BaselineDefaultsToDriverKnobValuesAndCanBeOverridden) {
  EXPECT_EQ(parse(kTwoByTwo).baseline_text(),
            "eviction=driver prefetch=tree placement=driver driver.prefetch_threshold=51");
  const SweepSpec s =
      parse(R"J({"workloads": [{"generator": "regular"}], "prefetch": ["tree", "none"],
    "baseline": {"prefetch": "none", "placement": null}})J");
  EXPECT_EQ(s.baseline_text(), "eviction=driver prefetch=none");
}

TEST(SweepSpec, KnobAxesKeepTheSpecOrder) {
  const SweepSpec s = parse(R"J({"workloads": [{"generator": "regular"}],
    "knobs": {"driver.replay_policy": ["batch_flush", "batch"], "driver.prefetch_threshold": [51, 90]}})J");
  EXPECT_EQ(s.axis_names(),
            (std::vector<std::string>{"workload", "gpu", "eviction", "prefetch", "placement",
                                      "driver.replay_policy", "driver.prefetch_threshold",
                                      "oversub", "seed"}));
  EXPECT_EQ(s.baseline_text(),
            "eviction=driver prefetch=tree placement=driver driver.replay_policy=batch_flush "
            "driver.prefetch_threshold=51");
}

TEST(SweepSpec, FootprintListExpandsWorkloads) {
  const SweepSpec s = parse(
      R"J({"workloads": [{"name": "r", "generator": "regular", "footprint": ["4M", "8M"]}]})J");
  ASSERT_EQ(s.workloads.size(), 2u);
  EXPECT_EQ(s.workloads[0].name, "r-4M");
  EXPECT_EQ(s.workloads[1].name, "r-8M");
  EXPECT_EQ(s.workloads[1].footprint, 8u << 20);
}

// input_seeds: every generated workload once per generator seed, an axis input_seed after seed,
// each seed its own trace; a deterministic spec stays unchanged without it.
TEST(SweepSpec, InputSeedsAreAnAxisWithATracePerSeed) {
  const SweepSpec s = parse(R"J({"workloads": [{"name": "r", "generator": "random",
                                                 "footprint": "4M"},
                                                {"name": "g", "generator": "regular",
                                                 "footprint": "4M"}],
                                  "oversub": [0, 50], "seeds": [1, 2], "input_seeds": [7, 9]})J");
  EXPECT_EQ(s.axis_names(),
            (std::vector<std::string>{"workload", "gpu", "eviction", "prefetch", "placement",
                                      "oversub", "seed", "input_seed"}));
  EXPECT_EQ(s.varying_axes(),
            (std::vector<std::string>{"workload", "oversub", "seed", "input_seed"}));
  const auto pts = s.expand("/tmp/traces");
  ASSERT_EQ(pts.size(), 16u);
  EXPECT_EQ(pts[0].label, "r oversub=0 seed=1 input_seed=7");
  EXPECT_EQ(pts[4].label, "r oversub=0 seed=1 input_seed=9");
  EXPECT_EQ(pts[4].axes["input_seed"], 9);
  EXPECT_NE(pts[0].trace, pts[4].trace);  // a trace per input seed ...
  EXPECT_EQ(pts[0].trace, pts[1].trace);  // ... shared by the policy seeds
  EXPECT_NE(pts[0].id, pts[4].id);
  // Without input_seeds nothing changes: no column, the workload's own seed.
  const SweepSpec plain = parse(kTwoByTwo);
  const auto names = plain.axis_names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "input_seed"), 0);
  EXPECT_FALSE(plain.expand("/tmp/traces")[0].axes.contains("input_seed"));
  expect_error(
      [] { parse(R"J({"workloads": [{"generator": "regular"}], "input_seeds": [1, 1]})J"); },
      {"spec.json: input_seeds: duplicate value 1"});
  expect_error([] { parse(R"J({"workloads": [{"generator": "regular"}], "input_seeds": [-1]})J"); },
               {"spec.json: input_seeds: expected non-negative integers, got -1"});
  expect_error(
      [] {
        parse(R"J({"workloads": [{"name": "x", "generator": "regular", "seed": 3}],
                   "input_seeds": [1, 2]})J");
      },
      {"spec.json: input_seeds: workload 'x' fixes its own \"seed\""});
}

TEST(SweepSpec, ErrorsNameTheFieldOnOneLine) {
  expect_error([] { parse(R"J({"workloads": [{"generator": "regular"}], "prefetchs": ["x"]})J"); },
               {"spec.json: prefetchs: unknown key"});
  expect_error([] { parse(R"J({"workloads": []})J"); },
               {"spec.json: workloads: expected a non-empty list"});
  expect_error([] { parse(R"J({"workloads": [{"generator": "nope"}]})J"); },
               {"spec.json: workloads[0].generator: unknown generator 'nope'", "regular"});
  expect_error(
      [] { parse(R"J({"workloads": [{"generator": "regular", "params": {"blok": 1}}]})J"); },
      {"workloads[0].params.blok: unknown parameter of generator 'regular'", "block"});
  expect_error([] { parse(R"J({"workloads": [{"generator": "touch"}]})J"); },
               {"workloads[0].params.offsets: required by generator 'touch'"});
  expect_error([] { parse(R"J({"workloads": [{"generator": "regular", "footprint": "8Q"}]})J"); },
               {"workloads[0].footprint: invalid size '8Q'"});
  expect_error([] { parse(R"J({"workloads": [{"trace": "missing.uvt"}]})J"); },
               {"workloads[0].trace", "missing.uvt: file not found"});
  expect_error(
      [] { parse(R"J({"workloads": [{"generator": "regular"}, {"generator": "regular"}]})J"); },
      {"two workloads are named 'regular'"});
  expect_error([] { parse(R"J({"workloads": [{"generator": "regular"}], "gpus": ["gtx9999"]})J"); },
               {"spec.json: gpus:", "unknown preset 'gtx9999'"});
  expect_error([] { parse(R"J({"workloads": [{"generator": "regular"}], "oversub": [0, -5]})J"); },
               {"spec.json: oversub: expected a percentage"});
  expect_error([] { parse(R"J({"workloads": [{"generator": "regular"}], "oversub": [0, 0]})J"); },
               {"spec.json: oversub: duplicate value 0"});
  expect_error(
      [] {
        parse(R"J({"workloads": [{"generator": "regular"}], "knobs": {"driver.nope": [1]}})J");
      },
      {"spec.json: knobs: driver.nope: unknown configuration key"});
  expect_error(
      [] {
        parse(
            R"J({"workloads": [{"generator": "regular"}], "knobs": {"driver.prefetch_threshold": [50, 101]}})J");
      },
      {"driver.prefetch_threshold: value 101 out of range [0, 100]"});
  expect_error(
      [] {
        parse(R"J({"workloads": [{"generator": "regular"}], "exclude": [{"color": "red"}]})J");
      },
      {"spec.json: exclude[0].color: not an axis of this sweep"});
  expect_error(
      [] {
        parse(
            R"J({"workloads": [{"generator": "regular"}], "prefetch": ["tree"], "policies": [{"name": "a", "prefetch": "none"}]})J");
      },
      {"policies[0].prefetch: conflicts with the top-level \"prefetch\" axis"});
  TempDir d;
  expect_error(
      [&] {
        parse(R"J({"workloads": [{"generator": "regular"}], "eviction": ["lruu"]})J")
            .expand(d.file("t"));
      },
      {"eviction: unknown eviction policy 'lruu'", "driver"});
}

TEST(SweepSpec, LoadReportsInvalidJsonWithTheFileName) {
  TempDir d;
  test::write_text(d.file("bad.json"), "{\"workloads\": [");
  expect_error([&] { SweepSpec::load(d.file("bad.json")); },
               {d.file("bad.json") + ": not valid JSON"});
  // Comments are allowed in sweep specs.
  test::write_text(d.file("ok.json"),
                   "// a comment\n{\"workloads\": [{\"generator\": \"regular\"}]}\n");
  EXPECT_EQ(SweepSpec::load(d.file("ok.json")).name, "ok");
}

TEST(SweepFiles, Crc64IsTheXzCheckValue) {
  EXPECT_EQ(sweep::crc64("123456789"), 0x995DC9BBDF1939FAULL);  // CRC-64/XZ check value
  EXPECT_EQ(sweep::hex64(0x995DC9BBDF1939FAULL), "995dc9bbdf1939fa");
  TempDir d;
  test::write_text(d.file("f"), "123456789");
  EXPECT_EQ(sweep::crc64_file(d.file("f")), 0x995DC9BBDF1939FAULL);
}

TEST(SweepFiles, AtomicWriteLeavesNoTemporaryAndStaleOnesAreRemoved) {
  TempDir d;
  sweep::write_atomic(d.file("a.json"), "{}\n");
  EXPECT_EQ(sweep::read_file(d.file("a.json")), "{}\n");
  sweep::write_atomic(d.file("a.json"), "[1]\n");  // replaces
  EXPECT_EQ(sweep::read_file(d.file("a.json")), "[1]\n");
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.file(""))) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);
  // A writer killed mid-write leaves ".<name>.<host>.<pid>.tmp": removed only if that pid is dead.
  const std::string host = sweep::host_name();
  const std::string dead = d.file(".b.json." + host + ".999999999.tmp");
  const std::string alive = d.file(".c.json." + host + "." + std::to_string(::getpid()) + ".tmp");
  const std::string other = d.file(".d.json.some-other-host.1.tmp");
  for (const auto& f : {dead, alive, other}) test::write_text(f, "{\"partial");
  EXPECT_TRUE(sweep::is_temp_file(dead));
  EXPECT_FALSE(sweep::is_temp_file(d.file("a.json")));
  EXPECT_EQ(sweep::remove_stale_temp_files(d.file("")), 1u);
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(alive));
  EXPECT_TRUE(std::filesystem::exists(other));
}

TEST(SweepFiles, DirLockIsExclusive) {
  TempDir d;
  sweep::DirLock a(d.file(""));
  // flock locks are per open file description: a second lock in this process conflicts too.
  expect_error([&] { sweep::DirLock b(d.file("")); },
               {"another uvmsim sweep or check is using this directory"});
}

// A fake result for `p` with the given metrics (what a worker would write).
void fake_result(const ResultStore& store, const PointSpec& p, double sim_time, int faults) {
  json r = {{"format", sweep::kResultFormat},
            {"id", p.id},
            {"input_hash", p.input_hash()},
            {"label", p.label},
            {"axes", json(p.axes)},
            {"inputs", p.inputs},
            {"build", sweep::this_build().to_json()},
            {"stats",
             {{"sim_time_ns", sim_time},
              {"gpu_faults", faults},
              {"htod_bytes", 4096},
              {"tlb", {{"l1_hit_rate", 0.5}}},
              {"kernels", json::array({{{"time_ns", 10.0}}, {{"time_ns", 5.0}}})}}}};
  store.save_result(r);
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) rows.push_back(split(line, ','));
  return rows;
}

TEST(SweepTable, NormalizedColumnsUseTheBaselineAndZeroOversubscription) {
  TempDir d;
  const SweepSpec s = parse(R"J({"workloads": [{"generator": "regular", "footprint": "8M"}],
                               "prefetch": ["tree", "none"], "oversub": [0, 50]})J");
  ResultStore store(d.file("out"));
  const auto pts = s.expand(store.trace_dir());
  ASSERT_EQ(pts.size(), 4u);  // tree/0, tree/50, none/0, none/50
  fake_result(store, pts[0], 100, 10);
  fake_result(store, pts[1], 150, 20);
  fake_result(store, pts[2], 200, 40);
  store.save_failure(pts[3], "boom, badly");
  EXPECT_TRUE(store.load_result(pts[0]));
  EXPECT_FALSE(store.load_result(pts[3]));
  const std::string csv = d.file("out/results.csv");
  EXPECT_EQ(sweep::write_results_csv(s.axis_names(), s.baseline, pts, store, csv), 3u);
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 5u);
  const auto& h = rows[0];
  auto col = [&](const std::string& name) {
    const auto it = std::find(h.begin(), h.end(), name);
    EXPECT_NE(it, h.end()) << name;
    return static_cast<std::size_t>(it - h.begin());
  };
  EXPECT_EQ(std::vector<std::string>(h.begin(), h.begin() + 11),
            (std::vector<std::string>{"id", "status", "label", "workload", "gpu", "eviction",
                                      "prefetch", "placement", "oversub", "seed", "sim_time_ns"}));
  EXPECT_EQ(h.back(), "error");
  // tree/0 is its own baseline and its own 0 % reference.
  EXPECT_EQ(rows[1][col("runtime_vs_baseline")], "1.0");
  EXPECT_EQ(rows[1][col("baseline_id")], pts[0].id);
  // tree/50: baseline is itself; vs 0 %: 150 / 100.
  EXPECT_EQ(rows[2][col("runtime_vs_baseline")], "1.0");
  EXPECT_EQ(rows[2][col("runtime_vs_oversub0")], "1.5");
  // none/0: vs tree/0 -> 2x runtime, speedup 0.5, 4x faults.
  EXPECT_EQ(rows[3][col("runtime_vs_baseline")], "2.0");
  EXPECT_EQ(rows[3][col("speedup_vs_baseline")], "0.5");
  EXPECT_EQ(rows[3][col("gpu_faults_vs_baseline")], "4.0");
  EXPECT_EQ(rows[3][col("kernel_time_ns")], "15.0");
  EXPECT_EQ(rows[3][col("tlb.l1_hit_rate")], "0.5");
  EXPECT_EQ(rows[3][col("baseline_id")], pts[0].id);
  // none/50 failed: status, empty metrics, the error quoted as one CSV field.
  EXPECT_EQ(rows[4][col("status")], "failed");
  EXPECT_EQ(rows[4][col("sim_time_ns")], "");
  EXPECT_EQ(rows[4][col("runtime_vs_baseline")], "");
  const std::string text = sweep::read_file(csv);
  EXPECT_NE(text.find(",\"boom, badly\"\n"), std::string::npos);
}

// A deterministic policy repeats one run for every seed: the groups are found for the note.
TEST(SweepTable, SeedInsensitiveGroupsAreTheOnesWithIdenticalStatistics) {
  TempDir d;
  const SweepSpec s =
      parse(R"J({"workloads": [{"name": "w", "generator": "regular", "footprint": "4M"}],
                 "prefetch": ["tree", "none"], "seeds": [1, 2]})J");
  ResultStore store(d.file("out"));
  const auto pts = s.expand(store.trace_dir());
  ASSERT_EQ(pts.size(), 4u);
  fake_result(store, pts[0], 100, 10);  // tree, seed 1
  fake_result(store, pts[1], 100, 10);  // tree, seed 2: identical
  fake_result(store, pts[2], 100, 10);  // none, seed 1
  fake_result(store, pts[3], 120, 10);  // none, seed 2: the seed mattered
  EXPECT_EQ(sweep::seed_insensitive_groups(pts, store),
            (std::vector<std::string>{"w prefetch=tree"}));
}

TEST(SweepTable, ResultOfOtherInputsIsNotAccepted) {
  TempDir d;
  const SweepSpec s = parse(R"J({"workloads": [{"generator": "regular", "footprint": "8M"}]})J");
  ResultStore store(d.file("out"));
  auto pts = s.expand(store.trace_dir());
  fake_result(store, pts[0], 1, 1);
  PointSpec changed = pts[0];
  changed.inputs["config"]["driver"]["prefetch_threshold"] = 90;  // same file name, other inputs
  EXPECT_FALSE(store.load_result(changed));
  // A truncated result file (not possible through write_atomic) is treated as missing.
  test::write_text(store.result_path(pts[0].id).string(),
                   "{\"format\": \"uvmsim-sweep-point/1\", \"id\"");
  EXPECT_FALSE(store.load_result(pts[0]));
}

TEST(SweepSlurm, ScriptRequestsTheResourcesAndRunsTheWorkerOnItsTask) {
  sweep::SlurmOptions o;
  o.partition = "gpu";
  o.time = "1:00:00";
  o.mem = "4G";
  o.cpus_per_task = 2;
  o.max_running = 8;
  o.extra = {"--constraint=skylake"};
  o.job_name = "uvmsim-x";
  const std::string s =
      sweep::sbatch_script(o, "/opt/uvm sim/uvmsim", "/data/o'k", "/data/o'k/t.jsonl", 5);
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  for (const char* line :
       {"#SBATCH --job-name=uvmsim-x\n", "#SBATCH --array=0-4%8\n", "#SBATCH --cpus-per-task=2\n",
        "#SBATCH --output=/data/o'k/slurm/logs/%A_%a.out\n", "#SBATCH --time=1:00:00\n",
        "#SBATCH --mem=4G\n", "#SBATCH --partition=gpu\n", "#SBATCH --constraint=skylake\n"})
    EXPECT_NE(s.find(line), std::string::npos) << line << " not in:\n" << s;
  EXPECT_EQ(s.find("--account"), std::string::npos);
  EXPECT_NE(s.find("exec '/opt/uvm sim/uvmsim' sweep --worker '/data/o'\\''k' --tasks "
                   "'/data/o'\\''k/t.jsonl' --task \"$SLURM_ARRAY_TASK_ID\"\n"),
            std::string::npos)
      << s;
  // The per-point time limit is the workers' own (both backends run the same worker).
  const std::string t = sweep::sbatch_script(o, "/u", "/o", "/o/t.jsonl", 1, 90);
  EXPECT_NE(t.find(" --task \"$SLURM_ARRAY_TASK_ID\" --point-timeout 90\n"), std::string::npos)
      << t;
}

TEST(SweepSlurm, TaskFileGivesEachTaskItsOwnPoints) {
  TempDir d;
  const SweepSpec s = parse(
      R"J({"workloads": [{"generator": "regular", "footprint": "8M"}], "oversub": [0, 10, 20, 30, 40]})J");
  const auto pts = s.expand(d.file("traces"));
  std::vector<std::vector<const PointSpec*>> tasks = {
      {&pts[0], &pts[1]}, {&pts[2], &pts[3]}, {&pts[4]}};
  sweep::write_task_file(d.file("t.jsonl"), tasks);
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const json j = sweep::read_task(d.file("t.jsonl"), t);
    ASSERT_EQ(j.size(), tasks[t].size());
    for (std::size_t i = 0; i < j.size(); ++i) EXPECT_EQ(j[i]["id"], tasks[t][i]->id);
  }
  expect_error([&] { sweep::read_task(d.file("t.jsonl"), 3); },
               {"task 3 not in the task list (3 tasks)"});
  expect_error([&] { sweep::read_task(d.file("none.jsonl"), 0); },
               {"none.jsonl.idx: cannot open task index"});
}

TEST(SweepProgress, LinesAndDurations) {
  EXPECT_EQ(sweep::format_duration(0.5), "0.50 s");
  EXPECT_EQ(sweep::format_duration(12.34), "12.3 s");
  EXPECT_EQ(sweep::format_duration(245), "4m05s");
  EXPECT_EQ(sweep::format_duration(3720), "1h02m");
  std::ostringstream out;
  sweep::Progress p(out, sweep::ProgressMode::Lines, 3, 1);
  p.started();
  p.finished("reg oversub=50", true, 0.25);
  p.started();
  p.finished("rnd oversub=50", false, 1.5, "boom");
  EXPECT_EQ(out.str(),
            "[2/3] ok     reg oversub=50  (0.25 s)\n[3/3] FAILED rnd oversub=50  (1.5 s): boom\n");
  EXPECT_EQ(p.done(), 3u);
  EXPECT_EQ(p.failed(), 1u);
}

TEST(SweepProgress, CountsAboveTheTotalKeepTheBarWithinItsWidth) {
  // Issue 14, part 1: a re-attached Slurm sweep counted the points finished before it looked
  // twice; 52/48 made the bar ask for a string of 2^64 characters ("basic_string::_M_create").
  std::ostringstream out;
  sweep::Progress p(out, sweep::ProgressMode::Lines, 48, 4);
  p.set_counts(52, 0, 0);
  p.set_counts(2, 1, 0);  // below the initial count: no ETA from a negative rate
  EXPECT_EQ(out.str().rfind("[##############################] 52/48 done, 0 running, 0 failed", 0),
            0u)
      << out.str();
  EXPECT_NE(out.str().find("\n[#.............................] 2/48 done, 1 running, 0 failed"),
            std::string::npos)
      << out.str();
}

TEST(JsonInput, ANumberOutOfRangeNamesItsField) {
  // Fuzzing defect 6: 1e999 escaped as an "internal error" without file or field. Every JSON
  // input (core/json_input) names the field.
  const auto parse = [](const char* text, bool comments = false) {
    return parse_ordered_json(text, "s.json", JsonOptions{comments});
  };
  expect_error([&] { parse(R"({"oversub": [0, 1e999]})"); },
               {"s.json: oversub[1]: number out of range ('1e999')"});
  expect_error([&] { parse(R"({"knobs": {"a.b": [1]}, "workloads": [{"x": {"y": -2e999}}]})"); },
               {"s.json: workloads[0].x.y: number out of range ('-2e999')"});
  expect_error([&] { parse(R"([[1, 2], {"k": [3, {"z": 1e400}]}])"); },
               {"s.json: [1].k[1].z: number out of range ('1e400')"});
  expect_error([&] { parse("1e999"); }, {"s.json: (top level): number out of range"});
  expect_error([&] { parse("{\"a\": tru}"); }, {"s.json: not valid JSON: ", "line 1"});
  // Comments only where asked for.
  EXPECT_EQ(parse("// c\n{\"a\": 1}", true)["a"], 1);
  expect_error([&] { parse("// c\n{\"a\": 1}"); }, {"not valid JSON"});
}

TEST(SweepFiles, AtomicFileIsCompleteOrAbsent) {
  TempDir d;
  const std::string target = d.file("out.json");
  test::write_text(target, "old");
  {
    sweep::AtomicFile f(target, "--stats-out");
    f.write("new content");
    EXPECT_EQ(test::read_text(target), "old");  // nothing visible before commit()
    EXPECT_TRUE(std::filesystem::exists(f.temp_path()));
  }  // abandoned: the temporary goes, the target keeps its old content
  EXPECT_EQ(test::read_text(target), "old");
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.file(""))) files += e.exists();
  EXPECT_EQ(files, 1u);
  {
    sweep::AtomicFile f(target);
    f.write("new content");
    f.commit();
  }
  EXPECT_EQ(test::read_text(target), "new content");
  // An unwritable place fails at once, naming the target and the option.
  expect_error([&] { sweep::AtomicFile f(d.file("no/such/dir/x.csv"), "--events-out"); },
               {d.file("no/such/dir/x.csv") + ": --events-out: cannot create (No such file"});
  try {
    sweep::AtomicFile f(d.file("no/x"));
    ADD_FAILURE() << "no error";
  } catch (const sweep::OutputError&) {
  }
}

// A line of `file` replaced by `text` (for damaging task files).
void replace_line(const std::string& file, std::size_t line, const std::string& text) {
  const auto lines = split(test::read_text(file), '\n');
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (!(i + 1 == lines.size() && lines[i].empty())) out += (i == line ? text : lines[i]) + "\n";
  test::write_text(file, out);
}

TEST(SweepSlurm, DamagedTaskFilesAreOneLineErrorsNamingTheFile) {
  TempDir d;
  const SweepSpec s = parse(
      R"J({"workloads": [{"generator": "regular", "footprint": "8M"}], "oversub": [0, 10, 20]})J");
  const auto pts = s.expand(d.file("traces"));
  const std::vector<std::vector<const PointSpec*>> tasks = {{&pts[0]}, {&pts[1], &pts[2]}};
  const std::string f = d.file("t.jsonl"), idx = f + ".idx";
  auto fresh = [&] { sweep::write_task_file(f, tasks); };
  fresh();
  const std::string body = test::read_text(f);
  // Cut inside the last line: the task file was not completely written (or copied).
  test::write_text(f, body.substr(0, body.size() - 10));
  EXPECT_EQ(sweep::read_task(f, 0).size(), 1u);  // the complete first line is still fine
  expect_error([&] { sweep::read_task(f, 1); }, {f + ": task 1: line cut short (truncated"});
  test::write_text(f, body.substr(0, 5));
  expect_error([&] { sweep::read_task(f, 1); }, {f + ": task 1: offset ", "beyond the end"});
  fresh();
  // Index damage: an offset that does not fit 64 bits (once an uncaught std::out_of_range),
  // a negative or non-numeric one, one into the middle of a line.
  replace_line(idx, 1, "99999999999999999999999999");
  expect_error([&] { sweep::read_task(f, 1); }, {idx + ": line 2: not a byte offset"});
  replace_line(idx, 1, "-3");
  expect_error([&] { sweep::read_task(f, 1); }, {idx + ": line 2: not a byte offset: '-3'"});
  replace_line(idx, 1, "7");
  expect_error([&] { sweep::read_task(f, 1); },
               {f + ": task 1: malformed line (not a JSON array of points)"});
  fresh();
  // A line that is a JSON array of damaged point descriptions: refused by the worker's reader.
  const json task = sweep::read_task(f, 1);
  json bad = task;
  bad[1]["inputs"]["oversub_pct"] = "lots";
  expect_error([&] { PointSpec::from_json(bad[1], "t.jsonl: task 1"); },
               {"t.jsonl: task 1: inputs.oversub_pct: malformed point description: expected a "
                "number or null"});
}

TEST(SweepWorker, DamagedPointDescriptionsAreOneLineErrors) {
  const SweepSpec s = parse(
      R"J({"workloads": [{"generator": "regular", "footprint": "8M"}], "oversub": [0, 10]})J");
  const auto pts = s.expand("/tmp/traces");
  const json good = pts[1].to_json();
  EXPECT_EQ(PointSpec::from_json(good, "w").id, pts[1].id);
  struct Damage {
    std::function<void(json&)> apply;
    std::string message;
  };
  const std::vector<Damage> damages = {
      {[](json& j) { j = json::array(); },
       "w: (point): malformed point description: expected an "
       "object, got array"},
      {[](json& j) { j.erase("id"); }, "w: id: malformed point description: expected a string"},
      {[](json& j) { j["label"] = 3; }, "w: label: malformed point description: expected a string"},
      {[](json& j) { j["axes"] = "x"; },
       "w: axes: malformed point description: expected an object"},
      {[](json& j) { j["inputs"].erase("workload"); },
       "w: inputs.workload: malformed point description: expected an object"},
      {[](json& j) { j["inputs"]["workload"]["trace_crc64"] = 7; },
       "w: inputs.workload.trace_crc64: malformed point description: expected a string"},
      {[](json& j) { j["inputs"]["config"] = json::array(); },
       "w: inputs.config: malformed point description: expected an object"},
      // Any change of the inputs no longer matches the id: a garbled description never runs.
      {[](json& j) { j["inputs"]["oversub_pct"] = 11; },
       "w: id: malformed point description: does not match the point's axes and inputs"},
  };
  for (const auto& dmg : damages) {
    json j = good;
    dmg.apply(j);
    expect_error([&] { PointSpec::from_json(j, "w"); }, {dmg.message});
  }
}

TEST(SweepResults, MalformedRecordsCountAsMissingAndNeverThrow) {
  TempDir d;
  const SweepSpec s = parse(R"J({"workloads": [{"generator": "regular", "footprint": "8M"}]})J");
  ResultStore store(d.file("out"));
  const auto pts = s.expand(store.trace_dir());
  const PointSpec& p = pts[0];
  fake_result(store, p, 1, 1);
  ASSERT_TRUE(store.load_result(p));
  json r = test::read_json(store.result_path(p.id).string());
  // Each field of the wrong type (once a json::type_error escaping as an "internal error").
  for (const char* key : {"format", "id", "input_hash", "stats", "build"}) {
    json bad = r;
    bad[key] = 5;
    test::write_text(store.result_path(p.id).string(), bad.dump());
    EXPECT_FALSE(store.load_result(p)) << key;
  }
  json no_build = r;
  no_build["build"].erase("build_id");
  test::write_text(store.result_path(p.id).string(), no_build.dump());
  EXPECT_FALSE(store.load_result(p));
  for (const std::string text : {"", "[]", "{\"format\": ", "null", "\xff\xfe"}) {
    test::write_text(store.result_path(p.id).string(), text);
    EXPECT_FALSE(store.load_result(p)) << text;
  }
  // Failure records: a non-string error or log is no record.
  store.save_failure(p, "boom");
  ASSERT_TRUE(store.load_failure(p.id));
  EXPECT_EQ((*store.load_failure(p.id))["error"], "boom");
  EXPECT_EQ((*store.load_failure(p.id))["build"], sweep::this_build().to_json());
  test::write_text(store.failure_path(p.id).string(), R"({"error": 5})");
  EXPECT_FALSE(store.load_failure(p.id));
  test::write_text(store.failure_path(p.id).string(), R"({"error": "x", "log": ["a"]})");
  EXPECT_FALSE(store.load_failure(p.id));
  // Bytes that are not UTF-8 (a crashed worker's log, a Latin-1 file name) are recorded, as
  // U+FFFD, instead of failing the write.
  test::write_text(d.file("worker.log"), "line 1\nbinary \xff\xfe garbage\n");
  store.save_failure(p, "error in caf\xe9.uvt", d.file("worker.log"));
  const auto f = store.load_failure(p.id);
  ASSERT_TRUE(f);
  EXPECT_EQ((*f)["error"], "error in caf\xef\xbf\xbd.uvt");
  EXPECT_NE((*f)["log_tail"].get<std::string>().find("binary \xef\xbf\xbd\xef\xbf\xbd garbage"),
            std::string::npos);
}

TEST(SweepBuild, IdentityOfTheBinaryAndOfOtherExecutables) {
  const auto& me = sweep::this_build();
  EXPECT_EQ(me.version, UVMSIM_VERSION);
  // A git commit (40 hex digits, "+modified" with uncommitted edits) or "unknown" (no git).
  const std::string rev = me.revision;
  const std::string head = rev.substr(0, rev.find('+'));
  EXPECT_TRUE(rev == "unknown" ||
              (head.size() == 40 &&
               head.find_first_not_of("0123456789abcdef") == std::string::npos &&
               (rev.size() == 40 || rev.substr(40) == "+modified")))
      << rev;
  // The test binary and uvmsim are different links: different build ids, both GNU notes.
  const std::string tool = sweep::build_id_of(UVMSIM_BINARY);
  ASSERT_EQ(tool.rfind("gnu:", 0), 0u) << tool;
  EXPECT_EQ(tool.size(), 4u + 40u);  // --build-id=sha1
  EXPECT_NE(tool, me.build_id);
  EXPECT_EQ(sweep::build_id_of("/proc/self/exe"), me.build_id);
  EXPECT_EQ(sweep::short_build_id(tool), tool.substr(4, 16));
  // Files without a build-id note (a script) are identified by their content.
  TempDir d;
  test::write_text(d.file("w.sh"), "#!/bin/sh\nexit 0\n");
  EXPECT_EQ(sweep::build_id_of(d.file("w.sh")),
            "crc64:" + sweep::hex64(sweep::crc64("#!/bin/sh\nexit 0\n")));
  expect_error([&] { sweep::build_id_of(d.file("none")); },
               {d.file("none") + ": cannot read the executable"});
  // Round trip through a result record, and what is not an identity.
  EXPECT_EQ(sweep::BuildIdentity::from_json(me.to_json())->build_id, me.build_id);
  EXPECT_FALSE(sweep::BuildIdentity::from_json(json{{"version", "1"}, {"revision", "r"}}));
  EXPECT_FALSE(sweep::BuildIdentity::from_json(json("gnu:00")));
}

TEST(SweepBuild, PinnedDirectoryCountsOnlyResultsOfItsBuild) {
  TempDir d;
  const SweepSpec s = parse(
      R"J({"workloads": [{"generator": "regular", "footprint": "8M"}], "oversub": [0, 10]})J");
  ResultStore store(d.file("out"));
  const auto pts = s.expand(store.trace_dir());
  fake_result(store, pts[0], 1, 1);  // a result of this (the test) binary's build
  ASSERT_TRUE(store.load_result(pts[0]));
  // Pinning uvmsim (another build): copied, read-only, recorded; the old result stops counting.
  const auto& pin = store.pin(UVMSIM_BINARY, nullptr);
  EXPECT_EQ(pin.build_id, sweep::build_id_of(UVMSIM_BINARY));
  EXPECT_EQ(pin.binary, std::filesystem::path(d.file("out")) / "bin" /
                            ("uvmsim-" + sweep::short_build_id(pin.build_id)));
  EXPECT_EQ(sweep::crc64_file(pin.binary), sweep::crc64_file(UVMSIM_BINARY));
  EXPECT_EQ(std::filesystem::status(pin.binary).permissions() & std::filesystem::perms::owner_write,
            std::filesystem::perms::none);
  EXPECT_FALSE(store.load_result(pts[0]));
  // Another store on the directory (a worker, a later run) reads the pin.
  const ResultStore again(d.file("out"));
  ASSERT_TRUE(again.pinned());
  EXPECT_EQ(again.pinned()->build_id, pin.build_id);
  EXPECT_FALSE(again.load_result(pts[0]));
  // Pinning the test binary back: its result counts again.
  store.pin("/proc/self/exe", sweep::this_build().to_json());
  EXPECT_TRUE(store.load_result(pts[0]));
  // A damaged pin record is an error naming the file and field, never a guess.
  const std::string rec = d.file("out/build.json");
  json j = test::read_json(rec);
  j["build_id"] = 5;
  test::write_text(rec, j.dump());
  expect_error([&] { ResultStore broken(d.file("out")); },
               {rec + ": build_id: expected a non-empty string"});
  j["build_id"] = "gnu:00";
  j["binary"] = "../../usr/bin/env";
  test::write_text(rec, j.dump());
  expect_error([&] { ResultStore broken(d.file("out")); },
               {rec + ": binary: expected a path inside the directory"});
  test::write_text(rec, "{\"format\": \"uvmsim-sweep-bu");
  expect_error([&] { ResultStore broken(d.file("out")); }, {rec + ": (file): not a JSON object"});
}

TEST(CheckRelation, ParsesAndEvaluatesWithMeasuredValues) {
  using check::Relation;
  const Relation r = Relation::parse("sim_time_ns(a-b) <= 0.8 * sim_time_ns( c ) + 2", "f");
  ASSERT_EQ(r.refs().size(), 2u);
  EXPECT_EQ(r.refs()[0].metric, "sim_time_ns");
  EXPECT_EQ(r.refs()[0].run, "a-b");
  EXPECT_EQ(r.refs()[1].run, "c");
  auto vals = [](double a, double c) {
    return [a, c](const Relation::Ref& x) { return x.run == "a-b" ? a : c; };
  };
  auto o = r.evaluate(vals(82, 100));
  EXPECT_TRUE(o.holds);
  EXPECT_EQ(o.shown, "82 <= 0.8 * 100 + 2");
  o = r.evaluate(vals(82.5, 100));
  EXPECT_FALSE(o.holds);
  EXPECT_EQ(o.shown, "82.5 <= 0.8 * 100 + 2");
  const Relation p = Relation::parse("x.y(r) == 2 * (a(r) - b(r))", "f");
  o = p.evaluate([](const Relation::Ref& x) {
    return x.metric == "x.y" ? 6.0 : x.metric == "a" ? 5.0 : 2.0;
  });
  EXPECT_TRUE(o.holds);
  EXPECT_EQ(o.shown, "6 == 2 * (5 - 2)");
  expect_error([] { Relation::parse("evictions(a) =< 3", "f.json: relations[0]"); },
               {"f.json: relations[0]: expected a comparison", "column 14"});
  expect_error([] { Relation::parse("evictions a < 3", "f"); },
               {"expected '(' and a run name after metric 'evictions'"});
  expect_error([] { Relation::parse("3 < 4", "f"); }, {"must read at least one metric(run)"});
  expect_error([] { Relation::parse("evictions(a) < 3 3", "f"); },
               {"unexpected text after the relation"});
}

TEST(CheckExpectations, CompareExactToleranceRangeAndUnrecorded) {
  using check::compare;
  EXPECT_TRUE(compare(json(8192), json(8192), std::nullopt).pass);
  auto v = compare(json(8192), json(8193), std::nullopt);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.expected, "8192");
  EXPECT_EQ(v.measured, "8193 (+0.01%)");
  v = compare(json(1000), json(1019), 0.02);
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.expected, "1000 ±2%");
  EXPECT_FALSE(compare(json(1000), json(1021), 0.02).pass);
  EXPECT_TRUE(compare(json{{"value", 1000}, {"rel_tol", 0.05}}, json(1049), std::nullopt).pass);
  EXPECT_TRUE(compare(json{{"value", 10}, {"abs_tol", 3}}, json(13), std::nullopt).pass);
  EXPECT_FALSE(compare(json{{"value", 10}, {"abs_tol", 3}}, json(13.5), std::nullopt).pass);
  v = compare(json{{"min", 1}, {"max", 5}}, json(6), std::nullopt);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.expected, "in [1, 5]");
  EXPECT_TRUE(compare(json(false), json(false), std::nullopt).pass);
  v = compare(json(nullptr), json(3), std::nullopt);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.expected, "(not recorded; run with --update)");
  v = compare(json(3), json(nullptr), std::nullopt);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.measured, "(no such metric)");
  // --update keeps the form (and tolerance) of an entry and never rewrites a range.
  EXPECT_EQ(check::updated(ordered_json(5), json(7)).dump(), "7");
  EXPECT_EQ(check::updated(ordered_json{{"value", 5}, {"rel_tol", 0.1}}, json(7)).dump(),
            R"J({"value":7,"rel_tol":0.1})J");
  EXPECT_EQ(check::updated(ordered_json{{"min", 1}}, json(7)).dump(), R"J({"min":1})J");
}

TEST(CheckExpectations, CompactDumpKeepsShortObjectsOnOneLine) {
  const ordered_json j = ordered_json::parse(
      R"J({"a": {"x": 1, "y": "two"}, "b": [1, 2], "long": {"k1": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "k2": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}})J");
  EXPECT_EQ(
      check::compact_dump(j, 60),
      "{\n  \"a\": {\"x\": 1, \"y\": \"two\"},\n  \"b\": [1, 2],\n  \"long\": {\n"
      "    \"k1\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\n"
      "    \"k2\": \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"\n  }\n}");
  EXPECT_EQ(ordered_json::parse(check::compact_dump(j, 60)), j);
}

TEST(CheckExpectations, LoadValidatesRunsWorkloadsAndRelations) {
  TempDir d;
  const std::string f = d.file("e.json");
  auto load = [&](const std::string& text) {
    test::write_text(f, text);
    return check::ExpectationFile::load(f, {"driver.prefetch_threshold=90"});
  };
  const auto e = load(R"J({"workloads": {"w": {"generator": "regular", "footprint": "8M"}},
    "defaults": {"oversub": 50}, "tolerances": {"*time_ns": 0.02},
    "runs": {"a": {"workload": "w", "prefetch": "none", "expect": {"evictions": 2, "sim_time_ns": null}},
             "b": {"workload": "w", "oversub": 0}},
    "relations": ["evictions(a) > evictions(b)", {"check": "gpu_faults(a) >= 1", "why": "w"}]})J");
  ASSERT_EQ(e.runs.size(), 2u);
  EXPECT_EQ(*e.runs[0].settings.oversub, 50.0);
  EXPECT_EQ(*e.runs[1].settings.oversub, 0.0);
  EXPECT_EQ(*e.runs[0].settings.prefetch, "none");
  ASSERT_EQ(e.runs[0].settings.sets.size(), 1u);  // the --set override
  EXPECT_EQ(e.runs[0].settings.sets[0].first, "driver.prefetch_threshold");
  EXPECT_EQ(e.runs[0].metrics, (std::vector<std::string>{"evictions", "sim_time_ns"}));
  EXPECT_EQ(e.tolerance("sim_time_ns"), 0.02);
  EXPECT_EQ(e.tolerance("kernel_time_ns"), 0.02);
  EXPECT_FALSE(e.tolerance("evictions"));
  EXPECT_EQ(e.relations.size(), 2u);
  EXPECT_EQ(e.relations[1].why, "w");
  expect_error([&] { load(R"J({"runs": {"a": {"workload": "nope"}}, "workloads": {}})J"); },
               {f + ": runs.a.workload: unknown workload 'nope'"});
  expect_error(
      [&] {
        load(
            R"J({"workloads": {"w": {"generator": "regular"}}, "runs": {"a": {"workload": "w", "colour": 1}}})J");
      },
      {f + ": runs.a.colour: unknown key"});
  expect_error(
      [&] {
        load(
            R"J({"workloads": {"w": {"generator": "regular"}}, "runs": {"a": {"workload": "w"}}, "relations": ["evictions(zz) > 0"]})J");
      },
      {f + ": relations[0]: names run 'zz'"});
  expect_error(
      [&] {
        load(
            R"J({"workloads": {"w": {"generator": "regular"}}, "runs": {"a": {"workload": "w", "expect": {"x": {"value": 1, "min": 0}}}}})J");
      },
      {f + ": runs.a.expect.x: give either a value"});
  expect_error([&] { load("{\"runs\": "); }, {f + ": not valid JSON"});
}

}  // namespace
}  // namespace uvmsim
