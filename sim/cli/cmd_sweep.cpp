// `uvmsim sweep SPEC`: run the cartesian product of a sweep specification on local cores or as a
// Slurm job array, resumably, and aggregate the results (docs/sweeps.md).
#include <cmath>
#include <iostream>
#include <iterator>
#include <set>

#include <boost/program_options.hpp>

#include "core/error.h"
#include "sim/cli/commands.h"
#include "sim/sweep/files.h"
#include "sim/sweep/identity.h"
#include "sim/sweep/process.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/slurm.h"
#include "sim/sweep/spec.h"
#include "sim/sweep/table.h"
#include "sim/sweep/worker.h"

namespace uvmsim::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace uvmsim::sweep;

namespace {

// "90", "90s", "30m", "2h" -> seconds; a UsageError naming `opt` otherwise.
double parse_duration(const std::string& text, const std::string& opt) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = used ? text.substr(used) : "";
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
  if (!used || scale == 0 || !std::isfinite(v) || v <= 0 || v * scale > 1e8)
    throw UsageError(opt + ": expected a positive duration such as 90, 90s, 30m or 2h, got '" +
                     text + "'");
  return v * scale;
}

int worker_main(const po::variables_map& vm, std::ostream& err) {
  const fs::path out = vm["worker"].as<std::string>();
  WorkerOptions wo;
  wo.rerun = vm.count("rerun") > 0;
  if (vm.count("point-timeout"))
    wo.point_timeout = parse_duration(vm["point-timeout"].as<std::string>(), "--point-timeout");
  json descs;
  if (vm.count("tasks")) {
    if (!vm.count("task")) throw UsageError("--tasks: needs --task N");
    descs = read_task(vm["tasks"].as<std::string>(), vm["task"].as<std::size_t>());
  } else {
    const std::string in{std::istreambuf_iterator<char>(std::cin), {}};
    descs = json::parse(in, nullptr, false);
    if (descs.is_discarded()) throw UserError("sweep worker: standard input is not valid JSON");
  }
  return run_worker(descs, out, wo, err);
}

void write_meta(const SweepSpec& spec, const std::vector<PointSpec>& points,
                const ResultStore& store) {
  json m = {{"format", "uvmsim-sweep/1"},
            {"name", spec.name},
            {"description", spec.description},
            {"spec", spec.file.empty() ? "" : fs::absolute(spec.file).string()},
            {"axes", spec.axis_names()},
            {"varying", spec.varying_axes()},
            {"baseline", json(spec.baseline)},
            {"baseline_text", spec.baseline_text()},
            {"points", points.size()}};
  write_atomic(store.dir() / "sweep.json", m.dump(2) + "\n");
}

}  // namespace

