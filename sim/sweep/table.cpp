#include "sim/sweep/table.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "sim/sweep/files.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  for (const auto& [k, v] : j.items()) {
    const std::string name = prefix.empty() ? k : prefix + "." + k;
    if (name == "config" || name == "kernels" || name == "batch_size_histogram" ||
        name == "trace.path")
      continue;
    if (v.is_object()) {
      flatten(v, name, out);
    } else if (!v.is_array()) {
      out[name] = v;
    }
  }
}

// Per-GPU statistics (stats "gpus", present with system.gpus > 1): GPU g's entry flattened
// like the rest under "gpu<g>." ("gpu1.host_link.peer_staged_bytes", "gpu1.evictions").
void flatten_gpus(const json& gpus, std::map<std::string, json>& out) {
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (!gpus[i].is_object()) continue;
    json entry = gpus[i];
    std::size_t g = i;
    if (entry.contains("gpu") && entry["gpu"].is_number_unsigned())
      g = entry["gpu"].get<std::size_t>();
    entry.erase("gpu");
    flatten(entry, "gpu" + std::to_string(g), out);
  }
}

// The GPU of a per-GPU column ("gpu12.evictions" -> 12, its metric "evictions"), or nothing.
std::optional<std::pair<unsigned long, std::string>> per_gpu(const std::string& column) {
  if (column.rfind("gpu", 0) != 0) return std::nullopt;
  std::size_t i = 3;
  while (i < column.size() && column[i] >= '0' && column[i] <= '9') ++i;
  if (i == 3 || i > 9 || i >= column.size() || column[i] != '.') return std::nullopt;
  return std::make_pair(std::stoul(column.substr(3, i - 3)), column.substr(i + 1));
}

std::string cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_field(v.get<std::string>());
  return v.dump();
}

// Axis values as a lookup key; numbers compare by value (50 and 50.0 are the same level).
std::string axes_key(const ordered_json& axes) {
  json k = json::object();
  for (const auto& [name, v] : axes.items())
    k[name] = v.is_number() ? json(v.get<double>()) : json(v);
  return k.dump();
}

// The metric columns that lead the table, in this order; the rest follow alphabetically.
const std::vector<std::string> kLeading = {
    "sim_time_ns",          "kernel_time_ns", "gpu_faults",
    "fault_batches",        "evictions",      "htod_bytes",
    "dtoh_bytes",           "remote_bytes",   "memory.oversubscription_pct",
    "prefetch_use.coverage"};
// The per-GPU columns follow the run-wide ones, GPU by GPU, each GPU's in this order (then the
// rest of its entry alphabetically, e.g. peer-link counters).
const std::vector<std::string> kGpuLeading = {"kernels",
                                              "kernel_time_ns",
                                              "accesses",
                                              "gpu_faults",
                                              "fault_batches",
                                              "evictions",
                                              "host_link.htod_bytes",
                                              "host_link.dtoh_bytes",
                                              "host_link.peer_staged_bytes",
                                              "host_link.remote_bytes"};
// Policy-private counters (each policy's report()) go to policy_counters.csv, keyed by id, so
// that results.csv has the same columns whichever policies a sweep compares.
bool policy_private(const std::string& metric) { return metric.rfind("policies.", 0) == 0; }
// Normalized columns: name, metric, reference.
struct Norm {
  const char* column;
  const char* metric;
  bool vs_oversub0;  ///< reference: same point at 0 % oversubscription (else the baseline)
  bool inverse;      ///< reference / value (a speedup) instead of value / reference
};
const Norm kNorms[] = {{"runtime_vs_baseline", "sim_time_ns", false, false},
                       {"speedup_vs_baseline", "sim_time_ns", false, true},
                       {"gpu_faults_vs_baseline", "gpu_faults", false, false},
                       {"htod_bytes_vs_baseline", "htod_bytes", false, false},
                       {"runtime_vs_oversub0", "sim_time_ns", true, false}};

}  // namespace

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::map<std::string, json> flatten_metrics(const json& stats) {
  std::map<std::string, json> m;
  flatten(stats, "", m);
  if (stats.contains("kernels") && stats["kernels"].is_array()) {
    double k = 0;
    for (const auto& x : stats["kernels"]) k += x.value("time_ns", 0.0);
    m["kernel_time_ns"] = k;
  }
  if (stats.contains("gpus") && stats["gpus"].is_array()) flatten_gpus(stats["gpus"], m);
  return m;
}

