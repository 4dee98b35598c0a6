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

AccessSorter::AccessSorter(std::filesystem::path tmpdir, std::size_t memory_bytes)
    : tmpdir_(std::move(tmpdir)) {
  // Half the budget for the records, half for std::stable_sort's merge buffer.
  capacity_ = std::max<std::size_t>(memory_bytes / 2 / sizeof(PendingAccess), 1024);
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
  buf_.clear();
}

void AccessSorter::seal() {
  if (sealed_) return;
  // With nothing spilled the whole trace fits the budget: merge nothing, serve from memory.
  if (runs_.empty()) {
    sort_buffer();
  } else {
    if (!buf_.empty()) spill();
    buf_ = std::vector<PendingAccess>();  // release the buffer for the merge
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      Cursor c{{}, i};
      if (runs_[i]->read(&c.head, sizeof c.head)) heap_.push_back(c);
    }
  }
  sealed_ = true;
  // Min-heap on (key, run): ties go to the earlier run, which holds earlier input.
  std::make_heap(heap_.begin(), heap_.end(), [](const Cursor& a, const Cursor& b) {
    if (key_less(b.head, a.head)) return true;
    if (key_less(a.head, b.head)) return false;
    return a.run > b.run;
  });
}

bool AccessSorter::next(PendingAccess& out) {
  if (!sealed_) throw std::logic_error("AccessSorter::next before seal");
  if (runs_.empty()) {
    if (buf_pos_ == buf_.size()) return false;
    out = buf_[buf_pos_++];
    return true;
  }
  if (heap_.empty()) return false;
  const auto greater = [](const Cursor& a, const Cursor& b) {
    if (key_less(b.head, a.head)) return true;
    if (key_less(a.head, b.head)) return false;
    return a.run > b.run;
  };
  std::pop_heap(heap_.begin(), heap_.end(), greater);
  Cursor& c = heap_.back();
  out = c.head;
  if (runs_[c.run]->read(&c.head, sizeof c.head)) {
    std::push_heap(heap_.begin(), heap_.end(), greater);
  } else {
    heap_.pop_back();
  }
  return true;
}

std::uint64_t AccessSorter::spilled_bytes() const {
  std::uint64_t n = 0;
  for (const auto& r : runs_) n += r->compressed_bytes();
  return n;
}

}  // namespace uvmsim::trace::import
