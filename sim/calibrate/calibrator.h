// `uvmsim calibrate`: fits the cost-model knobs of a GPU preset so that simulated fault-group
// times and counts, kernel times and migrated bytes per cause match measurements of the real GPU.
//
// Method (docs/calibration.md): the link curves are fitted directly from the measured copy times
// (fit_curve); the scalar costs are then fitted by NLopt's bounded derivative-free BOBYQA in log
// space, minimising the robust (soft-L1) relative residuals averaged per metric family plus a weak
// prior that keeps knobs the data cannot tell apart near the base preset. Knobs with no effect on
// any residual are detected first and left at their base value. Everything is deterministic.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/config.h"
#include "sim/calibrate/metrics.h"
#include "traces/measurements/measurement.h"

namespace uvmsim::calib {

/// One measured run and (unless it only carries copy timings) the trace it is simulated with.
struct RunInput {
  std::string label;
  RunMetrics measured;
  std::optional<std::filesystem::path> trace;  ///< none: only transfer/memcpy times are used
  bool holdout = false;                        ///< not fitted; its error is reported
};

struct Options {
  std::vector<std::string> fit;  ///< knobs to fit; empty = default_fit_knobs()
  std::map<std::string, std::pair<double, double>> bounds;  ///< per-knob [lo, hi] overrides
  unsigned max_evals = 300;
  double prior_weight = 1e-4;        ///< weight of sum((ln x - ln x_base)^2)
  double robust_scale = 0.1;         ///< soft-L1 scale: residuals well above 10 % count linearly
  std::string algorithm = "bobyqa";  ///< bobyqa | sbplx | neldermead | cobyla
  bool fit_curves = true;
  bool optimize = true;  ///< false: only evaluate the base preset (validation)
};

std::vector<std::string> default_fit_knobs();

struct ParamResult {
  std::string knob;
  double base = 0, value = 0, lo = 0, hi = 0;
  std::string status;  ///< fitted | at lower bound | at upper bound | no effect (kept)
};

struct Result {
  SimConfig config;  ///< the calibrated configuration
  std::vector<ParamResult> params;
  std::array<std::string, 2> curve_source;  ///< per direction: migrations | memcpy | base preset
  std::vector<Residual> train_before, train_after, holdout_before, holdout_after;
  double loss_before = 0, loss_after = 0;
  unsigned evaluations = 0;
  std::string stop_reason;
};

Result calibrate(const SimConfig& base, const std::vector<RunInput>& runs, const Options& opts);

/// Per-family aggregate of residuals: count, mean and max |relative error|.
struct FamilyStats {
  std::string family;
  std::size_t n = 0;
  double mean_abs = 0, max_abs = 0;
};
std::vector<FamilyStats> family_stats(const std::vector<Residual>& r);

void print_report(std::ostream& out, const Result& r, bool verbose);
nlohmann::json report_json(const Result& r);

/// The base preset document with fitted knobs replaced, their provenance set to "fitted" (with
/// `source`) and a "calibration" section summarising the fit.
nlohmann::ordered_json calibrated_preset(const nlohmann::ordered_json& base_doc, const Result& r,
                                         const std::string& source);

/// JSON with arrays of numbers kept on one line (readable presets).
std::string pretty_json(const nlohmann::ordered_json& j);

}  // namespace uvmsim::calib
