// Regroups the access records of an imported trace into the order a .uvt file stores them
// (launch, then threadblock, then warp; program order within a warp) whatever order the input
// printed them in. Records are collected in a fixed memory budget; when it fills up, the buffer
// is sorted and spilled to disk as a compressed run, and the runs are merged at the end (an
// external merge sort). Inputs that are already in order (Accel-Sim's .traceg) are not re-sorted.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "traces/import/spill_file.h"

namespace uvmsim::trace::import {

/// One access as an importer saw it, before regrouping. Trivially copyable: spilled as bytes.
struct PendingAccess {
  static constexpr std::uint8_t kHasCycle = 1;  ///< `time` is the warp's clock, not a gap
  static constexpr std::uint8_t kHwWarp = 2;    ///< `warp` is the SM's warp slot (NVBit %warpid)
  static constexpr std::uint8_t kSameInst =
      4;  ///< another page of the previous record's instruction

  std::uint64_t tb = 0;  ///< linear threadblock index within the launch
  std::uint64_t va = 0;
  std::uint64_t time = 0;  ///< gap cycles, or (kHasCycle) the cycle the access issued
  std::uint32_t launch = 0;
  std::uint32_t ref = 0;
  std::uint32_t bytes = 4;
  std::uint16_t warp = 0;
  std::uint8_t kind = 1;  ///< AccessKind
  std::uint8_t flags = 0;
};
static_assert(sizeof(PendingAccess) == 40, "PendingAccess is spilled as raw bytes");

class AccessSorter {
 public:
  /// `memory_bytes`: budget for buffered records (the sort needs as much again, counted in).
  /// When `max_runs` runs are on disk they are merged into one, which bounds the open files and
  /// the merge's memory however long the input is.
  AccessSorter(std::filesystem::path tmpdir, std::size_t memory_bytes, std::size_t max_runs = 128);
  ~AccessSorter();

  void add(const PendingAccess& a) {
    if (buf_.size() == buf_.capacity()) grow();
    buf_.push_back(a);
  }
  /// Ends collection; next() then yields every record in (launch, tb, warp, input) order.
  void seal();
  bool next(PendingAccess& out);

  std::uint64_t total() const { return total_ + buf_.size(); }
  std::size_t runs() const { return runs_written_; }  ///< sorted runs written (before merging)
  std::size_t compactions() const { return compactions_; }
  std::uint64_t spilled_bytes() const;  ///< compressed bytes written to disk

 private:
  void grow();
  void sort_buffer();
  void spill();
  void compact();  // merges every run on disk into one
  struct Cursor;
  /// Starts a merge of all runs: fills heap_ with each run's first record.
  void start_merge();
  bool merge_next(PendingAccess& out);

  std::filesystem::path tmpdir_;
  std::size_t capacity_;
  std::size_t max_runs_;
  std::size_t runs_written_ = 0, compactions_ = 0;
  std::vector<PendingAccess> buf_;
  std::size_t buf_pos_ = 0;  // reading the in-memory buffer (no runs spilled)
  std::vector<std::unique_ptr<SpillFile>> runs_;
  std::vector<Cursor> heap_;
  std::uint64_t total_ = 0;  // records in spilled runs
  bool sealed_ = false;
};

}  // namespace uvmsim::trace::import
