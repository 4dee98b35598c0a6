// The Slurm backend of `uvmsim sweep`: the unfinished points go into a job array (one task per
// chunk of points) whose sbatch script is written to OUT/slurm/; each task runs
// `uvmsim sweep --worker`, which writes results straight into the shared output directory.
// The sweep then waits for the array (or returns at once with --detach) and collects results.
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "sim/sweep/runner.h"

namespace uvmsim::sweep {

struct SlurmOptions {
  std::string partition, account, qos;
  std::string time;  ///< --time per task, e.g. "1:00:00"; empty = the partition's default
  std::string mem;   ///< --mem per task, e.g. "4G"; empty = the partition's default
  unsigned cpus_per_task = 1;
  std::size_t chunk = 0;           ///< points per array task; 0 = 1, or more to stay <= max_array
  std::size_t max_array = 1000;    ///< largest array to submit (clusters' MaxArraySize - 1)
  unsigned max_running = 0;        ///< at most this many tasks at once ("%M"); 0 = no limit
  std::vector<std::string> extra;  ///< more "#SBATCH" options, verbatim
  bool detach = false;
  double poll_seconds = 2;
  std::string job_name;
  bool rerun = false;  ///< workers recompute points that have a result
};

/// Submits `todo` (or attaches to a still-running array of an earlier invocation) and, unless
/// detached, waits for it with a progress display and collects the results.
ExecSummary run_slurm(const std::vector<const PointSpec*>& todo, const ResultStore& store,
                      const SlurmOptions& slurm, const ExecOptions& opts, std::size_t total,
                      std::ostream& out, std::ostream& err);

/// The sbatch script for a task file (exposed for tests and docs). `point_timeout` > 0 passes
/// --point-timeout to the workers.
std::string sbatch_script(const SlurmOptions& slurm, const std::string& worker_bin,
                          const std::filesystem::path& out_dir,
                          const std::filesystem::path& task_file, std::size_t tasks,
                          double point_timeout = 0);

/// The job id of a running array recorded in OUT/slurm/job.json whose tasks are still queued or
/// running, or "" (used to refuse a local run while Slurm tasks write into the directory). A
/// damaged job record is a UserError naming the file and field.
std::string active_slurm_job(const ResultStore& store);

}  // namespace uvmsim::sweep