std::size_t write_results_csv(const std::vector<std::string>& axes, const ordered_json& baseline,
                              const std::vector<PointSpec>& points, const ResultStore& store,
                              const fs::path& csv) {
  struct Row {
    const PointSpec* p;
    std::string status, error, build;
    std::map<std::string, json> metrics;
  };
  std::vector<Row> rows;
  std::map<std::string, std::size_t> by_axes;
  std::set<std::string> metric_names;
  std::size_t with_result = 0;
  for (const auto& p : points) {
    Row r{&p, "pending", "", "", {}};
    if (auto res = store.load_result(p)) {
      r.status = "ok";
      r.build = (*res)["build"]["build_id"].get<std::string>();
      r.metrics = flatten_metrics((*res)["stats"]);
      for (const auto& [k, v] : r.metrics) metric_names.insert(k);
      ++with_result;
    } else if (auto f = store.load_failure(p.id)) {
      r.status = "failed";
      r.error = (*f)["error"].get<std::string>();
    }
    by_axes[axes_key(p.axes)] = rows.size();
    rows.push_back(std::move(r));
  }

  std::vector<std::string> metric_cols;
  for (const auto& m : kLeading)
    if (metric_names.count(m)) metric_cols.push_back(m);
  std::vector<std::string> gpu_cols, rest, private_cols;
  for (const auto& m : metric_names)
    if (std::find(kLeading.begin(), kLeading.end(), m) == kLeading.end())
      (per_gpu(m) ? gpu_cols : policy_private(m) ? private_cols : rest).push_back(m);
  const auto gpu_order = [](const std::string& column) {
    const auto [g, metric] = *per_gpu(column);
    const auto lead = std::find(kGpuLeading.begin(), kGpuLeading.end(), metric);
    return std::make_tuple(g, lead - kGpuLeading.begin(), metric);
  };
  std::sort(gpu_cols.begin(), gpu_cols.end(), [&](const std::string& a, const std::string& b) {
    return gpu_order(a) < gpu_order(b);
  });
  // Per-GPU columns first among the other metrics: a one-GPU table has none and is unchanged.
  rest.insert(rest.begin(), gpu_cols.begin(), gpu_cols.end());

  std::ostringstream o;
  o << "id,status,label";
  for (const auto& a : axes) o << "," << csv_field(a);
  for (const auto& m : metric_cols) o << "," << m;
  for (const auto& n : kNorms) o << "," << n.column;
  o << ",baseline_id,build";
  for (const auto& m : rest) o << "," << csv_field(m);
  o << ",error\n";

  auto metric = [](const Row& r, const std::string& name) -> std::optional<double> {
    if (r.status != "ok") return std::nullopt;
    auto it = r.metrics.find(name);
    if (it == r.metrics.end() || !it->second.is_number()) return std::nullopt;
    return it->second.get<double>();
  };
  auto reference = [&](const Row& r, bool vs_oversub0) -> const Row* {
    ordered_json a = r.p->axes;
    if (vs_oversub0) {
      if (a["oversub"].is_null()) return nullptr;
      a["oversub"] = 0;
    } else {
      for (const auto& [k, v] : baseline.items())
        if (a.contains(k)) a[k] = v;
    }
    auto it = by_axes.find(axes_key(a));
    return it == by_axes.end() ? nullptr : &rows[it->second];
  };

  for (const auto& r : rows) {
    o << r.p->id << "," << r.status << "," << csv_field(r.p->label);
    for (const auto& a : axes) o << "," << (r.p->axes.contains(a) ? cell(json(r.p->axes[a])) : "");
    for (const auto& m : metric_cols) {
      auto it = r.metrics.find(m);
      o << "," << (it == r.metrics.end() ? "" : cell(it->second));
    }
    for (const auto& n : kNorms) {
      o << ",";
      const Row* ref = reference(r, n.vs_oversub0);
      if (!ref) continue;
      const auto v = metric(r, n.metric), b = metric(*ref, n.metric);
      if (!v || !b) continue;
      const double num = n.inverse ? *b : *v, den = n.inverse ? *v : *b;
      if (den > 0) o << json(num / den).dump();
    }
    const Row* base = reference(r, false);
    o << "," << (base ? base->p->id : "") << "," << csv_field(r.build);
    for (const auto& m : rest) {
      auto it = r.metrics.find(m);
      o << "," << (it == r.metrics.end() ? "" : cell(it->second));
    }
    o << "," << csv_field(r.error) << "\n";
  }
  write_atomic(csv, o.str());

  std::ostringstream pc;
  pc << "id,label";
  for (const auto& m : private_cols) pc << "," << csv_field(m);
  pc << "\n";
  for (const auto& r : rows) {
    pc << r.p->id << "," << csv_field(r.p->label);
    for (const auto& m : private_cols) {
      auto it = r.metrics.find(m);
      pc << "," << (it == r.metrics.end() ? "" : cell(it->second));
    }
    pc << "\n";
  }
  write_atomic(csv.parent_path() / "policy_counters.csv", pc.str());
  return with_result;
}

