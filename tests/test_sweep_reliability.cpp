// Sweep and CLI reliability (issue 14): one pinned binary per output directory, whatever
// happens to the build during a sweep; a full disk stops a sweep with one line and loses
// nothing; a per-point time limit; usage errors exit 2; every error is one line. The real binary
// runs as a child process, as a user runs it.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "sim/sweep/files.h"
#include "sim/sweep/identity.h"
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

std::size_t lines_of(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::vector<sweep::PointSpec> points_of(const std::string& spec, const fs::path& out) {
  return sweep::SweepSpec::load(spec).expand(fs::absolute(out) / "traces");
}

// Runs `binary` (not necessarily build/uvmsim) with `args`.
sweep::Captured run(const std::string& binary, std::vector<std::string> args) {
  args.insert(args.begin(), binary);
  return sweep::run_capture(args);
}

// Every result file in `out` is complete, belongs to a point of the sweep and was computed by
// `build`; no temporary is left. Returns how many there are.
std::size_t expect_complete_results_of(const std::vector<sweep::PointSpec>& pts,
                                       const std::string& out, const std::string& build) {
  std::map<std::string, const sweep::PointSpec*> by_id;
  for (const auto& p : pts) by_id[p.id] = &p;
  const sweep::ResultStore store(out);
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(out) / "points")) {
    const std::string name = e.path().filename().string();
    EXPECT_NE(name[0], '.') << "temporary left behind: " << name;
    if (name[0] == '.') continue;
    const std::string id = e.path().stem().string();
    EXPECT_TRUE(by_id.count(id)) << "unexpected result file " << name;
    if (!by_id.count(id)) continue;
    const auto r = store.load_result(*by_id[id]);
    EXPECT_TRUE(r) << "incomplete or foreign result " << name;
    if (r) {
      EXPECT_EQ((*r)["build"]["build_id"], build) << name;
    }
    ++n;
  }
  return n;
}

// A copy of uvmsim that behaves identically but is another build: the GNU build-id note's bytes
// changed, as a rebuild changes them.
void write_other_build(const std::string& to) {
  std::string bytes = test::read_text(UVMSIM_BINARY);
  const std::string hex = sweep::build_id_of(UVMSIM_BINARY).substr(4);
  std::string id;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    id += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  const auto at = bytes.find(id);
  ASSERT_NE(at, std::string::npos);
  bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
  test::write_text(to, bytes);
  fs::permissions(to, fs::perms::owner_all);
}

// 2 workloads x 2 prefetchers x 6 levels of 24 MB page-touch kernels: long enough to change the
// binary while it runs.
constexpr const char* kLongSpec = R"J({"name": "long",
  "workloads": [{"name": "random", "generator": "random", "footprint": "24M", "params": {"init": "cpu"}},
                {"name": "regular", "generator": "regular", "footprint": "24M", "params": {"init": "cpu"}}],
  "prefetch": ["tree", "none"], "oversub": [0, 25, 50, 75, 100, 150]})J";

