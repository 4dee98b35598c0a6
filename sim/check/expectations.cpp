#include "sim/check/expectations.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/json_input.h"
#include "sim/sweep/files.h"

namespace uvmsim::check {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

ordered_json read_doc(const fs::path& p) {
  if (!std::ifstream(p)) throw UserError(p.string() + ": cannot open expectation file");
  return read_ordered_json_file(p);
}

void check_keys(const ordered_json& j, const std::string& where, const std::string& field,
                const std::vector<std::string>& keys) {
  if (!j.is_object())
    field_error(where, field.empty() ? "(top level)" : field, "expected an object");
  for (const auto& [k, v] : j.items()) {
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
    std::string known;
    for (const auto& x : keys) known += (known.empty() ? "" : ", ") + x;
    field_error(where, field.empty() ? k : field + "." + k, "unknown key (expected " + known + ")");
  }
}

void check_expect_spec(const json& v, const std::string& where, const std::string& field) {
  if (v.is_null() || v.is_number() || v.is_boolean() || v.is_string()) return;
  if (!v.is_object())
    field_error(where, field, "expected a value, null, {\"value\": ...} or {\"min\", \"max\"}");
  for (const auto& [k, x] : v.items()) {
    if (k != "value" && k != "rel_tol" && k != "abs_tol" && k != "min" && k != "max")
      field_error(where, field + "." + k,
                  "unknown key (expected value, rel_tol, abs_tol, min, max)");
    if (k != "value" && !x.is_number()) field_error(where, field + "." + k, "expected a number");
    if ((k == "rel_tol" || k == "abs_tol") && x.get<double>() < 0)
      field_error(where, field + "." + k, "must not be negative");
  }
  const bool range = v.contains("min") || v.contains("max");
  if (range && (v.contains("value") || v.contains("rel_tol") || v.contains("abs_tol")))
    field_error(where, field,
                "give either a value (with a tolerance) or a min/max range, not both");
  if (!range && !v.contains("value")) field_error(where, field, "missing \"value\"");
}

}  // namespace

