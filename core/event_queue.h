// Deterministic discrete-event queue: events fire in (time, insertion sequence) order, so equal
// timestamps never depend on container internals. The clock jumps from event to event.
//
// Implementation: a calendar queue. Nearly every event of a GPU simulation lands within a few
// microseconds of "now" (warp wake-ups after memory latency or compute), so events are bucketed
// by time into a ring of ~4 ns buckets; a bitmap finds the next non-empty bucket, the bucket
// being drained is sorted once, and events beyond the ring's horizon wait in an overflow heap.
// Push and pop are O(1) amortised instead of O(log n) over thousands of warps.
//
// Memory is bounded by the events in flight, not by how many have passed, and a steady-state run
// allocates nothing per event: ring buckets are chains of fixed-size segments taken from one pool
// and returned to its free list when the bucket is drained, so the pool only grows to the most
// segments ever in use at once. (Per-bucket vectors, as an earlier version had, either kept each
// replay burst's capacity in one of the 16 Ki slots, ~8 bytes per access over a long
// oversubscribed run, or, once they released it, went back to malloc for every burst: ~4 % of a
// STREAM run.) The bucket being drained is copied into one dedicated buffer and sorted there
// (sort_current()).
#pragma once

#include <algorithm>
#include <array>
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
  /// The GPU whose hardware or driver slice handles it (0 on a one-GPU machine). It sits in the
  /// padding after `type`, so an event stays 24 bytes.
  std::uint8_t gpu;
  std::uint32_t arg;
};
static_assert(sizeof(Event) == 24);

class EventQueue {
 public:
  static constexpr unsigned kBucketBits = 12;         ///< 4.096 ns buckets (2^12 ps)
  static constexpr std::uint64_t kBuckets = 1 << 14;  ///< 67 us horizon
  /// Events per pool segment: most ring buckets hold a few events (one warp's wake-up, a fault
  /// report), so a small segment wastes little; a burst chains several.
  static constexpr std::uint32_t kSegmentEvents = 8;

  EventQueue() : buckets_(kBuckets), nonempty_(kBuckets / 64, 0) {
    current_.reserve(1024);
    scratch_.reserve(1024);
  }

