#include "sim/sweep/spec.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/json_input.h"
#include "sim/sweep/files.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// A scalar or a list of scalars, as a non-empty list without duplicates.
std::vector<json> list_of(const json& v, const std::string& where, const std::string& field) {
  std::vector<json> out;
  if (v.is_array()) {
    if (v.empty()) field_error(where, field, "empty list");
    for (const auto& x : v) out.push_back(x);
  } else {
    out.push_back(v);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].is_object() || out[i].is_array())
      field_error(where, field + "[" + std::to_string(i) + "]",
                  "expected a scalar, got " + out[i].dump());
    for (std::size_t k = 0; k < i; ++k)
      if (out[k] == out[i]) field_error(where, field, "duplicate value " + out[i].dump());
  }
  return out;
}

std::vector<std::string> strings_of(const json& v, const std::string& where,
                                    const std::string& field) {
  std::vector<std::string> out;
  const auto items = list_of(v, where, field);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string() || items[i].get<std::string>().empty())
      field_error(where, field + "[" + std::to_string(i) + "]",
                  "expected a non-empty string, got " + items[i].dump());
    out.push_back(items[i].get<std::string>());
  }
  return out;
}

// The value of dotted knob `name` in a configuration's JSON, or null.
json knob_value(const json& cfg, const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) return nullptr;
  const std::string group = name.substr(0, dot), key = name.substr(dot + 1);
  if (!cfg.contains(group) || !cfg[group].is_object() || !cfg[group].contains(key)) return nullptr;
  return cfg[group][key];
}

std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "none";
  return v.dump();
}

}  // namespace

bool matches(const ordered_json& axes, const json& pattern) {
  for (const auto& [k, v] : pattern.items()) {
    if (!axes.contains(k)) return false;
    const json a = json(axes[k]);
    if (v.is_array()) {
      if (std::none_of(v.begin(), v.end(), [&](const json& x) { return x == a; })) return false;
    } else if (!(v == a)) {
      return false;
    }
  }
  return true;
}

SweepSpec SweepSpec::load(const fs::path& file) {
  if (!std::ifstream(file)) throw UserError(file.string() + ": cannot open sweep spec");
  const ordered_json j = read_ordered_json_file(file, {.comments = true});
  SweepSpec s = parse(j, file.string(), fs::absolute(file).parent_path(), file.stem().string());
  s.file = file;
  return s;
}

