// The GPU's replayable fault buffer: a bounded ring the GMMU appends to and the driver fetches
// from (GET/PUT). An entry becomes valid `fault_latency` after the TLB miss; the driver's fetch
// stops at the first entry not yet valid (uvm-driver.md §2, fetch_fault_buffer_entries).
#pragma once

#include <cstdint>
#include <deque>

#include "sim/types.h"

namespace uvmsim {

struct FaultEntry {
  Addr page_va = 0;  ///< 4 KB-aligned
  Tick valid_at = 0;
  std::uint32_t utlb = 0;
  AccessKind kind = AccessKind::Read;
};

class FaultBuffer {
 public:
  void configure(std::uint32_t entries) { capacity_ = entries; }
  bool full() const { return q_.size() >= capacity_; }
  bool empty() const { return q_.empty(); }
  std::size_t size() const { return q_.size(); }
  void push(const FaultEntry& e) { q_.push_back(e); }
  const FaultEntry& front() const { return q_.front(); }
  void pop() { q_.pop_front(); }
  /// Entries valid at `now` (the PUT pointer as the driver would read it).
  std::size_t valid_count(Tick now) const {
    std::size_t n = 0;
    for (const auto& e : q_) {
      if (e.valid_at > now) break;
      ++n;
    }
    return n;
  }
  /// Discards the first `n` entries (a flush up to a cached PUT).
  void discard(std::size_t n) {
    for (; n && !q_.empty(); --n) q_.pop_front();
  }

 private:
  std::deque<FaultEntry> q_;
  std::uint32_t capacity_ = 1;
};

}  // namespace uvmsim
