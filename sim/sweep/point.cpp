#include "sim/sweep/point.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>

#include "core/error.h"
#include "core/units.h"
#include "policies/policy.h"
#include "policies/registry.h"
#include "sim/host_memory.h"
#include "sim/simulator.h"
#include "sim/sweep/files.h"
#include "sim/sweep/identity.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A policy name (a prefetch name may combine policies with '+', "fdp+rgp") must be registered.
template <typename Registry>
void check_policy(const std::string& family, const std::string& names, const std::string& where) {
  const std::string field = where.empty() ? "--" + family : where + ": " + family;
  for (const auto& name : split(names, '+')) {
    if (Registry::find(name)) continue;
    if (name.empty())  // "fdp+", "+rgp": the wording of the policy's own check
      throw UserError(field + ": empty name in combined " + family + " policy '" + names + "'");
    std::string known;
    for (const auto& e : Registry::all()) known += (known.empty() ? "" : ", ") + e.name;
    throw UserError(field + ": unknown " + family + " policy '" + name + "' (known: " + known +
                    ")");
  }
}

}  // namespace

void check_policy_names(const SimConfig& c, const std::string& where) {
  check_policy<EvictionRegistry>("eviction", c.engine.eviction, where);
  check_policy<PrefetchRegistry>("prefetch", c.engine.prefetch, where);
  check_policy<PlacementRegistry>("placement", c.engine.placement, where);
}

SimConfig RunSettings::resolve(const std::string& where) const {
  SimConfig c = SimConfig::from_preset(gpu);
  if (preset) apply_policy_preset(c, *preset, where + ": preset");
  if (eviction) c.set("engine.eviction", *eviction, where);
  if (prefetch) c.set("engine.prefetch", *prefetch, where);
  if (placement) c.set("engine.placement", *placement, where);
  if (seed) c.set("engine.seed", *seed, where);
  for (const auto& [k, v] : sets) c.set(k, v, where);
  check_policy_names(c, where);
  validate_policy_params(c);
  return c;
}

bool RunSettings::apply(const std::string& key, const json& v, const std::string& where,
                        const std::string& field, const fs::path& base_dir) {
  auto text = [&]() {
    if (!v.is_string() || v.get<std::string>().empty())
      field_error(where, field, "expected a non-empty string, got " + v.dump());
    return v.get<std::string>();
  };
  if (key == "gpu") {
    std::string g = text();
    // A preset given as a file path is relative to the file that names it.
    if ((g.find('/') != std::string::npos || g.ends_with(".json")) && fs::path(g).is_relative())
      g = (base_dir / g).lexically_normal().string();
    try {
      SimConfig::find_preset(g);
    } catch (const UserError& e) {
      field_error(where, field, e.what());
    }
    gpu = g;
  } else if (key == "preset") {
    const std::string name = text();
    if (!find_policy_preset(name)) {
      std::string known;
      for (const auto& p : policy_presets()) known += (known.empty() ? "" : ", ") + p.name;
      field_error(where, field, "unknown policy preset '" + name + "' (known: " + known + ")");
    }
    preset = name;
  } else if (key == "eviction") {
    eviction = text();
  } else if (key == "prefetch") {
    prefetch = text();
  } else if (key == "placement") {
    placement = text();
  } else if (key == "oversub") {
    if (v.is_null()) {
      oversub.reset();
      return true;
    }
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 100000))
      field_error(where, field, "expected a percentage in [0, 100000] or null, got " + v.dump());
    oversub = v.get<double>();
  } else if (key == "seed") {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      field_error(where, field, "expected a non-negative integer, got " + v.dump());
    seed = v.get<std::uint64_t>();
  } else if (key == "set") {
    if (!v.is_object()) field_error(where, field, "expected an object of knob: value");
    for (const auto& [k, x] : v.items()) sets.emplace_back(k, x);
  } else {
    return false;
  }
  return true;
}

PointSpec PointSpec::make(std::string label, nlohmann::ordered_json axes, const Workload& w,
                          std::optional<double> oversub, const SimConfig& cfg,
                          const fs::path& trace_dir) {
  PointSpec p;
  p.label = std::move(label);
  p.axes = std::move(axes);
  p.workload = w.name;
  p.trace = fs::absolute(w.trace_path(trace_dir)).lexically_normal();
  p.inputs = {{"workload", w.identity()},
              {"oversub_pct", oversub ? json(*oversub) : json(nullptr)},
              {"config", cfg.to_json()},
              {"uvmsim_version", UVMSIM_VERSION}};
  const json key = {{"axes", json(p.axes)}, {"inputs", p.inputs}};
  p.id = hex64(crc64(key.dump(-1, ' ', false, json::error_handler_t::replace)));
  return p;
}