SweepSpec SweepSpec::parse(const ordered_json& j, const std::string& where,
                           const fs::path& base_dir, const std::string& default_name) {
  if (!j.is_object()) throw UserError(where + ": expected a JSON object");
  static const std::vector<std::string> keys = {
      "name",     "description", "workloads", "gpus",     "policies",
      "eviction", "prefetch",    "placement", "oversub",  "knobs",
      "seeds",    "set",         "exclude",   "baseline", "input_seeds"};
  for (const auto& [k, v] : j.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      std::string known;
      for (const auto& x : keys) known += (known.empty() ? "" : ", ") + x;
      field_error(where, k, "unknown key (a sweep spec has " + known + ")");
    }
  }
  SweepSpec s;
  s.base_dir = base_dir;
  s.name = default_name;
  if (j.contains("name")) {
    if (!j["name"].is_string() || j["name"].get<std::string>().empty())
      field_error(where, "name", "expected a non-empty string");
    s.name = j["name"].get<std::string>();
  }
  if (j.contains("description")) {
    if (!j["description"].is_string()) field_error(where, "description", "expected a string");
    s.description = j["description"].get<std::string>();
  }

  // --- workloads
  if (!j.contains("workloads")) field_error(where, "workloads", "required (a list of workloads)");
  const json& wl = j["workloads"];
  if (!wl.is_array() || wl.empty()) field_error(where, "workloads", "expected a non-empty list");
  for (std::size_t i = 0; i < wl.size(); ++i) {
    for (auto& w : parse_workloads(wl[i], where, "workloads[" + std::to_string(i) + "]", base_dir))
      s.workloads.push_back(std::move(w));
  }
  for (std::size_t i = 0; i < s.workloads.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (s.workloads[k].name == s.workloads[i].name)
        field_error(
            where, "workloads",
            "two workloads are named '" + s.workloads[i].name + "' (give them distinct \"name\"s)");

  // --- input seeds: every generated workload once per generator seed (axis input_seed)
  if (j.contains("input_seeds")) {
    for (const auto& v : list_of(j["input_seeds"], where, "input_seeds")) {
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
        field_error(where, "input_seeds", "expected non-negative integers, got " + v.dump());
      const auto seed = v.get<std::uint64_t>();
      if (std::find(s.input_seeds.begin(), s.input_seeds.end(), seed) != s.input_seeds.end())
        field_error(where, "input_seeds", "duplicate value " + v.dump());
      s.input_seeds.push_back(seed);
    }
    std::vector<Workload> per_seed;
    for (const auto& w : s.workloads) {
      if (!w.generated())
        field_error(where, "input_seeds",
                    "workload '" + w.name +
                        "' is a trace file; input seeds apply only to generated workloads");
      if (w.seed_given)
        field_error(where, "input_seeds",
                    "workload '" + w.name + "' fixes its own \"seed\" (use one or the other)");
      for (const auto seed : s.input_seeds) {
        Workload c = w;
        c.seed = seed;
        c.input_seed = true;
        per_seed.push_back(std::move(c));
      }
    }
    s.workloads = std::move(per_seed);
  }

  // --- GPU presets (validated now so a typo fails before any simulation)
  RunSettings probe;
  for (const auto& g : strings_of(j.value("gpus", json("gtx1080ti")), where, "gpus")) {
    probe.apply("gpu", g, where, "gpus", base_dir);
    s.gpus.push_back(probe.gpu);
  }

  // --- policy axes
  for (const char* fam : {"eviction", "prefetch", "placement"}) {
    if (!j.contains(fam)) continue;
    auto& dst = std::string(fam) == "eviction"   ? s.eviction
                : std::string(fam) == "prefetch" ? s.prefetch
                                                 : s.placement;
    dst = strings_of(j[fam], where, fam);
  }
  if (j.contains("policies")) {
    const json& p = j["policies"];
    if (!p.is_array() || p.empty()) field_error(where, "policies", "expected a non-empty list");
    for (std::size_t i = 0; i < p.size(); ++i) {
      const std::string f = "policies[" + std::to_string(i) + "]";
      if (!p[i].is_object()) field_error(where, f, "expected an object with a \"name\"");
      if (!p[i].contains("name") || !p[i]["name"].is_string() ||
          p[i]["name"].get<std::string>().empty())
        field_error(where, f + ".name", "required (a non-empty string)");
      PolicyEntry e{p[i]["name"].get<std::string>(), json::object()};
      for (const auto& [k, v] : p[i].items()) {
        if (k == "name") continue;
        if (k != "preset" && k != "eviction" && k != "prefetch" && k != "placement" && k != "set")
          field_error(
              where, f + "." + k,
              "unknown key (a policy has name, preset, eviction, prefetch, placement, set)");
        if (k != "set" && k != "preset" && j.contains(k))
          field_error(where, f + "." + k,
                      "conflicts with the top-level \"" + k + "\" axis (use one or the other)");
        RunSettings check;
        check.apply(k, v, where, f + "." + k, base_dir);
        e.settings[k] = v;
      }
      for (const auto& other : s.policies)
        if (other.name == e.name)
          field_error(where, f + ".name", "duplicate policy name '" + e.name + "'");
      s.policies.push_back(std::move(e));
    }
  }

  // --- oversubscription levels, seeds
  if (j.contains("oversub")) {
    for (const auto& v : list_of(j["oversub"], where, "oversub")) {
      RunSettings check;
      check.apply("oversub", v, where, "oversub", base_dir);
      s.oversub.push_back(v);
    }
  }
  if (j.contains("seeds")) {
    for (const auto& v : list_of(j["seeds"], where, "seeds")) {
      RunSettings check;
      check.apply("seed", v, where, "seeds", base_dir);
      s.seeds.push_back(v.get<std::uint64_t>());
    }
  }

  // --- knobs: fixed ("set") and swept ("knobs"), each value validated against the knob table
  if (j.contains("set")) {
    if (!j["set"].is_object()) field_error(where, "set", "expected an object of knob: value");
    SimConfig c;
    for (const auto& [k, v] : j["set"].items()) c.set(k, v, where + ": set");
    s.set = j["set"];
  }
  if (j.contains("knobs")) {
    if (!j["knobs"].is_object())
      field_error(where, "knobs", "expected an object of knob: [values]");
    for (const auto& [k, v] : j["knobs"].items()) {
      for (const char* reserved :
           {"workload", "gpu", "policy", "eviction", "prefetch", "placement", "oversub", "seed"})
        if (k == reserved)
          field_error(where, "knobs." + k, "is an axis of its own; use \"" + k + "\"");
      if (k == "engine.eviction" || k == "engine.prefetch" || k == "engine.placement" ||
          k == "engine.seed")
        field_error(where, "knobs." + k, "use the eviction / prefetch / placement / seeds axes");
      auto vals = list_of(v, where, "knobs." + k);
      SimConfig c;
      for (const auto& x : vals) c.set(k, x, where + ": knobs");
      s.knobs.emplace_back(k, std::move(vals));
    }
  }

  const auto axes = s.axis_names();
  auto check_axes = [&](const json& pattern, const std::string& field) {
    if (!pattern.is_object() || pattern.empty())
      field_error(where, field, "expected a non-empty object of axis: value(s)");
    for (const auto& [k, v] : pattern.items()) {
      if (std::find(axes.begin(), axes.end(), k) == axes.end()) {
        std::string known;
        for (const auto& a : axes) known += (known.empty() ? "" : ", ") + a;
        field_error(where, field + "." + k, "not an axis of this sweep (axes: " + known + ")");
      }
      (void)v;
    }
  };

  // --- exclusions
  if (j.contains("exclude")) {
    if (!j["exclude"].is_array())
      field_error(where, "exclude", "expected a list of axis assignments");
    for (std::size_t i = 0; i < j["exclude"].size(); ++i) {
      check_axes(j["exclude"][i], "exclude[" + std::to_string(i) + "]");
      s.exclude.push_back(j["exclude"][i]);
    }
  }

  // --- baseline: the driver-default policy unless the spec says otherwise
  if (!s.policies.empty()) {
    std::string def = s.policies.front().name;
    for (const auto& p : s.policies)
      if (p.name == "default" || p.name == "driver" || p.name == "uvm") {
        def = p.name;
        break;
      }
    s.baseline["policy"] = def;
  }
  s.baseline["eviction"] = "driver";
  s.baseline["prefetch"] = "tree";
  s.baseline["placement"] = "driver";
  if (!s.knobs.empty()) {
    SimConfig c = SimConfig::from_preset(s.gpus.front());
    for (const auto& [k, v] : s.set.items()) c.set(k, v, where);
    const json cfg = c.to_json();
    for (const auto& [k, vals] : s.knobs) {
      const json d = knob_value(cfg, k);
      if (!d.is_null()) s.baseline[k] = d;
    }
  }
  if (j.contains("baseline")) {
    check_axes(j["baseline"], "baseline");
    for (const auto& [k, v] : j["baseline"].items()) {
      if (v.is_null())
        s.baseline.erase(k);
      else
        s.baseline[k] = v;
    }
  }

  return s;
}

