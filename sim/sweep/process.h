// Child processes for the sweep: workers run as separate `uvmsim` processes so a crash or an
// out-of-memory kill of one simulation fails that point only, and a killed sweep takes its
// workers with it (they die with their parent and never leave a partial result).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace uvmsim::sweep {

struct ExitStatus {
  int code = -1;   ///< exit code if the process exited
  int signal = 0;  ///< terminating signal, 0 if it exited
  bool ok() const { return signal == 0 && code == 0; }
  std::string describe() const;  ///< "exit code 1", "killed by signal 9 (Killed)"
};

/// The exit status waitpid() reported in `wait_status`.
ExitStatus decode_wait_status(int wait_status);

/// The executable a sweep pins for its workers: $UVMSIM_BIN if set, else this process's own
/// binary as "/proc/self/exe", which keeps naming the file this process was started from even
/// after a rebuild replaced it.
std::string worker_binary();

/// Runs argv (argv[0] is the program, searched in PATH) to completion and returns its exit status
/// and merged stdout + stderr, or with `separate_stderr` stdout in `output` and stderr in
/// `error` (for output that is parsed, which warnings on stderr must not interleave with). A
/// program that cannot be started gives exit code 127 and a message.
struct Captured {
  ExitStatus status;
  std::string output;
  std::string error;
};
Captured run_capture(const std::vector<std::string>& argv, bool separate_stderr = false);

/// One task of a ProcessPool: a command, the file that receives its stdout and stderr, and the
/// bytes to feed its standard input.
struct Task {
  std::string id;
  std::vector<std::string> argv;
  std::filesystem::path log;
  std::string input;
};

struct TaskOutcome {
  ExitStatus status;
  double seconds = 0;
  bool interrupted = false;  ///< killed because the pool was interrupted
};

/// Runs tasks on at most `jobs` concurrent child processes. Children die with the pool's process
/// (PR_SET_PDEATHSIG). SIGINT, SIGTERM and SIGHUP received while running stop the pool: running
/// children are terminated, no new task starts, and run() returns the signal number (0 if all
/// tasks ran). Callbacks run on the calling thread; `on_tick` about ten times a second.
class ProcessPool {
 public:
  std::function<void(const Task&)> on_start;
  std::function<void(const Task&, const TaskOutcome&)> on_finish;
  std::function<void()> on_tick;

  int run(const std::vector<Task>& tasks, unsigned jobs);
  /// Starts no further task; run() returns once the running ones have finished (callable from
  /// the callbacks, e.g. when a task reports that the output cannot be written).
  void drain() { draining_ = true; }

 private:
  bool draining_ = false;
};

/// While alive, SIGINT, SIGTERM and SIGHUP only record that they arrived (so a sweep can stop
/// its workers and report before exiting); the previous handlers are restored afterwards.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  /// The last stop signal received since construction, or 0.
  static int caught();

 private:
  struct sigaction old_int_ {
  }, old_term_{}, old_hup_{};
};

/// Number of CPUs this process may run on.
unsigned available_cpus();

}  // namespace uvmsim::sweep
