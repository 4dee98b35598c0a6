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
#include "core/stats.h"

namespace uvmsim {

struct RunOptions {
  std::filesystem::path trace;
  std::optional<double> oversub_pct;       ///< usable HBM = managed footprint / (1 + P/100)
  std::optional<std::uint64_t> hbm_bytes;  ///< usable HBM directly
  std::string events_out;                  ///< CSV path, empty = none
  EventSink event_sink;                    ///< in-memory event rows (the calibrator), optional
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
  SimConfig cfg_;
  RunOptions opts_;
  Stats stats_;
  nlohmann::json trace_info_, memory_info_;
};

}  // namespace uvmsim
