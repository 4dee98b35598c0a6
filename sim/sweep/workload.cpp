#include "sim/sweep/workload.h"

#include <algorithm>

#include "core/error.h"
#include "core/units.h"
#include "sim/sweep/files.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

json Workload::identity() const {
  if (!generated()) return {{"trace_crc64", trace_crc}};
  json p = json::object();
  for (const auto& [k, v] : params) p[k] = v;
  return {{"generator", generator},
          {"footprint", footprint},
          {"params", p},
          {"seed", seed},
          {"uvmsim_version", UVMSIM_VERSION}};
}

fs::path Workload::trace_path(const fs::path& trace_dir) const {
  if (!generated()) return trace_file;
  return trace_dir / (generator + "-" + hex64(crc64(identity().dump())) + ".uvt");
}

std::vector<std::string> Workload::gen_args(const fs::path& output) const {
  std::vector<std::string> a = {
      "gen", generator, "--footprint", std::to_string(footprint), "--seed", std::to_string(seed)};
  for (const auto& [k, v] : params) {
    a.push_back("--param");
    a.push_back(k + "=" + v);
  }
  a.push_back("-o");
  a.push_back(output.string());
  return a;
}

namespace {

std::string scalar_text(const json& v, const std::string& where, const std::string& field) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned() || v.is_number_float() || v.is_boolean())
    return v.dump();
  field_error(where, field, "expected a string or number, got " + v.dump());
}

std::uint64_t footprint_of(const json& v, const std::string& where, const std::string& field) {
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() > 0))
    return v.get<std::uint64_t>();
  if (v.is_string()) return parse_size(v.get<std::string>(), where + ": " + field);
  field_error(where, field, "expected a size such as \"64M\", got " + v.dump());
}

Workload parse_one(const json& j, const std::string& where, const std::string& field,
                   const fs::path& base_dir) {
  if (!j.is_object())
    field_error(where, field, "expected an object with \"generator\" or \"trace\"");
  static const std::vector<std::string> keys = {"name",   "generator", "footprint",
                                                "params", "seed",      "trace"};
  for (const auto& [k, v] : j.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end())
      field_error(where, field + "." + k,
                  "unknown key (a workload has name, generator, footprint, params, seed or trace)");
  }
  Workload w;
  const bool has_gen = j.contains("generator"), has_trace = j.contains("trace");
  if (has_gen == has_trace)
    field_error(where, field, "give exactly one of \"generator\" and \"trace\"");
  if (has_trace) {
    for (const char* k : {"footprint", "params", "seed"})
      if (j.contains(k)) field_error(where, field + "." + k, "not used with \"trace\"");
    if (!j["trace"].is_string() || j["trace"].get<std::string>().empty())
      field_error(where, field + ".trace", "expected a file path");
    fs::path p = j["trace"].get<std::string>();
    if (p.is_relative()) p = base_dir / p;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec))
      field_error(where, field + ".trace", p.string() + ": file not found");
    w.trace_file = fs::absolute(p).lexically_normal();
    w.trace_crc = hex64(crc64_file(w.trace_file));
    w.name = w.trace_file.stem().string();
  } else {
    if (!j["generator"].is_string()) field_error(where, field + ".generator", "expected a name");
    w.generator = j["generator"].get<std::string>();
    const gen::Generator* g = gen::find_generator(w.generator);
    if (!g) {
      std::string known;
      for (const auto* x : gen::generators()) known += (known.empty() ? "" : ", ") + x->name;
      field_error(where, field + ".generator",
                  "unknown generator '" + w.generator + "' (available: " + known + ")");
    }
    w.footprint = footprint_of(j.value("footprint", json("64M")), where, field + ".footprint");
    if (j.contains("params")) {
      if (!j["params"].is_object()) field_error(where, field + ".params", "expected an object");
      for (const auto& [k, v] : j["params"].items()) {
        if (!gen::takes_param(*g, k)) {
          field_error(
              where, field + ".params." + k,
              "unknown parameter of generator '" + w.generator + "' (" + gen::param_list(*g) + ")");
        }
        w.params[k] = scalar_text(v, where, field + ".params." + k);
      }
    }
    for (const auto& s : g->params) {
      if (s.required && !w.params.count(s.name))
        field_error(where, field + ".params." + s.name,
                    "required by generator '" + w.generator + "' (see uvmsim gen --list)");
    }
    if (j.contains("seed")) {
      if (!j["seed"].is_number_unsigned() &&
          !(j["seed"].is_number_integer() && j["seed"].get<std::int64_t>() >= 0))
        field_error(where, field + ".seed",
                    "expected a non-negative integer, got " + j["seed"].dump());
      w.seed = j["seed"].get<std::uint64_t>();
      w.seed_given = true;
    }
    w.name = w.generator;
  }
  if (j.contains("name")) {
    if (!j["name"].is_string() || j["name"].get<std::string>().empty())
      field_error(where, field + ".name", "expected a non-empty string");
    w.name = j["name"].get<std::string>();
  }
  return w;
}

}  // namespace

std::vector<Workload> parse_workloads(const json& j, const std::string& where,
                                      const std::string& field, const fs::path& base_dir) {
  // A list of footprints expands into one workload per size.
  if (j.is_object() && j.contains("footprint") && j["footprint"].is_array()) {
    if (j["footprint"].empty()) field_error(where, field + ".footprint", "empty list");
    std::vector<Workload> out;
    for (std::size_t i = 0; i < j["footprint"].size(); ++i) {
      json one = j;
      one["footprint"] = j["footprint"][i];
      Workload w = parse_one(one, where, field, base_dir);
      const json& f = j["footprint"][i];
      w.name.append("-").append(f.is_string() ? f.get<std::string>() : f.dump());
      out.push_back(std::move(w));
    }
    return out;
  }
  return {parse_one(j, where, field, base_dir)};
}

}  // namespace uvmsim::sweep
