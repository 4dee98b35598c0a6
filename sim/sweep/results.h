// The output directory of a sweep (docs/sweeps.md, "Output directory"):
//   points/<id>.json    one complete result per finished point (written atomically)
//   failed/<id>.json    the error of a point's last failed attempt (removed when it succeeds)
//   logs/<id>.log       a local worker's output while it runs (kept only if it failed)
//   traces/             generated traces, shared read-only by the points
//   results.csv         the aggregated table; sweep.json: name, axes, baseline (for `report`)
//   slurm/              sbatch scripts, task lists and task logs of the Slurm backend
//   bin/uvmsim-<build>  the pinned copy of the binary every point runs with; build.json names it
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/sweep/point.h"

namespace uvmsim::sweep {

inline constexpr const char* kFailureFormat = "uvmsim-sweep-failure/1";
inline constexpr const char* kPinFormat = "uvmsim-sweep-build/1";

/// The binary a directory's points run with: a copy in OUT/bin that no rebuild can change.
struct PinnedBinary {
  std::string build_id;          ///< build_id_of() the copy
  std::filesystem::path binary;  ///< absolute path of the copy
  nlohmann::json identity;       ///< BuildIdentity::to_json() if known, else null
};

class ResultStore {
 public:
  /// Creates the directory layout if needed and reads the pin (OUT/build.json; a malformed one
  /// is a UserError naming the file).
  explicit ResultStore(std::filesystem::path dir);
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path trace_dir() const { return dir_ / "traces"; }
  std::filesystem::path result_path(const std::string& id) const;
  std::filesystem::path failure_path(const std::string& id) const;
  std::filesystem::path log_path(const std::string& id) const;

  /// The point's result if a complete one for exactly these inputs, computed by the pinned
  /// build, exists (a result file that does not parse, lacks a field, was computed from other
  /// inputs or by another build counts as missing).
  std::optional<nlohmann::json> load_result(const PointSpec& p) const;
  /// The point's failure record, if a well-formed one exists ("error" a string; "log", if
  /// present, a string).
  std::optional<nlohmann::json> load_failure(const std::string& id) const;

  /// The pinned binary, if the directory has one.
  const std::optional<PinnedBinary>& pinned() const { return pinned_; }
  /// Pins `binary`: copies it to OUT/bin/uvmsim-<build> (read-only; atomically, and only if
  /// that copy is not there yet) and records it in OUT/build.json. From then on only results of
  /// its build count. `identity` describes it if known (null otherwise).
  const PinnedBinary& pin(const std::filesystem::path& binary, const nlohmann::json& identity);

  /// Records a result atomically and forgets any earlier failure of the point.
  void save_result(const nlohmann::json& result) const;
  /// Records a failed attempt atomically: the error and the end of its log.
  void save_failure(const PointSpec& p, const std::string& error,
                    const std::filesystem::path& log = {}) const;

  /// Removes write_atomic() temporaries of dead processes on this host.
  std::size_t remove_stale_temp_files() const;

 private:
  std::filesystem::path dir_;
  std::optional<PinnedBinary> pinned_;
};

/// The last `max_lines` lines of a text file ("" if it cannot be read).
std::string tail_of_file(const std::filesystem::path& p, std::size_t max_lines = 20);
/// The last non-empty line of a text file ("" if it cannot be read): a one-line error to quote.
std::string last_line_of_file(const std::filesystem::path& p);

}  // namespace uvmsim::sweep
