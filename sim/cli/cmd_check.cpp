// `uvmsim check EXPECTATIONS`: run the runs of expectation files in parallel and check recorded
// values and relations between runs (docs/check.md). --update records new values.
#include <stdlib.h>

#include <algorithm>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include <boost/program_options.hpp>

#include "core/error.h"
#include "sim/check/expectations.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/work_files.h"
#include "sim/sweep/files.h"
#include "sim/sweep/identity.h"
#include "sim/sweep/process.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/table.h"

namespace uvmsim::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;
using namespace uvmsim::check;
using namespace uvmsim::sweep;

namespace {

struct Row {
  bool pass;
  std::string run, what, expected, measured;
};

void print_table(std::ostream& out, const std::vector<Row>& rows) {
  std::size_t w_run = 3, w_what = 6, w_exp = 8;
  for (const auto& r : rows) {
    w_run = std::max(w_run, r.run.size());
    w_what = std::max(w_what, r.what.size());
    w_exp = std::max(w_exp, r.expected.size());
  }
  w_what = std::min<std::size_t>(w_what, 60);
  out << "  " << std::left << std::setw(8) << "RESULT" << std::setw(static_cast<int>(w_run) + 2)
      << "RUN" << std::setw(static_cast<int>(w_what) + 2) << "METRIC"
      << std::setw(static_cast<int>(w_exp) + 2) << "EXPECTED"
      << "MEASURED\n";
  for (const auto& r : rows) {
    out << "  " << std::left << std::setw(8) << (r.pass ? "ok" : "FAIL")
        << std::setw(static_cast<int>(w_run) + 2) << r.run;
    if (r.what.size() > w_what) {
      // Long relation texts get their own line.
      out << r.what << "\n  " << std::string(8 + w_run + 2, ' ')
          << std::setw(static_cast<int>(w_what) + 2) << "";
    } else {
      out << std::setw(static_cast<int>(w_what) + 2) << r.what;
    }
    out << std::setw(static_cast<int>(w_exp) + 2) << r.expected << r.measured << "\n";
  }
}

}  // namespace

