// `uvmsim run`: simulate one trace on one GPU configuration.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include <boost/program_options.hpp>

#include "core/config.h"
#include "core/error.h"
#include "core/units.h"
#include "policies/policy.h"
#include "policies/registry.h"
#include "sim/cli/commands.h"
#include "sim/cli/knob_list.h"
#include "sim/host_memory.h"
#include "sim/simulator.h"
#include "sim/sweep/files.h"
#include "sim/sweep/point.h"

namespace uvmsim::cli {

namespace po = boost::program_options;

static std::string ns_str(std::uint64_t ps) {
  std::ostringstream o;
  const double ns = static_cast<double>(ps) / 1000.0;
  o << std::fixed << std::setprecision(3);
  if (ns >= 1e9)
    o << ns / 1e9 << " s";
  else if (ns >= 1e6)
    o << ns / 1e6 << " ms";
  else if (ns >= 1e3)
    o << ns / 1e3 << " us";
  else
    o << ns << " ns";
  return o.str();
}

static void print_prefetch_use(std::ostream& out, const PrefetchUseStats& u) {
  // One line per mechanism that prefetched anything: useful / useless / unresolved pages.
  for (std::size_t c = 0; c < PrefetchUseStats::kCauses; ++c) {
    if (!u.pages[c]) continue;
    const auto resolved = u.useful[c] + u.useless[c];
    out << "  prefetch use  : " << to_string(static_cast<PrefetchCause>(c)) << " " << u.pages[c]
        << " pages: " << u.useful[c] << " useful, " << u.useless[c] << " useless, "
        << u.unresolved(c) << " unresolved";
    if (resolved) out << " (accuracy " << 100.0 * u.useful[c] / resolved << "%)";
    out << "\n";
  }
}

static void print_summary(std::ostream& out, const Simulator& sim, const nlohmann::json& j) {
  const Stats& s = sim.stats();
  const auto& m = j["memory"];
  out << "uvmsim run: " << j["trace"]["workload"].get<std::string>() << " on "
      << (sim.config().system.gpus > 1 ? std::to_string(sim.config().system.gpus) + " x " : "")
      << sim.config().gpu.name << ", eviction=" << sim.config().engine.eviction << ", prefetch="
      << (sim.config().driver.prefetch_enable ? sim.config().engine.prefetch : "none")
      << ", placement=" << sim.config().engine.placement << "\n";
  out << "  memory        : " << format_bytes(m["capacity_bytes"].get<std::uint64_t>())
      << (sim.config().system.gpus > 1 ? " per GPU" : "") << " usable, managed footprint "
      << format_bytes(m["managed_footprint_bytes"].get<std::uint64_t>()) << std::fixed
      << std::setprecision(1);
  const double over = m["oversubscription_pct"].get<double>();
  const auto& req = m["oversubscription_requested_pct"];
  if (over > 0) {
    out << " (" << over << "% oversubscribed";
    if (req.is_number() && req.get<double>() != over)
      out << ", " << req.get<double>() << "% requested: memory is whole 2 MB chunks";
    out << ")\n";
  } else {
    out << " (fits: "
        << 100.0 * m["managed_chunks"].get<double>() / m["capacity_chunks"].get<double>()
        << "% of usable memory)\n";
  }
  out << "  simulated time: " << ns_str(s.sim_time) << (s.truncated ? " (TRUNCATED)" : "") << "\n";
  out << "  accesses      : " << s.accesses << " in " << s.kernels.size() << " kernel launch(es)\n";
  out << "  GPU faults    : " << s.gpu_faults << " in " << s.fault_batches << " batches (max "
      << s.max_batch_size << " entries), " << s.replays << " replays\n";
  out << "  HtoD          : " << format_bytes(s.htod_bytes) << " (demand "
      << format_bytes(s.htod_by_cause[0]) << ", prefetch " << format_bytes(s.htod_by_cause[1])
      << ", user prefetch " << format_bytes(s.htod_by_cause[2]) << ", access counter "
      << format_bytes(s.htod_by_cause[3]) << ", observation "
      << format_bytes(s.htod_by_cause[static_cast<std::size_t>(HtodCause::Observation)])
      << ", region prefetch "
      << format_bytes(s.htod_by_cause[static_cast<std::size_t>(HtodCause::RegionPrefetch)])
      << ", placement "
      << format_bytes(s.htod_by_cause[static_cast<std::size_t>(HtodCause::Placement)]) << ")\n";
  out << "  DtoH          : " << format_bytes(s.dtoh_bytes) << " (eviction "
      << format_bytes(s.dtoh_by_cause[0]) << ", cpu fault " << format_bytes(s.dtoh_by_cause[1])
      << ", user prefetch " << format_bytes(s.dtoh_by_cause[2]) << ", observation "
      << format_bytes(s.dtoh_by_cause[static_cast<std::size_t>(DtohCause::Observation)])
      << ", placement "
      << format_bytes(s.dtoh_by_cause[static_cast<std::size_t>(DtohCause::Placement)])
      << (s.gpus > 1
              ? ", peer staged " +
                    format_bytes(s.dtoh_by_cause[static_cast<std::size_t>(DtohCause::PeerStaged)])
              : std::string())
      << ")\n";
  // Zero-copy traffic is not a copy-engine transfer, but it crosses the same link: without it
  // remote-mapping schemes look free (issue 15).
  out << "  remote (link) : " << format_bytes(s.remote_bytes) << " in " << s.remote_accesses
      << " zero-copy accesses (read " << format_bytes(s.remote_read_bytes) << ", write "
      << format_bytes(s.remote_write_bytes) << ")\n";
  print_prefetch_use(out, s.prefetch_use);
  out << "  evictions     : " << s.evictions << "   remote accesses: " << s.remote_accesses
      << "   CPU faults: " << s.cpu_faults << "\n";
  if (s.gpus > 1) {
    // One line per GPU (the JSON's "gpus"): its kernels' work and its host link's traffic.
    const auto per = j["gpus"];
    for (const auto& g : per) {
      const auto& l = g["host_link"];
      out << "  GPU " << std::setw(2) << std::left << g["gpu"].get<unsigned>() << std::right
          << "        : " << g["kernels"].get<std::uint64_t>() << " kernels, "
          << g["accesses"].get<std::uint64_t>() << " accesses, "
          << g["gpu_faults"].get<std::uint64_t>() << " faults, "
          << g["evictions"].get<std::uint64_t>() << " evictions; HtoD "
          << format_bytes(l["htod_bytes"].get<std::uint64_t>()) << ", DtoH "
          << format_bytes(l["dtoh_bytes"].get<std::uint64_t>()) << " (staged "
          << format_bytes(l["peer_staged_bytes"].get<std::uint64_t>()) << ")";
      if (g.contains("peer_link")) {
        // Peer access: its GPU-to-GPU copies each way and its remote bytes to peers' memory.
        const auto& p = g["peer_link"];
        out << "; peer out " << format_bytes(p["copy_out_bytes"].get<std::uint64_t>()) << ", in "
            << format_bytes(p["copy_in_bytes"].get<std::uint64_t>()) << ", remote "
            << format_bytes(p["remote_bytes"].get<std::uint64_t>());
      }
      out << "\n";
    }
  }
  if (s.observe.active) {
    const auto& o = s.observe;
    out << "  observability : " << o.regions[0] + o.regions[1] << " regions observed ("
        << o.regions[0] << " eviction, " << o.regions[1] << " feedback), "
        << o.accessed[0] + o.accessed[1] << " accessed, "
        << o.evicted_unaccessed[0] + o.evicted_unaccessed[1] << " evicted unaccessed\n"
        << "  obs. overhead : " << o.remote_accesses << " remote accesses, "
        << o.sample_pages * kPageSize / 1024 << " KiB sampled, driver time "
        << ns_str(o.service_time) << ", samples/region " << o.samples_per_region << "\n";
  }
  if (s.region_prefetches) out << "  region prefetches: " << s.region_prefetches << "\n";
  if (s.placement.actions) {
    const auto& p = s.placement;
    out << "  placement     : " << p.actions << " actions ("
        << format_bytes(p.gpu_pinned_pages * kPageSize) << " pinned on GPU, "
        << format_bytes(p.host_pinned_pages * kPageSize) << " on host, " << p.reservations
        << " reservations), host time " << ns_str(p.host_time) << ", HtoD "
        << format_bytes(s.htod_by_cause[static_cast<std::size_t>(HtodCause::Placement)])
        << ", DtoH "
        << format_bytes(s.dtoh_by_cause[static_cast<std::size_t>(DtohCause::Placement)]) << "\n";
  }
  const double l1 = s.l1_tlb_lookups ? 100.0 * s.l1_tlb_hits / s.l1_tlb_lookups : 0;
  const double l2 = s.l2_tlb_lookups ? 100.0 * s.l2_tlb_hits / s.l2_tlb_lookups : 0;
  out << "  TLB hit rate  : L1 " << std::setprecision(1) << l1 << "%, L2 " << l2 << "%\n";
  out << "  throughput    : " << std::setprecision(3) << s.wall_seconds << " s wall, "
      << std::setprecision(2) << (s.wall_seconds > 0 ? s.accesses / s.wall_seconds / 1e6 : 0.0)
      << " M accesses/s, "
      << (s.wall_seconds > 0 ? static_cast<double>(s.gpu_faults) / s.wall_seconds / 1e6 : 0.0)
      << " M fault entries/s\n";
  // The simulator's own memory: what a sweep's --jobs must fit in. Not a statistic (it is not
  // deterministic, and the JSON keeps to what is): a long-threadblock kernel holds its decoded
  // trace chunks in flight (docs/trace-format.md, "Reading"), e.g. 4.6 GB for `mvt` at 4 GB.
  if (const std::uint64_t rss = peak_rss_bytes())
    out << "  host memory   : peak RSS " << format_bytes(rss) << "\n";
}

int cmd_run(const Args& args, std::ostream& out, std::ostream&) {
  po::options_description desc(
      "usage: uvmsim run --gpu PRESET|FILE --trace FILE [options]\n\n"
      "Simulates a .uvt trace on a GPU preset (configs/gpus/NAME.json) with the UVM driver\n"
      "model. Prints a summary and the simulator's own speed.\n\noptions");
  std::vector<std::string> sets;
  desc.add_options()("help,h", "show this help")(
      "gpu", po::value<std::string>(), "GPU preset name (gtx1080ti, titanv, rtx3090) or JSON file")(
      "trace", po::value<std::string>(), "trace file (.uvt)")(
      "oversub", po::value<double>(),
      "oversubscription %: usable HBM = managed footprint / (1+P/100)")(
      "hbm", po::value<std::string>(), "usable HBM size (e.g. 8G); default: the preset's")(
      "eviction", po::value<std::string>(), "eviction policy (uvmsim policies)")(
      "prefetch", po::value<std::string>(), "prefetch policy; 'none' disables prefetching")(
      "placement", po::value<std::string>(), "placement policy")(
      "hints", po::value<std::string>(),
      "static hints file for the placement policies (docs/hints.md; e.g. from uvmsim analyze); "
      "default: the trace's own hints")(
      "policy-preset", po::value<std::string>(),
      "policy bundle, e.g. tm++ (uvmsim policies lists them); --eviction/--prefetch/--set "
      "given too override it")("set", po::value<std::vector<std::string>>(&sets)->composing(),
                               "override a knob: --set KEY=VALUE (repeatable; see --list-knobs)")(
      "seed", po::value<std::uint64_t>(), "seed for randomised policies (engine.seed)")(
      "stats-out", po::value<std::string>(),
      "write statistics + resolved config as JSON (complete or not at all: written to a "
      "temporary and renamed)")("events-out", po::value<std::string>(),
                                "write batches/migrations/evictions as CSV (likewise)")(
      "interval-out", po::value<std::string>(),
      "write interval statistics as JSON lines, one per --interval-us of simulated time "
      "(docs/stats.md; likewise)")("interval-us", po::value<double>(),
                                   "simulated microseconds per --interval-out line (default 100)")(
      "record-order", po::value<std::string>(),
      "write the order of the GPU's accesses (2 MB regions) to FILE, for a second run with "
      "--eviction opt --set policy.opt.order=FILE (two-pass OPT, docs/policies.md; likewise)")(
      "quiet,q", "print only the throughput line")(
      "list-knobs", "list every configuration knob (the engine's and the policies')")(
      "format", po::value<std::string>()->default_value("text"),
      "--list-knobs output: text, markdown (docs/knobs.md) or json");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  if (vm.count("list-knobs")) {
    print_knobs(out, vm["format"].as<std::string>());
    return 0;
  }
  if (!vm.count("gpu")) throw UsageError("--gpu: required (e.g. --gpu gtx1080ti)");
  if (!vm.count("trace")) throw UsageError("--trace: required");

  // The configuration is what the user asked for: an unknown preset or knob, a bad value, an
  // unregistered policy is a usage error (exit 2). The trace is data (a bad one exits 1).
  const SimConfig cfg = as_usage([&] {
    SimConfig c = SimConfig::from_preset(vm["gpu"].as<std::string>());
    if (vm.count("policy-preset"))
      apply_policy_preset(c, vm["policy-preset"].as<std::string>(), "--policy-preset");
    if (vm.count("eviction"))
      c.set("engine.eviction", vm["eviction"].as<std::string>(), "--eviction");
    if (vm.count("prefetch"))
      c.set("engine.prefetch", vm["prefetch"].as<std::string>(), "--prefetch");
    if (vm.count("placement"))
      c.set("engine.placement", vm["placement"].as<std::string>(), "--placement");
    if (vm.count("seed")) c.set("engine.seed", vm["seed"].as<std::uint64_t>(), "--seed");
    if (vm.count("hints")) c.set("engine.hints", vm["hints"].as<std::string>(), "--hints");
    for (const auto& s : sets) c.set_from_string(s, "--set");
    validate_policy_params(c);  // policy names and knobs, naming where each was set
    return c;
  });

  RunOptions opts;
  opts.trace = vm["trace"].as<std::string>();
  if (vm.count("oversub") && vm.count("hbm"))
    throw UsageError("--oversub: cannot be combined with --hbm");
  if (vm.count("oversub")) {
    const double p = vm["oversub"].as<double>();
    if (!(p >= 0 && p <= 100000))
      throw UsageError("--oversub: value must be in [0, 100000], got " + std::to_string(p));
    opts.oversub_pct = p;
  }
  if (vm.count("hbm"))
    opts.hbm_bytes = as_usage([&] { return parse_size(vm["hbm"].as<std::string>(), "--hbm"); });

  // Outputs are written under temporary names and renamed only once complete, so a full disk or
  // a failed run never leaves a truncated file under the name asked for. The temporaries are
  // created now: a bad path fails at once, not after a long run.
  std::optional<sweep::AtomicFile> stats_file, events_file, interval_file, order_file;
  if (vm.count("interval-us")) {
    const double us = vm["interval-us"].as<double>();
    if (!vm.count("interval-out")) throw UsageError("--interval-us: needs --interval-out FILE");
    if (!(us >= 0.001 && us <= 1e9))
      throw UsageError("--interval-us: value must be in [0.001, 1e9] microseconds, got " +
                       std::to_string(us));
    opts.interval = static_cast<Tick>(us * static_cast<double>(kPsPerUs));
  }
  if (vm.count("interval-out")) {
    interval_file.emplace(vm["interval-out"].as<std::string>(), "--interval-out");
    opts.interval_out = interval_file->temp_path().string();
  }
  if (vm.count("stats-out")) stats_file.emplace(vm["stats-out"].as<std::string>(), "--stats-out");
  if (vm.count("events-out")) {
    events_file.emplace(vm["events-out"].as<std::string>(), "--events-out");
    opts.events_out = events_file->temp_path().string();
  }

  if (vm.count("record-order")) {
    order_file.emplace(vm["record-order"].as<std::string>(), "--record-order");
    opts.record_order = order_file->temp_path().string();
    opts.record_order_name = vm["record-order"].as<std::string>();
  }

  Simulator sim(cfg, opts);
  try {
    sim.run();
  } catch (const UserError& e) {
    // The event log names the file it writes, the temporary: report the output asked for.
    const int saved = errno;
    if (!events_file) throw;
    std::string msg = e.what();
    const std::string tmp = events_file->temp_path().string();
    if (msg.rfind(tmp + ":", 0) != 0) throw;
    // errno still holds the failed write's reason when it is one of these.
    const bool known = saved == ENOSPC || saved == EDQUOT || saved == EFBIG || saved == EIO;
    events_file->fail(known ? std::strerror(saved) : "");
  }
  const nlohmann::json j = sim.to_json();
  if (events_file) events_file->commit();
  if (interval_file) interval_file->commit();
  if (order_file) order_file->commit();
  if (stats_file) {
    stats_file->write(j.dump(2) + "\n");
    stats_file->commit();
  }
  if (vm.count("quiet")) {
    out << "throughput: " << sim.stats().accesses << " accesses in " << sim.stats().wall_seconds
        << " s = "
        << (sim.stats().wall_seconds > 0 ? sim.stats().accesses / sim.stats().wall_seconds : 0)
        << " accesses/s, " << sim.stats().gpu_faults << " fault entries = "
        << (sim.stats().wall_seconds > 0
                ? static_cast<double>(sim.stats().gpu_faults) / sim.stats().wall_seconds
                : 0)
        << " fault entries/s\n";
  } else {
    print_summary(out, sim, j);
  }
  return 0;
}

}  // namespace uvmsim::cli
