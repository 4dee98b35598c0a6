#include "core/config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/json_input.h"
#include "core/units.h"

namespace uvmsim {

using nlohmann::json;

Tick TransferCurve::time_ps(std::uint64_t bytes) const {
  if (points.empty() || bytes == 0) return 0;
  const auto& p = points;
  double ns;
  if (p.size() == 1 || bytes <= p.front().first) {
    // Below the first point: scale down at the first point's bandwidth, but never below half of
    // its time (the fixed set-up part of a DMA does not shrink with size).
    ns = p.front().second * std::max(0.5, static_cast<double>(bytes) / p.front().first);
    if (p.size() == 1) ns = p.front().second * static_cast<double>(bytes) / p.front().first;
  } else {
    std::size_t i = 1;
    while (i + 1 < p.size() && p[i].first < bytes) ++i;
    const double x0 = p[i - 1].first, y0 = p[i - 1].second, x1 = p[i].first, y1 = p[i].second;
    ns = y0 + (y1 - y0) * (static_cast<double>(bytes) - x0) / (x1 - x0);
  }
  // Extrapolating a steep curve to a large copy could exceed what a Tick holds; no copy takes
  // longer than the longest time a curve point may state.
  return static_cast<Tick>(std::llround(std::min(ns, Knob::kCurveMaxNs) * kPsPerNs));
}

Tick sim_time_limit(const EngineConfig& e) {
  const double s = e.max_sim_time_s > 0 ? std::min(e.max_sim_time_s, kMaxSimTimeS) : kMaxSimTimeS;
  return static_cast<Tick>(std::llround(s * 1e12));
}

namespace {

// ---- Reading and writing a field of the configuration as a knob's JSON value.
// Each field type has one JSON form: the one SimConfig::to_json() has always written (sweep
// point ids hash it), and the form Knob::check() normalises values to.

template <typename T>
json field_json(const T& v, const Knob&) {
  return json(v);
}
json field_json(const TransferCurve& c, const Knob&) {
  json a = json::array();
  for (const auto& [b, ns] : c.points) a.push_back({b, ns});
  return a;
}
template <typename E>
requires std::is_enum_v<E> json field_json(const E& v, const Knob& k) {
  return json(k.choices().at(static_cast<std::size_t>(v)));
}

/// `v` is already normalised by the knob's check().
template <typename T>
void assign(T& field, const json& v, const Knob&) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // A size choice normalises to its spelling ("2M"); integers are exact and within the
    // knob's range, which the declaration keeps within T (checked when the table is built).
    field = v.is_string() ? static_cast<T>(*try_parse_size(v.get<std::string>())) : v.get<T>();
  } else {
    field = v.get<T>();
  }
}
void assign(TransferCurve& field, const json& v, const Knob&) {
  TransferCurve c;
  for (const auto& p : v) c.points.emplace_back(p[0].get<std::uint64_t>(), p[1].get<double>());
  field = std::move(c);
}
template <typename E>
requires std::is_enum_v<E>
void assign(E& field, const json& v, const Knob& k) {
  const auto& c = k.choices();
  field = static_cast<E>(std::find(c.begin(), c.end(), v.get<std::string>()) - c.begin());
}

/// A knob and the field of SimConfig it reads and writes.
struct ConfigKnob {
  Knob knob;
  json (*get)(const SimConfig&, const Knob&);
  void (*set)(SimConfig&, const json& normalised, const Knob&);
};

/// Binds `k` to (SimConfig::*Group).*Field; the knob's default is the field's initialiser.
template <auto Group, auto Field>
ConfigKnob bind(Knob k) {
  using T = std::remove_cvref_t<decltype(std::declval<SimConfig&>().*Group.*Field)>;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // The declared range must fit the field, or assign() would truncate.
    if (k.type() == Knob::Type::Integer &&
        !(std::in_range<T>(k.int_lo()) && std::in_range<T>(k.int_hi())))
      throw std::logic_error("knob " + k.name() + ": range exceeds its field");
  }
  ConfigKnob r{std::move(k),
               [](const SimConfig& c, const Knob& kn) { return field_json(c.*Group.*Field, kn); },
               [](SimConfig& c, const json& v, const Knob& kn) { assign(c.*Group.*Field, v, kn); }};
  r.knob.set_default(r.get(SimConfig{}, r.knob));
  return r;
}

