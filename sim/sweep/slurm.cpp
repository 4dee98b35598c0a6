#include "sim/sweep/slurm.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "sim/sweep/files.h"
#include "sim/sweep/process.h"
#include "sim/sweep/worker.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

struct QueueState {
  bool finished = false;
  std::size_t running = 0, pending = 0;
  std::size_t held = 0;     ///< pending tasks that will not start by themselves
  std::string held_reason;  ///< e.g. "launch failed requeued held"
  std::string error;
};

// The remaining tasks of an array job, from squeue (no accounting database needed). squeue's
// standard output is parsed alone (warnings go to its standard error), and a line that is not
// "STATE|REASON" makes the whole answer an error, which the caller retries: a partial or garbled
// answer is never taken for a job with fewer tasks.
QueueState query(const std::string& job) {
  QueueState q;
  const Captured c =
      run_capture({"squeue", "-h", "-r", "-j", job, "-o", "%T|%r"}, /*separate_stderr=*/true);
  if (!c.status.ok()) {
    // Slurm forgets finished jobs after MinJobAge; squeue then calls the id invalid.
    if (c.error.find("Invalid job id") != std::string::npos ||
        c.output.find("Invalid job id") != std::string::npos) {
      q.finished = true;
    } else {
      q.error = trim(c.error.empty() ? c.output : c.error);
      if (q.error.empty()) q.error = "squeue " + c.status.describe();
    }
    return q;
  }
  std::size_t start = 0;
  while (start < c.output.size()) {
    auto end = c.output.find('\n', start);
    if (end == std::string::npos) end = c.output.size();
    const std::string line = trim(c.output.substr(start, end - start));
    start = end + 1;
    if (line.empty()) continue;
    const auto bar = line.find('|');
    const std::string state = line.substr(0, bar);
    if (bar == std::string::npos || state.empty() ||
        state.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != std::string::npos) {
      q = QueueState{};
      q.error = "unexpected squeue output line '" + line.substr(0, 80) + "'";
      return q;
    }
    const std::string reason = line.substr(bar + 1);
    if (state == "RUNNING" || state == "COMPLETING") {
      ++q.running;
    } else {
      ++q.pending;
      // A task whose launch failed is requeued and held: it never runs without an admin.
      if (reason.find("held") != std::string::npos || reason.find("Held") != std::string::npos) {
        ++q.held;
        q.held_reason = reason;
      }
    }
  }
  q.finished = q.running == 0 && q.pending == 0;
  return q;
}

fs::path job_file(const ResultStore& store) { return store.dir() / "slurm" / "job.json"; }

struct Job {
  std::string id;
  std::vector<std::string> point_ids;  ///< in task order, `chunk` per task
  std::size_t chunk = 1;
};

// The job record of an earlier submission (OUT/slurm/job.json), if there is one. It is written
// atomically, so anything malformed in it is damage: a one-line error naming the file and the
// field, never a guess (it decides which job's points are waited for).
std::optional<Job> read_job(const ResultStore& store) {
  const fs::path f = job_file(store);
  std::error_code ec;
  if (!fs::exists(f, ec)) return std::nullopt;
  const json j = json::parse(read_file(f), nullptr, false);
  auto bad = [&](const std::string& field, const std::string& what) {
    throw UserError(f.string(), field,
                    what +
                        " (the record of a submitted Slurm job; if no job of this sweep runs "
                        "any more, remove it)");
  };
  if (j.is_discarded() || !j.is_object()) bad("(file)", "not a JSON object");
  Job job;
  if (!j.contains("job_id") || !j["job_id"].is_string() || j["job_id"].get<std::string>().empty() ||
      j["job_id"].get<std::string>().find_first_not_of("0123456789") != std::string::npos)
    bad("job_id", "expected a Slurm job id (digits)");
  job.id = j["job_id"].get<std::string>();
  if (!j.contains("chunk") || !j["chunk"].is_number_unsigned() ||
      j["chunk"].get<std::size_t>() == 0)
    bad("chunk", "expected a positive integer");
  job.chunk = j["chunk"].get<std::size_t>();
  if (!j.contains("points") || !j["points"].is_array())
    bad("points", "expected a list of point ids");
  for (const auto& id : j["points"]) {
    if (!id.is_string()) bad("points", "expected a list of point ids");
    job.point_ids.push_back(id.get<std::string>());
  }
  return job;
}

