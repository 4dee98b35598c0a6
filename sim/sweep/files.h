// File helpers for sweep results: content hashes, atomic writes and an exclusive directory lock.
// A sweep may be killed at any moment; everything it records goes through write_atomic() so a
// reader sees either the previous state or the complete new file, never a partial one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"

namespace uvmsim::sweep {

/// CRC-64/XZ of `data` (Boost.CRC): a stable, fast content hash for input identities.
std::uint64_t crc64(std::string_view data);
/// CRC-64/XZ of a file's bytes, streamed. Throws UserError naming the file if it cannot be read.
std::uint64_t crc64_file(const std::filesystem::path& p);
/// 16 lower-case hex digits.
std::string hex64(std::uint64_t v);

/// A failure to write an output (a full or read-only file system, a missing directory). A sweep
/// stops at the first one, since every later write would fail the same way, rather than failing
/// each remaining point; what it finished is kept, and a rerun resumes.
class OutputError : public UserError {
 public:
  using UserError::UserError;
};

/// A file written under a temporary name in its target's directory (".<name>.<host>.<pid>.tmp")
/// and renamed over the target only by commit(), after an fsync: the target is either its old
/// content or the complete new one, never a truncated file (a full disk, a crash, a kill).
/// Destroyed without commit(), it removes the temporary.
class AtomicFile {
 public:
  /// Creates the temporary at once, so that an unwritable target fails before any work.
  /// `what` names the output in messages ("--stats-out"); errors are OutputErrors
  /// "<target>: [<what>: ]cannot create|write failed (<reason>)".
  explicit AtomicFile(std::filesystem::path target, std::string what = "");
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::filesystem::path& target() const { return target_; }
  /// The temporary, for writers that open the file themselves (e.g. the event log).
  const std::filesystem::path& temp_path() const { return temp_; }
  void write(std::string_view data);
  /// fsync, rename over the target, fsync the directory.
  void commit();
  /// Removes the temporary and throws the OutputError for a failed write of this file, with the
  /// reason `why` (if not empty).
  [[noreturn]] void fail(const std::string& why);

 private:
  std::filesystem::path target_, temp_;
  std::string what_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Writes `content` to `path` atomically (AtomicFile). Throws OutputError naming the path on
/// failure (the temporary file is removed).
void write_atomic(const std::filesystem::path& path, std::string_view content);
/// True for the temporary files write_atomic() leaves behind when killed mid-write.
bool is_temp_file(const std::filesystem::path& p);
/// Removes temporary files in `dir` that this host's dead processes left behind (files of live
/// processes, or of other hosts sharing the directory, are kept). Returns how many it removed.
std::size_t remove_stale_temp_files(const std::filesystem::path& dir);

/// Reads a whole file; throws UserError naming it if it cannot be read.
std::string read_file(const std::filesystem::path& p);

/// An exclusive advisory lock (flock) on `dir`/.lock, held for the object's lifetime.
/// Throws UserError if another process holds it (another sweep is using the directory).
class DirLock {
 public:
  explicit DirLock(const std::filesystem::path& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

/// This host's name (for temporary-file names and result provenance).
std::string host_name();

/// The current time formatted with strftime(`fmt`), in UTC or local time.
std::string time_now(const char* fmt, bool utc);

}  // namespace uvmsim::sweep
