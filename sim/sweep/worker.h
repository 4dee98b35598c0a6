// The worker side of a sweep: `uvmsim sweep --worker OUT` simulates point descriptions read from
// its standard input (local backend) or from one line of a Slurm task file, and records each
// result or failure in the output directory. Both backends run exactly this code.
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/sweep/point.h"

namespace uvmsim::sweep {

/// Exit status of a worker that could not write to the output directory (a full or read-only
/// file system): it stopped at once, and the sweep stops too instead of failing every point.
inline constexpr int kWorkerOutputError = 4;

struct WorkerOptions {
  bool rerun = false;        ///< recompute points that have a result
  double point_timeout = 0;  ///< seconds of wall time per point; 0 = no limit
};

/// Simulates each point of `descs` (a JSON array of PointSpec::to_json()) that has no result in
/// `out_dir` yet (every point with `rerun`), each in a child process of its own, so that a crash
/// or the time limit fails that point only. Refuses (records a failure for every point) if this
/// binary is not the build the directory is pinned to. Returns 0 if every point has a result
/// afterwards, 1 otherwise (each failure is recorded in failed/<id>.json and reported on `err`),
/// kWorkerOutputError if a result or failure could not be written.
int run_worker(const nlohmann::json& descs, const std::filesystem::path& out_dir,
               const WorkerOptions& opts, std::ostream& err);

/// Slurm task file: JSON Lines, line i = the JSON array of the points of array task i, plus an
/// index "<file>.idx" with the byte offset of every line so a task reads only its own line.
void write_task_file(const std::filesystem::path& file,
                     const std::vector<std::vector<const PointSpec*>>& tasks);
/// The points of task `task`. A missing, truncated or damaged file or index is a UserError
/// naming the file and the line.
nlohmann::json read_task(const std::filesystem::path& file, std::size_t task);

}  // namespace uvmsim::sweep