Job submit(const std::vector<const PointSpec*>& todo, const ResultStore& store,
           const SlurmOptions& slurm, const ExecOptions& opts, const std::string& bin,
           std::ostream& err) {
  const std::size_t n = todo.size();
  std::size_t chunk = slurm.chunk;
  if (chunk == 0) chunk = std::max<std::size_t>(1, (n + slurm.max_array - 1) / slurm.max_array);
  std::vector<std::vector<const PointSpec*>> tasks;
  for (std::size_t i = 0; i < n; i += chunk)
    tasks.emplace_back(todo.begin() + static_cast<std::ptrdiff_t>(i),
                       todo.begin() + static_cast<std::ptrdiff_t>(std::min(n, i + chunk)));
  if (tasks.size() > slurm.max_array)
    throw UserError("--slurm-chunk: " + std::to_string(tasks.size()) +
                    " array tasks exceed --slurm-max-array " + std::to_string(slurm.max_array) +
                    "; use larger chunks");

  const fs::path dir =
      store.dir() / "slurm" /
      ("submit-" + time_now("%Y%m%d-%H%M%S", /*utc=*/false) + "-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::create_directories(store.dir() / "slurm" / "logs", ec);
  if (ec) throw UserError(dir.string() + ": cannot create directory (" + ec.message() + ")");
  const fs::path task_file = dir / "tasks.jsonl";
  write_task_file(task_file, tasks);
  const fs::path script = dir / "sweep.sbatch";
  write_atomic(script,
               sbatch_script(slurm, bin, store.dir(), task_file, tasks.size(), opts.point_timeout));
  fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add, ec);
  // A fresh attempt: earlier failure records of these points would count as failed at once.
  for (const PointSpec* p : todo) fs::remove(store.failure_path(p->id), ec);

  const Captured c =
      run_capture({"sbatch", "--parsable", script.string()}, /*separate_stderr=*/true);
  if (!c.status.ok())
    throw UserError("sbatch " + script.string() + ": " + c.status.describe() + ": " +
                    trim(c.error.empty() ? c.output : c.error) +
                    (c.status.code == 127 ? " (sbatch not found: install the Slurm client tools, "
                                            "Debian package slurm-client, and set SLURM_CONF)"
                                          : ""));
  // --parsable prints "<jobid>" or "<jobid>;<cluster>" on standard output.
  std::string out = trim(c.output);
  if (const auto nl = out.rfind('\n'); nl != std::string::npos) out = out.substr(nl + 1);
  Job job;
  job.id = out.substr(0, out.find(';'));
  if (job.id.empty() || job.id.find_first_not_of("0123456789") != std::string::npos)
    throw UserError("sbatch " + script.string() + ": unexpected output '" + trim(c.output) + "'");
  job.chunk = chunk;
  for (const PointSpec* p : todo) job.point_ids.push_back(p->id);
  json rec = {{"job_id", job.id},
              {"build_id", store.pinned() ? store.pinned()->build_id : std::string()},
              {"submit_dir", dir.string()},
              {"script", script.string()},
              {"chunk", chunk},
              {"tasks", tasks.size()},
              {"points", job.point_ids},
              {"submitted_at", time_now("%Y%m%d-%H%M%S", /*utc=*/false)}};
  write_atomic(job_file(store), rec.dump(1) + "\n");
  err << "submitted Slurm job " << job.id << ": " << n << " point(s) in " << tasks.size()
      << " array task(s); script " << script.string() << "\n";
  return job;
}

}  // namespace

