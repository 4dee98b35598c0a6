// `--events-out FILE.csv`: one row per fault batch, migration (copy run) and eviction, in the
// order the driver issues them. Columns (docs/stats.md):
//   time_ns,event,batch,va,bytes,direction,cause,pages,duration_ns
// event: batch | migration | eviction | zero_fill | remote_map; direction: htod | dtoh | "";
// cause: demand | prefetch | user_prefetch | access_counter | eviction | cpu_fault | "".
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>

#include "core/types.h"

namespace uvmsim {

/// One row of the event log, as handed to an in-memory sink (the calibrator's).
struct EventRow {
  Tick time;
  const char* event;
  std::int64_t batch;
  Addr va;
  std::uint64_t bytes;
  const char* direction;
  const char* cause;
  std::uint64_t pages;
  Tick duration;
};
using EventSink = std::function<void(const EventRow&)>;

class EventLog {
 public:
  EventLog() = default;
  explicit EventLog(const std::string& path);
  bool enabled() const { return out_.is_open() || sink_; }
  /// Also hands every row to `sink` (with or without a CSV file).
  void set_sink(EventSink sink) { sink_ = std::move(sink); }
  void row(Tick t, const char* event, std::int64_t batch, Addr va, std::uint64_t bytes,
           const char* direction, const char* cause, std::uint64_t pages, Tick duration);
  void close();

 private:
  std::ofstream out_;
  std::string path_;
  EventSink sink_;
};

}  // namespace uvmsim