TEST(SweepBuilds, BinaryReplacedMidSweepDoesNotMixBuilds) {
  TempDir d;
  const std::string spec = d.file("long.json"), out = d.file("out");
  test::write_text(spec, kLongSpec);
  const auto pts = points_of(spec, out);
  ASSERT_EQ(pts.size(), 24u);
  fs::create_directories(d.file("a"));
  fs::create_directories(d.file("b"));
  const std::string bin = d.file("a/uvmsim"), other = d.file("b/uvmsim");
  fs::copy_file(UVMSIM_BINARY, bin);
  write_other_build(other);
  const std::string build_a = sweep::build_id_of(bin), build_b = sweep::build_id_of(other);
  ASSERT_NE(build_a, build_b);

  // The sweep runs from a/uvmsim; after its first result, a "rebuild" replaces the file (as the
  // linker does: a new file renamed over the name). Before pinning, workers ran whatever the
  // name held by then: points failed with exit 127 while it was missing, others ran the new
  // build and were stored under the same ids.
  {
    pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(d.file("log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execl(bin.c_str(), bin.c_str(), "sweep", spec.c_str(), "--out", out.c_str(), "--jobs", "1",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    while (test::count_json(fs::path(out) / "points") < 1 && ::waitpid(pid, nullptr, WNOHANG) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_EQ(::waitpid(pid, nullptr, WNOHANG), 0) << "the sweep ended before the swap";
    ASSERT_LT(test::count_json(fs::path(out) / "points"), pts.size());
    fs::remove(bin);  // the linker's unlink ...
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fs::copy_file(other, d.file("a/.uvmsim.new"));  // ... and the new file renamed over the name
    fs::rename(d.file("a/.uvmsim.new"), bin);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << test::read_text(d.file("log"));
  }
  ASSERT_EQ(sweep::build_id_of(bin), build_b);
  // Every point ran, with the build the sweep started with, and says so.
  EXPECT_EQ(expect_complete_results_of(pts, out, build_a), pts.size());
  const std::string log = test::read_text(d.file("log"));
  EXPECT_TRUE(contains(log, "24 point(s): 24 finished now, 0 already done, 0 failed")) << log;
  EXPECT_TRUE(contains(log, "(local, build " + sweep::short_build_id(build_a) + ")")) << log;
  const json pin = test::read_json(out + "/build.json");
  EXPECT_EQ(pin["build_id"], build_a);
  const auto result = test::read_json(out + "/points/" + pts[0].id + ".json");
  EXPECT_EQ(result["build"], json::parse(run(UVMSIM_BINARY, {"--version", "--json"}).output));
  // results.csv names the build of every row.
  const auto builds = sweep::result_builds(out + "/results.csv");
  ASSERT_TRUE(builds);
  EXPECT_EQ(*builds, (std::map<std::string, std::size_t>{{build_a, 24}}));

  // Nothing left to run: the other build only notes that the results are not its own.
  auto r = run(bin, {"sweep", spec, "--out", out});
  EXPECT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "note: every selected point has a result of build " + build_a +
                                     "; this run's binary is build " + build_b))
      << r.output;
  // A point to run: finishing with another build would mix builds, so it is refused (exit 2)...
  fs::remove(fs::path(out) / "points" / (pts[3].id + ".json"));
  r = run(bin, {"sweep", spec, "--out", out});
  EXPECT_EQ(r.status.code, 2) << r.output;
  const std::string pinned_copy = out + "/bin/uvmsim-" + sweep::short_build_id(build_a);
  EXPECT_TRUE(contains(r.output, "uvmsim sweep: error: " + out +
                                     ": 23 result(s) here were "
                                     "computed by build " +
                                     build_a))
      << r.output;
  EXPECT_TRUE(contains(r.output, "but this run's binary is build " + build_b)) << r.output;
  EXPECT_TRUE(contains(r.output, "(--worker-bin " + pinned_copy +
                                     ") or recompute every point "
                                     "with this binary (--rerun)"))
      << r.output;
  EXPECT_EQ(lines_of(r.output), 1u) << r.output;
  EXPECT_EQ(test::count_json(fs::path(out) / "points"), 23u);
  // ... and it finishes with the pinned copy, whichever binary starts it.
  r = run(bin, {"sweep", spec, "--out", out, "--worker-bin", pinned_copy});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "1 finished now, 23 already done")) << r.output;
  EXPECT_EQ(expect_complete_results_of(pts, out, build_a), pts.size());

  // A worker of another build (a queued Slurm task, a resubmitted script) refuses to add to the
  // directory: it records why, and no result.
  test::write_text(d.file("one.json"), json::array({pts[5].to_json()}).dump());
  fs::remove(fs::path(out) / "points" / (pts[5].id + ".json"));
  r = sweep::run_capture(
      {"sh", "-c", "exec \"$0\" sweep --worker \"$1\" < \"$2\"", bin, out, d.file("one.json")});
  EXPECT_EQ(r.status.code, 1) << r.output;
  const std::string refusal =
      "this worker is build " + build_b + ", but " + out + " is pinned to build " + build_a;
  EXPECT_TRUE(contains(r.output, refusal)) << r.output;
  EXPECT_FALSE(fs::exists(fs::path(out) / "points" / (pts[5].id + ".json")));
  EXPECT_TRUE(contains(test::read_json(out + "/failed/" + pts[5].id + ".json")["error"], refusal));

  // --rerun recomputes every point with the new build: re-pinned, one build again.
  r = run(bin, {"sweep", spec, "--out", out, "--rerun"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "pinning build " + build_b)) << r.output;
  EXPECT_TRUE(contains(r.output, "24 finished now, 0 already done, 0 failed")) << r.output;
  EXPECT_EQ(expect_complete_results_of(pts, out, build_b), pts.size());
  EXPECT_EQ(test::read_json(out + "/build.json")["build_id"], build_b);
  EXPECT_EQ(*sweep::result_builds(out + "/results.csv"),
            (std::map<std::string, std::size_t>{{build_b, 24}}));

  // A table of mixed builds (e.g. pasted together by hand) is refused by report.
  std::string csv = test::read_text(out + "/results.csv");
  const auto at = csv.find(build_b);
  csv.replace(at, build_b.size(), build_a);
  test::write_text(out + "/results.csv", csv);
  r = uvmsim({"report", out});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "uvmsim report: error: " + out +
                                     "/results.csv: build: the results were computed by 2 "
                                     "different builds ("))
      << r.output;
  EXPECT_TRUE(contains(r.output, build_a + ": 1 point(s), " + build_b + ": 23 point(s)") ||
              contains(r.output, build_b + ": 23 point(s), " + build_a + ": 1 point(s)"))
      << r.output;
  EXPECT_EQ(lines_of(r.output), 1u) << r.output;
}

