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

/// Simulates each point of `descs` (a JSON array of PointSpec::to_json()) that has no result in
/// `out_dir` yet (every point with `rerun`). Returns 0 if every point has a result afterwards, 1
/// otherwise (each failure is recorded in failed/<id>.json and reported on `err`).
int run_worker(const nlohmann::json& descs, const std::filesystem::path& out_dir, bool rerun,
               std::ostream& err);

/// Slurm task file: JSON Lines, line i = the JSON array of the points of array task i, plus an
/// index "<file>.idx" with the byte offset of every line so a task reads only its own line.
void write_task_file(const std::filesystem::path& file,
                     const std::vector<std::vector<const PointSpec*>>& tasks);
/// The points of task `task` (UserError naming the file if it is missing or malformed).
nlohmann::json read_task(const std::filesystem::path& file, std::size_t task);

}  // namespace uvmsim::sweep