ExpectationFile ExpectationFile::load(const fs::path& path,
                                      const std::vector<std::string>& overrides) {
  ExpectationFile f;
  f.path = path;
  f.doc = read_doc(path);
  const std::string where = path.string();
  const fs::path base = fs::absolute(path).parent_path();
  check_keys(f.doc, where, "",
             {"description", "include", "defaults", "tolerances", "record", "workloads", "runs",
              "relations"});
  if (f.doc.contains("description")) {
    if (!f.doc["description"].is_string()) field_error(where, "description", "expected a string");
    f.description = f.doc["description"].get<std::string>();
  }

  // Shared parts: included files first, then this file's own.
  ordered_json defaults = ordered_json::object();
  std::vector<std::pair<ordered_json, std::string>> parts;  // (doc, where)
  if (f.doc.contains("include")) {
    ordered_json inc = f.doc["include"];
    if (inc.is_string()) inc = ordered_json::array({inc});
    if (!inc.is_array()) field_error(where, "include", "expected a file name or a list of them");
    for (const auto& i : inc) {
      if (!i.is_string()) field_error(where, "include", "expected file names");
      const fs::path p = base / i.get<std::string>();
      ordered_json d = read_doc(p);
      check_keys(d, p.string(), "",
                 {"description", "workloads", "defaults", "tolerances", "record"});
      parts.emplace_back(std::move(d), p.string());
    }
  }
  parts.emplace_back(f.doc, where);
  for (const auto& [d, w] : parts) {
    const fs::path dir = fs::absolute(fs::path(w)).parent_path();
    if (d.contains("workloads")) {
      if (!d["workloads"].is_object())
        field_error(w, "workloads", "expected an object of name: workload");
      for (const auto& [name, spec] : d["workloads"].items()) {
        json one = json(spec);
        if (one.is_object() && !one.contains("name")) one["name"] = name;
        auto ws = sweep::parse_workloads(one, w, "workloads." + name, dir);
        if (ws.size() != 1)
          field_error(w, "workloads." + name + ".footprint", "give a single footprint");
        if (!f.workloads.emplace(name, ws.front()).second)
          field_error(w, "workloads." + name, "defined twice (here and in an included file)");
      }
    }
    if (d.contains("defaults")) {
      check_keys(d["defaults"], w, "defaults",
                 {"gpu", "preset", "eviction", "prefetch", "placement", "oversub", "seed", "set"});
      for (const auto& [k, v] : d["defaults"].items()) {
        if (k == "set" && defaults.contains("set") && v.is_object()) {
          for (const auto& [sk, sv] : v.items()) defaults["set"][sk] = sv;
        } else {
          defaults[k] = v;
        }
      }
    }
    if (d.contains("tolerances")) {
      if (!d["tolerances"].is_object())
        field_error(w, "tolerances", "expected an object of metric: rel_tol");
      for (const auto& [k, v] : d["tolerances"].items()) {
        if (!v.is_number() || v.get<double>() < 0)
          field_error(w, "tolerances." + k,
                      "expected a non-negative relative tolerance (0.02 = 2 %)");
        f.tolerances.insert(f.tolerances.begin(), {k, v.get<double>()});  // later files win
      }
    }
    if (d.contains("record")) {
      if (!d["record"].is_array()) field_error(w, "record", "expected a list of metric names");
      for (const auto& m : d["record"]) {
        if (!m.is_string()) field_error(w, "record", "expected metric names");
        if (std::find(f.record.begin(), f.record.end(), m.get<std::string>()) == f.record.end())
          f.record.push_back(m.get<std::string>());
      }
    }
  }

  // Runs.
  if (!f.doc.contains("runs") || !f.doc["runs"].is_object() || f.doc["runs"].empty())
    field_error(where, "runs", "required: an object of run name: {workload, ...}");
  for (const auto& [name, r] : f.doc["runs"].items()) {
    const std::string field = "runs." + name;
    check_keys(r, where, field,
               {"workload", "gpu", "preset", "eviction", "prefetch", "placement", "oversub", "seed",
                "set", "expect", "description"});
    CheckRun run;
    run.name = name;
    if (!r.contains("workload") || !r["workload"].is_string())
      field_error(where, field + ".workload", "required: the name of a workload");
    run.workload = r["workload"].get<std::string>();
    if (!f.workloads.count(run.workload)) {
      std::string known;
      for (const auto& [n, w] : f.workloads) known += (known.empty() ? "" : ", ") + n;
      field_error(where, field + ".workload",
                  "unknown workload '" + run.workload + "' (defined: " + known + ")");
    }
    for (const auto& [k, v] : defaults.items())
      run.settings.apply(k, json(v), where, "defaults." + k, base);
    for (const auto& [k, v] : r.items()) {
      if (k == "workload" || k == "expect" || k == "description") continue;
      run.settings.apply(k, json(v), where, field + "." + k, base);
    }
    for (const auto& o : overrides) {
      const auto eq = o.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UserError("--set: expected KEY=VALUE, got '" + o + "'");
      const std::string value = o.substr(eq + 1);
      run.settings.sets.emplace_back(o.substr(0, eq),
                                     parse_json_or_text(value, "--set: " + o.substr(0, eq)));
    }
    if (r.contains("expect")) {
      if (!r["expect"].is_object())
        field_error(where, field + ".expect", "expected an object of metric: value");
      for (const auto& [m, spec] : r["expect"].items()) {
        check_expect_spec(json(spec), where, field + ".expect." + m);
        run.metrics.push_back(m);
      }
    }
    f.runs.push_back(std::move(run));
  }

  // Relations.
  if (f.doc.contains("relations")) {
    if (!f.doc["relations"].is_array()) field_error(where, "relations", "expected a list");
    for (std::size_t i = 0; i < f.doc["relations"].size(); ++i) {
      const auto& x = f.doc["relations"][i];
      const std::string field = "relations[" + std::to_string(i) + "]";
      std::string text, why;
      if (x.is_string()) {
        text = x.get<std::string>();
      } else if (x.is_object()) {
        check_keys(x, where, field, {"check", "why"});
        if (!x.contains("check") || !x["check"].is_string())
          field_error(where, field + ".check", "required: the relation text");
        text = x["check"].get<std::string>();
        if (x.contains("why")) {
          if (!x["why"].is_string()) field_error(where, field + ".why", "expected a string");
          why = x["why"].get<std::string>();
        }
      } else {
        field_error(where, field, "expected a relation string or {\"check\": ..., \"why\": ...}");
      }
      CheckRelation cr{Relation::parse(text, where + ": " + field), why};
      for (const auto& ref : cr.relation.refs())
        if (!f.find_run(ref.run))
          field_error(where, field, "names run '" + ref.run + "', which is not in \"runs\"");
      f.relations.push_back(std::move(cr));
    }
  }
  return f;
}

