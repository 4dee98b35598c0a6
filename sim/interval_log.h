// Interval statistics (`uvmsim run --interval-out FILE --interval-us N`): every N us of
// simulated time one JSON line with what changed in that interval, like DRAMsim3's epoch
// statistics, so a run's phases can be plotted without the per-event CSV. Reads the counters
// only: a run with and without it computes the same statistics (docs/stats.md).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "core/stats.h"
#include "core/types.h"

namespace uvmsim {

class IntervalLog {
 public:
  IntervalLog() = default;
  /// Writes to `path` (a UserError naming it if it cannot be opened) every `interval` ps.
  IntervalLog(const std::string& path, Tick interval);
  bool enabled() const { return interval_ > 0; }
  /// Closes every interval that ends at or before `now` with the counters as they are: called
  /// before an event at `now` changes them, so an interval holds the events of [start, end).
  void advance(Tick now, const Stats& s) {
    if (enabled() && now >= next_) emit_until(now, s);
  }
  /// The earliest time whose event advance() would close an interval before (no limit if off).
  Tick next_boundary() const { return enabled() ? next_ : ~Tick{0}; }
  /// The last, possibly partial, interval up to `end`; flushes and checks the file.
  void finish(Tick end, const Stats& s);

 private:
  /// The counters an interval reports the change of.
  struct Snapshot {
    std::uint64_t accesses = 0, gpu_faults = 0, fault_batches = 0, evictions = 0;
    std::uint64_t htod_bytes = 0, dtoh_bytes = 0, remote_bytes = 0;
    std::uint64_t htod_by_cause[static_cast<std::size_t>(HtodCause::kCount)] = {};
    std::uint64_t prefetch_useful = 0, prefetch_useless = 0, replays = 0;
    Tick batch_time = 0;
  };
  static Snapshot take(const Stats& s);
  void emit_until(Tick now, const Stats& s);
  void write(Tick start, Tick end, const Snapshot& now);

  std::string path_;
  std::ofstream out_;
  Tick interval_ = 0, next_ = 0;
  std::uint64_t index_ = 0;
  Snapshot last_;
};

}  // namespace uvmsim