std::vector<std::string> SweepSpec::axis_names() const {
  std::vector<std::string> a = {"workload", "gpu"};
  if (!policies.empty()) a.push_back("policy");
  a.insert(a.end(), {"eviction", "prefetch", "placement"});
  for (const auto& [k, v] : knobs) a.push_back(k);
  a.insert(a.end(), {"oversub", "seed"});
  if (!input_seeds.empty()) a.push_back("input_seed");
  return a;
}

std::vector<std::string> SweepSpec::varying_axes() const {
  std::vector<std::string> v;
  // With input seeds a workload appears once per seed: count names, not entries.
  if (workloads.size() / std::max<std::size_t>(input_seeds.size(), 1) > 1) v.push_back("workload");
  if (gpus.size() > 1) v.push_back("gpu");
  if (policies.size() > 1) v.push_back("policy");
  if (eviction.size() > 1) v.push_back("eviction");
  if (prefetch.size() > 1) v.push_back("prefetch");
  if (placement.size() > 1) v.push_back("placement");
  for (const auto& [k, vals] : knobs)
    if (vals.size() > 1) v.push_back(k);
  if (oversub.size() > 1) v.push_back("oversub");
  if (seeds.size() > 1) v.push_back("seed");
  if (input_seeds.size() > 1) v.push_back("input_seed");
  return v;
}

