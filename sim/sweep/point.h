// One simulation of a sweep or expectation file: a workload's trace, a fully resolved
// configuration and an oversubscription level, identified by a hash of all of them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "sim/sweep/workload.h"

namespace uvmsim::sweep {

/// Version tag of the per-point result files (docs/sweeps.md).
/// Version 2 added "build", the identity of the binary that computed the result.
inline constexpr const char* kResultFormat = "uvmsim-sweep-point/2";

/// How one run is configured, mirroring `uvmsim run` and its order: a GPU preset, a policy
/// preset, the policy choices, the seed, then the `--set` knobs in order.
struct RunSettings {
  std::string gpu = "gtx1080ti";
  std::optional<std::string> preset;  ///< policy preset (--policy-preset), e.g. "tm++"
  std::optional<std::string> eviction, prefetch, placement;
  std::optional<double> oversub;  ///< percent; unset = the preset's HBM capacity
  std::optional<std::uint64_t> seed;
  std::vector<std::pair<std::string, nlohmann::json>> sets;

  /// The full configuration. Unknown knobs, bad values and unregistered policies are
  /// UserErrors starting with `where`.
  SimConfig resolve(const std::string& where) const;
  /// Applies one of the keys gpu, preset, eviction, prefetch, placement, oversub, seed, set (an
  /// object of knob: value). Returns false for any other key; throws UserError "<where>: <field>:
  /// ..." for a bad value of a known key.
  bool apply(const std::string& key, const nlohmann::json& value, const std::string& where,
             const std::string& field, const std::filesystem::path& base_dir);
};

/// Throws UserError "<where>: <family>: unknown <family> policy 'NAME' (known: ...)" (with an
/// empty `where`: "--<family>: unknown ...") if the configuration names a policy that is not
/// registered.
void check_policy_names(const SimConfig& c, const std::string& where);

struct PointSpec {
  std::string id;  ///< hash of axes + inputs (16 hex digits); the result file's name
  std::string label;
  nlohmann::ordered_json axes;  ///< axis name -> value, e.g. {"workload": "regular", ...}
  std::string workload;
  std::filesystem::path trace;  ///< absolute; not part of the identity
  nlohmann::json inputs;        ///< workload identity, oversub_pct, config, uvmsim_version

  /// `cfg` is the fully resolved configuration (RunSettings::resolve).
  static PointSpec make(std::string label, nlohmann::ordered_json axes, const Workload& w,
                        std::optional<double> oversub, const SimConfig& cfg,
                        const std::filesystem::path& trace_dir);
  std::optional<double> oversub() const;
  /// Hash of `inputs` alone (recorded in the result as "input_hash").
  std::string input_hash() const;
  nlohmann::json to_json() const;
  static PointSpec from_json(const nlohmann::json& j, const std::string& where);
};

/// Simulates `p` and returns its result record: format, id, input_hash, label, axes, inputs,
/// build (this binary's BuildIdentity), stats (as `uvmsim run --stats-out`) and run (host, wall
/// time, version). Throws UserError for
/// bad input (including a trace file whose content changed since the point was planned).
nlohmann::json run_point(const PointSpec& p);

}  // namespace uvmsim::sweep