TEST(SweepBuilds, VersionPrintsTheIdentityResultsRecord) {
  auto r = uvmsim({"--version"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  const json id = json::parse(uvmsim({"--version", "--json"}).output);
  EXPECT_EQ(r.output, "uvmsim " + id["version"].get<std::string>() + "\nsource revision " +
                          id["revision"].get<std::string>() + "\nbuild " +
                          id["build_id"].get<std::string>() + "\n");
  EXPECT_EQ(id["version"], UVMSIM_VERSION);
  EXPECT_EQ(id["build_id"], sweep::build_id_of(UVMSIM_BINARY));
  // The revision is the source tree's git commit (what CI's clean clone has).
  const auto git = sweep::run_capture({"git", "-C", UVMSIM_SOURCE_DIR, "rev-parse", "HEAD"});
  if (git.status.ok()) {
    std::string head = git.output;
    head.erase(head.find_last_not_of("\n") + 1);
    EXPECT_EQ(id["revision"].get<std::string>().substr(0, 40), head);
  }
  r = uvmsim({"--version", "--bogus"});
  EXPECT_EQ(r.status.code, 2);
}

TEST(SweepDiskFull, SweepStopsOnOneLineAndResumesWithNothingLost) {
  TempDir d;
  const std::string spec = d.file("s.json"), out = d.file("out"), ref = d.file("ref");
  test::write_text(spec, R"J({"name": "full",
    "workloads": [{"name": "regular", "generator": "regular", "footprint": "8M", "params": {"init": "cpu"}},
                  {"name": "random", "generator": "random", "footprint": "8M", "params": {"init": "cpu"}}],
    "prefetch": ["tree", "none"], "oversub": [0, 50, 100]})J");
  const auto pts = points_of(spec, out);
  ASSERT_EQ(pts.size(), 12u);
  test::SmallTmpfs disk(out, std::uint64_t{1} << 30);
  ASSERT_EQ(disk.error(), "");
  const std::string build = sweep::build_id_of(UVMSIM_BINARY);

  // The traces, the pinned binary and two results fit; then the disk is full but for 8 KiB, less
  // than a result needs.
  auto r = uvmsim({"sweep", spec, "--out", out, "--only", pts[0].label, "--only", pts[6].label});
  ASSERT_EQ(r.status.code, 0) << r.output;
  ASSERT_TRUE(disk.resize(disk.used() + 8192));
  r = uvmsim({"sweep", spec, "--out", out, "--jobs", "2"});
  EXPECT_EQ(r.status.code, 1) << r.output;
  // One line says what failed and what to do; no point is recorded as failed for it.
  std::string error_line;
  std::istringstream lines(r.output);
  for (std::string l; std::getline(lines, l);)
    if (contains(l, "error")) error_line += l + "\n";
  EXPECT_EQ(lines_of(error_line), 1u) << r.output;
  EXPECT_TRUE(contains(error_line, "uvmsim sweep: error: " + out + "/points/")) << error_line;
  EXPECT_TRUE(contains(error_line, "write failed (No space left on device); the sweep stopped: "))
      << error_line;
  EXPECT_TRUE(contains(error_line, "make room and rerun the same command to resume")) << error_line;
  EXPECT_FALSE(contains(r.output, "internal error")) << r.output;
  EXPECT_EQ(test::count_json(fs::path(out) / "failed"), 0u);
  // Nothing half-written that a resume could trust: only complete results, no temporaries.
  const std::size_t kept = expect_complete_results_of(pts, out, build);
  EXPECT_GE(kept, 2u);
  EXPECT_LT(kept, pts.size());

  // Space freed: the same command finishes, skipping what was kept, and equals a sweep that
  // never saw a full disk.
  ASSERT_TRUE(disk.resize(std::uint64_t{1} << 30));
  r = uvmsim({"sweep", spec, "--out", out, "--jobs", "2"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, std::to_string(pts.size() - kept) + " finished now, " +
                                     std::to_string(kept) + " already done, 0 failed"))
      << r.output;
  EXPECT_EQ(expect_complete_results_of(pts, out, build), pts.size());
  ASSERT_EQ(uvmsim({"sweep", spec, "--out", ref}).status.code, 0);
  const sweep::ResultStore a(out), b(ref);
  for (const auto& p : pts)
    EXPECT_EQ(test::stable_stats(*a.load_result(p)), test::stable_stats(*b.load_result(p)))
        << p.label;

  // A full disk at the start of a run (the sweep's own files) is the same one-line error.
  ASSERT_TRUE(disk.resize(disk.used()));
  r = uvmsim({"sweep", spec, "--out", out, "--rerun", "--only", pts[1].label});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "No space left on device")) << r.output;
  EXPECT_FALSE(contains(r.output, "internal error")) << r.output;
  EXPECT_EQ(expect_complete_results_of(pts, out, build), pts.size());
}

