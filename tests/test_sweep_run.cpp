// `uvmsim sweep`, `uvmsim report` and `uvmsim check` end to end, as a user runs them: the real
// binary as a child process (sweeps spawn workers, and these tests kill sweeps mid-run).
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "core/units.h"
#include "policies/policy.h"
#include "policies/registry.h"
#include "sim/check/expectations.h"
#include "sim/sweep/results.h"
#include "sim/sweep/spec.h"
#include "sim/sweep/table.h"
#include "tests/sweep_test_util.h"
#include "tests/test_util.h"

namespace uvmsim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::TempDir;
using test::uvmsim;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// 2 workloads x 2 prefetchers x 2 oversubscription levels of 8 MB page-touch kernels.
constexpr const char* kSmallSpec = R"J({
  "name": "small",
  "workloads": [{"name": "regular", "generator": "regular", "footprint": "8M", "params": {"init": "cpu"}},
                {"name": "random", "generator": "random", "footprint": "8M", "params": {"init": "cpu"}}],
  "prefetch": ["tree", "none"],
  "oversub": [0, 50]
})J";

std::vector<sweep::PointSpec> points_of(const std::string& spec, const fs::path& out) {
  return sweep::SweepSpec::load(spec).expand(fs::absolute(out) / "traces");
}

std::vector<std::vector<std::string>> csv_rows(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(test::read_text(path));
  std::string line;
  while (std::getline(in, line)) rows.push_back(split(line, ','));
  return rows;
}

TEST(SweepRun, LocalSweepMatchesUvmsimRunAndRerunSkipsFinishedPoints) {
  TempDir d;
  const std::string spec = d.file("small.json"), out = d.file("out");
  test::write_text(spec, kSmallSpec);
  auto r = uvmsim({"sweep", spec, "--out", out, "--jobs", "2"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(
      contains(r.output, "sweep small: 8 point(s): 8 finished now, 0 already done, 0 failed"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "generating 2 trace(s)")) << r.output;
  EXPECT_TRUE(contains(r.output, "[8/8] ok")) << r.output;  // not a terminal: one line per point
  EXPECT_EQ(test::count_json(fs::path(out) / "points"), 8u);
  EXPECT_EQ(test::count_json(fs::path(out) / "failed"), 0u);

  // Every point's statistics are exactly those of `uvmsim run` with the same settings.
  const auto pts = points_of(spec, out);
  const sweep::ResultStore store(out);
  for (const auto& p : pts) {
    const auto res = store.load_result(p);
    ASSERT_TRUE(res) << p.label;
    EXPECT_EQ((*res)["stats"]["config"]["engine"]["prefetch"], p.axes["prefetch"]);
  }
  const auto& p = pts[7];  // random, prefetch none, 50 %
  ASSERT_EQ(p.label, "random prefetch=none oversub=50");
  r = uvmsim({"run", "--gpu", "gtx1080ti", "--trace", p.trace.string(), "--prefetch", "none",
              "--oversub", "50", "--stats-out", d.file("run.json"), "-q"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  json run = test::read_json(d.file("run.json"));
  run["trace"].erase("path");
  run.erase("wall_seconds");
  run.erase("accesses_per_second");
  EXPECT_EQ(test::stable_stats(*store.load_result(p)), run);

  // The table: one row per point, axes and metrics as columns.
  const auto rows = csv_rows(out + "/results.csv");
  ASSERT_EQ(rows.size(), 9u);
  std::set<std::string> ids;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    ids.insert(rows[i][0]);
    EXPECT_EQ(rows[i][1], "ok");
  }
  EXPECT_EQ(ids.size(), 8u);

  // Rerunning skips every finished point and leaves the result files untouched.
  const std::string before = test::read_text(store.result_path(p.id));
  r = uvmsim({"sweep", spec, "--out", out});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "8 point(s): 0 finished now, 8 already done, 0 failed"))
      << r.output;
  EXPECT_EQ(test::read_text(store.result_path(p.id)), before);
  r = uvmsim({"sweep", spec, "--out", out, "--list"});
  EXPECT_TRUE(contains(r.output, p.id + "  done     random prefetch=none oversub=50")) << r.output;
  // --rerun recomputes (in a new worker process), bit-identically.
  const json pid_before = (*store.load_result(p))["run"]["pid"];
  r = uvmsim({"sweep", spec, "--out", out, "--rerun", "--only", p.id});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "1 point(s): 1 finished now, 0 already done")) << r.output;
  EXPECT_NE((*store.load_result(p))["run"]["pid"], pid_before);
  // The point's own process's peak memory (non-deterministic, so in `run`, not in `stats`).
  EXPECT_GT((*store.load_result(p))["run"]["peak_rss_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(test::stable_stats(*store.load_result(p)), run);

  // The report draws every figure as PNG and SVG and an index page showing them.
  r = uvmsim({"report", out});
  ASSERT_EQ(r.status.code, 0) << r.output;
  const fs::path rep = fs::path(out) / "report";
  const std::string index = test::read_text((rep / "index.html").string());
  for (const char* fig : {"normalized_runtime", "page_faults", "evictions", "link_traffic",
                          "runtime_vs_oversub", "runtime_vs_oversub_normalized"}) {
    const std::string png = test::read_text((rep / (std::string(fig) + ".png")).string());
    ASSERT_GT(png.size(), 1000u) << fig;
    EXPECT_EQ(png.substr(1, 3), "PNG") << fig;
    EXPECT_TRUE(contains(test::read_text((rep / (std::string(fig) + ".svg")).string()), "<svg"))
        << fig;
    EXPECT_TRUE(contains(index, std::string(fig) + ".png")) << fig;
  }
  EXPECT_TRUE(contains(index, "results.csv"));
}

// A two-GPU node (a100-40gb with system.gpus = 2): an all-to-all shuffle over both GPUs and a
// one-GPU page-touch kernel that runs on GPU 0 of the node.
constexpr const char* kNodeSpec = R"J({
  "name": "node",
  "workloads": [{"name": "alltoall", "generator": "mgpu-alltoall", "footprint": "16M",
                 "params": {"gpus": "2", "rounds": "2"}},
                {"name": "regular", "generator": "regular", "footprint": "4M", "params": {"init": "cpu"}}],
  "gpus": ["a100-40gb"],
  "set": {"system.gpus": 2},
  "prefetch": ["tree", "none"],
  "oversub": [0]
})J";

