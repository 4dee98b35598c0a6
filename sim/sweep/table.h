// The aggregated, tidy results table of a sweep: one CSV row per point, one column per axis and
// per metric, plus normalized columns as the papers report them (docs/sweeps.md, "results.csv").
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/sweep/point.h"
#include "sim/sweep/results.h"

namespace uvmsim::sweep {

/// The scalar metrics of a result's "stats", flattened with dotted names ("tlb.l1_hit_rate"),
/// plus the derived "kernel_time_ns" (sum of kernel durations) and, for a run on several GPUs
/// (stats "gpus"), each GPU's entry under "gpu<g>." ("gpu1.host_link.htod_bytes"). Leaves out the
/// configuration, per-kernel records, the batch histogram and the trace path.
std::map<std::string, nlohmann::json> flatten_metrics(const nlohmann::json& stats);

/// Writes `csv` atomically, and beside it policy_counters.csv (id, label and the policies' own
/// "policies.*" counters, which results.csv leaves out). `axes` are the axis columns in order;
/// `baseline` overrides axes to find each point's reference point for the *_vs_baseline columns;
/// the "build" column is the build id of the binary that computed each result. Returns the number
/// of rows with a result.
std::size_t write_results_csv(const std::vector<std::string>& axes,
                              const nlohmann::ordered_json& baseline,
                              const std::vector<PointSpec>& points, const ResultStore& store,
                              const std::filesystem::path& csv);

/// Points that differ only in the policy seed (axis "seed") yet have bit-identical statistics:
/// the policy never draws a random number, so the seeds repeat one run. Returns one label per
/// such group (the first point's label without its "seed=" part); empty when every seed
/// mattered or there is no seed axis.
std::vector<std::string> seed_insensitive_groups(const std::vector<PointSpec>& points,
                                                 const ResultStore& store);

/// RFC 4180 quoting of one field.
std::string csv_field(const std::string& s);

/// Reads an RFC 4180 CSV file (quoted fields may hold commas, quotes and newlines) into rows
/// of fields. A file that cannot be read, or ends inside a quoted field, is a UserError naming it.
std::vector<std::vector<std::string>> read_csv(const std::filesystem::path& csv);

/// The build ids of the finished rows of a results.csv ("build" column of the "ok" rows), with
/// their counts; nothing if the table has no "build" column (written by an older uvmsim).
std::optional<std::map<std::string, std::size_t>> result_builds(const std::filesystem::path& csv);

}  // namespace uvmsim::sweep
