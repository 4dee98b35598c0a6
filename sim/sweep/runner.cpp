#include "sim/sweep/runner.h"

#include <map>
#include <ostream>
#include <set>

#include "core/error.h"
#include "sim/sweep/process.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

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
  std::map<std::string, const Workload*> by_id;
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
    by_id[task.id] = &w;
    tasks.push_back(std::move(task));
  }
  if (tasks.empty()) return 0;
  err << "generating " << tasks.size() << " trace(s) into " << store.trace_dir().string() << "\n";
  std::string first_error;
  ProcessPool pool;
  pool.on_finish = [&](const Task& t, const TaskOutcome& o) {
    if (o.interrupted) return;
    if (!o.status.ok() && first_error.empty()) {
      std::string log = tail_of_file(t.log, 5);
      while (!log.empty() && log.back() == '\n') log.pop_back();
      first_error =
          "workload '" + t.id + "': trace generation failed (" + o.status.describe() + "): " + log;
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
  std::string m = f->value("error", "unknown error");
  if (f->contains("log")) m += " (log: " + (*f)["log"].get<std::string>() + ")";
  return m;
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
    t.log = store.log_path(p->id);
    t.input = json::array({p->to_json()}).dump();
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
    // The worker records its own errors; a crash (signal, abort) leaves that to us.
    if (!store.load_failure(p.id) || o.status.signal != 0) {
      const std::string why =
          o.status.ok() ? "worker exited without a result" : "worker " + o.status.describe();
      store.save_failure(p, why, t.log);
    } else {
      // Keep the log beside the failure record for inspection.
      auto f = store.load_failure(p.id);
      if (f && !f->contains("log")) store.save_failure(p, f->value("error", ""), t.log);
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
