// `uvmsim report DIR`: paper-style figures (PNG + SVG) and an index.html from a sweep's
// results.csv, drawn by scripts/uvmsim_report.py with Debian's matplotlib (docs/sweeps.md).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <ostream>

#include <boost/program_options.hpp>

#include "core/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/report_script.h"
#include "sim/sweep/process.h"
#include "sim/sweep/table.h"

namespace uvmsim::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;

int cmd_report(const Args& args, std::ostream& out, std::ostream&) {
  po::options_description desc(
      "usage: uvmsim report DIR|VALIDATION.json|EVENTS.csv|MRC.csv [--out DIR] [--python PATH]\n\n"
      "Draws paper-style figures from a sweep's results (DIR/results.csv, DIR/sweep.json):\n"
      "normalized runtime per workload and policy with a geomean group, page faults,\n"
      "evictions, host-link traffic by cause (copies and zero-copy accesses), runtime vs the\n"
      "achieved oversubscription and prefetch accuracy, each as PNG and SVG, with min-max\n"
      "spreads over seeds, plus an index.html that shows them and figures.json (what each\n"
      "figure drew). Given the JSON of `uvmsim validate --json` instead, draws simulated vs\n"
      "measured scatter plots (docs/validation.md); given the events CSV of `uvmsim run\n"
      "--events-out`, the run's timeline and the CDF of fault-batch service time; given the CSV\n"
      "of `uvmsim analyze --mrc`, the capacity curves (docs/mrc.md). The default\n"
      "output directory for a file is its name without the extension, plus -report.\n"
      "Needs python3 with matplotlib (Debian:\n"
      "python3-matplotlib, installed by scripts/setup.sh).\n\noptions");
  desc.add_options()("help,h", "show this help")("out,o", po::value<std::string>(),
                                                 "output directory (default: DIR/report)")(
      "python", po::value<std::string>(),
      "Python interpreter with matplotlib (default: $UVMSIM_PYTHON, else /usr/bin/python3)")(
      "script", po::value<std::string>(),
      "plotting script (default: $UVMSIM_REPORT_SCRIPT, else scripts/uvmsim_report.py)");
  po::options_description hidden;
  hidden.add_options()("dir", po::value<std::string>());
  po::positional_options_description pos;
  pos.add("dir", 1);
  const po::variables_map vm = parse_args(args, desc, hidden, pos);
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  if (!vm.count("dir")) throw UsageError("missing sweep directory (uvmsim report DIR)");
  const fs::path dir = vm["dir"].as<std::string>();
  std::error_code ec;
  // A regular file is the output of `uvmsim validate --json` or an events CSV; the script
  // checks its format.
  const bool validation = fs::is_regular_file(dir, ec);
  if (!validation && !fs::is_directory(dir, ec))
    throw UserError(dir.string() + ": not a directory or a validation results file");
  if (!validation && !fs::exists(dir / "results.csv", ec))
    throw UserError((dir / "results.csv").string() + ": not found (run `uvmsim sweep SPEC --out " +
                    dir.string() + "` first)");
  // One table, one binary: figures that compare policies must not compare builds as well.
  // (A validation results file comes from one `uvmsim validate` run: one binary.)
  const auto builds = validation ? decltype(sweep::result_builds(dir)){}
                                 : sweep::result_builds(dir / "results.csv");
  if (builds && builds->size() > 1) {
    std::string list;
    for (const auto& [id, n] : *builds)
      list += (list.empty() ? "" : ", ") + (id.empty() ? std::string("(none)") : id) + ": " +
              std::to_string(n) + " point(s)";
    throw UserError((dir / "results.csv").string() + ": build: the results were computed by " +
                    std::to_string(builds->size()) + " different builds (" + list +
                    "); rerun the sweep with one binary (uvmsim sweep SPEC --out " + dir.string() +
                    " --rerun) before drawing them");
  }
  const fs::path report = vm.count("out") ? fs::path(vm["out"].as<std::string>())
                          : validation    ? dir.parent_path() / (dir.stem().string() + "-report")
                                          : dir / "report";

  const std::string output =
      run_report_script(dir, report, vm.count("python") ? vm["python"].as<std::string>() : "",
                        vm.count("script") ? vm["script"].as<std::string>() : "");
  out << output;
  if (validation) {
  } else if (!builds)
    out << "report: note: " << (dir / "results.csv").string()
        << " has no build column (written by an older uvmsim): whether one binary computed "
           "every point is not known\n";
  else if (builds->size() == 1)
    out << "report: results of build " << builds->begin()->first << "\n";
  out << "report: " << (report / "index.html").string() << "\n";
  return 0;
}

}  // namespace uvmsim::cli