std::vector<ConfigKnob> build_knobs() {
  std::vector<ConfigKnob> v;
  // For each group, for each row of its list: bind the Knob "<group>.<field>" to the field.
#define UVMSIM_KNOB_ROW(field, Type, def, kind, ...) \
  v.push_back(bind<group, &G::field>(Knob::kind(prefix + #field, nullptr, __VA_ARGS__)));
#define UVMSIM_KNOB_GROUP_ROWS(member, Struct, LIST) \
  {                                                  \
    using G = Struct;                                \
    constexpr auto group = &SimConfig::member;       \
    const std::string prefix = #member ".";          \
    LIST(UVMSIM_KNOB_ROW)                            \
  }
  UVMSIM_KNOB_GROUPS(UVMSIM_KNOB_GROUP_ROWS)
#undef UVMSIM_KNOB_GROUP_ROWS
#undef UVMSIM_KNOB_ROW
  return v;
}

const std::vector<ConfigKnob>& knobs() {
  static const std::vector<ConfigKnob> k = build_knobs();
  return k;
}

const ConfigKnob* find(const std::string& name) {
  for (const auto& k : knobs())
    if (k.knob.name() == name) return &k;
  return nullptr;
}

}  // namespace

const std::vector<Knob>& config_knobs() {
  static const std::vector<Knob> t = [] {
    std::vector<Knob> v;
    for (const auto& k : knobs()) v.push_back(k.knob);
    return v;
  }();
  return t;
}

const Knob* find_config_knob(const std::string& name) {
  const ConfigKnob* k = find(name);
  return k ? &k->knob : nullptr;
}

std::string SimConfig::source_of(const std::string& key, const std::string& fallback) const {
  const auto it = source.find(key);
  return it != source.end() ? it->second : fallback;
}

void SimConfig::set(const std::string& key, const json& value, const std::string& where) {
  // Policy parameters are owned by policies; they are validated when the policy is created.
  if (key.rfind("policy.", 0) == 0) {
    const auto rest = key.substr(7);
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == rest.size())
      throw UserError(where, key, "policy knobs are named policy.<policy>.<param>");
    policy_params[rest.substr(0, dot)][rest.substr(dot + 1)] = value;
    source[key] = where;
    return;
  }
  const ConfigKnob* k = find(key);
  if (!k)
    throw UserError(where, key, "unknown configuration key (uvmsim run --list-knobs lists them)");
  k->set(*this, k->knob.check(value, where, key), k->knob);
  source[key] = where;
}

void SimConfig::set_from_string(const std::string& assignment, const std::string& where) {
  require_utf8(assignment, where);  // keys and values end up in JSON output
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError(where + ": expected KEY=VALUE, got '" + assignment + "'");
  const std::string key = assignment.substr(0, eq), val = assignment.substr(eq + 1);
  // JSON would skip white space around a number; as text, " 5" is not a number.
  const bool spaced = !val.empty() && (std::isspace(static_cast<unsigned char>(val.front())) ||
                                       std::isspace(static_cast<unsigned char>(val.back())));
  if (spaced) require_utf8(val, where + ": " + key);
  set(key, spaced ? json(val) : parse_json_or_text(val, where + ": " + key), where);
}

const std::vector<std::string>& provenance_kinds() {
  static const std::vector<std::string> k = {"measured", "published",    "derived",
                                             "fitted",   "extrapolated", "default"};
  return k;
}

/// Validates a preset's "provenance" section: every key names a knob (or "group.*" matching at
/// least one knob), every value is a known kind or {"kind": ..., "source"/"note": "..."}.
static void check_provenance(const json& p, const std::string& where) {
  if (!p.is_object()) field_error(where, "provenance", "expected an object");
  const auto& kinds = provenance_kinds();
  for (const auto& [key, v] : p.items()) {
    const std::string field = "provenance." + key;
    bool known = false;
    if (key.size() > 2 && key.ends_with(".*")) {
      const std::string prefix = key.substr(0, key.size() - 1);
      for (const auto& k : knobs()) known |= k.knob.name().rfind(prefix, 0) == 0;
    } else {
      known = find(key) != nullptr;
    }
    if (!known)
      field_error(where, field, "not a configuration key (uvmsim run --list-knobs lists them)");
    const json* kind = &v;
    if (v.is_object()) {
      for (const auto& [f, x] : v.items()) {
        if (f != "kind" && f != "source" && f != "note")
          field_error(where, field + "." + f, "unknown field (expected kind, source, note)");
        if (!x.is_string()) field_error(where, field + "." + f, "expected a string");
      }
      if (!v.contains("kind")) field_error(where, field + ".kind", "missing required field");
      kind = &v["kind"];
    }
    if (!kind->is_string() ||
        std::find(kinds.begin(), kinds.end(), kind->get<std::string>()) == kinds.end())
      field_error(where, field,
                  "provenance must be one of measured, published, derived, fitted, extrapolated, "
                  "default; got " +
                      kind->dump());
  }
}

void SimConfig::apply_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw UserError(where + ": expected a JSON object");
  for (const auto& [group, body] : j.items()) {
    // Free-text documentation and the calibration summary written by `uvmsim calibrate`.
    if (group == "description" || group == "source" || group == "calibration") continue;
    if (group == "provenance") {
      check_provenance(body, where);
      for (const auto& [k, v] : body.items()) provenance[k] = v;
      continue;
    }
    if (group == "policy" && body.is_object()) {
      for (const auto& [pol, params] : body.items()) {
        if (!params.is_object()) field_error(where, "policy." + pol, "expected an object");
        for (const auto& [p, v] : params.items()) set("policy." + pol + "." + p, v, where);
      }
      continue;
    }
    if (!body.is_object()) field_error(where, group, "expected an object of knobs");
    for (const auto& [key, v] : body.items()) set(group + "." + key, v, where);
  }
}

