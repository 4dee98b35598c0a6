// `uvmsim gpus [NAME] [--json]`: the GPU presets (configs/gpus/*.json) with their key numbers and
// where those numbers come from (the preset's "provenance" section, docs/calibration.md).
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <string>

#include "core/config.h"
#include "core/error.h"
#include "core/units.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"

namespace uvmsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

namespace {

constexpr const char* kUsage =
    "usage: uvmsim gpus [NAME] [--json]\n\n"
    "Lists the GPU presets `uvmsim run --gpu NAME` accepts, with their key numbers and where\n"
    "those come from (published, measured, fitted, derived, extrapolated or default; see\n"
    "docs/calibration.md). With NAME: the preset's description and the source of each number.\n";

/// The knobs shown for every preset, as (knob, column label).
const std::vector<std::pair<std::string, std::string>>& key_knobs() {
  static const std::vector<std::pair<std::string, std::string>> k = {
      {"gpu.num_sms", "SMs"},
      {"gpu.clock_mhz", "clock (MHz)"},
      {"hbm.capacity", "HBM"},
      {"hbm.bandwidth_gbps", "HBM GB/s"},
      {"link.type", "link"},
      {"link.bandwidth_gbps", "link GB/s"},
      {"cost.fault_entry_ns", "driver costs"}};
  return k;
}

/// {kind, source} of a knob from a preset's provenance ("group.*" entries cover their group).
json provenance_of(const json& prov, const std::string& knob) {
  const json* v = nullptr;
  if (prov.contains(knob)) {
    v = &prov[knob];
  } else {
    const std::string group = knob.substr(0, knob.find('.')) + ".*";
    if (prov.contains(group)) v = &prov[group];
  }
  if (v == nullptr) return {{"kind", "unstated"}, {"source", ""}};
  if (v->is_string()) return {{"kind", *v}, {"source", ""}};
  return {{"kind", v->value("kind", "")}, {"source", v->value("source", v->value("note", ""))}};
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

json describe(const std::string& name) {
  const auto path = SimConfig::find_preset(name);
  const SimConfig c = SimConfig::from_preset(name);
  std::ifstream in(path);
  const json doc = json::parse(in, nullptr, false);
  json j;
  j["name"] = name;
  j["file"] = path.string();
  j["description"] = doc.is_object() ? doc.value("description", "") : "";
  j["gpus"] = c.system.gpus;
  static const char* const kPeer[] = {"none", "pcie", "nvlink"};
  j["peer"] = kPeer[static_cast<int>(c.system.peer)];
  j["peer_gbps"] = c.system.peer_bandwidth_gbps;
  j["num_sms"] = c.gpu.num_sms;
  j["clock_mhz"] = c.gpu.clock_mhz;
  j["hbm_bytes"] = c.hbm.capacity;
  j["hbm_gbps"] = c.hbm.bandwidth_gbps;
  j["link"] = c.link.type;
  j["link_gbps"] = c.link.bandwidth_gbps;
  j["link_dtoh_gbps"] =
      c.link.dtoh_bandwidth_gbps > 0 ? c.link.dtoh_bandwidth_gbps : c.link.bandwidth_gbps;
  j["coherent_host"] = c.system.coherent_host;
  j["provenance"] = json::object();
  for (const auto& [knob, label] : key_knobs()) {
    j["provenance"][knob] = provenance_of(c.provenance, knob);
  }
  return j;
}

/// "375 GB/s", or "375/297 GB/s" (host to device / device to host) for an asymmetric link.
std::string link_gbps(const json& g) {
  const double htod = g["link_gbps"].get<double>(), dtoh = g["link_dtoh_gbps"].get<double>();
  std::string s = number(htod);
  if (dtoh != htod) s.append("/").append(number(dtoh));
  return s + " GB/s";
}

std::string pad(std::string s, std::size_t w, bool right = false) {
  if (s.size() >= w) return s + " ";
  const std::string fill(w - s.size(), ' ');
  return (right ? fill + s : s + fill) + " ";
}

}  // namespace

int cmd_gpus(const Args& args, std::ostream& out, std::ostream& /*err*/) {
  po::options_description visible("options");
  visible.add_options()("help,h", "show this help")("json", "print a JSON array");
  po::options_description hidden;
  hidden.add_options()("name", po::value<std::string>());
  po::positional_options_description pos;
  pos.add("name", 1);
  const po::variables_map vm = parse_args(args, visible, hidden, pos);
  if (vm.count("help")) {
    out << kUsage << "\n" << visible;
    return 0;
  }

  json all = json::array();
  if (vm.count("name")) {
    all.push_back(describe(vm["name"].as<std::string>()));
  } else {
    const auto names = SimConfig::preset_names();
    if (names.empty()) {
      throw UserError("no GPU presets found (configs/gpus/*.json; set UVMSIM_CONFIG_DIR)");
    }
    for (const auto& n : names) all.push_back(describe(n));
  }
  if (vm.count("json")) {
    out << all.dump(2) << "\n";
    return 0;
  }

  if (vm.count("name")) {
    const json& g = all[0];
    out << g["name"].get<std::string>() << " (" << g["file"].get<std::string>() << ")\n";
    if (!g["description"].get<std::string>().empty()) {
      out << "  " << g["description"].get<std::string>() << "\n";
    }
    const std::vector<std::string> values = {std::to_string(g["num_sms"].get<std::uint32_t>()),
                                             number(g["clock_mhz"].get<double>()) + " MHz",
                                             format_bytes(g["hbm_bytes"].get<std::uint64_t>()),
                                             number(g["hbm_gbps"].get<double>()) + " GB/s",
                                             g["link"].get<std::string>(),
                                             link_gbps(g),
                                             ""};
    for (std::size_t i = 0; i < key_knobs().size(); ++i) {
      const auto& [knob, label] = key_knobs()[i];
      const json& p = g["provenance"][knob];
      out << "  " << pad(label + ":", 14) << pad(values[i], 12) << p["kind"].get<std::string>();
      if (!p["source"].get<std::string>().empty())
        out << " (" << p["source"].get<std::string>() << ")";
      out << "\n";
    }
    if (g["coherent_host"].get<bool>()) {
      // docs/platforms.md, "Managed memory over NVLink-C2C".
      out << "  " << pad("CPU:", 14)
          << "coherent link: the CPU maps GPU memory, native atomics both ways "
             "(system.coherent_host)\n";
    }
    if (g["gpus"].get<unsigned>() > 1) {
      // A node preset: its GPUs and how they reach each other (docs/multi-gpu.md).
      const std::string peer = g["peer"].get<std::string>();
      out << "  " << pad("GPUs:", 14) << g["gpus"].get<unsigned>() << ", peer access "
          << (peer == "none" ? "none (copies staged through host memory)"
                             : peer + " at " + number(g["peer_gbps"].get<double>()) +
                                   " GB/s per pair and direction")
          << "\n";
    }
    return 0;
  }

  // The name column fits the longest name (node presets have long ones).
  std::size_t name_w = 11;
  for (const auto& g : all) name_w = std::max(name_w, g["name"].get<std::string>().size());
  out << pad("preset", name_w) << pad("SMs", 4, true) << pad("clock", 9, true)
      << pad("HBM", 8, true) << pad("HBM GB/s", 9, true) << "  " << pad("link", 9)
      << pad("link GB/s", 9, true) << "  provenance (SMs+HBM / link / driver costs)\n";
  for (const auto& g : all) {
    const auto kind = [&](const char* knob) {
      return g["provenance"][knob]["kind"].get<std::string>();
    };
    // A node preset's name says its GPUs and peer links; the numbers are each GPU's.
    out << pad(g["name"].get<std::string>(), name_w)
        << pad(std::to_string(g["num_sms"].get<std::uint32_t>()), 4, true)
        << pad(number(g["clock_mhz"].get<double>()) + " MHz", 9, true)
        << pad(format_bytes(g["hbm_bytes"].get<std::uint64_t>()), 8, true)
        << pad(number(g["hbm_gbps"].get<double>()), 9, true) << "  "
        << pad(g["link"].get<std::string>(), 9)
        << pad(number(g["link_gbps"].get<double>()), 9, true) << "  " << kind("gpu.num_sms")
        << " / " << kind("link.bandwidth_gbps") << " / " << kind("cost.fault_entry_ns") << "\n";
  }
  out << "(uvmsim gpus NAME: description and the source of each number; uvmsim run --gpu NAME)\n";
  return 0;
}

}  // namespace uvmsim::cli