std::string SweepSpec::baseline_text() const {
  std::string t;
  for (const auto& [k, v] : baseline.items())
    t += (t.empty() ? "" : " ") + k + "=" + value_text(json(v));
  return t;
}

std::vector<PointSpec> SweepSpec::expand(const fs::path& trace_dir) const {
  const std::string where = file.empty() ? name : file.string();
  const auto varying = varying_axes();
  // Odometer over: workload, gpu, policy, eviction, prefetch, placement, knobs..., oversub, seed.
  std::vector<std::size_t> sizes = {workloads.size(),
                                    gpus.size(),
                                    std::max<std::size_t>(policies.size(), 1),
                                    std::max<std::size_t>(eviction.size(), 1),
                                    std::max<std::size_t>(prefetch.size(), 1),
                                    std::max<std::size_t>(placement.size(), 1)};
  for (const auto& [k, vals] : knobs) sizes.push_back(vals.size());
  sizes.push_back(std::max<std::size_t>(oversub.size(), 1));
  sizes.push_back(std::max<std::size_t>(seeds.size(), 1));

  std::vector<PointSpec> points;
  std::vector<std::size_t> idx(sizes.size(), 0);
  for (;;) {
    std::size_t a = 0;
    const Workload& w = workloads[idx[a++]];
    RunSettings rs;
    rs.gpu = gpus[idx[a++]];
    for (const auto& [k, v] : set.items()) rs.sets.emplace_back(k, v);
    const PolicyEntry* pol = policies.empty() ? nullptr : &policies[idx[a]];
    ++a;
    if (pol)
      for (const auto& [k, v] : pol->settings.items()) rs.apply(k, v, where, "policies", base_dir);
    if (!eviction.empty()) rs.eviction = eviction[idx[a]];
    ++a;
    if (!prefetch.empty()) rs.prefetch = prefetch[idx[a]];
    ++a;
    if (!placement.empty()) rs.placement = placement[idx[a]];
    ++a;
    std::vector<json> knob_vals;
    for (const auto& [k, vals] : knobs) {
      knob_vals.push_back(vals[idx[a++]]);
      rs.sets.emplace_back(k, knob_vals.back());
    }
    json over = oversub.empty() ? json(nullptr) : oversub[idx[a]];
    ++a;
    if (!over.is_null()) rs.oversub = over.get<double>();
    if (!seeds.empty()) rs.seed = seeds[idx[a]];

    ordered_json axes;
    axes["workload"] = w.name;
    axes["gpu"] = rs.gpu;
    std::string label = w.name;
    SimConfig cfg;
    if (pol) axes["policy"] = pol->name;
    try {
      cfg = rs.resolve(where);
    } catch (const UserError& e) {
      throw UserError(std::string(e.what()) + (pol ? " (policy '" + pol->name + "')" : ""));
    }
    axes["eviction"] = cfg.engine.eviction;
    axes["prefetch"] = cfg.engine.prefetch;
    axes["placement"] = cfg.engine.placement;
    for (std::size_t k = 0; k < knobs.size(); ++k) axes[knobs[k].first] = knob_vals[k];
    axes["oversub"] = over;
    axes["seed"] = cfg.engine.seed;
    if (w.input_seed) axes["input_seed"] = w.seed;

    const bool excluded = std::any_of(exclude.begin(), exclude.end(),
                                      [&](const json& p) { return matches(axes, p); });
    if (!excluded) {
      for (const auto& v : varying) {
        if (v == "workload") continue;
        label += " " + v + "=" + value_text(json(axes[v]));
      }
      PointSpec p = PointSpec::make(label, axes, w, rs.oversub, cfg, trace_dir);
      points.push_back(std::move(p));
    }
    // Advance the odometer: the last axis varies fastest.
    std::size_t d = sizes.size();
    while (d > 0) {
      --d;
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
      if (d == 0) return points;
    }
    if (sizes.empty()) return points;
  }
}

}  // namespace uvmsim::sweep
