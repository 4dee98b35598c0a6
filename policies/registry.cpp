// Policy look-up by name: knob checking and defaults, and presets. (A prefetch name may combine
// policies with '+': policies/prefetch/combined.cpp.)
#include <algorithm>

#include "core/error.h"
#include "core/units.h"
#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {

using nlohmann::json;

const char* to_string(ObservePurpose p) {
  return p == ObservePurpose::Eviction ? "eviction" : "feedback";
}

namespace {

/// All names (canonical and aliases) under which `name` is registered in any family, canonical
/// first; empty if no family knows it.
std::vector<std::string> names_of(const std::string& name) {
  std::vector<std::string> out;
  auto add = [&](const auto* e) {
    if (!e) return;
    for (const auto& n : {e->name}) out.push_back(n);
    for (const auto& a : e->aliases) out.push_back(a);
  };
  add(EvictionRegistry::find(name));
  add(PrefetchRegistry::find(name));
  add(PlacementRegistry::find(name));
  std::vector<std::string> uniq;
  for (auto& n : out)
    if (std::find(uniq.begin(), uniq.end(), n) == uniq.end()) uniq.push_back(n);
  return uniq;
}

/// The knobs `name` declares in any family.
std::vector<const Knob*> knobs_of(const std::string& name) {
  std::vector<const Knob*> out;
  auto add = [&](const auto* e) {
    if (!e) return;
    for (const auto& k : e->knobs) {
      if (std::none_of(out.begin(), out.end(), [&](auto* x) { return x->name() == k.name(); }))
        out.push_back(&k);
    }
  };
  add(EvictionRegistry::find(name));
  add(PrefetchRegistry::find(name));
  add(PlacementRegistry::find(name));
  return out;
}

std::string source_of(const SimConfig& cfg, const std::string& key) {
  return cfg.source_of(key, "policy parameters");
}

[[noreturn]] void unknown_knob(const std::string& where, const std::string& policy,
                               const std::string& key, const std::vector<const Knob*>& knobs) {
  std::string list;
  for (const auto* k : knobs) list += (list.empty() ? "" : ", ") + k->name();
  throw UserError(where, "policy." + policy + "." + key,
                  "unknown knob of policy '" + policy + "' (" +
                      (list.empty() ? std::string("it has no knobs")
                                    : "its knobs: " + list + "; see uvmsim policies") +
                      ")");
}

/// `given` checked against `knobs`, with every knob's default filled in.
json resolve_params(const std::string& policy, const std::vector<Knob>& knobs, const json& given,
                    const SimConfig& cfg) {
  json out = json::object();
  std::vector<const Knob*> kp;
  for (const auto& k : knobs) kp.push_back(&k);
  if (given.is_object()) {
    for (const auto& [key, v] : given.items()) {
      const auto it = std::find_if(knobs.begin(), knobs.end(),
                                   [&key = key](const Knob& k) { return k.name() == key; });
      const std::string full = "policy." + policy + "." + key;
      if (it == knobs.end()) unknown_knob(source_of(cfg, full), policy, key, kp);
      out[key] = it->check(v, source_of(cfg, full), full);
    }
  }
  for (const auto& k : knobs)
    if (!out.contains(k.name())) out[k.name()] = k.default_value();
  return out;
}

/// "driver, lrm, lru, ...": every name and alias of a family.
template <typename Base>
std::string known_names() {
  std::string known;
  for (const auto& x : PolicyRegistry<Base>::all()) {
    known += (known.empty() ? "" : ", ") + x.name;
    for (const auto& a : x.aliases) known += ", " + a;
  }
  return known;
}

/// engine.<family> names a registered policy (prefetch: policies joined with '+'); the error
/// names where the key was set (--eviction, --set, a preset file), not the flag it usually
/// comes from.
template <typename Base>
void check_engine_policy(const SimConfig& cfg, const char* family, const std::string& names) {
  const std::string key = std::string("engine.") + family;
  const std::string where = cfg.source_of(key, "configuration");
  const bool combined = std::string(family) == "prefetch" && names.find('+') != std::string::npos;
  for (const auto& part : combined ? split(names, '+') : std::vector<std::string>{names}) {
    if (combined && part.empty())
      throw UserError(where, key, "empty name in combined prefetch policy '" + names + "'");
    if (!PolicyRegistry<Base>::find(part))
      throw UserError(where, key,
                      std::string("unknown ") + family + " policy '" + part +
                          "' (known: " + known_names<Base>() + ")");
  }
}

std::vector<PolicyPreset>& presets() {
  static std::vector<PolicyPreset> v;
  return v;
}

}  // namespace