TEST(SweepRun, TableHasPerGpuColumnsForARunOnSeveralGpus) {
  constexpr std::uint64_t MiB = 1 << 20;
  TempDir d;
  const std::string spec = d.file("node.json"), out = d.file("out");
  test::write_text(spec, kNodeSpec);
  auto r = uvmsim({"sweep", spec, "--out", out, "--jobs", "2"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  const auto rows = sweep::read_csv(out + "/results.csv");
  ASSERT_EQ(rows.size(), 5u);
  const auto& head = rows[0];
  // The per-GPU columns follow `build`, GPU by GPU, each GPU's in the same order.
  const std::vector<std::string> per_gpu = {"kernels",
                                            "kernel_time_ns",
                                            "accesses",
                                            "gpu_faults",
                                            "fault_batches",
                                            "evictions",
                                            "host_link.htod_bytes",
                                            "host_link.dtoh_bytes",
                                            "host_link.peer_staged_bytes",
                                            "host_link.remote_bytes"};
  // Per GPU the ten above, then the rest of its entry (none here, or more with other models).
  const auto is_gpu_column = [](const std::string& c) {
    return c.size() > 3 && c.rfind("gpu", 0) == 0 && std::isdigit(static_cast<unsigned char>(c[3]));
  };
  const auto build = std::find(head.begin(), head.end(), "build");
  ASSERT_NE(build, head.end());
  const auto block_end = std::find_if_not(build + 1, head.end(), is_gpu_column);
  const std::vector<std::string> block(build + 1, block_end);
  EXPECT_EQ(std::count_if(block_end, head.end(), is_gpu_column), 0);
  const auto gpu1 = std::find_if(block.begin(), block.end(),
                                 [](const std::string& c) { return c.rfind("gpu1.", 0) == 0; });
  ASSERT_GE(gpu1 - block.begin(), 10);
  ASSERT_GE(block.end() - gpu1, 10);
  for (std::size_t i = 0; i < per_gpu.size(); ++i) {
    EXPECT_EQ(block[i], "gpu0." + per_gpu[i]);
    EXPECT_EQ(gpu1[static_cast<std::ptrdiff_t>(i)], "gpu1." + per_gpu[i]);
  }
  for (auto c = block.begin(); c != block.end(); ++c)
    EXPECT_EQ(c->rfind(c < gpu1 ? "gpu0." : "gpu1.", 0), 0u) << *c;

  std::map<std::string, std::map<std::string, std::string>> by_label;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), head.size());
    for (std::size_t c = 0; c < head.size(); ++c) by_label[rows[i][2]][head[c]] = rows[i][c];
  }
  const auto u = [](const std::string& cell) { return std::stoull(cell); };
  // mgpu-alltoall (docs/generators.md): chunk = 16 MiB / (2 * 2^2) = 2 MiB; each GPU stages the
  // chunk of its send buffer the other GPU reads, once in round 0 and twice (taken back by its
  // pack, then read again) in round 1: (gpus - 1) * chunk * (2 * rounds - 1) = 6 MiB, and takes
  // the other's chunk in as often. Nothing else moves, whatever the prefetcher does. Accesses:
  // per round a GPU's pack writes gpus * chunk = 4 MiB, its exchange reads 4 MiB (chunk g of
  // each send buffer) and writes 4 MiB (its receive buffer), 128 bytes per warp instruction.
  for (const char* label : {"alltoall prefetch=tree", "alltoall prefetch=none"}) {
    SCOPED_TRACE(label);
    auto& row = by_label[label];
    ASSERT_EQ(row["status"], "ok");
    for (const std::string g : {"gpu0.", "gpu1."}) {
      EXPECT_EQ(u(row[g + "host_link.peer_staged_bytes"]), 6u * MiB);
      EXPECT_EQ(u(row[g + "host_link.dtoh_bytes"]), 6u * MiB);
      EXPECT_EQ(u(row[g + "host_link.htod_bytes"]), 6u * MiB);
      EXPECT_EQ(u(row[g + "host_link.remote_bytes"]), 0u);
      EXPECT_EQ(u(row[g + "evictions"]), 0u);
      EXPECT_EQ(u(row[g + "kernels"]), 4u);  // pack and alltoall, two rounds
      EXPECT_EQ(u(row[g + "accesses"]), 2u * 3 * 4 * MiB / 128);
    }
    EXPECT_EQ(u(row["dtoh_bytes_by_cause.peer_staged"]), 12u * MiB);
    // The run's totals are the GPUs' sums.
    for (const std::string m : {"gpu_faults", "fault_batches", "evictions"})
      EXPECT_EQ(u(row["gpu0." + m]) + u(row["gpu1." + m]), u(row[m])) << m;
    for (const std::string m : {"htod_bytes", "dtoh_bytes"})
      EXPECT_EQ(u(row["gpu0.host_link." + m]) + u(row["gpu1.host_link." + m]), u(row[m])) << m;
  }
  // The one-GPU kernel runs on GPU 0: each of its 1024 pages copied in once, one access each;
  // GPU 1 has nothing.
  for (const char* label : {"regular prefetch=tree", "regular prefetch=none"}) {
    SCOPED_TRACE(label);
    auto& row = by_label[label];
    ASSERT_EQ(row["status"], "ok");
    EXPECT_EQ(u(row["gpu0.host_link.htod_bytes"]), 4u * MiB);
    EXPECT_EQ(u(row["gpu0.accesses"]), 1024u);
    EXPECT_EQ(u(row["gpu0.kernels"]), 1u);
    EXPECT_EQ(row["gpu0.gpu_faults"], row["gpu_faults"]);
    for (const auto& c : per_gpu) EXPECT_EQ(row["gpu1." + c], "0") << c;
  }
  EXPECT_EQ(by_label["regular prefetch=none"]["gpu0.gpu_faults"], "1024");

  // The same kernel on one GPU: no per-GPU columns at all (one-GPU tables are as before).
  const std::string spec1 = d.file("one.json"), out1 = d.file("out1");
  test::write_text(spec1, R"J({"name": "one", "workloads": [{"name": "regular",
    "generator": "regular", "footprint": "4M", "params": {"init": "cpu"}}],
    "gpus": ["a100-40gb"], "prefetch": ["tree", "none"], "oversub": [0]})J");
  r = uvmsim({"sweep", spec1, "--out", out1, "--jobs", "2"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  const auto one = sweep::read_csv(out1 + "/results.csv");
  ASSERT_EQ(one.size(), 3u);
  for (const auto& c : one[0]) EXPECT_FALSE(is_gpu_column(c)) << c;
  // ... and its statistics are those of GPU 0 of the node, bit for bit (docs/multi-gpu.md).
  std::map<std::string, std::string> alone;
  for (std::size_t c = 0; c < one[0].size(); ++c) alone[one[0][c]] = one[2][c];
  ASSERT_EQ(alone["label"], "regular prefetch=none");
  for (const char* m : {"sim_time_ns", "gpu_faults", "htod_bytes", "fault_batches"})
    EXPECT_EQ(alone[m], by_label["regular prefetch=none"][m]) << m;
}

TEST(SweepRun, BadInputIsAOneLineErrorNamingTheFile) {
  TempDir d;
  test::write_text(d.file("s.json"),
                   R"J({"workloads": [{"generator": "regular"}], "oversub": "lots"})J");
  // An invalid spec is a usage error: nothing ran.
  auto r = uvmsim({"sweep", d.file("s.json"), "--out", d.file("o")});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_EQ(r.output,
            "uvmsim sweep: error: " + d.file("s.json") +
                ": oversub: expected a percentage in [0, 100000] or null, got \"lots\"\n");
  r = uvmsim({"sweep", d.file("missing.json")});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_TRUE(contains(r.output, d.file("missing.json") + ": cannot open sweep spec")) << r.output;
  r = uvmsim({"report", d.file("")});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_TRUE(contains(r.output, "results.csv: not found")) << r.output;
  r = uvmsim({"sweep", "--help"});
  EXPECT_EQ(r.status.code, 0);
  EXPECT_TRUE(contains(r.output, "--slurm-partition")) << r.output;
}

TEST(SweepRun, ReportDrawsEveryTransferCauseTheStatisticsHave) {
  // The link-traffic figure stacks the causes listed in the report script; a cause the simulator
  // adds to its statistics must be added there too, or its bytes silently vanish from the figure.
  TempDir d;
  const auto t = d.file("t.uvt"), st = d.file("s.json");
  ASSERT_EQ(uvmsim({"gen", "regular", "--footprint", "4M", "-o", t}).status.code, 0);
  ASSERT_EQ(
      uvmsim({"run", "--gpu", "gtx1080ti", "--trace", t, "--stats-out", st, "-q"}).status.code, 0);
  const auto stats = nlohmann::json::parse(test::read_text(st));
  const std::string script =
      test::read_text(std::string(UVMSIM_SOURCE_DIR) + "/scripts/uvmsim_report.py");
  for (const std::string dir : {"htod", "dtoh"}) {
    const std::string var = dir == "htod" ? "HTOD_CAUSES = [" : "DTOH_CAUSES = [";
    const auto at = script.find(var);
    ASSERT_NE(at, std::string::npos) << var;
    const std::string list = script.substr(at, script.find(']', at) - at);
    std::set<std::string> drawn;
    for (std::size_t q = list.find('"'); q != std::string::npos; q = list.find('"', q)) {
      const std::size_t end = list.find('"', q + 1);
      drawn.insert(list.substr(q + 1, end - q - 1));
      q = end + 1;
    }
    std::set<std::string> counted;
    for (const auto& [cause, bytes] : stats[dir + "_bytes_by_cause"].items()) counted.insert(cause);
    EXPECT_EQ(drawn, counted) << dir;
  }
}

TEST(SweepRun, FailedPointIsReportedWithItsErrorAndRetriedAlone) {
  TempDir d;
  const std::string spec = d.file("small.json"), out = d.file("out");
  test::write_text(spec, kSmallSpec);
  // A damaged shared trace: the 4 random points fail, the 4 regular ones succeed.
  const auto pts = points_of(spec, out);
  const fs::path bad = pts[4].trace;
  fs::create_directories(bad.parent_path());
  test::write_text(bad.string(), "UVMT this is not a trace");
  auto r = uvmsim({"sweep", spec, "--out", out, "--jobs", "2"});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "8 point(s): 4 finished now, 0 already done, 4 failed"))
      << r.output;
  EXPECT_TRUE(contains(
      r.output, "failed " + pts[4].id + " (random prefetch=tree oversub=0): " + bad.string()))
      << r.output;
  EXPECT_TRUE(contains(r.output, "--retry-failed")) << r.output;
  const json failure = test::read_json(out + "/failed/" + pts[4].id + ".json");
  EXPECT_TRUE(contains(failure["error"].get<std::string>(), bad.string()));
  EXPECT_EQ(failure["label"], "random prefetch=tree oversub=0");
  const auto rows = csv_rows(out + "/results.csv");
  EXPECT_EQ(std::count_if(rows.begin(), rows.end(), [](const auto& x) { return x[1] == "failed"; }),
            4);

  // Repair the trace; only the failed points run again.
  fs::remove(bad);
  r = uvmsim({"sweep", spec, "--out", out, "--retry-failed"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "4 point(s): 4 finished now, 0 already done, 0 failed"))
      << r.output;
  EXPECT_EQ(test::count_json(fs::path(out) / "points"), 8u);
  EXPECT_EQ(test::count_json(fs::path(out) / "failed"), 0u);
}

