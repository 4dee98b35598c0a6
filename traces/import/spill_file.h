// A temporary, zstd-compressed, write-once-then-read-sequentially byte stream on disk. The
// importers spill sorted runs of access records and the host-event log to such files so that
// importing a trace of any length runs in bounded memory. The file is removed on destruction.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <vector>

namespace uvmsim::trace::import {

class SpillFile {
 public:
  /// Creates a new file in `dir` (a UserError if it cannot be created).
  explicit SpillFile(const std::filesystem::path& dir);
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  void write(const void* data, std::size_t n);
  /// Ends writing (flushes the zstd frame) and rewinds for reading.
  void finish_writing();
  /// Reads exactly `n` bytes; false at the clean end of the data. A short read mid-item or a
  /// corrupt frame (the disk failed under us) is a UserError.
  bool read(void* data, std::size_t n);

  std::uint64_t compressed_bytes() const { return compressed_; }
  std::uint64_t raw_bytes() const { return raw_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void flush_out(ZSTD_EndDirective mode);
  bool refill();  // decompresses more into out_; false at the end of the data

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  ZSTD_CCtx* cctx_ = nullptr;
  ZSTD_DCtx* dctx_ = nullptr;
  std::vector<std::uint8_t> in_, out_;
  std::size_t in_pos_ = 0, in_len_ = 0;    // reading: compressed bytes buffered
  std::size_t out_pos_ = 0, out_len_ = 0;  // reading: decompressed bytes not yet handed out
  std::size_t pending_ = 0;                // writing: raw bytes buffered in in_
  bool reading_ = false, input_done_ = false;
  std::uint64_t compressed_ = 0, raw_ = 0;
};

}  // namespace uvmsim::trace::import
