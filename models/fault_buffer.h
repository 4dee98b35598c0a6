// The GPU's replayable fault buffer: a bounded ring the GMMU appends to and the driver fetches
// from (GET/PUT). An entry becomes valid `fault_latency` after the TLB miss; the driver's fetch
// stops at the first entry not yet valid (uvm-driver.md §2, fetch_fault_buffer_entries).
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"

namespace uvmsim {

struct FaultEntry {
  Addr page_va = 0;  ///< 4 KB-aligned
  Tick valid_at = 0;
  std::uint32_t utlb = 0;
  AccessKind kind = AccessKind::Read;
};

/// A fixed-capacity ring, like the hardware buffer: no allocation after configure().
class FaultBuffer {
 public:
  void configure(std::uint32_t entries) {
    ring_.assign(entries ? entries : 1, FaultEntry{});
    get_ = size_ = 0;
  }
  bool full() const { return size_ >= ring_.size(); }
  std::size_t capacity() const { return ring_.size(); }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  void push(const FaultEntry& e) {
    ring_[wrap(get_ + size_)] = e;
    ++size_;
  }
  const FaultEntry& front() const { return ring_[get_]; }
  void pop() {
    get_ = wrap(get_ + 1);
    --size_;
  }
  /// Entries valid at `now` (the PUT pointer as the driver would read it). Entries are appended
  /// in order of validity, so this is a binary search.
  std::size_t valid_count(Tick now) const {
    std::size_t lo = 0, hi = size_;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (ring_[(get_ + mid) % ring_.size()].valid_at <= now)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  /// Discards the first `n` entries (a flush up to a cached PUT).
  void discard(std::size_t n) {
    n = n < size_ ? n : size_;
    get_ = wrap(get_ + n);
    size_ -= n;
  }

 private:
  /// i < 2 * capacity always holds, so one compare replaces a division.
  std::size_t wrap(std::size_t i) const { return i >= ring_.size() ? i - ring_.size() : i; }
  std::vector<FaultEntry> ring_;
  std::size_t get_ = 0, size_ = 0;
};

}  // namespace uvmsim
