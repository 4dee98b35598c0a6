// Shared-resource timing: a bandwidth server (HBM, the link for remote accesses) and a copy
// engine (one per direction, fed with whole copy runs and a size-dependent time curve).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/config.h"
#include "core/types.h"

namespace uvmsim {

/// Requests are served in arrival order at a fixed bandwidth after a fixed latency.
class BandwidthServer {
 public:
  void configure(double gbps, double latency_ns) {
    ps_per_byte_ = 1000.0 / gbps;  // 1 GB/s = 1 byte/ns
    latency_ = static_cast<Tick>(latency_ns * kPsPerNs);
    free_at_ = 0;
  }
  /// Completion time of a `bytes` request issued at `t`.
  Tick access(Tick t, std::uint64_t bytes) {
    const Tick start = std::max(t, free_at_);
    const Tick xfer = static_cast<Tick>(static_cast<double>(bytes) * ps_per_byte_);
    free_at_ = start + xfer;
    return start + latency_ + xfer;
  }
  Tick latency() const { return latency_; }

 private:
  double ps_per_byte_ = 1;
  Tick latency_ = 0;
  Tick free_at_ = 0;
};

/// A DMA copy engine: copies run one after another; each costs curve(bytes).
class CopyEngine {
 public:
  void configure(const TransferCurve* curve, Tick setup) {
    curve_ = curve;
    setup_ = setup;
    free_at_ = 0;
  }
  /// Queues a copy run no earlier than `t`: the engine pays the push set-up, then moves the
  /// bytes in curve(bytes). Sets `begin` to when the bytes start moving; returns completion.
  Tick submit(Tick t, std::uint64_t bytes, Tick& begin) {
    begin = std::max(t, free_at_) + setup_;
    free_at_ = begin + curve_->time_ps(bytes);
    return free_at_;
  }
  Tick free_at() const { return free_at_; }

 private:
  const TransferCurve* curve_ = nullptr;
  Tick setup_ = 0;
  Tick free_at_ = 0;
};

}  // namespace uvmsim