TEST(SweepRun, CrashingWorkerFailsItsPointAndRecordsNoResult) {
  TempDir d;
  const std::string spec = d.file("small.json"), out = d.file("out");
  test::write_text(spec, kSmallSpec);
  // A worker binary that generates traces as uvmsim does but dies of SIGSEGV on every point. It
  // is the pinned build of `out` from the start (docs/sweeps.md, "Build identity").
  const std::string crash = d.file("crash.sh");
  test::write_text(crash, std::string("#!/bin/sh\n[ \"$2\" = --worker ] && kill -SEGV $$\nexec ") +
                              UVMSIM_BINARY + " \"$@\"\n");
  fs::permissions(crash, fs::perms::owner_all);
  auto r = uvmsim({"sweep", spec, "--out", out, "--worker-bin", crash});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "8 failed")) << r.output;
  EXPECT_TRUE(contains(r.output, "worker killed by signal 11")) << r.output;
  EXPECT_EQ(test::count_json(fs::path(out) / "points"), 0u);
  EXPECT_EQ(test::count_json(fs::path(out) / "failed"), 8u);
  // With no result of the crashing build to mix with, the real binary is pinned in its place
  // and computes every point.
  r = uvmsim({"sweep", spec, "--out", out});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "8 finished now, 0 already done, 0 failed")) << r.output;
  EXPECT_EQ(test::count_json(fs::path(out) / "failed"), 0u);
}

