// Helpers for the sweep / check / report tests: run the real uvmsim binary as a child process
// (sweeps spawn workers and are killed in tests, which needs a real process), and small files.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sim/sweep/process.h"

namespace uvmsim::test {

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// Runs build/uvmsim with `args`; returns its exit status and merged output.
inline sweep::Captured uvmsim(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {UVMSIM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return sweep::run_capture(argv);
}

/// A uvmsim process running in the background with its output in a file.
class Background {
 public:
  Background(const std::vector<std::string>& args, const std::string& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<std::string> argv = {UVMSIM_BINARY};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> v;
      for (auto& a : argv) v.push_back(a.data());
      v.push_back(nullptr);
      ::execv(v[0], v.data());
      ::_exit(127);
    }
  }
  ~Background() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  pid_t pid() const { return pid_; }
  void signal(int sig) { ::kill(pid_, sig); }
  /// Waits for the process; returns its status (exit code or -signal).
  int wait() {
    int st = 0;
    ::waitpid(pid_, &st, 0);
    reaped_ = true;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
  }
  bool running() {
    if (reaped_) return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      reaped_ = true;
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
      return false;
    }
    return true;
  }
  int status() const { return status_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

/// Number of files in `dir` whose names end in ".json" (finished results).
inline std::size_t count_json(const std::filesystem::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json" && e.path().filename().string()[0] != '.') ++n;
  return n;
}

/// The statistics of a result file without the fields that depend on the run (wall time, the
/// trace's path in its output directory).
inline nlohmann::json stable_stats(const nlohmann::json& result) {
  nlohmann::json s = result.at("stats");
  s.erase("wall_seconds");
  s.erase("accesses_per_second");
  s["trace"].erase("path");
  return s;
}

}  // namespace uvmsim::test
