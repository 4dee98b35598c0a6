// Validation data files (configs/validation/, docs/validation.md): one file per published source
// of real-GPU measurements. Each measured value is a row with its citation (table / figure), the
// measured number and, where the paper gives one, a spread; the row's `expr` says how the same
// quantity is computed from simulated runs of the file (a stats key of one run, or an expression
// over several, e.g. a slowdown or a fault reduction). Runs are declared as in an expectation
// file (a workload plus run settings). Loading validates everything and expands the templates
// (runs and expressions repeated over a named list of workloads) before anything runs.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/check/relation.h"
#include "sim/sweep/point.h"
#include "sim/sweep/workload.h"

namespace uvmsim::validate {

/// Which rows and sizes to use: the CI subset (rows marked "ci", workloads at their
/// "ci_footprint") or the whole suite.
enum class Subset { Ci, Full };
const char* subset_name(Subset s);
/// "ci" or "full"; nullopt for anything else.
std::optional<Subset> parse_subset(const std::string& s);

struct Run {
  std::string name;
  std::string workload;
  sweep::RunSettings settings;
};

struct Row {
  std::string id;                         ///< unique within the file
  std::string figure;                     ///< table / figure / section of the source
  std::string gpu;                        ///< GPU label (the file's unless the row names another)
  std::string workload;                   ///< what the paper ran, as it names it
  std::string metric;                     ///< what is compared, in words
  std::string expr_text;                  ///< the expression as written (before expansion)
  std::optional<check::Expression> expr;  ///< expanded; none for a skipped row
  double measured = 0;
  std::optional<std::pair<double, double>> spread;  ///< [lo, hi] the paper reports
  std::string spread_note;                          ///< what the spread is ("range of 3 runs")
  std::string skip;  ///< non-empty: not simulated, and why (e.g. no generator for the workload)
  std::string note;  ///< how the number is derived / reproduced
  bool ci = false;   ///< part of the CI subset
  /// The row's acceptance bound: the ratio error factor max(sim/measured, measured/sim) above
  /// which `uvmsim validate` fails (exit 1). None: reported only. Set loosely, to catch a model
  /// that broke, not to claim agreement.
  std::optional<double> max_error;
};

struct Source {
  std::filesystem::path path;
  std::string name;                 ///< short id ("allen-ge-sc21")
  std::string title;                ///< paper title, authors, venue
  nlohmann::ordered_json citation;  ///< free-form citation fields (gpu, driver, cuda, ...)
  std::string gpu;                  ///< GPU label of the rows
  std::map<std::string, sweep::Workload> workloads;  ///< at the footprints of the subset loaded
  std::map<std::string, std::vector<std::string>> lists;  ///< named lists for templates
  std::vector<Run> runs;
  std::vector<Row> rows;

  /// Reads and validates a file for `subset`; `overrides` (KEY=VALUE knobs, `--set`) are
  /// appended to every run. Errors are one-line UserErrors naming the file and field.
  static Source load(const std::filesystem::path& path, Subset subset,
                     const std::vector<std::string>& overrides = {});
  const Run* find_run(const std::string& name) const;
  /// The rows of `subset` (every row for Full).
  std::vector<const Row*> rows_of(Subset subset) const;
  /// Names of the runs the given rows read, in declaration order.
  std::vector<std::string> runs_read_by(const std::vector<const Row*>& rows) const;
};

/// Expands `NAME{LIST}(EXPR)` for NAME in geomean, mean, min, max into
/// `NAME(EXPR[w=a], EXPR[w=b], ...)` over the named list, replacing `{w}` in EXPR by each
/// element. Throws UserError("<where>: ...") on an unknown list or unbalanced parentheses.
std::string expand_templates(const std::string& text,
                             const std::map<std::string, std::vector<std::string>>& lists,
                             const std::string& where);

}  // namespace uvmsim::validate