// The pids of processes whose command line mentions `needle`.
std::vector<int> processes_mentioning(const std::string& needle) {
  std::vector<int> pids;
  const std::unique_ptr<DIR, int (*)(DIR*)> proc(::opendir("/proc"), ::closedir);
  if (!proc) return pids;
  while (dirent* e = ::readdir(proc.get())) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::string cmd;
    try {
      cmd = test::read_text("/proc/" + std::string(e->d_name) + "/cmdline");
    } catch (const std::ios_base::failure&) {
      continue;  // it exited while being read (ESRCH): not running any more
    }
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (contains(cmd, needle) && contains(cmd, "--worker")) pids.push_back(pid);
  }
  return pids;
}

// Every result file in `out` is complete and belongs to a point of the sweep.
void expect_only_complete_results(const std::vector<sweep::PointSpec>& pts,
                                  const std::string& out) {
  const sweep::ResultStore store(out);
  std::map<std::string, const sweep::PointSpec*> by_id;
  for (const auto& p : pts) by_id[p.id] = &p;
  for (const auto& e : fs::directory_iterator(fs::path(out) / "points")) {
    const std::string name = e.path().filename().string();
    if (name[0] == '.') continue;  // a killed writer's temporary: never read as a result
    const std::string id = e.path().stem().string();
    ASSERT_TRUE(by_id.count(id)) << "unexpected result file " << name;
    EXPECT_TRUE(store.load_result(*by_id[id])) << "incomplete or foreign result " << name;
  }
}

