// `uvmsim trace info|dump`: inspect a .uvt trace. `info --json` keys are documented in
// docs/trace-format.md ("Inspecting a trace") and are kept stable for scripts.
#include <boost/program_options.hpp>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "core/units.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "traces/trace.h"

namespace uvmsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

namespace {

constexpr const char* kUsage =
    "usage: uvmsim trace info FILE [--json]\n"
    "       uvmsim trace dump FILE [--limit N] [--launch L] [--host-only]\n"
    "       uvmsim trace hints FILE [-o HINTS.json]\n"
    "       uvmsim trace import FORMAT IN... -o OUT.uvt   (uvmsim trace import --help)\n\n"
    "info: metadata, allocations, kernels, event/launch/record counts and compression.\n"
    "hints: the trace's static access hints as a standalone hints file (docs/hints.md).\n"
    "dump: host events in program order, then each launch's threadblocks, warps and records.\n"
    "import: convert an access list, NVBit mem_trace or Accel-Sim trace into a .uvt trace.\n";

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

/// "(x,y,z)" from a JSON [x, y, z] array.
std::string dims(const json& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ',';
    s += v[i].dump();
  }
  s += ')';
  return s;
}

const char* kind_name(AccessKind k) { return to_string(k); }

/// "cpu", "gpu" (GPU 0, as traces without a second GPU have always printed it) or "gpuN".
std::string processor_name(Processor p) {
  if (p == Processor::Cpu) return "cpu";
  return p == Processor::Gpu ? "gpu" : "gpu" + std::to_string(gpu_ordinal(p));
}

std::string kernel_name(const trace::Metadata& m, std::uint32_t id) {
  const trace::KernelInfo* k = m.find_kernel(id);
  return k != nullptr ? k->name : "?";
}

std::string describe(const trace::HostEvent& ev, const trace::Metadata& m) {
  using trace::HostEventType;
  std::string s = trace::to_string(ev.type);
  switch (ev.type) {
    case HostEventType::KernelLaunch:
      s += " launch=" + std::to_string(ev.launch_index) +
           " kernel=" + std::to_string(ev.kernel_id) + " (" + kernel_name(m, ev.kernel_id) +
           ") iteration=" + std::to_string(ev.iteration);
      break;
    case HostEventType::MemPrefetch:
      s += " va=" + hex(ev.va) + " size=" + std::to_string(ev.size) +
           " to=" + processor_name(ev.device);
      break;
    case HostEventType::MemAdvise:
      s += std::string(" ") + trace::to_string(ev.advice) + " va=" + hex(ev.va) +
           " size=" + std::to_string(ev.size) + " device=" + processor_name(ev.device);
      break;
    case HostEventType::Synchronize:
      break;
    case HostEventType::CpuAccess:
      s += std::string(" ") + kind_name(ev.kind) + " va=" + hex(ev.va) +
           " size=" + std::to_string(ev.size);
      break;
    case HostEventType::MemFree:
      s += " va=" + hex(ev.va);
      break;
    case HostEventType::SetDevice:
      s += " gpu=" + std::to_string(gpu_ordinal(ev.device));
      break;
  }
  return s;
}

