// The output directory of a sweep (docs/sweeps.md, "Output directory"):
//   points/<id>.json    one complete result per finished point (written atomically)
//   failed/<id>.json    the error of a point's last failed attempt (removed when it succeeds)
//   logs/<id>.log       a local worker's output while it runs (kept only if it failed)
//   traces/             generated traces, shared read-only by the points
//   results.csv         the aggregated table; sweep.json: name, axes, baseline (for `report`)
//   slurm/              sbatch scripts, task lists and task logs of the Slurm backend
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/sweep/point.h"

namespace uvmsim::sweep {

inline constexpr const char* kFailureFormat = "uvmsim-sweep-failure/1";

class ResultStore {
 public:
  /// Creates the directory layout if needed.
  explicit ResultStore(std::filesystem::path dir);
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path trace_dir() const { return dir_ / "traces"; }
  std::filesystem::path result_path(const std::string& id) const;
  std::filesystem::path failure_path(const std::string& id) const;
  std::filesystem::path log_path(const std::string& id) const;

  /// The point's result if a complete one for exactly these inputs exists (a result file that
  /// does not parse, or was computed from other inputs, counts as missing).
  std::optional<nlohmann::json> load_result(const PointSpec& p) const;
  std::optional<nlohmann::json> load_failure(const std::string& id) const;

  /// Records a result atomically and forgets any earlier failure of the point.
  void save_result(const nlohmann::json& result) const;
  /// Records a failed attempt atomically: the error and the end of its log.
  void save_failure(const PointSpec& p, const std::string& error,
                    const std::filesystem::path& log = {}) const;

  /// Removes write_atomic() temporaries of dead processes on this host.
  std::size_t remove_stale_temp_files() const;

 private:
  std::filesystem::path dir_;
};

/// The last `max_lines` lines of a text file ("" if it cannot be read).
std::string tail_of_file(const std::filesystem::path& p, std::size_t max_lines = 20);

}  // namespace uvmsim::sweep