TEST(SweepRun, KilledAtAnyMomentLosesNoResultAndRecordsNoPartialOne) {
  TempDir d;
  const std::string spec = d.file("kill.json"), out = d.file("out"), ref = d.file("ref");
  test::write_text(spec, R"J({"name": "kill",
    "workloads": [{"name": "random", "generator": "random", "footprint": "24M", "params": {"init": "cpu"}},
                  {"name": "regular", "generator": "regular", "footprint": "24M", "params": {"init": "cpu"}}],
    "prefetch": ["tree", "none"], "oversub": [0, 25, 50, 75, 100, 150]})J");
  const auto pts = points_of(spec, out);
  ASSERT_EQ(pts.size(), 24u);
  std::mt19937 rng(7);
  std::size_t kills = 0, done_before = 0;
  for (int round = 0; round < 12 && test::count_json(fs::path(out) / "points") < pts.size();
       ++round) {
    test::Background sweep({"sweep", spec, "--out", out, "--jobs", "2"}, d.file("log"));
    // Let it make some progress (at least one new result, or none at all in early rounds so a
    // kill can land during trace generation), then SIGKILL it at a random moment.
    const std::size_t target = done_before + (round < 2 ? 0 : 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (sweep.running() && test::count_json(fs::path(out) / "points") < target &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
    if (!sweep.running()) break;
    sweep.signal(SIGKILL);
    const int status = sweep.wait();
    // It may finish its last points between the check above and the signal (a quiet machine):
    // then the kill lands on an exited process and the sweep is complete, like a last round.
    if (status == 0) break;
    EXPECT_EQ(status, -SIGKILL);
    ++kills;
    // Its workers die with it (no orphan keeps writing), and nothing partial is recorded.
    for (int i = 0; i < 100 && !processes_mentioning(out).empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(processes_mentioning(out).empty()) << "workers outlived the killed sweep";
    expect_only_complete_results(pts, out);
    const std::size_t now = test::count_json(fs::path(out) / "points");
    EXPECT_GE(now, done_before) << "a finished result was lost";
    done_before = now;
  }
  EXPECT_GE(kills, 2u);
  // The last round may have finished before its kill landed.
  done_before = test::count_json(fs::path(out) / "points");
  // Resume: the remaining points run, the finished ones are skipped, nothing is duplicated.
  const auto r = uvmsim({"sweep", spec, "--out", out});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, std::to_string(pts.size() - done_before) + " finished now, " +
                                     std::to_string(done_before) + " already done, 0 failed"))
      << r.output;
  expect_only_complete_results(pts, out);
  EXPECT_EQ(test::count_json(fs::path(out) / "points"), pts.size());
  const auto rows = csv_rows(out + "/results.csv");
  ASSERT_EQ(rows.size(), pts.size() + 1);
  std::set<std::string> ids;
  for (std::size_t i = 1; i < rows.size(); ++i) ids.insert(rows[i][0]);
  EXPECT_EQ(ids.size(), pts.size());
  // And the results are exactly those of an uninterrupted sweep.
  ASSERT_EQ(uvmsim({"sweep", spec, "--out", ref}).status.code, 0);
  const sweep::ResultStore a(out), b(ref);
  for (const auto& p : pts)
    EXPECT_EQ(test::stable_stats(*a.load_result(p)), test::stable_stats(*b.load_result(p)))
        << p.label;
}

