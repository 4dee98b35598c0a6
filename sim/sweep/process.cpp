#include "sim/sweep/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>

#include "core/error.h"
#include "sim/sweep/files.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string ExitStatus::describe() const {
  if (signal != 0)
    return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit code " + std::to_string(code);
}

ExitStatus decode_wait_status(int st) {
  ExitStatus s;
  if (WIFEXITED(st)) {
    s.code = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    s.signal = WTERMSIG(st);
  }
  return s;
}

std::string worker_binary() {
  if (const char* b = std::getenv("UVMSIM_BIN"); b && *b) return b;
  return "/proc/self/exe";
}

unsigned available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> v;
  for (const auto& a : argv) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  return v;
}

// In the child: restore the default signal dispositions and an empty mask before exec.
void reset_signals() {
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) ::signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

[[noreturn]] void exec_or_die(const std::vector<std::string>& argv) {
  auto v = c_argv(argv);
  ::execvp(v[0], v.data());
  const std::string msg = "cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
  (void)!::write(2, msg.data(), msg.size());
  ::_exit(127);
}

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

}  // namespace

StopSignals::StopSignals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  g_stop_signal = 0;
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  sigaction(SIGHUP, &sa, &old_hup_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
}

int StopSignals::caught() { return g_stop_signal; }

Captured run_capture(const std::vector<std::string>& argv, bool separate_stderr) {
  int out[2], errp[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0) throw UserError("pipe: " + std::string(std::strerror(errno)));
  if (separate_stderr && ::pipe2(errp, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw UserError("pipe: " + std::string(std::strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid < 0) throw UserError("fork: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    reset_signals();
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out[1], 1);
    ::dup2(separate_stderr ? errp[1] : out[1], 2);
    exec_or_die(argv);
  }
  ::close(out[1]);
  if (separate_stderr) ::close(errp[1]);
  Captured c;
  // Both pipes are drained together, so that a child filling one of them never blocks.
  pollfd fds[2] = {{out[0], POLLIN, 0}, {errp[0], POLLIN, 0}};
  std::string* into[2] = {&c.output, &c.error};
  int open_fds = separate_stderr ? 2 : 1;
  char buf[4096];
  while (open_fds > 0) {
    if (::poll(fds, separate_stderr ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < (separate_stderr ? 2 : 1); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        into[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_fds;
      }
    }
  }
  for (const auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  c.status = decode_wait_status(st);
  return c;
}

int ProcessPool::run(const std::vector<Task>& tasks, unsigned jobs) {
  if (jobs == 0) jobs = 1;
  struct Running {
    std::size_t task;
    Clock::time_point start;
  };
  std::map<pid_t, Running> running;
  const pid_t parent = ::getpid();

  // SIGCHLD is blocked and waited for with sigtimedwait, so a finished child wakes us at once.
  sigset_t chld, old_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &old_mask);
  StopSignals stop;
  struct sigaction ign {
  }, old_pipe{};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &old_pipe);  // a worker that dies before reading its input
  auto restore = [&] {
    sigaction(SIGPIPE, &old_pipe, nullptr);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  };

  auto spawn = [&](std::size_t i) {
    const Task& t = tasks[i];
    int in[2] = {-1, -1};
    if (::pipe2(in, O_CLOEXEC) != 0) throw UserError("pipe: " + std::string(std::strerror(errno)));
    const int log = ::open(t.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log < 0) {
      ::close(in[0]);
      ::close(in[1]);
      throw OutputError(t.log.string() + ": cannot create log (" + std::strerror(errno) + ")");
    }
    const pid_t pid = ::fork();
    if (pid < 0) throw UserError("fork: " + std::string(std::strerror(errno)));
    if (pid == 0) {
      // Die with the sweep: a killed sweep must not leave workers running.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      // Own process group: a terminal's Ctrl-C reaches the sweep, which stops workers itself.
      ::setpgid(0, 0);
      reset_signals();
      ::dup2(in[0], 0);
      ::dup2(log, 1);
      ::dup2(log, 2);
      exec_or_die(t.argv);
    }
    ::close(in[0]);
    ::close(log);
    // Small inputs (a point description) fit in the pipe buffer; larger ones are written as the
    // child reads them.
    std::size_t off = 0;
    while (off < t.input.size()) {
      const ssize_t n = ::write(in[1], t.input.data() + off, t.input.size() - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        break;  // the child died; its exit status tells why
      }
      off += static_cast<std::size_t>(n);
    }
    ::close(in[1]);
    running[pid] = {i, Clock::now()};
    if (on_start) on_start(t);
  };

  // Reaps every finished child; `interrupted` marks outcomes of a stopped pool.
  auto reap = [&](bool interrupted) {
    bool any = false;
    for (auto it = running.begin(); it != running.end();) {
      int st = 0;
      if (::waitpid(it->first, &st, WNOHANG) != it->first) {
        ++it;
        continue;
      }
      TaskOutcome o;
      o.status = decode_wait_status(st);
      o.seconds = std::chrono::duration<double>(Clock::now() - it->second.start).count();
      o.interrupted = interrupted;
      const std::size_t ti = it->second.task;
      it = running.erase(it);
      any = true;
      if (on_finish) on_finish(tasks[ti], o);
    }
    return any;
  };

  std::size_t next = 0;
  auto last_tick = Clock::now();
  try {
    draining_ = false;
    while (((next < tasks.size() && !draining_) || !running.empty()) && !g_stop_signal) {
      while (running.size() < jobs && next < tasks.size() && !draining_ && !g_stop_signal)
        spawn(next++);
      if (!reap(false) && !g_stop_signal) {
        timespec ts{0, 100'000'000};
        ::sigtimedwait(&chld, nullptr, &ts);
      }
      if (on_tick && Clock::now() - last_tick >= std::chrono::milliseconds(100)) {
        last_tick = Clock::now();
        on_tick();
      }
    }
  } catch (...) {
    for (const auto& [pid, r] : running) ::kill(pid, SIGKILL);
    for (const auto& [pid, r] : running) ::waitpid(pid, nullptr, 0);
    restore();
    throw;
  }

  const int sig = g_stop_signal;
  if (sig) {
    // Interrupted: stop the workers (SIGTERM, then SIGKILL after 5 s) and report them.
    for (const auto& [pid, r] : running) ::kill(pid, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!running.empty()) {
      reap(true);
      if (Clock::now() > deadline)
        for (const auto& [pid, r] : running) ::kill(pid, SIGKILL);
      timespec ts{0, 20'000'000};
      ::sigtimedwait(&chld, nullptr, &ts);
    }
  }
  restore();
  return sig;
}

}  // namespace uvmsim::sweep