const CheckRun* ExpectationFile::find_run(const std::string& name) const {
  for (const auto& r : runs)
    if (r.name == name) return &r;
  return nullptr;
}

std::optional<double> ExpectationFile::tolerance(const std::string& metric) const {
  for (const auto& [pattern, tol] : tolerances)
    if (::fnmatch(pattern.c_str(), metric.c_str(), 0) == 0) return tol;
  return std::nullopt;
}

static std::string show(const json& v) {
  if (v.is_number()) return format_number(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

Verdict compare(const json& spec, const json& measured, std::optional<double> default_rel_tol) {
  Verdict v;
  v.measured = measured.is_null() ? "(no such metric)" : show(measured);
  if (spec.is_null()) {
    v.expected = "(not recorded; run with --update)";
    return v;
  }
  if (measured.is_null()) {
    v.expected = show(spec.is_object() ? spec.value("value", json(nullptr)) : spec);
    return v;
  }
  auto rel_text = [](double m, double e) {
    if (e == 0) return std::string();
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%+.2f%%)", 100.0 * (m - e) / std::fabs(e));
    return std::string(buf);
  };
  if (spec.is_object() && (spec.contains("min") || spec.contains("max"))) {
    const double m = measured.is_number() ? measured.get<double>() : NAN;
    const bool lo = !spec.contains("min") || m >= spec["min"].get<double>();
    const bool hi = !spec.contains("max") || m <= spec["max"].get<double>();
    v.expected = "in [" + (spec.contains("min") ? show(spec["min"]) : "-inf") + ", " +
                 (spec.contains("max") ? show(spec["max"]) : "inf") + "]";
    v.pass = measured.is_number() && lo && hi;
    return v;
  }
  const json expected = spec.is_object() ? spec["value"] : spec;
  v.expected = show(expected);
  if (!expected.is_number() || !measured.is_number()) {
    v.pass = expected == measured;
    return v;
  }
  const double e = expected.get<double>(), m = measured.get<double>();
  double rel = default_rel_tol.value_or(0), abs = 0;
  if (spec.is_object()) {
    if (spec.contains("rel_tol")) rel = spec["rel_tol"].get<double>();
    if (spec.contains("abs_tol")) abs = spec["abs_tol"].get<double>();
  }
  if (rel > 0) v.expected += " ±" + format_number(rel * 100) + "%";
  if (abs > 0) v.expected += " ±" + format_number(abs);
  v.measured += rel_text(m, e);
  v.pass = (rel == 0 && abs == 0) ? m == e : std::fabs(m - e) <= std::max(abs, rel * std::fabs(e));
  return v;
}

std::string compact_dump(const ordered_json& j, int width, int indent) {
  const std::string flat = j.dump(-1, ' ', false);
  if ((!j.is_object() && !j.is_array()) || j.empty()) return flat;
  // One line: add the spaces dump(-1) leaves out after ':' and ','.
  const std::string one = [&] {
    std::string o;
    bool in_str = false, esc = false;
    for (char c : flat) {
      o += c;
      if (in_str) {
        if (esc)
          esc = false;
        else if (c == '\\')
          esc = true;
        else if (c == '"')
          in_str = false;
      } else if (c == '"') {
        in_str = true;
      } else if (c == ':' || c == ',') {
        o += ' ';
      }
    }
    return o;
  }();
  if (indent + static_cast<int>(one.size()) <= width) return one;
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  std::string o = j.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) o += ",\n";
    first = false;
    o += pad;
    if (j.is_object()) o += ordered_json(it.key()).dump() + ": ";
    o += compact_dump(*it, width, indent + 2);
  }
  o += "\n" + std::string(static_cast<std::size_t>(indent), ' ') + (j.is_object() ? "}" : "]");
  return o;
}

ordered_json updated(const ordered_json& spec, const json& measured) {
  if (spec.is_object()) {
    if (spec.contains("min") || spec.contains("max")) return spec;
    ordered_json s = spec;
    s["value"] = measured;
    return s;
  }
  return ordered_json(measured);
}

}  // namespace uvmsim::check