TEST(SweepTimeLimit, PointOverItsTimeLimitFailsAloneAndIsRetried) {
  TempDir d;
  const std::string spec = d.file("s.json"), out = d.file("out");
  test::write_text(spec, R"J({"name": "limit",
    "workloads": [{"name": "regular", "generator": "regular", "footprint": "8M", "params": {"init": "cpu"}},
                  {"name": "random", "generator": "random", "footprint": "8M", "params": {"init": "cpu"}}],
    "oversub": [0, 50]})J");
  const auto pts = points_of(spec, out);
  ASSERT_EQ(pts.size(), 4u);
  // The random trace's place holds a FIFO nobody writes: opening it blocks forever, a point that
  // never ends whatever the machine's speed.
  fs::create_directories(pts[2].trace.parent_path());
  ASSERT_EQ(::mkfifo(pts[2].trace.c_str(), 0644), 0);
  auto r = uvmsim({"sweep", spec, "--out", out, "--jobs", "2", "--point-timeout", "1"});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "4 point(s): 2 finished now, 0 already done, 2 failed"))
      << r.output;
  for (const auto& p : {pts[2], pts[3]}) {
    EXPECT_TRUE(contains(r.output, "failed " + p.id + " (" + p.label +
                                       "): timed out after 1 s of wall time (--point-timeout); "
                                       "the simulation was stopped"))
        << r.output;
    EXPECT_FALSE(fs::exists(fs::path(out) / "points" / (p.id + ".json")));
  }
  // The limit takes durations with a unit, and nothing else.
  for (const char* bad : {"0", "-1", "soon", "5d", "1e999", "nan"}) {
    r = uvmsim({"sweep", spec, "--out", out, std::string("--point-timeout=") + bad});
    EXPECT_EQ(r.status.code, 2) << bad << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "--point-timeout: expected a positive duration")) << r.output;
  }
  // With the trace in place, the retry finishes them.
  fs::remove(pts[2].trace);
  r = uvmsim({"sweep", spec, "--out", out, "--retry-failed", "--point-timeout", "30m"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "2 point(s): 2 finished now, 0 already done, 0 failed"))
      << r.output;
}