std::string sbatch_script(const SlurmOptions& slurm, const std::string& worker_bin,
                          const fs::path& out_dir, const fs::path& task_file, std::size_t tasks,
                          double point_timeout) {
  std::string s = "#!/bin/bash\n";
  s += "# Written by uvmsim sweep: one array task per line of " + task_file.filename().string() +
       ".\n# Each task simulates its points and writes results into " + out_dir.string() +
       "/points.\n# Resubmitting this script is safe: finished points are skipped.\n";
  s += "#SBATCH --job-name=" +
       (slurm.job_name.empty() ? std::string("uvmsim-sweep") : slurm.job_name) + "\n";
  s += "#SBATCH --array=0-" + std::to_string(tasks - 1) +
       (slurm.max_running ? "%" + std::to_string(slurm.max_running) : "") + "\n";
  s += "#SBATCH --ntasks=1\n";
  s += "#SBATCH --cpus-per-task=" + std::to_string(slurm.cpus_per_task) + "\n";
  s += "#SBATCH --output=" + (out_dir / "slurm" / "logs" / "%A_%a.out").string() + "\n";
  s += "#SBATCH --chdir=" + out_dir.string() + "\n";
  if (!slurm.time.empty()) s += "#SBATCH --time=" + slurm.time + "\n";
  if (!slurm.mem.empty()) s += "#SBATCH --mem=" + slurm.mem + "\n";
  if (!slurm.partition.empty()) s += "#SBATCH --partition=" + slurm.partition + "\n";
  if (!slurm.account.empty()) s += "#SBATCH --account=" + slurm.account + "\n";
  if (!slurm.qos.empty()) s += "#SBATCH --qos=" + slurm.qos + "\n";
  for (const auto& e : slurm.extra) s += "#SBATCH " + e + "\n";
  std::string timeout;
  if (point_timeout > 0) {
    std::ostringstream o;
    o.precision(17);
    o << point_timeout;
    timeout = " --point-timeout " + o.str();
  }
  s += "set -eu\n";
  s += "exec " + shell_quote(worker_bin) + " sweep --worker " + shell_quote(out_dir.string()) +
       " --tasks " + shell_quote(task_file.string()) + " --task \"$SLURM_ARRAY_TASK_ID\"" +
       (slurm.rerun ? " --rerun" : "") + timeout + "\n";
  return s;
}

std::string active_slurm_job(const ResultStore& store) {
  const auto job = read_job(store);
  if (!job) return "";
  const QueueState q = query(job->id);
  return (!q.finished && q.error.empty()) ? job->id : "";
}