TEST(SweepRun, InterruptStopsWorkersKeepsResultsAndAConcurrentSweepIsRefused) {
  TempDir d;
  const std::string spec = d.file("int.json"), out = d.file("out");
  test::write_text(spec, R"J({"name": "int",
    "workloads": [{"name": "random", "generator": "random", "footprint": "24M", "params": {"init": "cpu"}}],
    "prefetch": ["tree", "none"], "oversub": [0, 25, 50, 75, 100, 125, 150, 175, 200, 250]})J");
  const auto pts = points_of(spec, out);
  test::Background sweep({"sweep", spec, "--out", out, "--jobs", "1"}, d.file("log"));
  while (sweep.running() && test::count_json(fs::path(out) / "points") < 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(sweep.running()) << test::read_text(d.file("log"));
  // A second sweep on the same directory is refused while the first runs.
  auto r = uvmsim({"sweep", spec, "--out", out});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_TRUE(contains(r.output, "another uvmsim sweep or check is using this directory"))
      << r.output;
  sweep.signal(SIGINT);
  EXPECT_EQ(sweep.wait(), 128 + SIGINT);
  const std::string log = test::read_text(d.file("log"));
  EXPECT_TRUE(contains(log, "interrupted by signal 2; finished results are kept")) << log;
  expect_only_complete_results(pts, out);
  const std::size_t done = test::count_json(fs::path(out) / "points");
  EXPECT_GE(done, 1u);
  EXPECT_LT(done, pts.size());
  r = uvmsim({"sweep", spec, "--out", out});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, std::to_string(done) + " already done, 0 failed")) << r.output;
}

