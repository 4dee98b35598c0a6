// The host link (PCIe) that migrations and remote (zero-copy) accesses share, one direction each
// (PCIe is full duplex): host-to-device carries copy-engine runs into GPU memory and the data of
// remote reads; device-to-host carries copy-backs and the data of remote writes.
//
// The copy engines' time curves (link.htod_curve / dtoh_curve) are fitted end to end: a run of B
// bytes takes curve(B), which includes fixed costs (DMA set-up, latency) besides the time the
// bytes occupy the wire at the link's bandwidth, wire(B) = B / link.bandwidth_gbps (device to
// host: link.dtoh_bandwidth_gbps when set). Only the
// wire part is shared: a run's bytes move during the last wire(B) of its curve time, after its
// fixed part, so a copy alone takes exactly its curve time, as calibrated.
//
// Sharing is first come, first served with the driver's copies committed: a copy's completion is
// known when the driver pushes it (the replay and the PTEs wait for it), so its wire interval is
// reserved then. Remote traffic queued before it delays it (the copy's bytes start after that
// traffic); remote traffic issued later takes the gaps between reserved copies, or waits for the
// copy to end. Total wire time is conserved; when both compete, the remote accesses are the ones
// that wait, at the granularity of copy runs (at most one 2 MB run, ~87 us on PCIe 4.0).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/types.h"

namespace uvmsim {

class LinkDirection {
 public:
  void configure(double gbps) {
    ps_per_byte_ = 1000.0 / gbps;  // 1 GB/s = 1 byte/ns
    remote_free_ = 0;
    copies_.clear();
    head_ = 0;
  }
  /// Time `bytes` occupy the wire.
  Tick wire_time(std::uint64_t bytes) const {
    return static_cast<Tick>(static_cast<double>(bytes) * ps_per_byte_);
  }

  /// A copy run whose bytes are ready to move at `ready` and occupy the wire for `wire`: they
  /// start after the remote traffic queued so far; returns when they are through. No request
  /// can arrive before `floor` any more (the simulation's clock), so older reservations go.
  Tick reserve_copy(Tick ready, Tick wire, Tick floor) {
    drop_before(floor);
    const Tick start = earliest(ready);
    commit(start, start + wire);
    return start + wire;
  }
  /// When a copy ready at `ready` could start on this direction: after the remote traffic queued
  /// so far and after the copies reserved before it. (One copy engine feeding a direction never
  /// asks earlier than its previous copy's end; with peer access a second engine may share it.)
  Tick earliest(Tick ready) const {
    const Tick last = copies_.empty() ? 0 : copies_.back().second;
    return std::max({ready, remote_free_, last});
  }
  /// Reserves [start, end) for a copy; `start` is at least earliest().
  void commit(Tick start, Tick end) {
    if (end <= start) return;
    if (head_ > 0 && head_ * 2 >= copies_.size()) {
      copies_.erase(copies_.begin(), copies_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    copies_.emplace_back(start, end);
  }
  /// Drops reservations that can no longer delay a request made at `floor` or later.
  void forget_before(Tick floor) { drop_before(floor); }

  /// Remote traffic of `bytes` issued at `t`: returns when its bytes start to move - after the
  /// remote traffic before it, in the first gap between reserved copies that holds it.
  Tick remote(Tick t, std::uint64_t bytes) {
    const Tick xfer = wire_time(bytes);
    Tick start = std::max(t, remote_free_);
    drop_before(start);
    for (std::size_t i = head_; i < copies_.size(); ++i) {
      const auto [s, e] = copies_[i];
      if (start + xfer <= s) break;  // fits before this copy
      if (start < e) start = e;      // overlaps it: after it
    }
    remote_free_ = start + xfer;
    return start;
  }

 private:
  /// Reservations that end by `t` can no longer delay anything.
  void drop_before(Tick t) {
    while (head_ < copies_.size() && copies_[head_].second <= t) ++head_;
  }

  double ps_per_byte_ = 1;
  Tick remote_free_ = 0;  ///< the remote traffic issued so far is through by then
  /// Reserved copy intervals [start, end), in increasing order (one copy engine per direction
  /// serialises them); entries before head_ are over.
  std::vector<std::pair<Tick, Tick>> copies_;
  std::size_t head_ = 0;
};

/// Both directions of the link: host to device at `htod_gbps`, device to host at `dtoh_gbps`
/// (NVLink-C2C is measured asymmetric, PCIe is not).
struct HostLink {
  HostLink(double htod_gbps, double dtoh_gbps) {
    htod.configure(htod_gbps);
    dtoh.configure(dtoh_gbps);
  }
  LinkDirection htod, dtoh;
};

}  // namespace uvmsim
