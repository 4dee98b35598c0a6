// File helpers for sweep results: content hashes, atomic writes and an exclusive directory lock.
// A sweep may be killed at any moment; everything it records goes through write_atomic() so a
// reader sees either the previous state or the complete new file, never a partial one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace uvmsim::sweep {

/// CRC-64/XZ of `data` (Boost.CRC): a stable, fast content hash for input identities.
std::uint64_t crc64(std::string_view data);
/// CRC-64/XZ of a file's bytes, streamed. Throws UserError naming the file if it cannot be read.
std::uint64_t crc64_file(const std::filesystem::path& p);
/// 16 lower-case hex digits.
std::string hex64(std::uint64_t v);

/// Writes `content` to `path` atomically: a temporary file in the same directory (named
/// ".<name>.<host>.<pid>.tmp"), fsync, rename over `path`, fsync of the directory. Throws
/// UserError naming the path on failure (the temporary file is removed).
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
