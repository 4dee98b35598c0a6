// The sweep specification (docs/sweeps.md): named axes whose cartesian product, minus
// exclusions, is the set of points to simulate, and the baseline that normalized columns use.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/sweep/point.h"
#include "sim/sweep/workload.h"

namespace uvmsim::sweep {

/// A named policy configuration: any of eviction, prefetch, placement and set.
struct PolicyEntry {
  std::string name;
  nlohmann::json settings;  ///< object of RunSettings keys
};

struct SweepSpec {
  std::string name, description;
  std::filesystem::path file;      ///< the spec file (empty when parsed from memory)
  std::filesystem::path base_dir;  ///< relative trace / preset paths are resolved against it
  std::vector<Workload> workloads;
  std::vector<std::string> gpus;
  std::vector<PolicyEntry> policies;                       ///< empty: no "policy" axis
  std::vector<std::string> eviction, prefetch, placement;  ///< empty: not swept
  std::vector<nlohmann::json> oversub;  ///< percentages or null (preset capacity)
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> knobs;
  std::vector<std::uint64_t> seeds;  ///< empty: the preset's engine.seed
  /// Generator seeds (axis `input_seed`): each generated workload is made once per seed, so
  /// the spread over inputs shows. Empty: each workload's own "seed" and no such axis.
  std::vector<std::uint64_t> input_seeds;
  nlohmann::json set = nlohmann::json::object();  ///< knobs fixed for every point
  std::vector<nlohmann::json> exclude;            ///< partial axis assignments
  nlohmann::ordered_json baseline;                ///< axis -> value of the reference point

  /// Reads and validates a spec file. Errors are one-line UserErrors "<file>: <field>: ...".
  static SweepSpec load(const std::filesystem::path& file);
  /// Parses a spec object; the order of its "knobs" is the order of the knob axes.
  static SweepSpec parse(const nlohmann::ordered_json& j, const std::string& where,
                         const std::filesystem::path& base_dir, const std::string& default_name);

  /// Axis names in column order: workload, gpu, [policy], eviction, prefetch, placement,
  /// <knob axes>, oversub, seed, and input_seed when the spec has input_seeds.
  std::vector<std::string> axis_names() const;
  /// Axes with more than one value (they make up the point labels).
  std::vector<std::string> varying_axes() const;
  /// Every point of the product that no exclusion matches, in axis order (the last axis varies
  /// fastest). Generated traces are placed in `trace_dir`.
  std::vector<PointSpec> expand(const std::filesystem::path& trace_dir) const;
  /// Human-readable description of the baseline ("eviction=driver prefetch=tree ...").
  std::string baseline_text() const;
};

/// True if `axes` matches the partial assignment `pattern` (each value a scalar or a list of
/// alternatives).
bool matches(const nlohmann::ordered_json& axes, const nlohmann::json& pattern);

}  // namespace uvmsim::sweep
