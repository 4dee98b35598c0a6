// Disk-backed buffers for the oracles' pre-passes (OPT's next uses, `uvmsim analyze --mrc`): a
// trace's region uses grow with its length, so they go to temporary files in chunks and are
// read back forwards or backwards, and memory stays bounded by the buffers below whatever the
// trace's length.
//
//  * RecordFile<T>: a temporary file of fixed-size records, appended in order, then read at any
//    position. It is unlinked as soon as it is created, so nothing is left behind when the
//    process ends, however it ends.
//  * ForwardReader / BackwardReader: sequential reads of a RecordFile in either direction
//    through a fixed buffer (the backward pass that computes next uses reads in reverse).
//  * KeySorter: an external sort of 64-bit keys (sorted, optionally deduplicated runs of `run_keys`
//  keys,
//    merged `fan_in` at a time), visited in ascending or descending order. A sort that fits in
//    one run never touches the disk.
// A failed create or write (unwritable directory, disk full, file size limit) is a UserError
// naming the file and `knob`, the setting that chooses the directory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <type_traits>
#include <vector>

namespace uvmsim::spill {

/// A temporary file of raw bytes (see RecordFile): created in `dir` and unlinked at once.
class TempFile {
 public:
  TempFile(const std::filesystem::path& dir, std::string knob);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  /// Appends `n` bytes; a UserError if the disk refuses them.
  void write(const void* data, std::size_t n);
  /// Reads `n` bytes at `offset` (written before).
  void read(std::uint64_t offset, void* data, std::size_t n) const;
  std::uint64_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

 private:
  int fd_ = -1;
  std::string name_, knob_;
  std::uint64_t bytes_ = 0;
};

/// The directory for temporary files: `dir` if given, else $TMPDIR, else /tmp.
std::filesystem::path temp_dir(const std::string& dir);

template <typename T>
class RecordFile {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  static constexpr std::size_t kBuffer = 8192;  ///< records buffered before a write

  RecordFile(const std::filesystem::path& dir, std::string knob) : file_(dir, std::move(knob)) {}

  void append(const T& r) {
    if (buf_.empty()) buf_.reserve(kBuffer);
    buf_.push_back(r);
    if (buf_.size() == kBuffer) flush();
  }
  /// Writes what is buffered (before reading).
  void flush() {
    if (buf_.empty()) return;
    file_.write(buf_.data(), buf_.size() * sizeof(T));
    written_ += buf_.size();
    buf_.clear();
  }
  /// Records written (flushed or not).
  std::uint64_t size() const { return written_ + buf_.size(); }
  /// Reads records [first, first + n), all flushed.
  void read(std::uint64_t first, std::size_t n, T* out) const {
    file_.read(first * sizeof(T), out, n * sizeof(T));
  }
  /// Frees the write buffer (after the last flush).
  void release_buffer() { std::vector<T>().swap(buf_); }
  std::uint64_t disk_bytes() const { return file_.bytes(); }

 private:
  TempFile file_;
  std::vector<T> buf_;
  std::uint64_t written_ = 0;
};

/// The records of a flushed RecordFile from first to last, through a buffer of `buffer` records.
template <typename T>
class ForwardReader {
 public:
  explicit ForwardReader(const RecordFile<T>& f, std::size_t buffer = 8192)
      : f_(&f), end_(f.size()), buf_(std::max<std::size_t>(1, buffer)) {}
  bool next(T& out) {
    if (i_ == n_) {
      if (pos_ == end_) return false;
      n_ = static_cast<std::size_t>(std::min<std::uint64_t>(buf_.size(), end_ - pos_));
      f_->read(pos_, n_, buf_.data());
      pos_ += n_;
      i_ = 0;
    }
    out = buf_[i_++];
    return true;
  }

 private:
  const RecordFile<T>* f_;
  std::uint64_t pos_ = 0, end_;
  std::vector<T> buf_;
  std::size_t i_ = 0, n_ = 0;
};

/// The records of a flushed RecordFile from last to first.
template <typename T>
class BackwardReader {
 public:
  explicit BackwardReader(const RecordFile<T>& f, std::size_t buffer = 8192)
      : f_(&f), pos_(f.size()), buf_(std::max<std::size_t>(1, buffer)) {}
  bool next(T& out) {
    if (i_ == 0) {
      if (pos_ == 0) return false;
      i_ = static_cast<std::size_t>(std::min<std::uint64_t>(buf_.size(), pos_));
      pos_ -= i_;
      f_->read(pos_, i_, buf_.data());
    }
    out = buf_[--i_];
    return true;
  }

 private:
  const RecordFile<T>* f_;
  std::uint64_t pos_;
  std::vector<T> buf_;
  std::size_t i_ = 0;
};

/// External sort of 64-bit keys, duplicates removed except those of keys for which
/// `keep_duplicates` (if given) is true.
class KeySorter {
 public:
  /// `run_keys` keys are sorted in memory at a time; at most `fan_in` runs of one size are kept
  /// before they are merged into one.
  KeySorter(std::filesystem::path dir, std::string knob, std::size_t run_keys,
            std::size_t fan_in = 32, bool (*keep_duplicates)(std::uint64_t) = nullptr);
  ~KeySorter();

  void add(std::uint64_t key) {
    if (buf_.size() == run_keys_) spill_run();
    buf_.push_back(key);
  }
  /// Keys visited by the last visit() (distinct unless kept); after finish() without spilling,
  /// the keys sorted in memory.
  std::uint64_t keys() const { return keys_; }
  /// Bytes of the runs on disk (the largest at any time, for the report).
  std::uint64_t peak_disk_bytes() const { return peak_disk_; }
  std::size_t runs() const { return runs_.size(); }
  /// Ends adding: sorts what is in memory; counts the distinct keys.
  void finish();
  /// Calls f(key) for every distinct key, in ascending or descending order (after finish()).
  void visit(bool descending, const std::function<void(std::uint64_t)>& f);

 private:
  struct Run {
    unsigned level = 0;
    std::unique_ptr<RecordFile<std::uint64_t>> file;
  };
  void drop_duplicates();  ///< of the sorted buffer
  void spill_run();
  /// Merges runs_[first, end) into one run (ascending) of level `level`.
  void merge_tail(std::size_t first, unsigned level);
  void note_disk();

  std::filesystem::path dir_;
  std::string knob_;
  std::size_t run_keys_, fan_in_;
  bool (*keep_duplicates_)(std::uint64_t);
  std::vector<std::uint64_t> buf_;
  std::vector<Run> runs_;
  std::uint64_t keys_ = 0, peak_disk_ = 0;
  bool finished_ = false;
};

}  // namespace uvmsim::spill