TEST(SweepUsage, UsageErrorsExitTwoAndEveryErrorIsOneLine) {
  TempDir d;
  const std::string spec = d.file("s.json");
  auto expect_usage = [](const sweep::Captured& r, const std::string& needle) {
    EXPECT_EQ(r.status.code, 2) << r.output;
    EXPECT_EQ(lines_of(r.output), 1u) << r.output;
    EXPECT_TRUE(contains(r.output, needle)) << "'" << needle << "' not in: " << r.output;
    EXPECT_FALSE(contains(r.output, "internal error")) << r.output;
  };
  // Fuzzing defect 6: a number out of range once escaped as an internal error (exit 3).
  test::write_text(spec, R"({"workloads": [{"generator": "regular"}], "oversub": [0, 1e999]})");
  expect_usage(uvmsim({"sweep", spec}), spec + ": oversub[1]: number out of range ('1e999')");
  test::write_text(spec, R"({"workloads": [{"generator": "regular"}], "oversub": "lots"})");
  expect_usage(uvmsim({"sweep", spec}),
               spec + ": oversub: expected a percentage in [0, 100000] or null, got \"lots\"");
  // Fuzzing defect 12: values with a newline gave two-line errors.
  test::write_text(spec, R"({"workloads": [{"generator": "regular"}], "gpus": "gtx\n1080ti"})");
  expect_usage(uvmsim({"sweep", spec}), "unknown preset 'gtx\\n1080ti'");
  expect_usage(uvmsim({"sweep", spec, "--jobs", "1\n2"}), "the argument ('1\\n2') for option");
  expect_usage(uvmsim({"sweep", d.file("none.json")}), d.file("none.json") + ": cannot open");
  expect_usage(uvmsim({"sweep"}), "missing sweep specification");
  test::write_text(spec, R"({"workloads": [{"generator": "regular", "footprint": "4M"}]})");
  expect_usage(uvmsim({"sweep", spec, "--out", d.file("o"), "--jobs", "0"}), "--jobs: must be");
  expect_usage(uvmsim({"sweep", spec, "--backend", "cloud"}), "--backend: expected local or slurm");
  expect_usage(uvmsim({"sweep", spec, "--out", d.file("o"), "--only", "nonesuch"}),
               "--only: no point has id or label 'nonesuch'");
  expect_usage(uvmsim({"run", "--gpu", "gtx1080ti", "--trace", "t.uvt", "--set", "x.y\n=1"}),
               "x.y\\n");
  expect_usage(uvmsim({"run", "--gpu", "gtx1080ti"}), "--trace: required");
  expect_usage(uvmsim({"gen", "nonesuch", "-o", d.file("t.uvt")}), "unknown generator 'nonesuch'");
  expect_usage(uvmsim({"gen", "regular", "-o", d.file("t.uvt"), "--param", "blok=3"}),
               "--param blok");
  expect_usage(uvmsim({"check", d.file("none.json")}), "no such file or directory");
  test::write_text(d.file("e.json"), R"({"runs": {"a": {"workload": "w"}}})");
  expect_usage(uvmsim({"check", d.file("e.json")}), d.file("e.json") + ": runs.a.workload");
  expect_usage(uvmsim({"report"}), "missing sweep directory");
  expect_usage(uvmsim({"trace", "nonesuch", "x.uvt"}), "unknown action 'nonesuch'");
  expect_usage(uvmsim({"sweep", spec, "--no-such-option"}), "no-such-option");
  // Data and environment errors are not usage errors: exit 1, one line.
  const auto r = uvmsim({"run", "--gpu", "gtx1080ti", "--trace", d.file("missing.uvt")});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_EQ(lines_of(r.output), 1u) << r.output;
}

