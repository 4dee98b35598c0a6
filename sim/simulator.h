// The top-level simulation: reads a trace, builds the address space, GPU and driver models, and
// replays the host-side event stream (kernel launches, prefetches, advice, CPU accesses) in
// program order, draining the discrete-event queue for each kernel.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/event_log.h"
#include "core/event_queue.h"
#include "core/stats.h"
#include "sim/interval_log.h"
#include "traces/hints.h"

namespace uvmsim {

class VaSpace;
struct Machine;
struct SimContext;
namespace trace {
class TraceReader;
}

struct RunOptions {
  std::filesystem::path trace;
  std::optional<double> oversub_pct;       ///< usable HBM = managed footprint / (1 + P/100)
  std::optional<std::uint64_t> hbm_bytes;  ///< usable HBM directly
  std::string events_out;                  ///< CSV path, empty = none
  EventSink event_sink;                    ///< in-memory event rows (the calibrator), optional
  std::string interval_out;                ///< JSON-lines path of interval statistics, or empty
  Tick interval = 100 * kPsPerUs;          ///< simulated time per interval line
  /// Access-order file for the two-pass OPT (policies/eviction/opt/order_file.h), or empty;
  /// errors name record_order_name (the file asked for, when this is its temporary).
  std::string record_order, record_order_name;
};

class Simulator {
 public:
  Simulator(SimConfig cfg, RunOptions opts);
  ~Simulator();
  /// Runs the whole trace. Throws UserError on bad input.
  const Stats& run();
  const Stats& stats() const { return stats_; }
  const SimConfig& config() const { return cfg_; }
  /// Stats plus "config" (fully resolved), "trace" and "memory" sections.
  nlohmann::json to_json() const;

 private:
  /// Usable GPU memory in 2 MB chunks for the trace's VA space (--oversub, --hbm, device
  /// allocations); fills the "memory" section.
  std::uint64_t size_memory(const VaSpace& va);
  /// The static hints the placement policies see: the trace's, or a hints file's (kept in
  /// `file_hints`). Null if there are none.
  const trace::Hints* load_hints(trace::TraceReader& reader,
                                 std::optional<trace::Hints>& file_hints);
  /// Replays the trace's host events in program order (launches, prefetches, advice, CPU
  /// accesses). A launch runs on the current device (SetDevice) while the host goes on; the host
  /// waits for that GPU at its next launch there, and for every GPU at anything else.
  void replay_host_events(trace::TraceReader& reader, SimContext& ctx, Machine& m);
  /// Runs events in order, each by the node of its GPU, until the queue is empty, GPU
  /// `wait_gpu` (if >= 0) is idle (done, no event of it queued), or the next event is later
  /// than `until`; past `limit` it marks the run truncated. Returns the last event's time.
  Tick drain(EventQueue& queue, Machine& m, Tick limit, Tick& last_event, int wait_gpu, Tick until);
  /// After each fault batch: throws UserError once engine.livelock_batches batches in a row
  /// have completed no warp access.
  void check_progress(Tick now);

  /// Forward progress: the completed accesses and the fault batch count when they last grew.
  std::uint64_t progress_accesses_ = 0, progress_batches_ = 0;
  Tick progress_time_ = 0;

  SimConfig cfg_;
  RunOptions opts_;
  Stats stats_;
  IntervalLog intervals_;  ///< --interval-out (disabled unless asked for)
  nlohmann::json trace_info_, memory_info_;
};

}  // namespace uvmsim