  void schedule(Tick t, EventType type, std::uint32_t arg = 0, std::uint8_t gpu = 0) {
    schedule_reserved(t, seq_++, type, arg, gpu);
  }
  /// Takes the sequence number the next schedule() would use, for an event that may never be
  /// scheduled: its owner can fire it as if it had been (same place among equal timestamps), and
  /// every later event's number is the same either way.
  std::uint64_t reserve_seq() { return seq_++; }
  /// Schedules an event with a number from reserve_seq(); it fires in (t, seq) order.
  void schedule_reserved(Tick t, std::uint64_t seq, EventType type, std::uint32_t arg,
                         std::uint8_t gpu = 0) {
    const Event e{t, seq, type, gpu, arg};
    ++size_;
    ++pending_[gpu];
    const std::uint64_t idx = t >> kBucketBits;
    // Nearly every event lands in a later ring bucket: that path is a few stores, inline. The
    // other two (the bucket being drained, beyond the horizon) are out of line, so the common
    // call saves no registers for them (the whole function was ~50 instructions an event, ~7 %
    // of a STREAM run, under callgrind).
    if (idx > cur_index_ && idx < cur_index_ + kBuckets) [[likely]]
      push_to_bucket(idx % kBuckets, e);
    else
      schedule_outside_ring(e, idx);
  }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  /// Events of GPU `gpu` in the queue: none, and its GPU done, means that GPU and its driver
  /// bottom half are idle (the simulator's per-device synchronisation).
  std::uint32_t pending(unsigned gpu) const { return pending_[gpu]; }
  /// Time of the earliest event; only valid if !empty().
  Tick next_time() {
    settle();
    return current_[head_].time;
  }
  /// The event `k` places after the next one to pop, if it is already in the drained bucket
  /// (events of the same ~4 ns), else null. For prefetching only: the queue's order is what pop
  /// returns.
  const Event* ahead(std::size_t k) const {
    return head_ + k < cur_n_ ? &current_[head_ + k] : nullptr;
  }
  Event pop() {
    settle();
    --size_;
    --pending_[current_[head_].gpu];
    now_ = current_[head_].time;
    now_seq_ = current_[head_].seq;
    return current_[head_++];
  }
  /// Time of the latest event popped: no event, and no request made while handling one, is
  /// earlier (events are scheduled at or after the time they are scheduled from).
  Tick now() const { return now_; }
  /// Sequence number of the latest event popped: with now(), its place in the firing order.
  std::uint64_t now_seq() const { return now_seq_; }
  /// Bytes of event storage the queue holds (capacity, not just events in flight): what the
  /// bounded-memory test watches.
  std::size_t reserved_bytes() const {
    return (current_.capacity() + scratch_.capacity() + overflow_.capacity()) * sizeof(Event) +
           pool_.capacity() * sizeof(Segment);
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  /// The drain order: (time, seq) ascending.
  static bool earlier(const Event& a, const Event& b) { return Later{}(b, a); }

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

  static constexpr std::uint32_t kNone = ~std::uint32_t{0};

  // A segment's fill count lives in its bucket, not in the segment: scheduling an event then
  // touches the bucket and the one cache line the event goes to, not also the segment's
  // header (that extra miss was the largest share of schedule_reserved() in a `perf record`
  // of STREAM). Only the tail segment is partly filled.
  struct Segment {
    Event events[kSegmentEvents];
    std::uint32_t next = kNone;
  };
  struct Bucket {
    std::uint32_t head = kNone;
    std::uint32_t tail = kNone;
    std::uint32_t tail_count = 0;  ///< events in the tail segment
  };

  std::uint32_t new_segment() {
    std::uint32_t s = free_;
    if (s != kNone) {
      free_ = pool_[s].next;
    } else {
      s = static_cast<std::uint32_t>(pool_.size());
      pool_.emplace_back();
    }
    pool_[s].next = kNone;
    return s;
  }

  void push_to_bucket(std::size_t slot, const Event& e) {
    Bucket& b = buckets_[slot];
    if (b.tail == kNone || b.tail_count == kSegmentEvents) {
      const std::uint32_t s = new_segment();
      if (b.tail == kNone) {
        b.head = s;
        nonempty_[slot / 64] |= std::uint64_t{1} << (slot % 64);
      } else {
        pool_[b.tail].next = s;
      }
      b.tail = s;
      b.tail_count = 0;
    }
    pool_[b.tail].events[b.tail_count++] = e;
  }

  [[gnu::noinline]] void schedule_outside_ring(const Event& e, std::uint64_t idx) {
    if (idx <= cur_index_) {
      // Into the bucket being drained, kept sorted; new events are usually the latest.
      // A few steps back from the end usually find the place; past those, a binary search: a
      // bucket of a TLB-hit-bound run holds ~2,500 wake-ups (gemm 4 MB: 5,120 warps issuing a
      // few cycles apart), and an SM's next slot lands ~200 events before the end.
      const auto first = current_.begin() + static_cast<std::ptrdiff_t>(head_);
      auto pos = current_.end();
      for (int k = 0; k < 8 && pos != first && Later{}(*(pos - 1), e); ++k) --pos;
      if (pos != first && Later{}(*(pos - 1), e))
        pos = std::upper_bound(first, pos - 1, e, earlier);
      current_.insert(pos, e);
      ++cur_n_;
    } else {
      overflow_.push_back(e);
      std::push_heap(overflow_.begin(), overflow_.end(), Later{});
    }
  }

  /// Makes current_[head_] the earliest event. Inline, because pop() calls it for every event
  /// and nearly always the drained bucket still has one (the call itself was ~10 % of settle's
  /// time in a `perf record` of STREAM).
  void settle() {
    if (head_ < cur_n_) return;
    refill();
  }

  /// Drains the next bucket into current_ and sorts it.
  [[gnu::noinline]] void refill() {
    current_.clear();
    head_ = 0;
    // Ring events all precede overflow events (they were beyond the horizon when queued).
    const std::uint64_t next = next_bucket();
    cur_index_ = next ? next : overflow_.front().time >> kBucketBits;
    const std::size_t slot = cur_index_ % kBuckets;
    Bucket& bucket = buckets_[slot];
    // Hand the bucket's segments back to the free list as they are copied out.
    for (std::uint32_t s = bucket.head; s != kNone;) {
      Segment& seg = pool_[s];
      const std::uint32_t count = s == bucket.tail ? bucket.tail_count : kSegmentEvents;
      current_.insert(current_.end(), seg.events, seg.events + count);
      const std::uint32_t next = seg.next;
      seg.next = free_;
      free_ = s;
      s = next;
    }
    bucket = Bucket{};
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
    // A bucket's events arrive in insertion order, so they are sorted already unless their
    // times within the ~4 ns differ out of order: a replay's burst of wake-ups (one time) needs
    // only the check.
    if (!std::is_sorted(current_.begin(), current_.end(), earlier)) sort_current();
    cur_n_ = current_.size();
  }

  /// 16 sub-slots of 256 ps: a STREAM bucket holds ~22 events, so a 65-entry count array cost
  /// more to clear and sum than the insertion sort saves over 16 (`stream` 96 MB x 4, the 132 K
  /// sorted buckets replayed under callgrind: 219 M -> 183 M instructions, mispredictions equal).
  static constexpr unsigned kSubSlotBits = 4;
  /// Sorts current_ (one bucket's events, all within 4.096 ns) by (time, seq). Under the SM
  /// throughput model a bucket holds ~20 events at ~15 distinct times, merged from a few
  /// ascending runs (wake-ups scheduled with different latencies), which a comparison sort
  /// handles with a branch misprediction every few comparisons. Instead: one stable counting
  /// pass on the time's 256 ps sub-slot (branch-free), after which events are out of order only
  /// within a sub-slot, and an insertion sort finishes. Insertion sort is exact whatever the
  /// input, so the result is the (time, seq) order std::sort would give; a pathological bucket
  /// (many events in one sub-slot, out of order) falls back to std::sort.
  void sort_current() {
    constexpr unsigned kSlots = 1u << kSubSlotBits;
    constexpr unsigned kSubBits = kBucketBits - kSubSlotBits;
    std::uint32_t count[kSlots + 1] = {};
    for (const Event& e : current_) ++count[((e.time >> kSubBits) & (kSlots - 1)) + 1];
    for (unsigned i = 1; i <= kSlots; ++i) count[i] += count[i - 1];
    scratch_.resize(current_.size());
    for (const Event& e : current_) scratch_[count[(e.time >> kSubBits) & (kSlots - 1)]++] = e;
    current_.swap(scratch_);
    const std::size_t n = current_.size();
    std::size_t moves = 0;
    for (std::size_t i = 1; i < n; ++i) {
      const Event e = current_[i];
      std::size_t j = i;
      while (j > 0 && earlier(e, current_[j - 1])) {
        current_[j] = current_[j - 1];
        --j;
      }
      current_[j] = e;
      moves += i - j;
      if (moves > 4 * n) {
        std::sort(current_.begin(), current_.end(), earlier);
        return;
      }
    }
  }

  std::vector<Bucket> buckets_;
  std::vector<Segment> pool_;   ///< every ring bucket's segments; indices stay valid as it grows
  std::uint32_t free_ = kNone;  ///< free list through Segment::next
  std::vector<std::uint64_t> nonempty_;  ///< bit per ring bucket
  std::vector<Event> current_;           ///< bucket cur_index_, ascending from head_
  /// current_.size(), kept: pop() and ahead() test it on every event, and the vector's size is
  /// a subtraction and a division by 24.
  std::size_t cur_n_ = 0;
  std::vector<Event> scratch_;  ///< sort_current()'s second buffer
  std::size_t head_ = 0;
  std::vector<Event> overflow_;  ///< min-heap of events beyond the horizon
  std::uint64_t cur_index_ = 0;  ///< time >> kBucketBits of the bucket being drained
  std::size_t size_ = 0;
  std::array<std::uint32_t, kMaxGpus> pending_{};  ///< events in the queue per GPU
  std::uint64_t seq_ = 0;
  Tick now_ = 0;
  std::uint64_t now_seq_ = 0;
};

}  // namespace uvmsim