// --- uvmsim check ---------------------------------------------------------------------------

const std::string kSuite = std::string(UVMSIM_SOURCE_DIR) + "/configs/expectations";

TEST(CheckRun, ProjectExpectationSuitePasses) {
  const auto r = uvmsim({"check", kSuite, "--jobs", "2"});
  EXPECT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, " passed, 0 failed\n")) << r.output;
  EXPECT_FALSE(contains(r.output, "FAIL")) << r.output;
}

TEST(CheckRun, SuiteCoversEveryRegisteredPolicy) {
  // Canonical names of the policies the suite's runs use ("lrm" is "driver", "fdp+rgp" both).
  std::set<std::string> ev, pf, pl;
  auto add = [](auto* entry, std::set<std::string>& into) {
    if (entry) into.insert(entry->name);
  };
  for (const auto& e : fs::directory_iterator(kSuite)) {
    if (e.path().extension() != ".json") continue;
    const auto f = check::ExpectationFile::load(e.path());
    for (const auto& r : f.runs) {
      const SimConfig c = r.settings.resolve(e.path().string());
      add(EvictionRegistry::find(c.engine.eviction), ev);
      for (const auto& p : split(c.engine.prefetch, '+')) add(PrefetchRegistry::find(p), pf);
      add(PlacementRegistry::find(c.engine.placement), pl);
    }
  }
  const std::string hint = " has no run in configs/expectations/: add one (docs/check.md)";
  // Policies the test binary itself registers ("test-..." names) are not part of the product.
  auto covered = [](const std::set<std::string>& used, const std::string& name) {
    return name.starts_with("test-") || used.count(name) > 0;
  };
  for (const auto& e : EvictionRegistry::all())
    EXPECT_TRUE(covered(ev, e.name)) << "eviction policy '" << e.name << "'" << hint;
  for (const auto& e : PrefetchRegistry::all())
    EXPECT_TRUE(covered(pf, e.name)) << "prefetch policy '" << e.name << "'" << hint;
  for (const auto& e : PlacementRegistry::all())
    EXPECT_TRUE(covered(pl, e.name)) << "placement policy '" << e.name << "'" << hint;
}

