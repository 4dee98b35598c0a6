// Deterministic discrete-event queue: events fire in (time, insertion sequence) order, so equal
// timestamps never depend on heap internals. The clock jumps from event to event.
#pragma once

#include <cstdint>
#include <algorithm>
#include <vector>

#include "sim/types.h"

namespace uvmsim {

enum class EventType : std::uint8_t {
  WarpWake,      ///< a warp continues (arg = warp slot)
  DriverWake,    ///< the fault bottom half starts or fetches its next batch
  BatchEnd,      ///< a fault batch finished servicing (arg = batch id)
  Replay,        ///< the GPU replays faulted accesses
};

struct Event {
  Tick time;
  std::uint64_t seq;
  EventType type;
  std::uint32_t arg;
};

class EventQueue {
 public:
  EventQueue() { heap_.reserve(1 << 12); }
  void schedule(Tick t, EventType type, std::uint32_t arg = 0) {
    heap_.push_back({t, seq_++, type, arg});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  /// Time of the earliest event; only valid if !empty().
  Tick next_time() const { return heap_.front().time; }
  Event pop() {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Event e = heap_.back();
    heap_.pop_back();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  std::vector<Event> heap_;
  std::uint64_t seq_ = 0;
};

}  // namespace uvmsim