std::vector<std::string> seed_insensitive_groups(const std::vector<PointSpec>& points,
                                                 const ResultStore& store) {
  struct Group {
    std::string label;
    std::size_t points = 0;
    bool same = true;
    json first;
  };
  std::map<std::string, Group> groups;  // key: the axes without "seed"
  std::vector<std::string> order;
  for (const auto& p : points) {
    if (!p.axes.contains("seed")) continue;
    ordered_json a = p.axes;
    a.erase("seed");
    const std::string key = axes_key(a);
    auto res = store.load_result(p);
    if (!res) continue;
    json st = (*res)["stats"];
    // The configuration holds the seed itself; wall-clock fields measure the host.
    for (const char* k : {"config", "wall_seconds", "accesses_per_second"}) st.erase(k);
    auto [it, fresh] = groups.try_emplace(key);
    Group& g = it->second;
    if (fresh) {
      order.push_back(key);
      g.label = p.label;
      g.first = std::move(st);
    } else if (g.same && st != g.first) {
      g.same = false;
    }
    ++g.points;
  }
  std::vector<std::string> out;
  for (const auto& key : order) {
    const Group& g = groups[key];
    if (g.points < 2 || !g.same) continue;
    std::string label = g.label;
    if (const auto at = label.find(" seed="); at != std::string::npos) {
      const auto end = label.find(' ', at + 1);
      label.erase(at, end == std::string::npos ? std::string::npos : end - at);
    }
    out.push_back(label);
  }
  return out;
}

std::vector<std::vector<std::string>> read_csv(const fs::path& csv) {
  const std::string text = read_file(csv);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
      continue;
    }
    any = true;
    if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
      any = false;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) throw UserError(csv.string() + ": ends inside a quoted field (truncated?)");
  if (any) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::optional<std::map<std::string, std::size_t>> result_builds(const fs::path& csv) {
  const auto rows = read_csv(csv);
  if (rows.empty()) return std::nullopt;
  const auto& head = rows.front();
  const auto col = [&](const char* name) {
    return static_cast<std::size_t>(std::find(head.begin(), head.end(), name) - head.begin());
  };
  const std::size_t status = col("status"), build = col("build");
  if (status == head.size() || build == head.size()) return std::nullopt;
  std::map<std::string, std::size_t> builds;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].size() != head.size())
      throw UserError(csv.string() + ": row " + std::to_string(i + 1) + ": " +
                      std::to_string(rows[i].size()) + " fields, the header has " +
                      std::to_string(head.size()) +
                      " (damaged table; rebuild it with uvmsim "
                      "sweep SPEC --out DIR --collect)");
    if (rows[i][status] == "ok") ++builds[rows[i][build]];
  }
  return builds;
}

}  // namespace uvmsim::sweep