TEST(SweepSlurmRecords, DamagedJobRecordAndGarbledSqueueAreOneLineErrors) {
  TempDir d;
  const std::string spec = d.file("s.json"), out = d.file("out");
  test::write_text(spec, R"J({"name": "rec",
    "workloads": [{"name": "regular", "generator": "regular", "footprint": "4M"}]})J");
  ASSERT_EQ(uvmsim({"sweep", spec, "--out", out, "--list"}).status.code, 0);
  fs::create_directories(out + "/slurm");
  const std::string rec = out + "/slurm/job.json";
  // The job record is written atomically; damage in it is named, never guessed past (a chunk of
  // 0 once divided by zero, a number id threw a type error).
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {"{\"job_id\": \"12", "(file): not a JSON object"},
      {R"({"job_id": 12, "chunk": 1, "points": []})", "job_id: expected a Slurm job id"},
      {R"({"job_id": "12; rm -rf", "chunk": 1, "points": []})", "job_id: expected a Slurm job id"},
      {R"({"job_id": "12", "chunk": 0, "points": []})", "chunk: expected a positive integer"},
      {R"({"job_id": "12", "chunk": 1, "points": [1]})", "points: expected a list of point ids"},
  };
  for (const auto& [text, msg] : damaged) {
    test::write_text(rec, text);
    for (const char* backend : {"local", "slurm"}) {
      const auto r = uvmsim({"sweep", spec, "--out", out, "--backend", backend});
      EXPECT_EQ(r.status.code, 1) << text << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "uvmsim sweep: error: " + rec + ": " + msg)) << r.output;
      EXPECT_FALSE(contains(r.output, "internal error")) << r.output;
    }
  }
  // squeue answering garbage (a partial line, a message on standard output): retried, then a
  // one-line error; never read as "the job has fewer tasks". A fake squeue on PATH.
  test::write_text(rec, R"({"job_id": "12", "chunk": 1, "points": []})");
  fs::create_directories(d.file("bin"));
  test::write_text(d.file("bin/squeue"), "#!/bin/sh\nprintf 'RUNN'\n");
  fs::permissions(d.file("bin/squeue"), fs::perms::owner_all);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  ::setenv("PATH", (d.file("bin") + ":" + path).c_str(), 1);
  auto r = uvmsim({"sweep", spec, "--out", out, "--backend", "slurm", "--slurm-poll", "0.01"});
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "uvmsim sweep: error: squeue: unexpected squeue output line "
                       "'RUNN' (cannot tell whether Slurm job 12 of this sweep still "
                       "runs; rerun later, or remove " +
                           rec + " if it no longer exists)"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "submitted")) << r.output;
}

TEST(CheckOutput, FailuresAndSummaryByDefaultEveryRowWithVerbose) {
  const std::string file =
      std::string(UVMSIM_SOURCE_DIR) + "/configs/expectations/prefetch-tree.json";
  auto r = uvmsim({"check", file, "--set", "driver.prefetch_threshold=90", "--progress", "none"});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_FALSE(contains(r.output, "RESULT  RUN")) << r.output;  // no table
  EXPECT_FALSE(contains(r.output, "\n  ok ")) << r.output;
  EXPECT_TRUE(contains(r.output, "FAILED: " + file + ": run regular-tree: gpu_faults: expected "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "check: simulated by " + sweep::this_build().text().substr(0, 7)))
      << r.output;
  EXPECT_TRUE(contains(r.output, "build " + sweep::build_id_of(UVMSIM_BINARY) + "\n")) << r.output;
  const std::string summary = r.output.substr(r.output.rfind("check: "));
  EXPECT_TRUE(contains(summary, " passed, ") && contains(summary, " failed\n")) << summary;
  // -v: every row, passing ones too, under each file's name.
  r = uvmsim({"check", file, "-v", "--set", "driver.prefetch_threshold=90", "--progress", "none"});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, file + ": ")) << r.output;
  EXPECT_TRUE(contains(r.output, "  RESULT  RUN")) << r.output;
  EXPECT_TRUE(contains(r.output, "\n  ok      ")) << r.output;
  EXPECT_TRUE(contains(r.output, "\n  FAIL    regular-tree")) << r.output;
  EXPECT_EQ(r.output.substr(r.output.rfind("check: ")), summary);
}

}  // namespace
}  // namespace uvmsim