TEST(CheckRun, DeliberatelyChangedPolicyFailsWithAClearMessage) {
  // The tree prefetcher with a different density threshold is a changed prefetch policy; at
  // 100 % nothing is prefetched (regular-tree then equals regular-none).
  const std::string file = kSuite + "/prefetch-tree.json";
  const json doc = test::read_json(file);
  const auto recorded = doc["runs"]["regular-tree"]["expect"]["gpu_faults"].get<long>();
  const auto r = uvmsim({"check", file, "--set", "driver.prefetch_threshold=100"});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "FAILED: " + file + ": run regular-tree: gpu_faults: expected " +
                                     std::to_string(recorded) + ", measured "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "FAILED: " + file +
                                     ": relation \"gpu_faults(regular-tree) <= 0.5 * "
                                     "gpu_faults(regular-none)\" does not hold: "))
      << r.output;
  EXPECT_TRUE(contains(r.output, " failed\n")) << r.output;
  EXPECT_FALSE(contains(r.output, " 0 failed")) << r.output;
}

TEST(CheckRun, UpdateRecordsMeasuredValuesAndKeepsRelations) {
  TempDir d;
  fs::create_directories(d.file("common"));
  fs::copy_file(kSuite + "/common/workloads.json", d.file("common/workloads.json"));
  const std::string file = d.file("e.json");
  test::write_text(file, R"J({
  "description": "update test",
  "include": "common/workloads.json",
  "runs": {
    "a": {"workload": "regular", "oversub": 50, "expect": {"evictions": 12345, "sim_time_ns": {"value": 1, "rel_tol": 0.05}, "gpu_faults": null}},
    "b": {"workload": "regular", "oversub": 0}
  },
  "relations": ["evictions(a) > evictions(b)"]
})J");
  auto r = uvmsim({"check", file});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_TRUE(contains(r.output, "run a: evictions: expected 12345, measured ")) << r.output;
  EXPECT_TRUE(contains(r.output, "run a: gpu_faults: expected (not recorded; run with --update)"))
      << r.output;
  r = uvmsim({"check", file, "--update"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "updated")) << r.output;
  const json doc = test::read_json(file);
  // Recorded values are the measured ones; tolerances and relations stay as written.
  const json eviction_run = test::read_json(kSuite + "/eviction-driver.json");
  EXPECT_EQ(doc["runs"]["a"]["expect"]["evictions"],
            eviction_run["runs"]["regular-o50"]["expect"]["evictions"]);
  EXPECT_EQ(doc["runs"]["a"]["expect"]["sim_time_ns"]["rel_tol"], 0.05);
  EXPECT_EQ(doc["runs"]["a"]["expect"]["sim_time_ns"]["value"],
            eviction_run["runs"]["regular-o50"]["expect"]["sim_time_ns"]);
  EXPECT_TRUE(doc["runs"]["a"]["expect"]["gpu_faults"].is_number());
  // Run b had no expectations: --update records the file's "record" metrics for it.
  EXPECT_TRUE(doc["runs"]["b"]["expect"].contains("htod_bytes"));
  EXPECT_EQ(doc["relations"], json::array({"evictions(a) > evictions(b)"}));
  EXPECT_EQ(doc["description"], "update test");
  r = uvmsim({"check", file});
  EXPECT_EQ(r.status.code, 0) << r.output;
  // A relation that does not hold is not "updated away".
  test::write_text(file, test::read_text(file).replace(
                             test::read_text(file).find("evictions(a) > "), 15, "evictions(a) < "));
  r = uvmsim({"check", file, "--update"});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "relation \"evictions(a) < evictions(b)\" does not hold"))
      << r.output;
}

}  // namespace
}  // namespace uvmsim
