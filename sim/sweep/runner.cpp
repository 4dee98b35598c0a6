#include "sim/sweep/runner.h"

#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "sim/sweep/files.h"
#include "sim/sweep/identity.h"
#include "sim/sweep/process.h"
#include "sim/sweep/slurm.h"
#include "sim/sweep/worker.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

std::string pin_worker_binary(ResultStore& store, const std::vector<PointSpec>& points,
                              std::string binary, bool rerun, std::ostream& err) {
  if (binary.empty()) binary = worker_binary();
  const std::string id = build_id_of(binary);
  const json identity = id == this_build().build_id ? this_build().to_json() : json(nullptr);
  const auto& old = store.pinned();
  std::error_code ec;
  if (old && old->build_id == id) {
    if (!fs::exists(old->binary, ec)) store.pin(binary, identity);  // the copy was deleted
    return store.pinned()->binary.string();
  }
  if (old) {
    // Another build than the one the results here come from.
    std::size_t kept = 0;
    std::optional<json> sample;
    for (const auto& p : points)
      if (auto r = store.load_result(p)) {
        ++kept;
        if (!sample) sample = std::move(r);
      }
    const auto was = sample ? BuildIdentity::from_json((*sample)["build"]) : std::nullopt;
    auto describe = [](const std::string& build, const std::optional<BuildIdentity>& who) {
      return "build " + build +
             (who ? " (uvmsim " + who->version + ", source revision " + who->revision + ")"
                  : std::string());
    };
    const std::string old_text = describe(old->build_id, was);
    const std::string new_text = describe(id, BuildIdentity::from_json(identity));
    if (const std::string job = active_slurm_job(store); !job.empty())
      throw UsageError(store.dir().string() + ": Slurm job " + job +
                       " is still computing points with " + old_text + "; this run's binary is " +
                       new_text + ": wait for the job (--worker-bin " + old->binary.string() +
                       ") or scancel " + job);
    if (kept > 0 && !rerun)
      throw UsageError(
          store.dir().string() + ": " + std::to_string(kept) + " result(s) here were computed by " +
          old_text + ", but this run's binary is " + new_text +
          ": finishing the sweep with it would mix builds; finish with the pinned "
          "copy (--worker-bin " +
          old->binary.string() + ") or recompute every point with this binary (--rerun)");
    // Traces are inputs too: the new build generates its own.
    for (const auto& e : fs::directory_iterator(store.trace_dir(), ec))
      if (e.is_regular_file(ec)) fs::remove(e.path(), ec);
    err << "pinning " << new_text << " for " << store.dir().string() << " (was " << old_text
        << (kept ? "; its " + std::to_string(kept) + " result(s) no longer count" : std::string())
        << ")\n";
  }
  return store.pin(binary, identity).binary.string();
}

std::vector<const PointSpec*> pending_points(const std::vector<PointSpec>& points,
                                             const ResultStore& store, bool rerun) {
  std::vector<const PointSpec*> todo;
  for (const auto& p : points)
    if (rerun || !store.load_result(p)) todo.push_back(&p);
  return todo;
}

int prepare_traces(const std::vector<Workload>& workloads,
                   const std::vector<const PointSpec*>& points, const ResultStore& store,
                   const ExecOptions& opts, std::ostream& err) {
  std::set<fs::path> needed;
  for (const PointSpec* p : points) needed.insert(p->trace);
  const std::string bin = opts.worker_bin.empty() ? worker_binary() : opts.worker_bin;
  std::vector<Task> tasks;
  std::set<fs::path> queued;
  for (const auto& w : workloads) {
    if (!w.generated()) continue;
    const fs::path t = fs::absolute(w.trace_path(store.trace_dir())).lexically_normal();
    std::error_code ec;
    if (!needed.count(t) || queued.count(t) || fs::exists(t, ec)) continue;
    queued.insert(t);
    Task task;
    task.id = w.name;
    task.argv = {bin};
    for (auto& a : w.gen_args(t)) task.argv.push_back(std::move(a));
    task.log = store.dir() / "logs" / ("gen-" + t.stem().string() + ".log");
    tasks.push_back(std::move(task));
  }
  if (tasks.empty()) return 0;
  err << "generating " << tasks.size() << " trace(s) into " << store.trace_dir().string() << "\n";
  std::string first_error;
  ProcessPool pool;
  pool.on_finish = [&](const Task& t, const TaskOutcome& o) {
    if (o.interrupted) return;
    if (!o.status.ok() && first_error.empty()) {
      first_error = "workload '" + t.id + "': trace generation failed (" + o.status.describe() +
                    "): " + last_line_of_file(t.log);
      return;
    }
    std::error_code ec;
    fs::remove(t.log, ec);
    // Shared read-only by every point that uses it.
    fs::permissions(t.argv.back(),
                    fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                    fs::perm_options::replace, ec);
  };
  const unsigned jobs = opts.jobs ? opts.jobs : available_cpus();
  const int sig = pool.run(tasks, jobs);
  if (!first_error.empty()) throw UserError(first_error);
  return sig;
}

