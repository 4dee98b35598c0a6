// Shared-resource timing: a bandwidth server (HBM) and a copy engine (one per direction, fed
// with whole copy runs and a size-dependent time curve, whose bytes cross the host link it
// shares with remote accesses: models/host_link.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/config.h"
#include "core/types.h"
#include "models/host_link.h"
#include "models/peer_fabric.h"

namespace uvmsim {

/// Requests are served in arrival order at a fixed bandwidth after a fixed latency (HBM).
class BandwidthServer {
 public:
  void configure(double gbps, double latency_ns) {
    ps_per_byte_ = 1000.0 / gbps;  // 1 GB/s = 1 byte/ns
    latency_ = static_cast<Tick>(latency_ns * kPsPerNs);
    free_at_ = 0;
    last_bytes_ = 0;
    last_xfer_ = 0;  // duration_ticks(0 * ps_per_byte_)
  }
  /// Completion time of a `bytes` request issued at `t`.
  Tick access(Tick t, std::uint64_t bytes) {
    const Tick start = std::max(t, free_at_);
    // Most requests repeat the last size (a kernel's loads are one width): reuse its transfer
    // time instead of a conversion, a multiply and a clamp per access (~1 % of a STREAM run).
    if (bytes != last_bytes_) {
      last_bytes_ = bytes;
      last_xfer_ = duration_ticks(static_cast<double>(bytes) * ps_per_byte_);
    }
    const Tick xfer = last_xfer_;
    free_at_ = start + xfer;
    return start + latency_ + xfer;
  }
  Tick latency() const { return latency_; }

 private:
  double ps_per_byte_ = 1;
  Tick latency_ = 0;
  Tick free_at_ = 0;
  std::uint64_t last_bytes_ = 0;
  Tick last_xfer_ = 0;
};

/// A DMA copy engine: copies run one after another; each costs curve(bytes), of which the last
/// wire(bytes) = bytes / link bandwidth cross the host link's direction `link` (shared with remote
/// accesses); alone a run takes exactly curve(bytes).
class CopyEngine {
 public:
  /// `pushes_in_flight` bounds the pushes whose copies have not completed (0: no bound); see
  /// push_slot_free().
  void configure(const TransferCurve* curve, Tick setup, std::uint32_t pushes_in_flight = 0) {
    curve_ = curve;
    // Copy runs lie inside one 2 MB block and are whole 4 KB pages: their times come from a
    // table of the curve at each page count (the curve's interpolation was ~1.6 % of `random`
    // 4 GB at 50 %, two runs per serviced block), the same ticks as curve->time_ps.
    page_times_.resize(kPagesPerBlock + 1);
    for (unsigned n = 0; n <= kPagesPerBlock; ++n)
      page_times_[n] = curve->time_ps(std::uint64_t{n} * kPageSize);
    setup_ = setup;
    free_at_ = 0;
    pushes_.assign(pushes_in_flight, 0);
    next_push_ = 0;
  }
  /// When the driver can begin a new push on this engine. The driver pushes copies through a
  /// pool of channels with a fixed number of GPFIFO entries each (uvm_channel.c:
  /// channel_manager_num_channels gives a copy-engine pool 2 channels, each with
  /// uvm_channel_num_gpfifo_entries entries, one of them a sentinel); a push holds an entry
  /// until its work completes, and with every entry held the driver thread spins in
  /// channel_reserve_in_pool until one frees. Pushes complete in order on one engine, so the
  /// entry frees when the push `pushes_in_flight` before the new one completes.
  Tick push_slot_free() const { return pushes_.empty() ? 0 : pushes_[next_push_]; }
  /// Records a push whose last copy completes at `done`.
  void record_push(Tick done) {
    if (pushes_.empty()) return;
    pushes_[next_push_] = done;
    if (++next_push_ == pushes_.size()) next_push_ = 0;
  }
  /// Queues a copy run no earlier than `t`: the engine pays the push set-up, then the curve's
  /// fixed part, then the bytes move when `link` is free for them (no request reaches the link
  /// before `floor`). Sets `begin` to the end of the set-up; returns completion.
  Tick submit(Tick t, std::uint64_t bytes, Tick& begin, LinkDirection& link, Tick floor) {
    begin = std::max(t, free_at_) + setup_;
    const Tick total = curve_time(bytes);
    const Tick wire = std::min(total, link.wire_time(bytes));
    free_at_ = link.reserve_copy(begin + (total - wire), wire, floor);
    return free_at_;
  }
  /// A GPU-to-GPU copy run from `src`'s memory to `dst` no earlier than `t` (this engine is the
  /// source GPU's): the set-up, then the curve's time, its bytes moving over the peer route.
  Tick submit_peer(Tick t, std::uint64_t bytes, Tick& begin, PeerFabric& fabric, unsigned src,
                   unsigned dst, Tick floor) {
    begin = std::max(t, free_at_) + setup_;
    free_at_ = fabric.reserve_copy(src, dst, begin, curve_time(bytes), bytes, floor);
    return free_at_;
  }
  Tick free_at() const { return free_at_; }

 private:
  Tick curve_time(std::uint64_t bytes) const {
    return bytes % kPageSize == 0 && bytes / kPageSize <= kPagesPerBlock
               ? page_times_[bytes / kPageSize]
               : curve_->time_ps(bytes);
  }

  const TransferCurve* curve_ = nullptr;
  std::vector<Tick> page_times_;  ///< curve_->time_ps(n pages), n = 0..kPagesPerBlock
  Tick setup_ = 0;
  Tick free_at_ = 0;
  std::vector<Tick> pushes_;   ///< completion of the last pushes_.size() pushes, a ring
  std::size_t next_push_ = 0;  ///< the oldest of them, overwritten by the next push
};

}  // namespace uvmsim
