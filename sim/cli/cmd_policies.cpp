// `uvmsim policies`: the registered eviction / prefetch / placement policies with their knobs
// (printed from the same declarations as `uvmsim run --list-knobs`) and the policy presets.
#include <algorithm>
#include <iomanip>
#include <ostream>
#include <type_traits>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "policies/policy.h"
#include "policies/registry.h"
#include "sim/cli/commands.h"
#include "sim/cli/knob_list.h"

namespace uvmsim::cli {

namespace po = boost::program_options;

int cmd_policies(const Args& args, std::ostream& out, std::ostream&) {
  po::options_description desc(
      "usage: uvmsim policies [--json]\n\n"
      "Lists the registered eviction / prefetch / placement policies with their knobs\n"
      "(--set policy.<name>.<knob>=VALUE) and the policy presets (--policy-preset NAME).\n"
      "Prefetch policies combine with '+' (e.g. --prefetch fdp+rgp).\n\noptions");
  desc.add_options()("help,h", "show this help")("json", "print as JSON");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  auto by_name = [](const auto& entries) {
    std::vector<const std::remove_reference_t<decltype(entries[0])>*> sorted;
    for (const auto& e : entries) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->name < b->name; });
    return sorted;
  };
  nlohmann::json j;
  auto family = [&](const char* name, const auto& entries) {
    j[name] = nlohmann::json::array();
    for (const auto* e : by_name(entries)) {
      nlohmann::json knobs = nlohmann::json::array();
      for (const auto& k : e->knobs) knobs.push_back(knob_json(k, k.name()));
      j[name].push_back({{"name", e->name},
                         {"aliases", e->aliases},
                         {"description", e->description},
                         {"knobs", knobs}});
    }
  };
  family("eviction", EvictionRegistry::all());
  family("prefetch", PrefetchRegistry::all());
  family("placement", PlacementRegistry::all());
  j["presets"] = nlohmann::json::array();
  for (const auto& p : policy_presets())
    j["presets"].push_back({{"name", p.name},
                            {"description", p.description},
                            {"eviction", p.eviction},
                            {"prefetch", p.prefetch},
                            {"placement", p.placement},
                            {"params", p.params}});
  if (vm.count("json")) {
    out << j.dump(2) << "\n";
    return 0;
  }
  auto print_family = [&](const char* f, const auto& entries) {
    out << f << ":\n";
    for (const auto* e : by_name(entries)) {
      std::string name = e->name;
      for (const auto& a : e->aliases) name += ", " + a;
      out << "  " << std::left << std::setw(14) << name << " " << e->description << "\n";
      for (const auto& k : e->knobs) print_knob_line(out, k, "policy." + e->name + "." + k.name());
    }
  };
  print_family("eviction", EvictionRegistry::all());
  print_family("prefetch", PrefetchRegistry::all());
  print_family("placement", PlacementRegistry::all());
  out << "presets (--policy-preset NAME):\n";
  for (const auto& p : j["presets"]) {
    out << "  " << std::left << std::setw(14) << p["name"].get<std::string>() << " "
        << p["description"].get<std::string>() << "\n      ";
    for (const char* f : {"eviction", "prefetch", "placement"})
      if (!p[f].get<std::string>().empty()) out << " " << f << "=" << p[f].get<std::string>();
    for (const auto& [pol, knobs] : p["params"].items())
      for (const auto& [k, v] : knobs.items())
        out << " policy." << pol << "." << k << "=" << v.dump();
    out << "\n";
  }
  return 0;
}

}  // namespace uvmsim::cli
