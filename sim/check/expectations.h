// Expectation files for `uvmsim check` (docs/check.md): named runs (a workload plus run
// settings, as in a sweep), recorded metric values per run (exact, or within a tolerance), and
// relations between runs. --update rewrites the recorded values and keeps everything else.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/check/relation.h"
#include "sim/sweep/point.h"
#include "sim/sweep/workload.h"

namespace uvmsim::check {

struct CheckRun {
  std::string name;
  std::string workload;
  sweep::RunSettings settings;
  std::vector<std::string> metrics;  ///< keys of "expect", in file order
};

struct CheckRelation {
  Relation relation;
  std::string why;
};

struct ExpectationFile {
  std::filesystem::path path;
  nlohmann::ordered_json doc;  ///< the file as read; --update edits runs.*.expect in place
  std::string description;
  std::map<std::string, sweep::Workload> workloads;
  std::vector<std::pair<std::string, double>> tolerances;  ///< metric pattern -> relative
  std::vector<std::string> record;  ///< metrics --update adds to runs that lack them
  std::vector<CheckRun> runs;
  std::vector<CheckRelation> relations;

  /// Reads and validates a file; `overrides` (KEY=VALUE knobs, from `check --set`) are appended
  /// to every run's settings. Errors are one-line UserErrors naming the file and field.
  static ExpectationFile load(const std::filesystem::path& path,
                              const std::vector<std::string>& overrides = {});
  const CheckRun* find_run(const std::string& name) const;
  /// The relative tolerance of `metric` from "tolerances" (first matching pattern), if any.
  std::optional<double> tolerance(const std::string& metric) const;
};

struct Verdict {
  bool pass = false;
  std::string expected, measured;
};

/// Compares `measured` (null if the metric does not exist) with an "expect" entry: a number
/// (exact, or within `default_rel_tol`), a string or bool (equal), {"value", "rel_tol"|
/// "abs_tol"}, {"min", "max"}, or null (not recorded yet: fails).
Verdict compare(const nlohmann::json& spec, const nlohmann::json& measured,
                std::optional<double> default_rel_tol);

/// JSON text for people: an object or array that fits on one line of `width` characters is
/// written on one line, anything longer one member per line (what --update writes back).
std::string compact_dump(const nlohmann::ordered_json& j, int width = 100, int indent = 0);

/// The entry --update writes: `spec` with its value replaced by `measured` (ranges are kept).
nlohmann::ordered_json updated(const nlohmann::ordered_json& spec, const nlohmann::json& measured);

}  // namespace uvmsim::check