/// Everything `info` reports, gathered once and printed as text or JSON.
json collect_info(trace::TraceReader& r) {
  const trace::Metadata& m = r.metadata();
  json j;
  j["file"] = r.display_name();
  j["format_version"] = r.version();
  j["workload"] = m.workload;
  j["params"] = m.params;
  j["captured_gpu"] = m.captured_gpu;
  j["extra"] = m.extra;
  j["hints"] = nullptr;
  if (m.hints) {
    std::size_t refs = 0;
    for (const auto& k : m.hints->kernels) refs += k.refs.size();
    j["hints"] = {{"source", trace::to_string(m.hints->source)},
                  {"version", m.hints->version},
                  {"kernels", m.hints->kernels.size()},
                  {"refs", refs},
                  {"launches", m.hints->launches.size()}};
  }
  j["allocations"] = json::array();
  for (const auto& a : m.allocations) {
    j["allocations"].push_back({{"id", a.id},
                                {"name", a.name},
                                {"base", a.base},
                                {"base_hex", hex(a.base)},
                                {"size", a.size},
                                {"managed", a.managed},
                                {"host_pinned", a.host_pinned},
                                {"system", a.system}});
  }
  j["kernels"] = json::array();
  for (const auto& k : m.kernels) {
    j["kernels"].push_back({{"id", k.id},
                            {"name", k.name},
                            {"grid", {k.grid.x, k.grid.y, k.grid.z}},
                            {"block", {k.block.x, k.block.y, k.block.z}},
                            {"regs", k.regs_per_thread},
                            {"smem", k.shared_mem_bytes}});
  }

  json counts = {{"total", 0}};
  for (int t = 0; t <= static_cast<int>(trace::HostEventType::SetDevice); ++t) {
    counts[trace::to_string(static_cast<trace::HostEventType>(t))] = 0;
  }
  std::vector<std::int32_t> iteration(r.launches().size(), -1);
  std::vector<unsigned> device(r.launches().size(), 0);
  r.rewind_host();
  trace::HostEvent ev;
  std::uint64_t total = 0;
  unsigned current_device = 0;  // cudaSetDevice's state: launches before the first run on GPU 0
  while (r.next_host_event(ev)) {
    ++total;
    json& c = counts[trace::to_string(ev.type)];
    c = c.get<std::uint64_t>() + 1;
    if (ev.type == trace::HostEventType::SetDevice) current_device = gpu_ordinal(ev.device);
    if (ev.type == trace::HostEventType::KernelLaunch) {
      iteration[ev.launch_index] = ev.iteration;
      device[ev.launch_index] = current_device;
    }
  }
  counts["total"] = total;
  j["host_events"] = counts;

  std::uint64_t tbs = 0, records = 0, accesses = 0;
  j["launches"] = json::array();
  for (const auto& l : r.launches()) {
    j["launches"].push_back({{"launch", l.launch_index},
                             {"kernel_id", l.kernel_id},
                             {"kernel", kernel_name(m, l.kernel_id)},
                             {"iteration", iteration[l.launch_index]},
                             {"device", device[l.launch_index]},
                             {"threadblocks", l.threadblocks},
                             {"records", l.records},
                             {"accesses", l.accesses}});
    tbs += l.threadblocks;
    records += l.records;
    accesses += l.accesses;
  }
  j["totals"] = {{"launches", r.launches().size()},
                 {"threadblocks", tbs},
                 {"records", records},
                 {"accesses", accesses}};

  std::uint64_t compressed = 0, raw = 0, host_chunks = 0;
  for (const auto& c : r.chunks()) {
    compressed += c.compressed_bytes;
    raw += c.raw_bytes;
    host_chunks += c.type == trace::ChunkInfo::Host;
  }
  j["chunks"] = {{"host", host_chunks}, {"blocks", r.chunks().size() - host_chunks}};
  j["bytes"] = {
      {"file", r.file_bytes()},
      {"compressed", compressed},
      {"raw", raw},
      {"ratio",
       compressed == 0 ? 0.0 : static_cast<double>(raw) / static_cast<double>(compressed)}};
  return j;
}

