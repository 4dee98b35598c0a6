// `uvmsim sweep --backend slurm` against a real single-node Slurm cluster (slurmctld + slurmd +
// munged on this machine, started by scripts/slurm-local.sh), not a mock: the job-array results
// must equal the local backend's. If Slurm cannot start, the test fails and says why.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "sim/sweep/identity.h"
#include "sim/sweep/results.h"
#include "sim/sweep/spec.h"
#include "tests/sweep_test_util.h"
#include "tests/test_util.h"

namespace uvmsim {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::uvmsim;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Starts the cluster for the test's lifetime; the script's watchdog also stops it if this
// process dies, so a crashed test leaves no daemons behind.
class LocalSlurm {
 public:
  explicit LocalSlurm(const std::string& dir) : dir_(dir) {
    const std::string script = std::string(UVMSIM_SOURCE_DIR) + "/scripts/slurm-local.sh";
    const auto r =
        sweep::run_capture({"bash", script, "start", dir_, "--owner", std::to_string(::getpid())});
    ok_ = r.status.ok();
    output_ = r.output;
    if (ok_) ::setenv("SLURM_CONF", (dir_ + "/slurm.conf").c_str(), 1);
  }
  ~LocalSlurm() {
    ::unsetenv("SLURM_CONF");
    sweep::run_capture(
        {"bash", std::string(UVMSIM_SOURCE_DIR) + "/scripts/slurm-local.sh", "stop", dir_});
  }
  bool ok() const { return ok_; }
  const std::string& output() const { return output_; }

 private:
  std::string dir_;
  bool ok_ = false;
  std::string output_;
};

// The shape the issue asks of the acceptance sweep (3 workloads x 4 policies x 4 oversubscription
// levels = 48 points), at sizes that keep the test quick.
constexpr const char* kSpec = R"J({
  "name": "slurmtest",
  "workloads": [{"name": "regular", "generator": "regular", "footprint": "8M", "params": {"init": "cpu"}},
                {"name": "random", "generator": "random", "footprint": "8M", "params": {"init": "cpu"}},
                {"name": "stream", "generator": "stream", "footprint": "12M", "params": {"iters": "2"}}],
  "policies": [{"name": "uvm", "preset": "uvm"}, {"name": "no-prefetch", "prefetch": "none"},
               {"name": "lru", "eviction": "lru"}, {"name": "TM++", "preset": "tm++"}],
  "oversub": [0, 25, 50, 100]
})J";

