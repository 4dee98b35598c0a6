// The policy registry: policies register under a name (with their knobs) from their own .cpp
// with the macros at the bottom; the engine creates them by name. Also policy presets (named
// bundles such as TM++) and the checking of "policy.<name>.<knob>" settings.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "policies/policy.h"

namespace uvmsim {

/// Declared parameter of a policy: `--set policy.<policy>.<name>=VALUE`. Values are checked
/// against the type and range before the policy is created; unknown names are errors.
struct PolicyKnob {
  enum class Type : std::uint8_t { Integer, Number, Boolean, Text, Choice };
  std::string name;
  Type type = Type::Integer;
  nlohmann::json default_value;  ///< null: derived at run time, the doc says from what
  std::string doc;
  double min = 0, max = 0;           ///< Integer, Number
  std::vector<std::string> choices;  ///< Choice

  static PolicyKnob integer(std::string name, nlohmann::json def, double lo, double hi,
                            std::string doc);
  static PolicyKnob number(std::string name, double def, double lo, double hi, std::string doc);
  static PolicyKnob boolean(std::string name, bool def, std::string doc);
  static PolicyKnob text(std::string name, std::string def, std::string doc);
  static PolicyKnob choice(std::string name, std::string def, std::vector<std::string> choices,
                           std::string doc);
  const char* type_name() const;
  std::string range() const;
  /// The normalised value, or UserError(where, key, ...) naming the problem.
  nlohmann::json check(const nlohmann::json& v, const std::string& where,
                       const std::string& key) const;
};

template <typename Base>
class PolicyRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Base>(const PolicyContext&)>;
  struct Entry {
    std::string name;
    std::string description;
    Factory make;
    std::vector<PolicyKnob> knobs;
    std::vector<std::string> aliases;  ///< filled from alias registrations on lookup
  };
  static bool add(Entry e) {
    entries().push_back(std::move(e));
    return true;
  }
  /// Registers `alias` as another name of `target` (any registration order).
  static bool add_alias(std::string alias, std::string target) {
    aliases().emplace_back(std::move(alias), std::move(target));
    return true;
  }
  static const std::vector<Entry>& all() {
    resolve_aliases();
    return entries();
  }
  /// By name or alias.
  static const Entry* find(const std::string& name) {
    for (const auto& e : all()) {
      if (e.name == name) return &e;
      for (const auto& a : e.aliases)
        if (a == name) return &e;
    }
    return nullptr;
  }

 private:
  static std::vector<Entry>& entries() {
    static std::vector<Entry> v;
    return v;
  }
  static std::vector<std::pair<std::string, std::string>>& aliases() {
    static std::vector<std::pair<std::string, std::string>> v;
    return v;
  }
  static void resolve_aliases() {
    auto& al = aliases();
    for (auto it = al.begin(); it != al.end();) {
      bool done = false;
      for (auto& e : entries()) {
        if (e.name == it->second) {
          e.aliases.push_back(it->first);
          done = true;
        }
      }
      it = done ? al.erase(it) : it + 1;
    }
  }
};

using EvictionRegistry = PolicyRegistry<EvictionPolicy>;
using PrefetchRegistry = PolicyRegistry<PrefetchPolicy>;
using PlacementRegistry = PolicyRegistry<PlacementPolicy>;

/// Creates the policy registered in `Base`'s family under `name` (or an alias), its knobs checked
/// and completed with defaults; UserError "--<family>: unknown ..." listing the known names.
template <typename Base>
std::unique_ptr<Base> make_registered(const char* family, const std::string& name,
                                      const PolicyContext& ctx);

/// Creates the named policy or throws UserError listing the known names. `ctx.params` is
/// checked against the policy's knobs and completed with their defaults. A prefetch name may
/// combine policies with '+' ("fdp+rgp"): their masks are united, every event reaches each.
std::unique_ptr<EvictionPolicy> make_eviction_policy(const std::string& name,
                                                     const PolicyContext& ctx);
std::unique_ptr<PrefetchPolicy> make_prefetch_policy(const std::string& name,
                                                     const PolicyContext& ctx);
std::unique_ptr<PlacementPolicy> make_placement_policy(const std::string& name,
                                                       const PolicyContext& ctx);

/// Checks every "policy.<name>.<knob>" of `cfg`: the policy must exist in some family and the
/// knob must be declared with a valid value. Errors name the file or "--set" it came from.
void validate_policy_params(const SimConfig& cfg);

/// A named bundle of policies (and their knobs), e.g. the paper's TM++ = tournament + fdp + rgp.
struct PolicyPreset {
  std::string name;
  std::string description;
  std::string eviction, prefetch, placement;         ///< empty: leave as configured
  nlohmann::json params = nlohmann::json::object();  ///< {"policy": {"knob": value}}
};
bool register_policy_preset(PolicyPreset p);
const std::vector<PolicyPreset>& policy_presets();
const PolicyPreset* find_policy_preset(const std::string& name);
/// Sets engine.eviction / prefetch / placement and the preset's knobs on `cfg`.
void apply_policy_preset(SimConfig& cfg, const std::string& name, const std::string& where);

}  // namespace uvmsim

#define UVMSIM_CONCAT_(a, b) a##b
#define UVMSIM_CONCAT(a, b) UVMSIM_CONCAT_(a, b)
/// Registers `Class` (constructible from `const PolicyContext&`) under `name`, with its knobs
/// (PolicyKnob values) as the remaining arguments.
#define UVMSIM_REGISTER_POLICY(Registry, name, description, Class, ...)                    \
  static const bool UVMSIM_CONCAT(uvmsim_registered_, __LINE__) = ::uvmsim::Registry::add( \
      {name,                                                                               \
       description,                                                                        \
       [](const ::uvmsim::PolicyContext& ctx) { return std::make_unique<Class>(ctx); },    \
       std::vector<::uvmsim::PolicyKnob>{__VA_ARGS__},                                     \
       {}})
#define UVMSIM_REGISTER_EVICTION(name, description, Class, ...) \
  UVMSIM_REGISTER_POLICY(EvictionRegistry, name, description, Class __VA_OPT__(, ) __VA_ARGS__)
#define UVMSIM_REGISTER_PREFETCH(name, description, Class, ...) \
  UVMSIM_REGISTER_POLICY(PrefetchRegistry, name, description, Class __VA_OPT__(, ) __VA_ARGS__)
#define UVMSIM_REGISTER_PLACEMENT(name, description, Class, ...) \
  UVMSIM_REGISTER_POLICY(PlacementRegistry, name, description, Class __VA_OPT__(, ) __VA_ARGS__)
/// Another name for a registered policy: UVMSIM_REGISTER_ALIAS(EvictionRegistry, "lrm", "driver").
#define UVMSIM_REGISTER_ALIAS(Registry, alias, target)       \
  static const bool UVMSIM_CONCAT(uvmsim_alias_, __LINE__) = \
      ::uvmsim::Registry::add_alias(alias, target)
/// Registers a policy bundle: UVMSIM_REGISTER_PRESET({"tm++", "...", "tournament", "fdp+rgp"}).
#define UVMSIM_REGISTER_PRESET(...)                           \
  static const bool UVMSIM_CONCAT(uvmsim_preset_, __LINE__) = \
      ::uvmsim::register_policy_preset(::uvmsim::PolicyPreset __VA_ARGS__)