int cmd_check(const Args& args, std::ostream& out, std::ostream& err) {
  po::options_description desc(
      "usage: uvmsim check EXPECTATIONS... [--update] [--jobs N] [options]\n\n"
      "Runs the runs of expectation files (or of every *.json in a directory) in parallel and\n"
      "checks their recorded values (exact, or within a tolerance) and the relations between\n"
      "runs; prints every failure and a summary (-v: the whole table) and exits 1 if anything\n"
      "fails. --update rewrites the\n"
      "recorded values with the measured ones (relations are kept and still checked).\n"
      "Format: docs/check.md; the project's suite: configs/expectations/.\n\noptions");
  std::vector<std::string> files, sets, only;
  desc.add_options()("help,h", "show this help")(
      "verbose,v", "print every check with its expected and measured value, not only failures")(
      "update", "record the measured values in the files (after an intended change)")(
      "jobs,j", po::value<unsigned>(), "parallel runs (default: every CPU)")(
      "set", po::value<std::vector<std::string>>(&sets)->composing(),
      "override a knob in every run: --set KEY=VALUE (repeatable), e.g. to see what a change "
      "of a policy parameter breaks")(
      "only", po::value<std::vector<std::string>>(&only)->composing(),
      "check only this run (repeatable; relations need all their runs)")(
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
  if (files.empty()) throw UsageError("missing expectation file or directory (uvmsim check FILE)");
  const bool update = vm.count("update") > 0, verbose = vm.count("verbose") > 0;

  ExecOptions opts;
  if (vm.count("jobs")) {
    opts.jobs = vm["jobs"].as<unsigned>();
    if (opts.jobs == 0) throw UsageError("--jobs: must be at least 1");
  }
  opts.progress =
      as_usage([&] { return parse_progress_mode(vm["progress"].as<std::string>(), err); });
  opts.rerun = true;  // a regression check always simulates with the current binary
  if (vm.count("worker-bin")) opts.worker_bin = vm["worker-bin"].as<std::string>();

  // The expectation files are what the user asked to check: an error in one is a usage error.
  std::vector<ExpectationFile> exps;
  for (const auto& p : json_files(files, "expectation"))
    exps.push_back(as_usage([&] { return ExpectationFile::load(p, sets); }));
  for (const auto& o : only) {
    const bool known = std::any_of(exps.begin(), exps.end(),
                                   [&](const ExpectationFile& f) { return f.find_run(o); });
    if (!known) throw UsageError("--only: no run named '" + o + "'");
  }
  auto selected = [&](const std::string& run) {
    return only.empty() || std::find(only.begin(), only.end(), run) != only.end();
  };

  WorkDir work(vm.count("keep") ? vm["keep"].as<std::string>() : "", "uvmsim-check");
  ResultStore store(work.path());
  DirLock lock(store.dir());

  // One point per selected run; the point's axes name the file and the run.
  std::vector<PointSpec> points;
  std::vector<Workload> workloads;
  std::map<std::pair<std::size_t, std::string>, std::size_t> point_of;  // (file, run) -> point
  for (std::size_t fi = 0; fi < exps.size(); ++fi) {
    const auto& f = exps[fi];
    for (const auto& [n, w] : f.workloads) workloads.push_back(w);
    for (const auto& r : f.runs) {
      if (!selected(r.name)) continue;
      const std::string where = f.path.string() + ": runs." + r.name;
      const SimConfig cfg = as_usage([&] { return r.settings.resolve(where); });
      ordered_json axes;
      axes["file"] = f.path.string();
      axes["run"] = r.name;
      point_of[{fi, r.name}] = points.size();
      points.push_back(PointSpec::make(f.path.stem().string() + ":" + r.name, axes,
                                       f.workloads.at(r.workload), r.settings.oversub, cfg,
                                       store.trace_dir()));
    }
  }
  std::vector<const PointSpec*> todo;
  for (const auto& p : points) todo.push_back(&p);
  // Every run is simulated afresh by one pinned copy of the binary: the results compared are
  // all of one build.
  opts.worker_bin = pin_worker_binary(store, points, opts.worker_bin, /*rerun=*/true, err);
  if (opts.progress != ProgressMode::None)
    err << "check: " << points.size() << " run(s) from " << exps.size() << " file(s)\n";
  if (const int sig = prepare_traces(workloads, todo, store, opts, err)) return 128 + sig;
  const ExecSummary sum = run_local(todo, store, opts, points.size(), err);
  if (sum.signal) {
    err << "uvmsim check: interrupted\n";
    return 128 + sum.signal;
  }
  if (!sum.output_error.empty()) throw OutputError(sum.output_error + "; the check stopped");

  std::vector<std::string> failures;
  std::size_t passed = 0, failed = 0;
  for (std::size_t fi = 0; fi < exps.size(); ++fi) {
    auto& f = exps[fi];
    // Measured metrics of each run (empty + error if the run failed).
    std::map<std::string, std::map<std::string, json>> metrics;
    std::map<std::string, std::string> run_error;
    for (const auto& r : f.runs) {
      if (!selected(r.name)) continue;
      const PointSpec& p = points[point_of.at({fi, r.name})];
      if (auto res = store.load_result(p))
        metrics[r.name] = flatten_metrics((*res)["stats"]);
      else
        run_error[r.name] = failure_message(store, p);
    }
    auto measured = [&](const std::string& run, const std::string& metric) -> json {
      auto it = metrics.find(run);
      if (it == metrics.end()) return nullptr;
      auto m = it->second.find(metric);
      return m == it->second.end() ? json(nullptr) : m->second;
    };

    std::vector<Row> rows;
    std::size_t changed = 0;
    for (const auto& r : f.runs) {
      if (!selected(r.name)) continue;
      if (run_error.count(r.name)) {
        rows.push_back({false, r.name, "(run)", "a result", "run failed"});
        failures.push_back(f.path.string() + ": run " + r.name + " failed: " + run_error[r.name]);
        ++failed;
        continue;
      }
      auto& expect = f.doc["runs"][r.name]["expect"];
      std::vector<std::string> names = r.metrics;
      if (update)
        for (const auto& m : f.record)
          if (std::find(names.begin(), names.end(), m) == names.end()) names.push_back(m);
      for (const auto& m : names) {
        const json spec = expect.contains(m) ? json(expect[m]) : json(nullptr);
        const json got = measured(r.name, m);
        const Verdict v = compare(spec, got, f.tolerance(m));
        // --update re-records every value that differs from the measurement, not only failing
        // ones: values inside a time tolerance would otherwise drift from the model unseen.
        const bool stale =
            !v.pass || (spec.is_object() ? spec.contains("value") && spec["value"] != got
                                         : !spec.is_null() && spec != got);
        if (update && stale && !got.is_null()) {
          expect[m] = updated(expect.contains(m) ? expect[m] : ordered_json(nullptr), got);
          ++changed;
          rows.push_back({true, r.name, m, v.expected, v.measured + "  (updated)"});
          ++passed;
          continue;
        }
        rows.push_back({v.pass, r.name, m, v.expected, v.measured});
        if (v.pass) {
          ++passed;
        } else {
          ++failed;
          failures.push_back(f.path.string() + ": run " + r.name + ": " + m + ": expected " +
                             v.expected + ", measured " + v.measured);
        }
      }
    }
    for (const auto& rel : f.relations) {
      const auto& refs = rel.relation.refs();
      if (!std::all_of(refs.begin(), refs.end(),
                       [&](const Relation::Ref& x) { return selected(x.run); }))
        continue;
      std::string missing;
      for (const auto& x : refs) {
        const json v = measured(x.run, x.metric);
        if (!v.is_number() && missing.empty())
          missing = run_error.count(x.run) ? "run " + x.run + " failed"
                                           : "no numeric metric '" + x.metric + "' in run " + x.run;
      }
      if (!missing.empty()) {
        rows.push_back({false, "relation", rel.relation.text(), "", missing});
        failures.push_back(f.path.string() + ": relation \"" + rel.relation.text() +
                           "\": " + missing);
        ++failed;
        continue;
      }
      const auto o = rel.relation.evaluate(
          [&](const Relation::Ref& x) { return measured(x.run, x.metric).get<double>(); });
      rows.push_back(
          {o.holds, "relation", rel.relation.text(), o.holds ? "holds" : "does not hold", o.shown});
      if (o.holds) {
        ++passed;
      } else {
        ++failed;
        failures.push_back(f.path.string() + ": relation \"" + rel.relation.text() +
                           "\" does not hold: " + o.shown + " is false" +
                           (rel.why.empty() ? "" : " (" + rel.why + ")"));
      }
    }
    if (verbose) {
      out << f.path.string() << (f.description.empty() ? "" : ": " + f.description) << "\n";
      print_table(out, rows);
    }
    if (update && changed) {
      write_atomic(f.path, compact_dump(f.doc) + "\n");
      out << (verbose ? "  " : "") << "updated " << changed << " recorded value(s) in "
          << f.path.string() << "\n";
    }
    if (verbose) out << "\n";
  }
  for (const auto& m : failures) out << "FAILED: " << m << "\n";
  const auto& pin = *store.pinned();
  const auto who = BuildIdentity::from_json(pin.identity);
  out << "check: simulated by " << (who ? who->text() : "build " + pin.build_id) << "\n";
  out << "check: " << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

}  // namespace uvmsim::cli