int cmd_sweep(const Args& args, std::ostream& out, std::ostream& err) {
  po::options_description main_opts(
      "usage: uvmsim sweep SPEC [--out DIR] [--jobs N] [--backend local|slurm] [options]\n\n"
      "Simulates every point of a sweep specification (JSON; see docs/sweeps.md and\n"
      "configs/sweeps/): the cartesian product of workloads, GPU presets, policies, knobs,\n"
      "oversubscription levels and seeds, minus exclusions. Each distinct trace is generated\n"
      "once. Results go to DIR/points/<id>.json (written atomically) and DIR/results.csv.\n"
      "Rerunning skips finished points, so an interrupted sweep resumes where it stopped.\n\n"
      "options");
  std::vector<std::string> only, slurm_extra;
  main_opts.add_options()("help,h", "show this help")(
      "out,o", po::value<std::string>(), "output directory (default: sweeps/<spec name>)")(
      "jobs,j", po::value<unsigned>(), "local worker processes (default: every CPU)")(
      "backend", po::value<std::string>()->default_value("local"), "local or slurm")(
      "progress", po::value<std::string>()->default_value("auto"),
      "auto, bar, lines or none (auto: a bar on a terminal, else a line per point)")(
      "list", "print the points (id, status, label) and exit")(
      "only", po::value<std::vector<std::string>>(&only)->composing(),
      "run only this point: an id or an exact label (repeatable)")(
      "retry-failed", "run only the points whose last attempt failed")(
      "rerun", "recompute points that already have a result")(
      "collect", "run nothing; rebuild results.csv from the results present")(
      "point-timeout", po::value<std::string>(),
      "stop a point after this much wall time and fail it (e.g. 600, 30m, 2h; default: none)")(
      "worker-bin", po::value<std::string>(),
      "uvmsim binary the points run with, copied into DIR/bin (default: $UVMSIM_BIN, else this "
      "executable)");
  po::options_description slurm_opts("Slurm backend (--backend slurm)");
  slurm_opts.add_options()("detach", "submit and return without waiting")(
      "slurm-partition", po::value<std::string>(), "partition (-p)")(
      "slurm-account", po::value<std::string>(), "account (-A)")(
      "slurm-qos", po::value<std::string>(), "quality of service")(
      "slurm-time", po::value<std::string>(), "time limit per array task, e.g. 2:00:00")(
      "slurm-mem", po::value<std::string>(), "memory per array task, e.g. 8G")(
      "slurm-cpus-per-task", po::value<unsigned>()->default_value(1), "CPUs per array task")(
      "slurm-chunk", po::value<std::size_t>()->default_value(0),
      "points per array task (0: one, or more to stay within --slurm-max-array)")(
      "slurm-max-array", po::value<std::size_t>()->default_value(1000),
      "most array tasks to submit at once (the cluster's MaxArraySize - 1)")(
      "slurm-max-running", po::value<unsigned>()->default_value(0),
      "run at most this many array tasks at once (0: no limit)")(
      "slurm-option", po::value<std::vector<std::string>>(&slurm_extra)->composing(),
      "extra #SBATCH option, verbatim, e.g. --slurm-option=--constraint=skylake (repeatable)")(
      "slurm-poll", po::value<double>()->default_value(2.0), "seconds between squeue polls");
  po::options_description hidden;
  hidden.add_options()("spec", po::value<std::string>())("worker", po::value<std::string>())(
      "tasks", po::value<std::string>())("task", po::value<std::size_t>());
  po::options_description all;
  all.add(main_opts).add(slurm_opts).add(hidden);
  po::positional_options_description pos;
  pos.add("spec", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << main_opts << "\n"
        << slurm_opts << "\n"
        << "Exit status: 0 all points finished, 1 some failed (rerun to retry them), 2 usage\n"
           "error, 128+N interrupted by signal N (finished results are kept).\n";
    return 0;
  }
  if (vm.count("worker")) {
    const int rc = worker_main(vm, err);
    if (rc == kWorkerOutputError) err.flush();
    return rc;
  }
  if (!vm.count("spec")) throw UsageError("missing sweep specification (uvmsim sweep SPEC)");

  const std::string backend = vm["backend"].as<std::string>();
  if (backend != "local" && backend != "slurm")
    throw UsageError("--backend: expected local or slurm, got '" + backend + "'");
  ExecOptions opts;
  if (vm.count("jobs")) {
    opts.jobs = vm["jobs"].as<unsigned>();
    if (opts.jobs == 0) throw UsageError("--jobs: must be at least 1");
  }
  opts.progress =
      as_usage([&] { return parse_progress_mode(vm["progress"].as<std::string>(), err); });
  opts.rerun = vm.count("rerun") > 0;
  if (vm.count("worker-bin")) opts.worker_bin = vm["worker-bin"].as<std::string>();
  if (vm.count("point-timeout"))
    opts.point_timeout = parse_duration(vm["point-timeout"].as<std::string>(), "--point-timeout");

  // The spec is what the user asked for: every error in it is a usage error (exit 2), found
  // before anything runs.
  const SweepSpec spec = as_usage([&] { return SweepSpec::load(vm["spec"].as<std::string>()); });
  const fs::path dir =
      vm.count("out") ? fs::path(vm["out"].as<std::string>()) : fs::path("sweeps") / spec.name;
  ResultStore store(dir);
  DirLock lock(store.dir());
  store.remove_stale_temp_files();
  const std::vector<PointSpec> points = as_usage([&] { return spec.expand(store.trace_dir()); });
  const fs::path csv = store.dir() / "results.csv";

  if (vm.count("list")) {
    for (const auto& p : points) {
      const char* st = store.load_result(p)       ? "done   "
                       : store.load_failure(p.id) ? "failed "
                                                  : "pending";
      out << p.id << "  " << st << "  " << p.label << "\n";
    }
    out << points.size() << " point(s)\n";
    return 0;
  }

  // The points to consider this time.
  std::vector<PointSpec> selected;
  if (!only.empty()) {
    std::set<std::string> want(only.begin(), only.end()), seen;
    for (const auto& p : points)
      if (want.count(p.id) || want.count(p.label)) {
        selected.push_back(p);
        seen.insert(want.count(p.id) ? p.id : p.label);
      }
    for (const auto& w : want)
      if (!seen.count(w))
        throw UsageError("--only: no point has id or label '" + w + "' (uvmsim sweep SPEC --list)");
  } else if (vm.count("retry-failed")) {
    for (const auto& p : points)
      if (!store.load_result(p) && store.load_failure(p.id)) selected.push_back(p);
  } else {
    selected = points;
  }

  write_meta(spec, points, store);
  if (vm.count("collect")) {
    const std::size_t n = write_results_csv(spec.axis_names(), spec.baseline, points, store, csv);
    out << "sweep " << spec.name << ": " << n << " of " << points.size()
        << " point(s) have results -> " << csv.string() << "\n";
    return 0;
  }

  if (backend == "local") {
    const std::string job = active_slurm_job(store);
    if (!job.empty())
      throw UserError(store.dir().string() + ": Slurm job " + job +
                      " is still writing results here; wait for it (--backend slurm) or scancel " +
                      job);
  }
  // Every point of the directory is computed by one pinned copy of the binary (docs/sweeps.md,
  // "Build identity"); nothing to run needs no pin.
  auto todo = pending_points(selected, store, opts.rerun);
  if (!todo.empty()) {
    opts.worker_bin = pin_worker_binary(store, points, opts.worker_bin, opts.rerun, err);
    todo = pending_points(selected, store, opts.rerun);
  } else if (store.pinned()) {
    const std::string mine =
        build_id_of(opts.worker_bin.empty() ? worker_binary() : opts.worker_bin);
    if (mine != store.pinned()->build_id)
      err << "note: every selected point has a result of build " << store.pinned()->build_id
          << "; this run's binary is build " << mine << " (--rerun recomputes them with it)\n";
  }
  if (opts.progress != ProgressMode::None)
    err << "sweep " << spec.name << ": " << selected.size() << " point(s), "
        << selected.size() - todo.size() << " already finished, " << todo.size() << " to run ("
        << backend
        << (store.pinned() ? ", build " + short_build_id(store.pinned()->build_id) : std::string())
        << ")\n";

  ExecSummary sum;
  sum.total = selected.size();
  sum.skipped = selected.size() - todo.size();
  if (!todo.empty()) {
    if (const int sig = prepare_traces(spec.workloads, todo, store, opts, err)) {
      err << "uvmsim sweep: interrupted while generating traces\n";
      return 128 + sig;
    }
    if (backend == "local") {
      sum = run_local(todo, store, opts, selected.size(), err);
    } else {
      SlurmOptions so;
      auto str = [&](const char* k) {
        return vm.count(k) ? vm[k].as<std::string>() : std::string();
      };
      so.partition = str("slurm-partition");
      so.account = str("slurm-account");
      so.qos = str("slurm-qos");
      so.time = str("slurm-time");
      so.mem = str("slurm-mem");
      so.cpus_per_task = vm["slurm-cpus-per-task"].as<unsigned>();
      so.chunk = vm["slurm-chunk"].as<std::size_t>();
      so.max_array = vm["slurm-max-array"].as<std::size_t>();
      if (so.max_array == 0) throw UsageError("--slurm-max-array: must be at least 1");
      so.max_running = vm["slurm-max-running"].as<unsigned>();
      so.extra = slurm_extra;
      so.detach = vm.count("detach") > 0;
      so.poll_seconds = vm["slurm-poll"].as<double>();
      if (!(so.poll_seconds > 0 && so.poll_seconds <= 3600))
        throw UsageError("--slurm-poll: expected seconds in (0, 3600]");
      so.job_name = "uvmsim-" + spec.name;
      so.rerun = opts.rerun;
      sum = run_slurm(todo, store, so, opts, selected.size(), out, err);
      if (sum.detached) return 0;
    }
  }

  if (!sum.output_error.empty())
    throw OutputError(sum.output_error + "; the sweep stopped: " + std::to_string(sum.ok) +
                      " point(s) finished now and every earlier result are kept; make room and "
                      "rerun the same command to resume");
  const std::size_t rows = write_results_csv(spec.axis_names(), spec.baseline, points, store, csv);
  if (spec.seeds.size() > 1) {
    // A deterministic policy gives the same run for every seed: say so, or its "spread" over
    // seeds would silently be N copies of one measurement (docs/sweeps.md, "Seeds").
    const auto same = seed_insensitive_groups(points, store);
    if (!same.empty())
      err << "note: " << same.size() << " group(s) of points gave identical statistics for all "
          << spec.seeds.size() << " seeds (the policy draws no random numbers), e.g. '"
          << same.front()
          << "'; they are repeats of one run, not a spread (vary \"input_seeds\" for that)\n";
  }
  out << "sweep " << spec.name << ": " << sum.total << " point(s): " << sum.ok << " finished now, "
      << sum.skipped << " already done, " << sum.failures.size() << " failed";
  if (sum.signal)
    out << ", " << (sum.total - sum.skipped - sum.ok - sum.failures.size()) << " interrupted";
  out << "; " << format_duration(sum.seconds);
  if (backend == "local" && !todo.empty()) out << " on " << sum.jobs << " job(s)";
  out << "; " << rows << " result(s) in " << csv.string() << "\n";
  for (const auto& [p, msg] : sum.failures)
    out << "  failed " << p->id << " (" << p->label << "): " << msg << "\n";
  if (!sum.failures.empty())
    out << "  retry the failed points with: uvmsim sweep " << vm["spec"].as<std::string>()
        << " --out " << dir.string() << " --retry-failed   (or --only ID for one)\n";
  if (sum.signal) {
    out << "  interrupted by signal " << sum.signal
        << "; finished results are kept, rerun the same command to resume\n";
    return 128 + sum.signal;
  }
  return sum.failures.empty() ? 0 : 1;
}

}  // namespace uvmsim::cli
