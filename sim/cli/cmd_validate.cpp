// `uvmsim validate FILES|DIR`: simulate the workloads of published real-GPU measurements
// (configs/validation/) and print simulated vs measured values with per-row errors, per-source
// geomean errors and rank correlations (docs/validation.md). Runs go through the sweep runner,
// as for `uvmsim check`.
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>

#include <boost/program_options.hpp>

#include "core/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/work_files.h"
#include "sim/sweep/files.h"
#include "sim/sweep/process.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/table.h"
#include "sim/validate/dataset.h"
#include "sim/validate/score.h"

namespace uvmsim::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace uvmsim::sweep;
using namespace uvmsim::validate;

int cmd_validate(const Args& args, std::ostream& out, std::ostream& err) {
  po::options_description desc(
      "usage: uvmsim validate FILES|DIR... [--subset ci|full] [--json FILE] [options]\n\n"
      "Simulates the workloads behind published real-GPU measurements (one data file per\n"
      "source, each value with its citation; the project's: configs/validation/) on the\n"
      "matching GPU preset and prints simulated vs measured values: per row the ratio\n"
      "sim/measured and the error factor exp(|ln(sim/measured)|), per source the geometric\n"
      "mean of the error factors and Spearman's rank correlation over rows of one quantity.\n"
      "Exits 1 if a row with an acceptance bound (max_error) is outside it or has no value\n"
      "(a run failed), or for bad input; 2 for a bad option.\n"
      "`uvmsim report FILE.json` draws sim-vs-real scatter plots of --json output.\n"
      "Format and current results: docs/validation.md.\n\noptions");
  std::vector<std::string> files, sets;
  desc.add_options()("help,h", "show this help")(
      "subset", po::value<std::string>()->default_value("full"),
      "ci: the rows marked \"ci\", workloads at their small ci_footprint (seconds); full: every "
      "row at full footprint")("json", po::value<std::string>(),
                               "also write the results as JSON to FILE (- for stdout, then the "
                               "table goes to stderr)")("jobs,j", po::value<unsigned>(),
                                                        "parallel runs (default: every CPU)")(
      "set", po::value<std::vector<std::string>>(&sets)->composing(),
      "override a knob in every run: --set KEY=VALUE (repeatable)")(
      "keep", po::value<std::string>(), "keep traces and results in this directory")(
      "progress", po::value<std::string>()->default_value("auto"), "auto, bar, lines or none")(
      "worker-bin", po::value<std::string>(), "uvmsim binary the runs use (default: this one)");
  po::options_description hidden;
  hidden.add_options()("file", po::value<std::vector<std::string>>(&files));
  po::positional_options_description pos;
  pos.add("file", -1);
  const po::variables_map vm = parse_args(args, desc, hidden, pos);
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  if (files.empty())
    throw UserError("missing validation file or directory (uvmsim validate configs/validation)");
  const auto subset = parse_subset(vm["subset"].as<std::string>());
  if (!subset)
    throw UserError("--subset: expected ci or full, got '" + vm["subset"].as<std::string>() + "'");
  const std::string json_out = vm.count("json") ? vm["json"].as<std::string>() : "";

  ExecOptions opts;
  if (vm.count("jobs")) {
    opts.jobs = vm["jobs"].as<unsigned>();
    if (opts.jobs == 0) throw UserError("--jobs: must be at least 1");
  }
  opts.progress = parse_progress_mode(vm["progress"].as<std::string>(), err);
  opts.rerun = true;  // validation always simulates with the current binary
  if (vm.count("worker-bin")) opts.worker_bin = vm["worker-bin"].as<std::string>();

  // Load everything first: a bad file fails before anything runs.
  std::vector<Source> sources;
  for (const auto& p : json_files(files, "validation"))
    sources.push_back(Source::load(p, *subset, sets));

  WorkDir work(vm.count("keep") ? vm["keep"].as<std::string>() : "", "uvmsim-validate");
  ResultStore store(work.path());
  DirLock lock(store.dir());

  std::vector<PointSpec> points;
  std::vector<Workload> workloads;
  std::map<std::pair<std::size_t, std::string>, std::size_t> point_of;  // (source, run) -> point
  std::vector<std::vector<const Row*>> rows_of(sources.size());
  for (std::size_t si = 0; si < sources.size(); ++si) {
    const Source& s = sources[si];
    rows_of[si] = s.rows_of(*subset);
    for (const auto& [n, w] : s.workloads) workloads.push_back(w);
    for (const auto& name : s.runs_read_by(rows_of[si])) {
      const Run& r = *s.find_run(name);
      const std::string where = s.path.string() + ": runs." + r.name;
      const SimConfig cfg = r.settings.resolve(where);
      nlohmann::ordered_json axes;
      axes["file"] = s.path.string();
      axes["run"] = r.name;
      point_of[{si, r.name}] = points.size();
      points.push_back(PointSpec::make(s.name + ":" + r.name, axes, s.workloads.at(r.workload),
                                       r.settings.oversub, cfg, store.trace_dir()));
    }
  }
  std::vector<const PointSpec*> todo;
  for (const auto& p : points) todo.push_back(&p);
  if (opts.progress != ProgressMode::None)
    err << "validate: " << points.size() << " run(s) from " << sources.size() << " source(s), "
        << subset_name(*subset) << " subset\n";
  if (const int sig = prepare_traces(workloads, todo, store, opts, err)) return 128 + sig;
  const ExecSummary sum = run_local(todo, store, opts, points.size(), err);
  if (sum.signal) {
    err << "uvmsim validate: interrupted\n";
    return 128 + sum.signal;
  }

  std::vector<SourceScore> scores;
  for (std::size_t si = 0; si < sources.size(); ++si) {
    std::map<std::string, std::map<std::string, json>> metrics;
    std::map<std::string, std::string> run_error;
    for (const auto& [key, pi] : point_of) {
      if (key.first != si) continue;
      if (auto res = store.load_result(points[pi]))
        metrics[key.second] = flatten_metrics((*res)["stats"]);
      else
        run_error[key.second] = failure_message(store, points[pi]);
    }
    scores.push_back(score(sources[si], rows_of[si],
                           [&](const std::string& run, const std::string& metric,
                               std::string& why) -> std::optional<double> {
                             if (run_error.count(run)) {
                               why = "run " + run + " failed: " + run_error[run];
                               return std::nullopt;
                             }
                             const auto& m = metrics[run];
                             const auto it = m.find(metric);
                             if (it == m.end() || !it->second.is_number()) {
                               why = "no numeric metric '" + metric + "' in run " + run;
                               return std::nullopt;
                             }
                             return it->second.get<double>();
                           }));
  }

  std::ostream& table = json_out == "-" ? err : out;
  print_report(table, scores, *subset);
  if (!json_out.empty()) {
    const std::string text = report_json(scores, *subset).dump(2) + "\n";
    if (json_out == "-")
      out << text;
    else
      write_atomic(json_out, text);
  }
  std::size_t failed = 0;
  for (const auto& s : scores) failed += s.failed;
  return failed ? 1 : 0;
}

}  // namespace uvmsim::cli