TEST(SlurmSweep, JobArrayOnRealSlurmGivesTheSameResultsAsLocal) {
  TempDir d;
  LocalSlurm slurm(d.file("cluster"));
  ASSERT_TRUE(slurm.ok()) << "could not start a local Slurm cluster (slurm-wlm + munge; "
                             "scripts/setup.sh installs them):\n"
                          << slurm.output();
  const std::string spec = d.file("spec.json");
  test::write_text(spec, kSpec);
  const std::string local = d.file("local"), viaslurm = d.file("slurm");

  auto r = uvmsim({"sweep", spec, "--out", local, "--jobs", "2"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  // 48 points in 4 array tasks of 12 points each.
  r = uvmsim({"sweep", spec, "--out", viaslurm, "--backend", "slurm", "--slurm-chunk", "12",
              "--slurm-poll", "0.3", "--slurm-time", "10:00", "--slurm-mem", "1G"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "48 point(s) in 4 array task(s)")) << r.output;
  EXPECT_TRUE(contains(r.output, "48 point(s): 48 finished now, 0 already done, 0 failed"))
      << r.output;

  // The sbatch script is in the output directory, with the requested resources.
  std::string script;
  for (const auto& e : fs::directory_iterator(fs::path(viaslurm) / "slurm"))
    if (e.path().filename().string().rfind("submit-", 0) == 0)
      script = test::read_text((e.path() / "sweep.sbatch").string());
  EXPECT_TRUE(contains(script, "#SBATCH --array=0-3\n")) << script;
  EXPECT_TRUE(contains(script, "#SBATCH --time=10:00\n")) << script;
  EXPECT_TRUE(contains(script, "#SBATCH --mem=1G\n")) << script;
  EXPECT_TRUE(contains(script, "sweep --worker")) << script;

  // Same points, bit-identical statistics; and the runs really happened inside Slurm tasks.
  const auto pts = sweep::SweepSpec::load(spec).expand(fs::path(viaslurm) / "traces");
  ASSERT_EQ(pts.size(), 48u);
  const sweep::ResultStore a(local), b(viaslurm);
  for (const auto& p : pts) {
    const auto ra = a.load_result(p), rb = b.load_result(p);
    ASSERT_TRUE(ra && rb) << p.label;
    EXPECT_EQ(test::stable_stats(*ra), test::stable_stats(*rb)) << p.label;
  }
  EXPECT_EQ(test::read_text(local + "/results.csv").substr(0, 400),
            test::read_text(viaslurm + "/results.csv").substr(0, 400));
  std::size_t task_logs = 0;
  for (const auto& e : fs::directory_iterator(fs::path(viaslurm) / "slurm" / "logs")) {
    (void)e;
    ++task_logs;
  }
  EXPECT_EQ(task_logs, 4u);

  // Rerunning submits nothing: every point is finished.
  r = uvmsim({"sweep", spec, "--out", viaslurm, "--backend", "slurm"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "0 finished now, 48 already done")) << r.output;
  EXPECT_FALSE(contains(r.output, "submitted Slurm job")) << r.output;

  // --detach returns after submitting; rerunning attaches (or finds the job done) and collects.
  const std::string detached = d.file("detached");
  r = uvmsim(
      {"sweep", spec, "--out", detached, "--backend", "slurm", "--slurm-chunk", "24", "--detach"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "detached: Slurm job ")) << r.output;
  r = uvmsim({"sweep", spec, "--out", detached, "--backend", "slurm", "--slurm-poll", "0.3"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "submitted Slurm job")) << r.output;
  const sweep::ResultStore c(detached);
  for (const auto& p : pts) {
    const auto rc = c.load_result(p);
    ASSERT_TRUE(rc) << p.label << "\n" << r.output;
    EXPECT_EQ(test::stable_stats(*rc), test::stable_stats(*a.load_result(p))) << p.label;
  }

  // Every point ran with the binary pinned in the output directory, the same build as locally.
  const std::string build = sweep::build_id_of(UVMSIM_BINARY);
  EXPECT_TRUE(contains(script, "exec '" + viaslurm + "/bin/uvmsim-" + sweep::short_build_id(build) +
                                   "' sweep --worker"))
      << script;
  for (const auto& p : pts) {
    EXPECT_EQ((*b.load_result(p))["build"]["build_id"], build) << p.label;
    EXPECT_EQ((*c.load_result(p))["build"], (*a.load_result(p))["build"]) << p.label;
  }
}

// The numbers of "N/48 done" progress lines.
std::vector<std::size_t> done_counts(const std::string& output) {
  std::vector<std::size_t> v;
  for (std::size_t at = output.find("/48 done"); at != std::string::npos;
       at = output.find("/48 done", at + 1)) {
    std::size_t start = at;
    while (start > 0 && std::isdigit(static_cast<unsigned char>(output[start - 1]))) --start;
    v.push_back(std::stoul(output.substr(start, at - start)));
  }
  return v;
}

TEST(SlurmSweep, ReattachCountsEachPointOnceAndHeldTasksEndTheWait) {
  TempDir d;
  LocalSlurm slurm(d.file("cluster"));
  ASSERT_TRUE(slurm.ok()) << "could not start a local Slurm cluster (slurm-wlm + munge; "
                             "scripts/setup.sh installs them):\n"
                          << slurm.output();
  const std::string spec = d.file("spec.json");
  test::write_text(spec, kSpec);
  const std::string out = d.file("out");

  // Issue 14, part 1: re-attaching to an array that had finished some points but not all counted
  // those points twice (once as "already done", once as done by the job), and the progress bar of
  // 52/48 asked for a string of 2^64 characters: "internal error: basic_string::_M_create". Twelve
  // tasks run one at a time, so the array is still running when the sweep re-attaches after its
  // first results.
  auto r = uvmsim({"sweep", spec, "--out", out, "--backend", "slurm", "--slurm-chunk", "4",
                   "--slurm-max-running", "1", "--detach"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  ASSERT_TRUE(contains(r.output, "48 point(s) in 12 array task(s)")) << r.output;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (test::count_json(fs::path(out) / "points") < 1 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::size_t before = test::count_json(fs::path(out) / "points");
  ASSERT_GE(before, 1u);
  r = uvmsim({"sweep", spec, "--out", out, "--backend", "slurm", "--slurm-poll", "0.3"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "internal error")) << r.output;
  EXPECT_TRUE(contains(r.output, "attaching to running Slurm job ")) << r.output;
  EXPECT_FALSE(contains(r.output, "submitted Slurm job")) << r.output;
  const auto counts = done_counts(r.output);
  ASSERT_FALSE(counts.empty()) << r.output;
  for (const auto n : counts) EXPECT_LE(n, 48u) << r.output;
  EXPECT_EQ(counts.back(), 48u) << r.output;
  // Each point counted once: those done before re-attaching and those done after add up to 48.
  const auto at = r.output.find(" already done, 0 failed");
  ASSERT_NE(at, std::string::npos) << r.output;
  const auto line = r.output.rfind("48 point(s): ", at);
  std::size_t now = 0, already = 0;
  ASSERT_EQ(
      std::sscanf(r.output.c_str() + line, "48 point(s): %zu finished now, %zu", &now, &already), 2)
      << r.output;
  EXPECT_EQ(now + already, 48u) << r.output;
  EXPECT_GE(already, before) << r.output;
  EXPECT_EQ(test::count_json(fs::path(out) / "points"), 48u);

  // Tasks that will never start by themselves (held) end the wait with one line instead of
  // polling forever.
  const std::string held = d.file("held");
  r = uvmsim({"sweep", spec, "--out", held, "--backend", "slurm", "--slurm-chunk", "24",
              "--slurm-option=--begin=now+1hour", "--detach"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  const auto j = r.output.find("detached: Slurm job ");
  ASSERT_NE(j, std::string::npos) << r.output;
  const std::string job = r.output.substr(j + 20, r.output.find(' ', j + 20) - j - 20);
  const auto hold = sweep::run_capture({"scontrol", "hold", job});
  ASSERT_TRUE(hold.status.ok()) << hold.output;
  r = uvmsim({"sweep", spec, "--out", held, "--backend", "slurm", "--slurm-poll", "0.3"});
  sweep::run_capture({"scancel", job});
  EXPECT_EQ(r.status.code, 1) << r.output;
  // `scontrol hold` is an admin hold when root runs it (JobHeldAdmin), a user hold otherwise.
  EXPECT_TRUE(contains(r.output, "uvmsim sweep: error: Slurm job " + job +
                                     ": its 2 remaining task(s) are held (JobHeld"))
      << r.output;
  EXPECT_TRUE(contains(r.output,
                       ") and will not start by themselves; release them (scontrol "
                       "release " +
                           job + ")"))
      << r.output;
  const std::string error = r.output.substr(r.output.find("uvmsim sweep: error: "));
  EXPECT_EQ(error.find('\n'), error.size() - 1) << "not one line: " << r.output;
}

}  // namespace
}  // namespace uvmsim