template <typename Base>
std::unique_ptr<Base> make_registered(const char* family, const std::string& name,
                                      const PolicyContext& ctx) {
  const auto* e = PolicyRegistry<Base>::find(name);
  if (!e)
    throw UserError(std::string("unknown ") + family + " policy '" + name +
                    "' (known: " + known_names<Base>() + ")");
  PolicyContext c{ctx.config,     ctx.va_space,
                  ctx.seed,       resolve_params(name, e->knobs, ctx.params, ctx.config),
                  ctx.engine_ptr, ctx.gpu};
  auto p = e->make(c);
  p->bind_gpu(ctx.gpu);
  return p;
}

template std::unique_ptr<EvictionPolicy> make_registered(const char*, const std::string&,
                                                         const PolicyContext&);
template std::unique_ptr<PrefetchPolicy> make_registered(const char*, const std::string&,
                                                         const PolicyContext&);
template std::unique_ptr<PlacementPolicy> make_registered(const char*, const std::string&,
                                                          const PolicyContext&);

PolicyContext PolicyContext::for_policy(const std::string& name) const {
  json params = json::object();
  for (const auto& n : names_of(name)) {
    if (!config.policy_params.contains(n)) continue;
    for (const auto& [k, v] : config.policy_params[n].items()) params[k] = v;
  }
  return PolicyContext{config, va_space, seed, std::move(params), engine_ptr, gpu};
}

std::unique_ptr<EvictionPolicy> make_eviction_policy(const std::string& n, const PolicyContext& c) {
  return make_registered<EvictionPolicy>("eviction", n, c);
}

std::unique_ptr<PlacementPolicy> make_placement_policy(const std::string& n,
                                                       const PolicyContext& c) {
  return make_registered<PlacementPolicy>("placement", n, c);
}

void validate_policy_params(const SimConfig& cfg) {
  check_engine_policy<EvictionPolicy>(cfg, "eviction", cfg.engine.eviction);
  check_engine_policy<PrefetchPolicy>(cfg, "prefetch", cfg.engine.prefetch);
  check_engine_policy<PlacementPolicy>(cfg, "placement", cfg.engine.placement);
  for (const auto& [policy, section] : cfg.policy_params.items()) {
    const std::string first_key =
        section.is_object() && !section.empty() ? section.begin().key() : std::string();
    const std::string where = source_of(cfg, "policy." + policy + "." + first_key);
    if (names_of(policy).empty()) {
      std::string known;
      for (const auto* fam : {"e", "p", "l"}) {
        auto add = [&](const auto& all) {
          for (const auto& e : all)
            if (known.find(" " + e.name + ",") == std::string::npos) known += " " + e.name + ",";
        };
        if (*fam == 'e') add(EvictionRegistry::all());
        if (*fam == 'p') add(PrefetchRegistry::all());
        if (*fam == 'l') add(PlacementRegistry::all());
      }
      if (!known.empty()) known.pop_back();
      throw UserError(where, "policy." + policy,
                      "unknown policy '" + policy + "' (known:" + known + ")");
    }
    const auto knobs = knobs_of(policy);
    if (!section.is_object()) throw UserError(where, "policy." + policy, "expected an object");
    for (const auto& [key, v] : section.items()) {
      const std::string full = "policy." + policy + "." + key;
      const auto it = std::find_if(knobs.begin(), knobs.end(),
                                   [&key = key](auto* k) { return k->name() == key; });
      if (it == knobs.end()) unknown_knob(source_of(cfg, full), policy, key, knobs);
      (*it)->check(v, source_of(cfg, full), full);
    }
  }
}

bool register_policy_preset(PolicyPreset p) {
  presets().push_back(std::move(p));
  std::sort(presets().begin(), presets().end(),
            [](const PolicyPreset& a, const PolicyPreset& b) { return a.name < b.name; });
  return true;
}

const std::vector<PolicyPreset>& policy_presets() { return presets(); }

const PolicyPreset* find_policy_preset(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

void apply_policy_preset(SimConfig& cfg, const std::string& name, const std::string& where) {
  const PolicyPreset* p = find_policy_preset(name);
  if (!p) {
    std::string known;
    for (const auto& x : presets()) known += (known.empty() ? "" : ", ") + x.name;
    throw UserError(where + ": unknown policy preset '" + name + "' (known: " + known + ")");
  }
  if (!p->eviction.empty()) cfg.set("engine.eviction", p->eviction, where);
  if (!p->prefetch.empty()) cfg.set("engine.prefetch", p->prefetch, where);
  if (!p->placement.empty()) cfg.set("engine.placement", p->placement, where);
  for (const auto& [policy, knobs] : p->params.items())
    for (const auto& [k, v] : knobs.items()) cfg.set("policy." + policy + "." + k, v, where);
}

}  // namespace uvmsim
