// Running the points of a sweep (or of an expectation file) on this machine: generate the traces
// they need, then simulate the unfinished points on N worker processes with a progress display.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "sim/sweep/point.h"
#include "sim/sweep/progress.h"
#include "sim/sweep/results.h"
#include "sim/sweep/workload.h"

namespace uvmsim::sweep {

struct ExecOptions {
  unsigned jobs = 0;  ///< 0 = every available CPU
  ProgressMode progress = ProgressMode::Lines;
  std::string worker_bin;  ///< empty = worker_binary()
  bool rerun = false;      ///< recompute points that already have a result
};

struct ExecSummary {
  std::size_t total = 0;    ///< points considered
  std::size_t skipped = 0;  ///< already finished before this run
  std::size_t ok = 0;       ///< finished in this run
  std::vector<std::pair<const PointSpec*, std::string>> failures;  ///< point, error
  int signal = 0;  ///< SIGINT/SIGTERM/SIGHUP that interrupted the run, else 0
  double seconds = 0;
  unsigned jobs = 0;
  bool detached = false;  ///< Slurm --detach: submitted, not waited for
};

/// The points that still need a simulation (all of them with `rerun`).
std::vector<const PointSpec*> pending_points(const std::vector<PointSpec>& points,
                                             const ResultStore& store, bool rerun);

/// Generates, in parallel and once each, the traces `points` need that do not exist yet.
/// Returns the interrupting signal or 0. A generator failure is a UserError naming the workload.
int prepare_traces(const std::vector<Workload>& workloads,
                   const std::vector<const PointSpec*>& points, const ResultStore& store,
                   const ExecOptions& opts, std::ostream& err);

/// Simulates `todo` on opts.jobs local worker processes.
ExecSummary run_local(const std::vector<const PointSpec*>& todo, const ResultStore& store,
                      const ExecOptions& opts, std::size_t total, std::ostream& err);

/// The error recorded for a failed point, with a hint where its log is.
std::string failure_message(const ResultStore& store, const PointSpec& p);

}  // namespace uvmsim::sweep
