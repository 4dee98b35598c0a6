// `uvmsim analyze TRACE [-o HINTS.json]`: derives hints (docs/hints.md) by profiling a trace.
#include <fstream>
#include <iostream>

#include <boost/program_options.hpp>

#include "core/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "traces/analyze.h"
#include "traces/trace.h"

namespace uvmsim::cli {

namespace po = boost::program_options;

int cmd_analyze(const Args& args, std::ostream& out, std::ostream& err) {
  po::options_description desc(
      "usage: uvmsim analyze TRACE [-o HINTS.json] [--compare]\n\n"
      "Derives static-style access hints (docs/hints.md) from a trace by profiling it: per kernel\n"
      "and allocation the accesses, bytes and per-threadblock working set, per instruction the\n"
      "same plus its host-loop iteration window, and the launch sequence with each allocation's\n"
      "next use. The result is labelled source \"profile\": measured, so an upper bound on what a\n"
      "compiler's static analysis could know. Give it to a placement policy with\n"
      "`uvmsim run --hints HINTS.json`. Without -o the hints go to standard output.\n\noptions");
  desc.add_options()("help,h", "show this help")("output,o", po::value<std::string>(),
                                                 "hints file to write (written as FILE.partial, "
                                                 "renamed when complete)")(
      "compare", "also summarise how the trace's own (static) hints differ, on stderr");
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