std::optional<double> PointSpec::oversub() const {
  const json& o = inputs.at("oversub_pct");
  if (o.is_null()) return std::nullopt;
  return o.get<double>();
}

std::string PointSpec::input_hash() const {
  return hex64(crc64(inputs.dump(-1, ' ', false, json::error_handler_t::replace)));
}

json PointSpec::to_json() const {
  return {{"id", id},
          {"label", label},
          {"axes", json(axes)},
          {"workload", workload},
          {"trace", trace.string()},
          {"inputs", inputs}};
}

PointSpec PointSpec::from_json(const json& j, const std::string& where) {
  // A description comes from another process (a task file, a worker's standard input): every
  // field is checked, so that damage is a one-line error rather than a failure deep inside.
  auto bad = [&](const std::string& field, const std::string& what) {
    throw UserError(where, field, "malformed point description: " + what);
  };
  if (!j.is_object()) bad("(point)", "expected an object, got " + std::string(j.type_name()));
  auto text = [&](const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) bad(key, "expected a string");
    return it->get<std::string>();
  };
  PointSpec p;
  p.id = text("id");
  p.label = text("label");
  p.workload = text("workload");
  p.trace = text("trace");
  if (!j.contains("axes") || !j["axes"].is_object()) bad("axes", "expected an object");
  p.axes = nlohmann::ordered_json(j["axes"]);
  if (!j.contains("inputs") || !j["inputs"].is_object()) bad("inputs", "expected an object");
  p.inputs = j["inputs"];
  const json& in = p.inputs;
  if (!in.contains("workload") || !in["workload"].is_object())
    bad("inputs.workload", "expected an object");
  if (in["workload"].contains("trace_crc64") && !in["workload"]["trace_crc64"].is_string())
    bad("inputs.workload.trace_crc64", "expected a string");
  if (!in.contains("oversub_pct") ||
      !(in["oversub_pct"].is_null() || in["oversub_pct"].is_number()))
    bad("inputs.oversub_pct", "expected a number or null");
  if (!in.contains("config") || !in["config"].is_object())
    bad("inputs.config", "expected an object");
  // The id is the hash of axes and inputs: a description garbled on the way does not match it.
  const json key = {{"axes", json(p.axes)}, {"inputs", p.inputs}};
  if (p.id != hex64(crc64(key.dump(-1, ' ', false, json::error_handler_t::replace))))
    bad("id", "does not match the point's axes and inputs (damaged description?)");
  return p;
}

json run_point(const PointSpec& p) {
  const std::string where = "point " + p.id + " (" + p.label + ")";
  SimConfig cfg;
  RunOptions opts;
  try {
    const json& wl = p.inputs.at("workload");
    if (wl.contains("trace_crc64")) {
      // A trace file may have been edited since the sweep was planned: its hash is an input.
      const std::string now = hex64(crc64_file(p.trace));
      if (now != wl["trace_crc64"].get<std::string>())
        throw UserError(p.trace.string() + ": trace changed since the sweep was planned (CRC " +
                        now + ", expected " + wl["trace_crc64"].get<std::string>() +
                        "); rerun the sweep to replan");
    }
    cfg.apply_json(p.inputs.at("config"), where + ": config");
    opts.trace = p.trace;
    opts.oversub_pct = p.oversub();
  } catch (const json::exception& e) {
    throw UserError(where + ": malformed point description (" + e.what() + ")");
  }
  Simulator sim(cfg, opts);
  const auto t0 = std::chrono::steady_clock::now();
  sim.run();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  json r;
  r["format"] = kResultFormat;
  r["id"] = p.id;
  r["input_hash"] = p.input_hash();
  r["label"] = p.label;
  r["axes"] = json(p.axes);
  r["workload"] = p.workload;
  r["inputs"] = p.inputs;
  r["build"] = this_build().to_json();
  r["stats"] = sim.to_json();
  r["run"] = {{"host", host_name()},
              {"pid", static_cast<long>(::getpid())},
              {"finished_at", time_now("%Y-%m-%dT%H:%M:%SZ", /*utc=*/true)},
              {"wall_seconds", secs},
              {"uvmsim_version", UVMSIM_VERSION}};
  // Each point runs in its own forked process (worker.cpp), so this is the point's own peak:
  // what --jobs points at once must fit in (a long-threadblock trace holds its decoded chunks,
  // docs/trace-format.md "Reading").
  r["run"]["peak_rss_bytes"] = peak_rss_bytes();
  return r;
}

}  // namespace uvmsim::sweep