json SimConfig::to_json() const {
  json j = json::object();
  for (const auto& k : knobs()) {
    const auto dot = k.knob.name().find('.');
    j[k.knob.name().substr(0, dot)][k.knob.name().substr(dot + 1)] = k.get(*this, k.knob);
  }
  if (!policy_params.empty()) j["policy"] = policy_params;
  if (!provenance.empty()) j["provenance"] = provenance;
  return j;
}

static std::vector<std::filesystem::path> preset_dirs() {
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("UVMSIM_CONFIG_DIR")) dirs.emplace_back(env);
  dirs.emplace_back("configs");
  // An installed uvmsim (cmake --install) keeps its presets in <prefix>/share/uvmsim/configs,
  // found from the executable wherever the prefix is.
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.emplace_back(exe.parent_path().parent_path() / "share" / "uvmsim" / "configs");
  dirs.emplace_back(std::filesystem::path(UVMSIM_SOURCE_DIR) / "configs");
  return dirs;
}

std::filesystem::path SimConfig::find_preset(const std::string& name) {
  namespace fs = std::filesystem;
  // exists() without an error code throws for names the OS refuses (too long, ...): such a
  // name is simply not found.
  std::error_code ec;
  if (name.find('/') != std::string::npos || name.ends_with(".json")) {
    if (!fs::exists(name, ec)) throw UserError(name + ": --gpu: file not found");
    return name;
  }
  for (const auto& d : preset_dirs()) {
    const auto p = d / "gpus" / (name + ".json");
    if (fs::exists(p, ec)) return p;
  }
  std::string known;
  for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw UserError("--gpu: unknown preset '" + name + "' (known: " + known + ")");
}

std::vector<std::string> SimConfig::preset_names() {
  std::vector<std::string> names;
  for (const auto& d : preset_dirs()) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(d / "gpus", ec)) {
      if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    }
    if (!names.empty()) break;
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// Applies preset file `path` to `c`: first the preset it names in "extends" (a node preset is
/// a GPU preset plus its system knobs), then its own knobs.
static void apply_preset(SimConfig& c, const std::filesystem::path& path, int depth) {
  json j = read_json_file(path);
  if (j.is_object() && j.contains("extends")) {
    const json& base = j["extends"];
    if (!base.is_string() || base.get<std::string>().empty())
      field_error(path.string(), "extends", "expected the name of the preset this one extends");
    if (depth >= 8) field_error(path.string(), "extends", "more than 8 presets deep (a cycle?)");
    try {
      apply_preset(c, SimConfig::find_preset(base.get<std::string>()), depth + 1);
    } catch (const UserError& e) {
      // Whatever is wrong with the base (unknown, unreadable, bad knobs) is this file's error:
      // name it, and its field, first.
      std::string why = e.what();
      if (depth > 0 || why.starts_with(path.string() + ": ")) throw;
      if (const auto at = why.find("--gpu: "); at != std::string::npos) why.erase(at, 7);
      field_error(path.string(), "extends", why);
    }
    j.erase("extends");
  }
  c.apply_json(j, path.string());
}

SimConfig SimConfig::from_preset(const std::string& name_or_path) {
  const auto path = find_preset(name_or_path);
  SimConfig c;
  apply_preset(c, path, 0);
  // A curve has no meaningful default: without one every copy would take no time.
  for (const auto& k : knobs())
    if (k.knob.type() == Knob::Type::Curve && k.get(c, k.knob).empty())
      throw UserError(path.string(), k.knob.name(),
                      "missing: a preset must give the copy-time curve (in its \"link\" section)");
  return c;
}

}  // namespace uvmsim
