// GPU presets (--gpu FILE.json) and --set KEY=VALUE overrides: the config loader and the knob
// validators. A configuration that loads must print and load back to the same configuration.
// The policies' own parameter checks need the policies: targets/full/policy_params.cpp.
#include <sstream>

#include "core/config.h"
#include "core/error.h"
#include "core/json_input.h"
#include "fuzz/fuzz_target.h"
#include "fuzz/json_mutator.h"

namespace uvmsim::fuzz {

namespace {

/// Known, reported and left to the knob-system rework (issue 14, not fixed here): a transfer-curve
/// point of 2^64 bytes or more is converted to uint64_t unchecked (core/config.cpp, curve(), an
/// undefined float-to-integer conversion). Inputs holding one are skipped so that the fuzzer keeps
/// looking for other defects; delete this when the knob checks its range.
bool huge_curve_point(const nlohmann::json& curve) {
  if (!curve.is_array()) return false;
  for (const auto& p : curve) {
    if (p.is_array() && !p.empty() && p[0].is_number() && p[0].get<double>() >= 0x1p64) {
      return true;
    }
  }
  return false;
}

bool known_config_defect(const std::string& key, const nlohmann::json& value) {
  return (key == "link.htod_curve" || key == "link.dtoh_curve") && huge_curve_point(value);
}

bool known_config_defect(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos) return false;
  try {
    return known_config_defect(assignment.substr(0, eq),
                               parse_json_or_text(assignment.substr(eq + 1), "--set"));
  } catch (const UserError&) {
    return false;  // set_from_string reports it
  }
}

/// What `uvmsim run --stats-out` records as the configuration must load back to the same one.
void round_trip(const SimConfig& c) {
  const nlohmann::json printed = c.to_json();
  (void)printed.dump();  // throws on text that is not UTF-8
  SimConfig back;
  back.apply_json(printed, "printed");
  if (back.to_json() != printed) throw Finding("configuration does not survive to_json");
}

void preset(Input in) {
  try {
    const auto j =
        parse_json(std::string_view(reinterpret_cast<const char*>(in.data()), in.size()), "preset");
    if (j.is_object() && j.contains("link") && j["link"].is_object()) {
      for (const auto& [k, v] : j["link"].items()) {
        if (known_config_defect("link." + k, v)) return;
      }
    }
  } catch (const UserError&) {
  }
  const auto path = scratch_file(in, "preset.json");
  expect_clean(
      [&] {
        const SimConfig c = SimConfig::from_preset(path.string());
        round_trip(c);
      },
      path.string());
}

/// One assignment per line, applied in order to the GTX 1080 Ti preset.
void set_values(Input in) {
  static const SimConfig base = SimConfig::from_preset("gtx1080ti");
  const std::string text(in.begin(), in.end());
  expect_clean(
      [&] {
        SimConfig c = base;
        std::istringstream lines(text);
        std::string line;
        while (std::getline(lines, line)) {
          if (known_config_defect(line)) return;
          c.set_from_string(line, "--set");
        }
        round_trip(c);
      },
      "--set");
}

}  // namespace

UVMSIM_FUZZ_TARGET("gpu_preset", "GPU preset files (--gpu FILE.json)", preset, mutate_json);
UVMSIM_FUZZ_TARGET("set_value", "--set KEY=VALUE overrides, one per line", set_values, nullptr);

}  // namespace uvmsim::fuzz
