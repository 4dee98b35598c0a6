// `uvmsim sweep --backend slurm` against a real single-node Slurm cluster (slurmctld + slurmd +
// munged on this machine, started by scripts/slurm-local.sh), not a mock: the job-array results
// must equal the local backend's. If Slurm cannot start, the test fails and says why.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <set>

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
}

}  // namespace
}  // namespace uvmsim
