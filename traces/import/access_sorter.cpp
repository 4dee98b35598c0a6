#include "traces/import/access_sorter.h"

#include <algorithm>
#include <stdexcept>

namespace uvmsim::trace::import {

namespace {

bool key_less(const PendingAccess& a, const PendingAccess& b) {
  if (a.launch != b.launch) return a.launch < b.launch;
  if (a.tb != b.tb) return a.tb < b.tb;
  return a.warp < b.warp;
}

}  // namespace

/// The head record of one spilled run during the merge.
struct AccessSorter::Cursor {
  PendingAccess head;
  std::size_t run;
};

AccessSorter::AccessSorter(std::filesystem::path tmpdir, std::size_t memory_bytes,
                           std::size_t max_runs)
    : tmpdir_(std::move(tmpdir)), max_runs_(std::max<std::size_t>(max_runs, 2)) {
  // Half the budget for the records, half for std::stable_sort's merge buffer.
  capacity_ = std::max<std::size_t>(memory_bytes / 2 / sizeof(PendingAccess), 1024);
}

void AccessSorter::grow() {
  if (buf_.size() == capacity_) {
    spill();
    return;
  }
  // Grow geometrically but never past the budget (plain doubling could overshoot it by 2x).
  buf_.reserve(std::min(capacity_, std::max<std::size_t>(buf_.capacity() * 2, 4096)));
}

AccessSorter::~AccessSorter() = default;

void AccessSorter::sort_buffer() {
  // Stable: records of one warp keep their input (program) order.
  if (!std::is_sorted(buf_.begin(), buf_.end(), key_less)) {
    std::stable_sort(buf_.begin(), buf_.end(), key_less);
  }
}

void AccessSorter::spill() {
  if (sealed_) throw std::logic_error("AccessSorter::add after seal");
  sort_buffer();
  auto run = std::make_unique<SpillFile>(tmpdir_);
  run->write(buf_.data(), buf_.size() * sizeof(PendingAccess));
  run->finish_writing();
  total_ += buf_.size();
  runs_.push_back(std::move(run));
  ++runs_written_;
  buf_.clear();
  if (runs_.size() >= max_runs_) compact();
}

void AccessSorter::compact() {
  // The merged run holds the earliest input, so it takes the first place: ties between runs
  // still go to earlier input.
  auto merged = std::make_unique<SpillFile>(tmpdir_);
  start_merge();
  PendingAccess a;
  constexpr std::size_t kBatch = 4096;
  std::vector<PendingAccess> batch;
  batch.reserve(kBatch);
  while (merge_next(a)) {
    batch.push_back(a);
    if (batch.size() == kBatch) {
      merged->write(batch.data(), batch.size() * sizeof(PendingAccess));
      batch.clear();
    }
  }
  merged->write(batch.data(), batch.size() * sizeof(PendingAccess));
  merged->finish_writing();
  runs_.clear();  // removes the merged runs' files
  runs_.push_back(std::move(merged));
  ++compactions_;
}

namespace {
/// Heap order on (key, run): the smallest key on top, ties to the earlier run (earlier input).
struct CursorGreater {
  template <class C>
  bool operator()(const C& a, const C& b) const {
    if (key_less(b.head, a.head)) return true;
    if (key_less(a.head, b.head)) return false;
    return a.run > b.run;
  }
};
}  // namespace

void AccessSorter::start_merge() {
  heap_.clear();
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    Cursor c{{}, i};
    if (runs_[i]->read(&c.head, sizeof c.head)) heap_.push_back(c);
  }
  std::make_heap(heap_.begin(), heap_.end(), CursorGreater{});
}

bool AccessSorter::merge_next(PendingAccess& out) {
  if (heap_.empty()) return false;
  std::pop_heap(heap_.begin(), heap_.end(), CursorGreater{});
  Cursor& c = heap_.back();
  out = c.head;
  if (runs_[c.run]->read(&c.head, sizeof c.head)) {
    std::push_heap(heap_.begin(), heap_.end(), CursorGreater{});
  } else {
    heap_.pop_back();
  }
  return true;
}

void AccessSorter::seal() {
  if (sealed_) return;
  // With nothing spilled the whole trace fits the budget: merge nothing, serve from memory.
  if (runs_.empty()) {
    sort_buffer();
  } else {
    if (!buf_.empty()) spill();
    buf_ = std::vector<PendingAccess>();  // release the buffer for the merge
    start_merge();
  }
  sealed_ = true;
}

bool AccessSorter::next(PendingAccess& out) {
  if (!sealed_) throw std::logic_error("AccessSorter::next before seal");
  if (runs_.empty()) {
    if (buf_pos_ == buf_.size()) return false;
    out = buf_[buf_pos_++];
    return true;
  }
  return merge_next(out);
}

std::uint64_t AccessSorter::spilled_bytes() const {
  std::uint64_t n = 0;
  for (const auto& r : runs_) n += r->compressed_bytes();
  return n;
}

}  // namespace uvmsim::trace::import
