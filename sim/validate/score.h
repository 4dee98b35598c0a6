// Scoring a validation source (docs/validation.md): each row's simulated value from the metrics
// of its runs, its ratio error against the published value, a per-source summary (geometric-mean
// error factor, Spearman rank correlation per quantity) and the text and JSON reports.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/validate/dataset.h"

namespace uvmsim::validate {

/// Version tag of `uvmsim validate --json` output.
inline constexpr const char* kReportFormat = "uvmsim-validate/1";

struct RowResult {
  const Row* row = nullptr;
  /// compared (no bound), within (inside max_error), outside (beyond it: validate fails),
  /// skipped (not simulated; see Row::skip), no-value (a run failed, a metric is missing or the
  /// simulated value is not a positive number).
  std::string status;
  std::string reason;                      ///< for skipped / no-value
  std::optional<double> simulated, ratio;  ///< ratio = simulated / measured
  /// |ln(simulated / measured)|; exp(error) is the error factor (1 = exact, 2 = off by 2x).
  std::optional<double> error;
};

struct RankCorrelation {
  std::string metric;  ///< the rows' `metric`: only rows of one quantity are ranked together
  std::size_t n = 0;
  double spearman = 0;
};

struct SourceScore {
  const Source* source = nullptr;
  std::vector<RowResult> rows;
  std::size_t scored = 0;  ///< rows with an error
  /// exp(mean |ln(sim/measured)|) over scored rows: the geometric mean of the error factors.
  std::optional<double> geomean_error_factor;
  std::vector<RankCorrelation> ranks;  ///< per metric with at least 3 scored rows
  /// Bounded rows (max_error) outside their bound or without a value: `uvmsim validate` exits 1.
  std::size_t failed = 0;
};

/// The value of metric `m` of run `r`, or nullopt (run failed / no such numeric metric), with
/// `why` set to the reason.
using MetricLookup = std::function<std::optional<double>(
    const std::string& run, const std::string& metric, std::string& why)>;

SourceScore score(const Source& src, const std::vector<const Row*>& rows,
                  const MetricLookup& lookup);

/// Spearman's rank correlation of (x, y) (average ranks for ties); NaN if either is constant.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

/// The table for people: one block per source, a summary line per source.
void print_report(std::ostream& out, const std::vector<SourceScore>& scores, Subset subset);
/// The same as JSON (schema in docs/validation.md).
nlohmann::ordered_json report_json(const std::vector<SourceScore>& scores, Subset subset);

}  // namespace uvmsim::validate