void print_info_text(const json& j, std::ostream& out) {
  auto row = [&](const char* label) -> std::ostream& {
    out << label << std::string(15 - std::string(label).size(), ' ');
    return out;
  };
  row("file:") << j["file"].get<std::string>() << "\n";
  row("format:") << "version " << j["format_version"] << "\n";
  row("workload:") << j["workload"].get<std::string>() << "\n";
  row("params:") << j["params"].dump() << "\n";
  const std::string gpu = j["captured_gpu"].get<std::string>();
  row("captured on:") << (gpu.empty() ? "(synthetic)" : gpu) << "\n";
  if (!j["extra"].empty()) row("extra:") << j["extra"].dump() << "\n";
  if (!j["hints"].is_null()) {
    const json& h = j["hints"];
    row("hints:") << h["source"].get<std::string>() << ", version " << h["version"] << ", "
                  << h["kernels"] << " kernels, " << h["refs"] << " refs, " << h["launches"]
                  << " launches (uvmsim trace hints prints them)\n";
  }

  row("allocations:") << j["allocations"].size() << "\n";
  for (const auto& a : j["allocations"]) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-4llu %-16s base=%-16s size=%-12llu (%s) %s\n",
                  a["id"].get<unsigned long long>(), a["name"].get<std::string>().c_str(),
                  a["base_hex"].get<std::string>().c_str(), a["size"].get<unsigned long long>(),
                  format_bytes(a["size"].get<std::uint64_t>()).c_str(),
                  a["system"].get<bool>()        ? "system"
                  : a["managed"].get<bool>()     ? "managed"
                  : a["host_pinned"].get<bool>() ? "host-pinned"
                                                 : "device");
    out << line;
  }
  row("kernels:") << j["kernels"].size() << "\n";
  for (const auto& k : j["kernels"]) {
    out << "  " << k["id"] << " " << k["name"].get<std::string>() << " grid=" << dims(k["grid"])
        << " block=" << dims(k["block"]) << " regs=" << k["regs"] << " smem=" << k["smem"] << "\n";
  }

  const json& h = j["host_events"];
  row("host events:") << h["total"] << " (";
  bool first = true;
  for (int t = 0; t <= static_cast<int>(trace::HostEventType::SetDevice); ++t) {
    const char* name = trace::to_string(static_cast<trace::HostEventType>(t));
    out << (first ? "" : ", ") << name << " " << h[name];
    first = false;
  }
  out << ")\n";

  const json& t = j["totals"];
  row("launches:") << t["launches"] << "\n";
  constexpr std::size_t kMaxLaunchLines = 20;
  std::size_t shown = 0;
  for (const auto& l : j["launches"]) {
    if (shown++ == kMaxLaunchLines) {
      out << "  ... " << j["launches"].size() - kMaxLaunchLines
          << " more (trace info --json lists all)\n";
      break;
    }
    out << "  launch " << l["launch"] << ": kernel " << l["kernel_id"] << " ("
        << l["kernel"].get<std::string>() << ") iteration " << l["iteration"] << ", "
        << (h["SetDevice"].get<std::uint64_t>() > 0
                ? "GPU " + std::to_string(l["device"].get<unsigned>()) + ", "
                : std::string())
        << l["threadblocks"] << " threadblocks, " << l["records"] << " records, " << l["accesses"]
        << " accesses\n";
  }
  row("threadblocks:") << t["threadblocks"] << "\n";
  row("records:") << t["records"] << "\n";
  row("accesses:") << t["accesses"] << " (records expanded by repeat counts)\n";
  const json& b = j["bytes"];
  row("chunks:") << j["chunks"]["host"] << " host, " << j["chunks"]["blocks"] << " blocks\n";
  row("compressed:") << b["compressed"] << " bytes ("
                     << format_bytes(b["compressed"].get<std::uint64_t>()) << "), file "
                     << b["file"] << " bytes\n";
  row("raw:") << b["raw"] << " bytes (" << format_bytes(b["raw"].get<std::uint64_t>()) << ")\n";
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", b["ratio"].get<double>());
  row("ratio:") << ratio << "x\n";
}

/// Digits only: boost's lexical_cast would accept "-5" for an unsigned option and wrap it.
std::uint64_t parse_count(const std::string& text, const char* opt, std::uint64_t max) {
  const bool digits = !text.empty() && text.size() <= 20 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) {
    try {
      const std::uint64_t v = std::stoull(text);
      if (v <= max) return v;
    } catch (const std::out_of_range&) {
    }
  }
  throw UsageError(std::string(opt) + ": invalid value '" + text + "' (expected an integer in 0.." +
                   std::to_string(max) + ")");
}

struct DumpOptions {
  std::uint64_t limit = 100;
  std::optional<std::uint32_t> launch;
  bool host_only = false;
};

void dump(trace::TraceReader& r, const DumpOptions& o, std::ostream& out) {
  const trace::Metadata& m = r.metadata();
  std::uint64_t printed = 0;
  auto budget_left = [&] { return o.limit == 0 || printed < o.limit; };
  bool stopped = false;

  if (!o.launch) {
    out << "# host events (" << r.host_event_count() << ")\n";
    r.rewind_host();
    trace::HostEvent ev;
    std::uint64_t i = 0;
    while (r.next_host_event(ev)) {
      if (!budget_left()) {
        stopped = true;
        break;
      }
      out << "[" << i++ << "] " << describe(ev, m) << "\n";
      ++printed;
    }
  }

  std::vector<trace::WarpStream> warps;
  trace::AccessRecord rec;
  for (std::uint32_t l = 0; l < r.launches().size() && !o.host_only && !stopped; ++l) {
    if (o.launch && *o.launch != l) continue;
    const trace::LaunchSummary& s = r.launches()[l];
    out << "# launch " << l << ": kernel " << s.kernel_id << " (" << kernel_name(m, s.kernel_id)
        << "), " << s.threadblocks << " threadblocks, " << s.records << " records\n";
    trace::LaunchStream stream = r.launch(l);
    trace::ThreadblockView tb;
    while (!stopped && stream.next(tb)) {
      tb.warp_streams(warps);
      for (std::uint32_t w = 0; w < warps.size() && !stopped; ++w) {
        while (warps[w].next(rec)) {
          if (!budget_left()) {
            stopped = true;
            break;
          }
          out << "tb " << tb.tb_id << " warp " << w << ": " << kind_name(rec.kind)
              << " va=" << hex(rec.va) << " bytes=" << rec.bytes << " ref=" << rec.ref_id
              << " gap=" << rec.gap_cycles << " repeat=" << rec.repeat << "\n";
          ++printed;
        }
      }
      stream.release(tb);
    }
  }
  if (stopped) out << "# stopped after " << o.limit << " entries (--limit 0 prints everything)\n";
}

}  // namespace

