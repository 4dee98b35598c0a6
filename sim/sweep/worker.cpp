#include "sim/sweep/worker.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>

#include "core/error.h"
#include "sim/sweep/files.h"
#include "sim/sweep/identity.h"
#include "sim/sweep/process.h"
#include "sim/sweep/results.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// In the child process of one point: simulate it and record the result or the failure; never
// returns. Exit status 0 (result written), 1 (failure recorded) or kWorkerOutputError.
[[noreturn]] void simulate_point(const ResultStore& store, const PointSpec& p, std::ostream& err) {
  int code = 0;
  try {
    try {
      store.save_result(run_point(p));
    } catch (const OutputError&) {
      throw;
    } catch (const std::exception& e) {
      // Bad input fails this point only; the record says why.
      std::string msg = dynamic_cast<const UserError*>(&e) ? std::string(e.what())
                        : dynamic_cast<const std::bad_alloc*>(&e)
                            ? std::string("out of memory")
                            : "internal error: " + one_line(e.what());
      err << "uvmsim sweep: point " << p.id << " (" << p.label << ") failed: " << msg << "\n";
      store.save_failure(p, msg);
      code = 1;
    }
  } catch (const OutputError& e) {
    err << "uvmsim sweep: error: " << e.what() << "\n";
    code = kWorkerOutputError;
  }
  err.flush();
  ::_exit(code);
}

struct PointEnd {
  ExitStatus status;
  bool timed_out = false;
};

// Waits for the point's child, killing it once `timeout` seconds (0: none) have passed. SIGCHLD
// is blocked by the caller, so sigtimedwait wakes up the moment the child ends.
PointEnd wait_point(pid_t pid, double timeout, const sigset_t& chld) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout));
  PointEnd end;
  int st = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &st, timeout > 0 ? WNOHANG : 0);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      end.status.code = 1;  // cannot happen for our own child; treated as a crash
      return end;
    }
    if (timeout <= 0) continue;
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      end.timed_out = true;
      break;
    }
    const auto wait = std::min<Clock::duration>(left, std::chrono::seconds(1));
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    ::sigtimedwait(&chld, nullptr, &ts);
  }
  end.status = decode_wait_status(st);
  return end;
}

std::string seconds_text(double s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

}  // namespace

int run_worker(const json& descs, const fs::path& out_dir, const WorkerOptions& opts,
               std::ostream& err) {
  if (!descs.is_array()) throw UserError("sweep worker: expected a JSON array of points");
  std::vector<PointSpec> points;
  for (std::size_t i = 0; i < descs.size(); ++i)
    points.push_back(
        PointSpec::from_json(descs[i], "sweep worker input: point " + std::to_string(i)));
  const ResultStore store(out_dir);
  // A worker started long after its sweep (a queued Slurm task, a resubmitted script) may be
  // another binary than the one the directory's results come from: it must not add to them.
  std::string refusal;
  if (store.pinned() && store.pinned()->build_id != this_build().build_id)
    refusal = "this worker is build " + this_build().build_id + ", but " + store.dir().string() +
              " is pinned to build " + store.pinned()->build_id +
              " (the binary changed since the sweep planned this point); rerun the sweep";

  sigset_t chld, old_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  int rc = 0;
  for (const PointSpec& p : points) {
    if (!opts.rerun && store.load_result(p)) continue;  // finished by an earlier attempt
    try {
      if (!refusal.empty()) {
        err << "uvmsim sweep: point " << p.id << " (" << p.label << ") refused: " << refusal
            << "\n";
        store.save_failure(p, refusal);
        rc = 1;
        continue;
      }
      err.flush();
      sigprocmask(SIG_BLOCK, &chld, &old_mask);
      const pid_t parent = ::getpid();
      const pid_t pid = ::fork();
      if (pid < 0) {
        sigprocmask(SIG_SETMASK, &old_mask, nullptr);
        throw UserError("fork: " + std::string(std::strerror(errno)));
      }
      if (pid == 0) {
        // Dies with the worker (a stopped sweep, a cancelled Slurm task).
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);
        sigprocmask(SIG_SETMASK, &old_mask, nullptr);
        simulate_point(store, p, err);
      }
      const PointEnd end = wait_point(pid, opts.point_timeout, chld);
      sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      if (end.status.code == kWorkerOutputError) return kWorkerOutputError;
      if (!end.timed_out && end.status.ok() && store.load_result(p)) continue;
      rc = 1;
      if (!end.timed_out && end.status.signal == 0 && store.load_failure(p.id))
        continue;  // the point recorded its own error
      const std::string why =
          end.timed_out ? "timed out after " + seconds_text(opts.point_timeout) +
                              " s of wall time (--point-timeout); the simulation was stopped"
          : end.status.signal != 0
              ? "simulation " + end.status.describe()
              : "simulation ended without a result (" + end.status.describe() + ")";
      err << "uvmsim sweep: point " << p.id << " (" << p.label << ") failed: " << why << "\n";
      store.save_failure(p, why);
    } catch (const OutputError& e) {
      err << "uvmsim sweep: error: " << e.what() << "\n";
      return kWorkerOutputError;
    }
  }
  return rc;
}

void write_task_file(const fs::path& file,
                     const std::vector<std::vector<const PointSpec*>>& tasks) {
  std::string body, index;
  for (const auto& t : tasks) {
    index += std::to_string(body.size()) + "\n";
    json a = json::array();
    for (const PointSpec* p : t) a.push_back(p->to_json());
    body += a.dump() + "\n";
  }
  write_atomic(file, body);
  fs::path idx = file;
  idx += ".idx";
  write_atomic(idx, index);
}

json read_task(const fs::path& file, std::size_t task) {
  // Both files are written atomically before the job is submitted, but they live on a shared
  // file system that a task may see damaged or cut short: every offset is checked against the
  // file, and the task's line must be complete (end in a newline) and a JSON array.
  fs::path idx = file;
  idx += ".idx";
  std::ifstream ix(idx);
  if (!ix) throw UserError(idx.string() + ": cannot open task index");
  std::string line;
  std::size_t i = 0;
  std::uint64_t offset = 0;
  bool found = false;
  while (std::getline(ix, line)) {
    if (i++ != task) continue;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), offset);
    if (line.empty() || ec != std::errc() || end != line.data() + line.size())
      throw UserError(idx.string() + ": line " + std::to_string(i) + ": not a byte offset: '" +
                      line.substr(0, 40) + "'");
    found = true;
    break;
  }
  if (!found)
    throw UserError(idx.string() + ": task " + std::to_string(task) + " not in the task list (" +
                    std::to_string(i) + " tasks)");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file.string() + ": cannot open task file");
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec || offset >= size)
    throw UserError(file.string() + ": task " + std::to_string(task) + ": offset " +
                    std::to_string(offset) + " is beyond the end of the file (truncated?)");
  in.seekg(static_cast<std::streamoff>(offset));
  if (!std::getline(in, line) || in.eof())
    throw UserError(file.string() + ": task " + std::to_string(task) +
                    ": line cut short (truncated task file)");
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_array())
    throw UserError(file.string() + ": task " + std::to_string(task) +
                    ": malformed line (not a JSON array of points)");
  return j;
}

}  // namespace uvmsim::sweep