ExecSummary run_slurm(const std::vector<const PointSpec*>& todo, const ResultStore& store,
                      const SlurmOptions& slurm, const ExecOptions& opts, std::size_t total,
                      std::ostream& out, std::ostream& err) {
  ExecSummary s;
  s.total = total;
  s.skipped = total - todo.size();
  const std::string bin = opts.worker_bin.empty() ? worker_binary() : opts.worker_bin;
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, const PointSpec*> by_id;
  for (const PointSpec* p : todo) by_id[p->id] = p;

  // A result file counts as new if it did not exist at submission or changed since (--rerun).
  std::map<std::string, fs::file_time_type> before;
  auto snapshot = [&](const std::vector<std::string>& ids) {
    for (const auto& id : ids) {
      std::error_code ec;
      const auto t = fs::last_write_time(store.result_path(id), ec);
      if (!ec) before[id] = t;
    }
  };
  auto finished = [&](const std::string& id) {
    std::error_code ec;
    const auto t = fs::last_write_time(store.result_path(id), ec);
    if (ec) return false;
    auto it = before.find(id);
    return it == before.end() || it->second != t;
  };
  // squeue can fail for a while (a busy or restarting slurmctld): retried, then an error.
  auto query_patiently = [&](const std::string& job) {
    for (int attempt = 1;; ++attempt) {
      const QueueState q = query(job);
      if (q.error.empty() || attempt > 30) return q;
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<long>(slurm.poll_seconds * 1000));
      while (std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };

  auto wait = [&](const Job& job) -> bool {
    StopSignals stop;
    // The points of the job this invocation waits for: those it has not counted as finished
    // already (a re-attached job may have finished some before this run looked).
    std::vector<std::string> mine;
    for (const auto& id : job.point_ids)
      if (by_id.count(id)) mine.push_back(id);
    const std::size_t counted = s.skipped + s.ok + s.failures.size();
    Progress progress(err, opts.progress, total, counted);
    std::size_t errors = 0;
    for (;;) {
      // Asked before counting: once squeue says the job is gone, every task has written all it
      // will, so the counts shown last are the final ones (counting first could show 47/48 of a
      // job that finished in between).
      const QueueState q = query(job.id);
      std::size_t done = 0, failed = 0;
      for (const auto& id : mine) {
        if (finished(id)) {
          ++done;
        } else {
          std::error_code ec;
          if (fs::exists(store.failure_path(id), ec)) ++failed;
        }
      }
      if (!q.error.empty()) {
        if (++errors > 30)
          throw UserError("squeue: " + q.error + " (job " + job.id +
                          " may still be running; rerun the sweep to attach to it)");
      } else {
        errors = 0;
      }
      const std::size_t left = mine.size() - done - failed;
      progress.set_counts(counted + done + failed, std::min(left, q.running * job.chunk), failed);
      if (q.error.empty() && q.finished) break;
      if (q.error.empty() && q.running == 0 && q.held > 0 && q.held == q.pending) {
        // Nothing runs and nothing will: waiting would never end.
        progress.close();
        throw UserError("Slurm job " + job.id + ": its " + std::to_string(q.held) +
                        " remaining task(s) are held (" + q.held_reason +
                        ") and will not start by themselves; release them (scontrol release " +
                        job.id + ") and rerun the same command to wait again, or scancel " +
                        job.id);
      }
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<long>(slurm.poll_seconds * 1000));
      while (std::chrono::steady_clock::now() < until && !StopSignals::caught())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (StopSignals::caught()) {
        progress.close();
        s.signal = StopSignals::caught();
        err << "uvmsim sweep: interrupted; Slurm job " << job.id
            << " keeps running (rerun the same command to wait for it again, or scancel " << job.id
            << ")\n";
        return false;
      }
    }
    progress.close();
    // Collect: every point of the job has a result or a recorded failure.
    for (std::size_t i = 0; i < job.point_ids.size(); ++i) {
      const auto& id = job.point_ids[i];
      auto it = by_id.find(id);
      if (it == by_id.end()) continue;  // a point of an older spec, or counted before
      const PointSpec& p = *it->second;
      if (finished(id) && store.load_result(p)) {
        ++s.ok;
        continue;
      }
      const fs::path log =
          store.dir() / "slurm" / "logs" / (job.id + "_" + std::to_string(i / job.chunk) + ".out");
      if (!store.load_failure(id))
        store.save_failure(p,
                           "Slurm task ended without a result (time limit, memory limit, node "
                           "failure, or the output directory was not writable?)",
                           log);
      s.failures.emplace_back(&p, failure_message(store, p));
    }
    std::error_code ec;
    fs::remove(job_file(store), ec);
    return true;
  };

  std::vector<const PointSpec*> rest = todo;
  // Attach to an array an earlier invocation submitted (e.g. with --detach) if it still runs.
  if (const auto job = read_job(store)) {
    const QueueState q = query_patiently(job->id);
    if (!q.error.empty())
      throw UserError("squeue: " + q.error + " (cannot tell whether Slurm job " + job->id +
                      " of this sweep still runs; rerun later, or remove " +
                      job_file(store).string() + " if it no longer exists)");
    if (!q.finished) {
      if (slurm.detach) {
        out << "Slurm job " << job->id << " is still running on this directory; not submitting "
            << "again (rerun without --detach to wait for it)\n";
        s.detached = true;
        return s;
      }
      err << "attaching to running Slurm job " << job->id << " (" << job->point_ids.size()
          << " point(s))\n";
      if (!wait(*job)) return s;
      rest.erase(std::remove_if(rest.begin(), rest.end(),
                                [&](const PointSpec* p) {
                                  return std::find(job->point_ids.begin(), job->point_ids.end(),
                                                   p->id) != job->point_ids.end();
                                }),
                 rest.end());
    }
  }
  if (!rest.empty()) {
    std::vector<std::string> ids;
    for (const PointSpec* p : rest) ids.push_back(p->id);
    snapshot(ids);
    const Job job = submit(rest, store, slurm, opts, bin, err);
    if (slurm.detach) {
      out << "detached: Slurm job " << job.id << " runs " << rest.size()
          << " point(s); rerun the same command (without --detach) to wait and collect, or "
          << "`uvmsim sweep SPEC --out DIR --collect` to aggregate what has finished\n";
      s.detached = true;
      return s;
    }
    wait(job);
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace uvmsim::sweep