int cmd_trace(const Args& args, std::ostream& out, std::ostream& err) {
  if (!args.empty() && args[0] == "import") {
    return cmd_trace_import(Args(args.begin() + 1, args.end()), out, err);
  }
  po::options_description visible("options");
  visible.add_options()                                        //
      ("help,h", "show this help")                             //
      ("json", "info: print one JSON object instead of text")  //
      ("limit", po::value<std::string>()->default_value("100"),
       "dump: stop after N entries (host events + access records); 0 = no limit")  //
      ("launch", po::value<std::string>(),
       "dump: only this launch's records (no host events)")  //
      ("host-only", "dump: only the host events")            //
      ("output,o", po::value<std::string>(),
       "hints: write the hints to this file (default: stdout)");
  po::options_description hidden;
  hidden.add_options()("action", po::value<std::string>())("file", po::value<std::string>());
  po::positional_options_description pos;
  pos.add("action", 1).add("file", 1);
  const po::variables_map vm = parse_args(args, visible, hidden, pos);

  if (vm.count("help")) {
    out << kUsage << "\n" << visible;
    return 0;
  }
  if (!vm.count("action"))
    throw UsageError("missing action: info, dump, hints or import (see uvmsim trace --help)");
  const std::string action = vm["action"].as<std::string>();
  if (action != "info" && action != "dump" && action != "hints") {
    throw UsageError("unknown action '" + action + "' (expected info, dump, hints or import)");
  }
  if (!vm.count("file")) throw UsageError("missing trace file");
  const std::string file = vm["file"].as<std::string>();
  if (vm.count("output") && action != "hints") throw UsageError("-o: only applies to trace hints");

  if (action == "hints") {
    trace::TraceReader reader(file);
    const auto& hints = reader.metadata().hints;
    if (!hints) throw UserError(file, "hints", "the trace has no hints");
    if (vm.count("output")) {
      hints->save(vm["output"].as<std::string>());
    } else {
      out << hints->to_json().dump(1) << "\n";
    }
    return 0;
  }

  if (action == "info") {
    for (const char* opt : {"launch", "host-only"}) {
      if (vm.count(opt)) throw UsageError(std::string("--") + opt + ": only applies to trace dump");
    }
    if (!vm["limit"].defaulted()) throw UsageError("--limit: only applies to trace dump");
    trace::TraceReader reader(file);
    const json j = collect_info(reader);
    if (vm.count("json")) {
      out << j.dump(2) << "\n";
    } else {
      print_info_text(j, out);
    }
    return 0;
  }

  if (vm.count("json")) throw UsageError("--json: only applies to trace info");
  DumpOptions o;
  o.limit = parse_count(vm["limit"].as<std::string>(), "--limit", ~std::uint64_t{0});
  o.host_only = vm.count("host-only") > 0;
  if (vm.count("launch")) {
    o.launch = static_cast<std::uint32_t>(
        parse_count(vm["launch"].as<std::string>(), "--launch", 0xffffffffu));
  }
  if (o.launch && o.host_only) throw UsageError("--launch and --host-only exclude each other");
  trace::TraceReader reader(file);
  if (o.launch && *o.launch >= reader.launches().size()) {
    throw UserError(file, "--launch",
                    "launch " + std::to_string(*o.launch) + " does not exist (the trace has " +
                        std::to_string(reader.launches().size()) + ")");
  }
  dump(reader, o, out);
  return 0;
}

}  // namespace uvmsim::cli
