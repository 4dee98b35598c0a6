// Helpers for the sweep / check / report tests: run the real uvmsim binary as a child process
// (sweeps spawn workers and are killed in tests, which needs a real process), and small files.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

/// A tmpfs of `size` bytes mounted on `dir` in a mount namespace private to this test process:
/// the uvmsim processes the test starts see it, nothing outside does, and it vanishes with the
/// process (unmounted at the end of the test too). For disk-full tests; needs root (CI runs as
/// root; so does the local Slurm cluster of the Slurm tests).
class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& dir, std::uint64_t size) : dir_(dir) {
    static bool unshared = false;
    if (!unshared) {
      if (::unshare(CLONE_NEWNS) != 0) {
        error_ = std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
        return;
      }
      // Mounts made here must not propagate back to the host's namespace.
      if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        error_ = std::string("mount --make-rprivate /: ") + std::strerror(errno);
        return;
      }
      unshared = true;
    }
    std::filesystem::create_directories(dir_);
    const std::string opts = "size=" + std::to_string(size);
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
      error_ = "mount -t tmpfs -o " + opts + " " + dir_ + ": " + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  /// "" if mounted, else why not.
  const std::string& error() const { return error_; }
  /// Bytes in use.
  std::uint64_t used() const {
    struct statvfs v {};
    ::statvfs(dir_.c_str(), &v);
    return static_cast<std::uint64_t>(v.f_blocks - v.f_bfree) * v.f_frsize;
  }
  /// Changes the size (e.g. to free space: "the disk was cleaned up"); true on success.
  bool resize(std::uint64_t size) {
    const std::string opts = "size=" + std::to_string(size);
    return ::mount(nullptr, dir_.c_str(), nullptr, MS_REMOUNT, opts.c_str()) == 0;
  }

 private:
  std::string dir_, error_;
  bool mounted_ = false;
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
