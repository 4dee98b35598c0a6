// Deterministic discrete-event queue: events fire in (time, insertion sequence) order, so equal
// timestamps never depend on container internals. The clock jumps from event to event.
//
// Implementation: a calendar queue. Nearly every event of a GPU simulation lands within a few
// microseconds of "now" (warp wake-ups after memory latency or compute), so events are bucketed
// by time into a ring of ~1 ns buckets; a bitmap finds the next non-empty bucket, the bucket
// being drained is sorted once, and events beyond the ring's horizon wait in an overflow heap.
// Push and pop are O(1) amortised instead of O(log n) over thousands of warps.
//
// Memory is bounded by the events in flight, not by how many have passed: the bucket being
// drained is copied into one dedicated buffer, and a drained ring bucket keeps its capacity only
// if that is at most kKeptCapacity events and the ring's kept capacity stays within
// kKeptRingCapacity (small vectors in all 16 Ki slots would otherwise add up to 6 MB). (Swapping
// the drained bucket with that buffer, as an earlier version did, carried each replay burst's
// capacity into a ring slot; over a long oversubscribed run every one of the 16 Ki slots ended up
// holding a burst's worth: ~8 bytes per access.)
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "core/types.h"

namespace uvmsim {

enum class EventType : std::uint8_t {
  WarpWake,     ///< a warp continues (arg = warp slot)
  DriverWake,   ///< the fault bottom half starts or fetches its next batch
  BatchEnd,     ///< a fault batch finished servicing (arg = batch id)
  Replay,       ///< the GPU replays faulted accesses
  FaultReport,  ///< a uTLB's next far fault reaches the fault buffer (arg = uTLB)
  GmmuFree,     ///< the GMMU can write the next waiting uTLB's fault entry
};

struct Event {
  Tick time;
  std::uint64_t seq;
  EventType type;
  std::uint32_t arg;
};

class EventQueue {
 public:
  static constexpr unsigned kBucketBits = 12;         ///< 1.024 ns buckets
  static constexpr std::uint64_t kBuckets = 1 << 14;  ///< 67 us horizon
  /// A drained ring bucket with more capacity than this releases it (events, 384 bytes).
  static constexpr std::size_t kKeptCapacity = 16;
  /// Events of capacity all drained ring buckets may keep together (96 KB).
  static constexpr std::size_t kKeptRingCapacity = 4096;

  EventQueue() : buckets_(kBuckets), nonempty_(kBuckets / 64, 0) { current_.reserve(1024); }

  void schedule(Tick t, EventType type, std::uint32_t arg = 0) {
    const Event e{t, seq_++, type, arg};
    ++size_;
    const std::uint64_t idx = t >> kBucketBits;
    if (idx <= cur_index_) {
      // Into the bucket being drained, kept sorted; new events are usually the latest.
      auto pos = current_.end();
      while (pos != current_.begin() + static_cast<std::ptrdiff_t>(head_) && Later{}(*(pos - 1), e))
        --pos;
      current_.insert(pos, e);
    } else if (idx < cur_index_ + kBuckets) {
      const std::size_t slot = idx % kBuckets;
      push_to_bucket(slot, e);
    } else {
      overflow_.push_back(e);
      std::push_heap(overflow_.begin(), overflow_.end(), Later{});
    }
  }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  /// Time of the earliest event; only valid if !empty().
  Tick next_time() {
    settle();
    return current_[head_].time;
  }
  /// The event `k` places after the next one to pop, if it is already in the drained bucket
  /// (events of the same ~1 ns), else null. For prefetching only: the queue's order is what pop
  /// returns.
  const Event* ahead(std::size_t k) const {
    return head_ + k < current_.size() ? &current_[head_ + k] : nullptr;
  }
  Event pop() {
    settle();
    --size_;
    now_ = current_[head_].time;
    return current_[head_++];
  }
  /// Time of the latest event popped: no event, and no request made while handling one, is
  /// earlier (events are scheduled at or after the time they are scheduled from).
  Tick now() const { return now_; }
  /// Bytes of event storage the queue holds (capacity, not just events in flight): what the
  /// bounded-memory test watches.
  std::size_t reserved_bytes() const {
    std::size_t n = current_.capacity() + overflow_.capacity();
    for (const auto& b : buckets_) n += b.capacity();
    return n * sizeof(Event);
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };

  /// Index of the first non-empty ring bucket after cur_index_, or 0 if the ring is empty.
  std::uint64_t next_bucket() const {
    const std::size_t start = (cur_index_ + 1) % kBuckets;
    std::size_t word = start / 64;
    std::uint64_t bits = nonempty_[word] & (~std::uint64_t{0} << (start % 64));
    for (std::size_t n = 0; n <= kBuckets / 64; ++n) {
      if (bits) {
        const std::size_t slot = word * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        return cur_index_ + 1 + ((slot + kBuckets - start) % kBuckets);
      }
      word = (word + 1) % (kBuckets / 64);
      bits = nonempty_[word];
    }
    return 0;
  }

  void push_to_bucket(std::size_t slot, const Event& e) {
    std::vector<Event>& b = buckets_[slot];
    const std::size_t before = b.capacity();
    b.push_back(e);
    ring_capacity_ += b.capacity() - before;
    nonempty_[slot / 64] |= std::uint64_t{1} << (slot % 64);
  }

  /// Makes current_[head_] the earliest event.
  void settle() {
    if (head_ < current_.size()) return;
    current_.clear();
    head_ = 0;
    // Ring events all precede overflow events (they were beyond the horizon when queued).
    const std::uint64_t next = next_bucket();
    cur_index_ = next ? next : overflow_.front().time >> kBucketBits;
    const std::size_t slot = cur_index_ % kBuckets;
    std::vector<Event>& bucket = buckets_[slot];
    current_.insert(current_.end(), bucket.begin(), bucket.end());
    if (bucket.capacity() > kKeptCapacity || ring_capacity_ > kKeptRingCapacity) {
      ring_capacity_ -= bucket.capacity();
      std::vector<Event>().swap(bucket);
    } else {
      bucket.clear();
    }
    nonempty_[slot / 64] &= ~(std::uint64_t{1} << (slot % 64));
    while (!overflow_.empty() && (overflow_.front().time >> kBucketBits) < cur_index_ + kBuckets) {
      std::pop_heap(overflow_.begin(), overflow_.end(), Later{});
      const Event e = overflow_.back();
      overflow_.pop_back();
      const std::uint64_t idx = e.time >> kBucketBits;
      if (idx == cur_index_) {
        current_.push_back(e);
      } else {
        push_to_bucket(idx % kBuckets, e);
      }
    }
    std::sort(current_.begin(), current_.end(),
              [](const Event& a, const Event& b) { return Later{}(b, a); });
  }

  std::vector<std::vector<Event>> buckets_;
  std::vector<std::uint64_t> nonempty_;  ///< bit per ring bucket
  std::vector<Event> current_;           ///< bucket cur_index_, ascending from head_
  std::size_t head_ = 0;
  std::vector<Event> overflow_;  ///< min-heap of events beyond the horizon
  std::uint64_t cur_index_ = 0;  ///< time >> kBucketBits of the bucket being drained
  std::size_t size_ = 0;
  std::uint64_t seq_ = 0;
  Tick now_ = 0;
  std::size_t ring_capacity_ = 0;  ///< events of capacity held by the ring buckets
};

}  // namespace uvmsim
