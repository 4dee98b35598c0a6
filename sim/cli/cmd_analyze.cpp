// `uvmsim analyze TRACE [-o HINTS.json]`: derives hints (docs/hints.md) by profiling a trace.
// `uvmsim analyze --mrc TRACE`: capacity curves for LRU eviction in one pass (docs/mrc.md).
#include <fstream>
#include <iomanip>
#include <iostream>

#include <boost/program_options.hpp>

#include "core/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/report_script.h"
#include "sim/mrc.h"
#include "sim/sweep/files.h"
#include "traces/analyze.h"
#include "traces/trace.h"

namespace uvmsim::cli {

namespace po = boost::program_options;

namespace {

int mrc(const po::variables_map& vm, std::ostream& out, std::ostream& err) {
  const std::string path = vm["trace"].as<std::string>();
  const SimConfig cfg =
      as_usage([&] { return SimConfig::from_preset(vm["gpu"].as<std::string>()); });
  mrc::Options o;
  o.sample = vm["sample"].as<double>();
  if (!(o.sample > 0 && o.sample <= 1))
    throw UsageError("--sample: value must be in (0, 1], got " + std::to_string(o.sample));
  if (vm.count("bucket-steps")) o.bucket_steps = vm["bucket-steps"].as<std::uint64_t>();
  if (vm.count("tmpdir")) o.tmpdir = vm["tmpdir"].as<std::string>();
  const std::string schedule = vm["schedule"].as<std::string>();
  if (schedule != "concurrent" && schedule != "serial")
    throw UsageError("--schedule: value must be concurrent or serial, got " + schedule);
  o.serial = schedule == "serial";
  const auto n = vm["suggest"].as<std::size_t>();
  if (vm.count("figure") && !vm.count("output"))
    throw UsageError("--figure: needs -o CSV (the figure is drawn from the file)");
  // Fail on an unwritable output now, not after the pass.
  std::optional<sweep::AtomicFile> csv;
  if (vm.count("output")) csv.emplace(vm["output"].as<std::string>(), "-o");

  trace::TraceReader reader(path);
  mrc::Curve c = mrc::compute(reader, cfg, o);
  const std::vector<mrc::Point> picks = c.suggest(n);
  std::ostream& info = csv ? out : err;
  info << "mrc: " << path << ": " << c.managed_chunks << " managed 2 MB chunks, " << c.regions_used
       << " used; " << c.uses << " region uses in buckets of " << c.bucket_steps << " steps ("
       << c.records << " records, " << schedule << " schedule); "
       << (c.sample < 1 ? "SHARDS sample R = " + std::to_string(c.sample) + ": " +
                              std::to_string(c.sampled_used) + " of the used regions kept"
                        : std::string("exact"))
       << "\n";
  if (!picks.empty()) {
    info << "suggested oversubscription levels (GPU memory: chunk misses, evictions):\n";
    std::string list;
    for (const auto& p : picks) {
      const std::string level = c.oversub_for(p.chunks);
      info << "  --oversub " << std::left << std::setw(8) << level << std::right << " " << p.chunks
           << " chunks: " << std::llround(p.misses) << " misses, " << std::llround(p.evictions)
           << " evictions\n";
      list += (list.empty() ? "" : ",") + level;
    }
    info << "suggested: " << list << "\n";
  }
  if (!csv) {
    out << c.csv();
    return 0;
  }
  csv->write(c.csv());
  csv->commit();
  out << "mrc: wrote " << csv->target().string() << "\n";
  if (vm.count("figure")) {
    const std::filesystem::path dir = vm["figure"].as<std::string>();
    out << run_report_script(csv->target(), dir,
                             vm.count("python") ? vm["python"].as<std::string>() : "",
                             vm.count("script") ? vm["script"].as<std::string>() : "");
  }
  return 0;
}

}  // namespace

int cmd_analyze(const Args& args, std::ostream& out, std::ostream& err) {
  po::options_description desc(
      "usage: uvmsim analyze TRACE [-o HINTS.json] [--compare]\n"
      "       uvmsim analyze --mrc TRACE [-o CSV [--figure DIR]] [--gpu PRESET] [--sample R]\n"
      "                      [--suggest N]\n\n"
      "Derives static-style access hints (docs/hints.md) from a trace by profiling it: per kernel\n"
      "and allocation the accesses, bytes and per-threadblock working set, per instruction the\n"
      "same plus its host-loop iteration window, and the launch sequence with each allocation's\n"
      "next use. The result is labelled source \"profile\": measured, so an upper bound on what a\n"
      "compiler's static analysis could know. Give it to a placement policy with\n"
      "`uvmsim run --hints HINTS.json`. Without -o the hints go to standard output.\n\n"
      "With --mrc: capacity curves for LRU eviction at 2 MB chunk granularity (docs/mrc.md):\n"
      "chunk misses, evictions and HtoD/DtoH bytes against GPU memory, every size from one\n"
      "chunk to the managed footprint, in one pass (LRU stack distances over the trace's\n"
      "region uses in OPT's idealised program order). CSV columns: " +
      std::string(mrc::Curve::kCsvHeader) +
      ". Also prints the oversubscription levels where the curve\n"
      "changes most (--suggest), to pick a sweep's levels. An approximation of `uvmsim run\n"
      "--eviction lru --oversub X`: docs/mrc.md gives its measured error.\n\noptions");
  desc.add_options()("help,h", "show this help")("output,o", po::value<std::string>(),
                                                 "hints file to write (written as FILE.partial, "
                                                 "renamed when complete)")(
      "compare", "also summarise how the trace's own (static) hints differ, on stderr")(
      "mrc", "capacity curves instead of hints (CSV to -o, else to standard output)")(
      "gpu", po::value<std::string>()->default_value("titanv"),
      "--mrc: GPU preset whose occupancy schedules the threadblocks")(
      "sample", po::value<double>()->default_value(1.0, "1"),
      "--mrc: SHARDS spatial sampling rate R in (0, 1]; 1 = exact (docs/mrc.md gives the error)")(
      "suggest", po::value<std::size_t>()->default_value(5),
      "--mrc: number of oversubscription levels to suggest (0 = none)")(
      "figure", po::value<std::string>(),
      "--mrc: also draw the curves into DIR (mrc.png, mrc.svg, index.html) with "
      "scripts/uvmsim_report.py (python3-matplotlib)")(
      "schedule", po::value<std::string>()->default_value("concurrent"),
      "--mrc: concurrent: threadblocks in lock step on as many slots as the GPU holds (OPT's "
      "program order); serial: one threadblock at a time (closer where the working set of "
      "all running threadblocks exceeds memory, docs/mrc.md)")(
      "bucket-steps", po::value<std::uint64_t>(),
      "--mrc: logical time steps per bucket (default: at most 1 M buckets)")(
      "tmpdir", po::value<std::string>(),
      "--mrc: directory for the sort's spill files (default: $TMPDIR, else /tmp)")(
      "python", po::value<std::string>(), "--figure: Python interpreter with matplotlib")(
      "script", po::value<std::string>(), "--figure: plotting script");
  po::options_description hidden;
  hidden.add_options()("trace", po::value<std::string>(), "trace");
  po::positional_options_description pos;
  pos.add("trace", 1);
  const po::variables_map vm = parse_args(args, desc, hidden, pos);
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  if (!vm.count("trace"))
    throw UsageError("analyze: a trace file is required (uvmsim analyze --help)");
  if (vm.count("mrc")) return mrc(vm, out, err);
  for (const char* o : {"figure", "bucket-steps", "tmpdir", "python", "script"})
    if (vm.count(o)) throw UsageError(std::string("--") + o + ": only with --mrc");
  const std::string path = vm["trace"].as<std::string>();
  trace::TraceReader reader(path);
  const trace::Hints h = trace::profile_hints(reader);
  // The profile describes this trace by construction; check it like any hints file.
  std::vector<std::uint32_t> launch_kernels;
  for (const auto& l : reader.launches()) launch_kernels.push_back(l.kernel_id);
  h.check_against(reader.metadata(), path, &launch_kernels);

  if (vm.count("compare")) {
    const auto& s = reader.metadata().hints;
    if (!s) {
      err << "analyze: " << path << " has no static hints to compare with\n";
    } else {
      for (const auto& pk : h.kernels) {
        const trace::KernelHint* sk = s->kernel(pk.kernel);
        for (const auto& pu : pk.uses) {
          const trace::UseHint* su = sk ? sk->use(pu.alloc) : nullptr;
          const auto* a = reader.metadata().find_allocation(pu.alloc);
          err << "  " << pk.name << " / " << (a ? a->name : "?") << ": profile "
              << pu.reads.at(0) + pu.writes.at(0) << " accesses (iteration 0)";
          if (su)
            err << ", static " << su->reads.at(0) + su->writes.at(0)
                << (su->data_dependent ? " (data-dependent)" : "")
                << (su->estimated ? " (estimated)" : "");
          else
            err << ", not in the static hints";
          err << "\n";
        }
      }
    }
  }

  if (!vm.count("output")) {
    out << h.to_json().dump(1) << "\n";
    return 0;
  }
  const std::string file = vm["output"].as<std::string>();
  const std::string partial = file + ".partial";
  h.save(partial);
  std::error_code ec;
  std::filesystem::rename(partial, file, ec);
  if (ec) throw UserError(file, "output", "cannot rename " + partial + ": " + ec.message());
  std::size_t refs = 0;
  for (const auto& k : h.kernels) refs += k.refs.size();
  out << "uvmsim analyze: wrote " << file << " (profile hints: " << h.allocations.size()
      << " allocations, " << h.kernels.size() << " kernels, " << refs << " refs, "
      << h.launches.size() << " launches)\n";
  return 0;
}

}  // namespace uvmsim::cli