std::string failure_message(const ResultStore& store, const PointSpec& p) {
  const auto f = store.load_failure(p.id);
  if (!f) return "no result recorded";
  std::string m = (*f)["error"].get<std::string>();
  if (f->contains("log")) m += " (log: " + (*f)["log"].get<std::string>() + ")";
  return m;
}

// Why the output directory cannot be written, found by writing what a result would (a
// temporary, removed again); used when a worker said so but its log could not hold the reason.
static std::string probe_output(const ResultStore& store) {
  try {
    AtomicFile probe(store.dir() / "points" / "write-probe");
    probe.write(std::string(64 * 1024, ' '));
    probe.commit();
    std::error_code ec;
    fs::remove(probe.target(), ec);
  } catch (const OutputError& e) {
    return e.what();
  }
  return store.dir().string() + ": a worker could not write its result";
}

ExecSummary run_local(const std::vector<const PointSpec*>& todo, const ResultStore& store,
                      const ExecOptions& opts, std::size_t total, std::ostream& err) {
  ExecSummary s;
  s.total = total;
  s.skipped = total - todo.size();
  s.jobs = opts.jobs ? opts.jobs : available_cpus();
  const std::string bin = opts.worker_bin.empty() ? worker_binary() : opts.worker_bin;

  std::vector<Task> tasks;
  std::map<std::string, const PointSpec*> by_id;
  for (const PointSpec* p : todo) {
    Task t;
    t.id = p->id;
    t.argv = {bin, "sweep", "--worker", store.dir().string()};
    if (opts.rerun) t.argv.push_back("--rerun");
    if (opts.point_timeout > 0) {
      std::ostringstream o;
      o.precision(17);
      o << opts.point_timeout;
      t.argv.insert(t.argv.end(), {"--point-timeout", o.str()});
    }
    t.log = store.log_path(p->id);
    t.input = json::array({p->to_json()}).dump(-1, ' ', false, json::error_handler_t::replace);
    by_id[p->id] = p;
    tasks.push_back(std::move(t));
  }

  Progress progress(err, opts.progress, total, s.skipped);
  progress.tick(true);
  ProcessPool pool;
  pool.on_start = [&](const Task&) { progress.started(); };
  pool.on_tick = [&] { progress.tick(); };
  pool.on_finish = [&](const Task& t, const TaskOutcome& o) {
    const PointSpec& p = *by_id.at(t.id);
    std::error_code ec;
    if (o.interrupted) {
      fs::remove(t.log, ec);  // not a failure: the point simply did not finish
      return;
    }
    if (o.status.ok() && store.load_result(p)) {
      fs::remove(t.log, ec);
      ++s.ok;
      progress.finished(p.label, true, o.seconds);
      return;
    }
    if (o.status.signal == 0 && o.status.code == kWorkerOutputError) {
      // The output directory cannot be written (disk full): every further point would fail the
      // same way, so none is started; the point is not failed, it is simply not done.
      if (s.output_error.empty()) {
        // The worker's own message, if its log (on the same file system) could take it.
        const std::string prefix = "uvmsim sweep: error: ";
        const std::string line = last_line_of_file(t.log);
        if (line.rfind(prefix, 0) == 0) s.output_error = line.substr(prefix.size());
        if (s.output_error.empty()) s.output_error = probe_output(store);
      }
      pool.drain();
      fs::remove(t.log, ec);
      return;
    }
    // The worker records its own errors; a worker that died (signal, abort) leaves that to us.
    if (!store.load_failure(p.id) || o.status.signal != 0) {
      const std::string why =
          o.status.ok() ? "worker exited without a result" : "worker " + o.status.describe();
      store.save_failure(p, why, t.log);
    } else {
      // Keep the log beside the failure record for inspection.
      auto f = store.load_failure(p.id);
      if (f && !f->contains("log")) store.save_failure(p, (*f)["error"].get<std::string>(), t.log);
    }
    const std::string msg = failure_message(store, p);
    s.failures.emplace_back(&p, msg);
    progress.finished(p.label, false, o.seconds, msg);
  };
  s.signal = pool.run(tasks, s.jobs);
  progress.close();
  s.seconds = progress.elapsed();
  return s;
}

}  // namespace uvmsim::sweep
