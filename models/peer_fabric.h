// The links between the GPUs of a node when peer access is enabled (system.peer), which
// GPU-to-GPU copies and peer remote accesses cross:
//  - nvlink: a direct link between every pair of GPUs, one LinkDirection per ordered pair at
//    system.peer_bandwidth_gbps (an HGX board's GPUs are wired pairwise; a GPU's links to
//    different peers do not share bandwidth);
//  - pcie: peer-to-peer through the host's root complex: the bytes leave the source over its host
//    link's device-to-host direction and enter the destination over its host-to-device one, so
//    they compete with both GPUs' host copies and zero-copy traffic; the end-to-end rate of a
//    peer copy is system.peer_bandwidth_gbps (root complexes forward P2P slower than a link's
//    rate, calibration-facts.md).
// A peer copy's time is system.peer_latency_ns + bytes / peer_bandwidth_gbps (one copy run, on
// the source GPU's GPU-to-GPU channel: block_copy_begin_push pushes GPU-to-GPU copies on the
// source); its bytes occupy each link direction of the route for their wire time there.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/config.h"
#include "models/host_link.h"

namespace uvmsim {

class PeerFabric {
 public:
  PeerFabric(const SystemConfig& sys, std::vector<HostLink>& host)
      : kind_(sys.peer), gpus_(sys.gpus), host_(host) {
    if (kind_ == PeerAccess::Nvlink) {
      pairs_.resize(std::size_t{gpus_} * gpus_);
      for (auto& d : pairs_) d.configure(sys.peer_bandwidth_gbps);
    }
    // Linear in size from the first page: latency + bytes / bandwidth (GB/s = bytes/ns).
    const double lat = sys.peer_latency_ns, bw = sys.peer_bandwidth_gbps;
    for (const std::uint64_t bytes : {kPageSize, kBlockSize})
      curve_.points.emplace_back(bytes, lat + static_cast<double>(bytes) / bw);
  }

  bool enabled() const { return kind_ != PeerAccess::None; }
  PeerAccess kind() const { return kind_; }
  /// A peer copy run's time by size (for the source GPU's copy engine).
  const TransferCurve& curve() const { return curve_; }

  /// Wire time of `bytes` from GPU `src`'s memory to GPU `dst`: on the slowest direction of
  /// their route.
  Tick wire_time(unsigned src, unsigned dst, std::uint64_t bytes) {
    const Route r = route(src, dst);
    return r.b ? std::max(r.a->wire_time(bytes), r.b->wire_time(bytes)) : r.a->wire_time(bytes);
  }
  /// A copy run of `bytes` from `src` to `dst` set up at `begin` that takes `total` alone: its
  /// bytes move during the last part of `total` that the route's slowest direction needs, when
  /// every direction is free of earlier traffic, each direction busy for its own wire time.
  /// (No request can arrive before `floor` any more.) Returns the copy's end.
  Tick reserve_copy(unsigned src, unsigned dst, Tick begin, Tick total, std::uint64_t bytes,
                    Tick floor) {
    const Route r = route(src, dst);
    const Tick wa = std::min(total, r.a->wire_time(bytes));
    const Tick wb = r.b ? std::min(total, r.b->wire_time(bytes)) : 0;
    const Tick wire = std::max(wa, wb);
    const Tick ready = begin + (total - wire);
    r.a->forget_before(floor);
    Tick start = r.a->earliest(ready);
    if (r.b) {
      r.b->forget_before(floor);
      start = std::max(start, r.b->earliest(ready));
      r.b->commit(start, start + wb);
    }
    r.a->commit(start, start + wa);
    return start + wire;
  }
  /// Remote traffic of `bytes` from GPU `src`'s memory to GPU `dst` issued at `t`: returns when
  /// its bytes start to move. Over PCIe it takes the first gap on the source's link, then on the
  /// destination's from there (the two are not searched jointly: a small error while both are
  /// busy with copies).
  Tick remote(unsigned src, unsigned dst, Tick t, std::uint64_t bytes) {
    const Route r = route(src, dst);
    Tick start = r.a->remote(t, bytes);
    if (r.b) start = r.b->remote(start, bytes);
    return start;
  }

 private:
  struct Route {
    LinkDirection* a;
    LinkDirection* b;  ///< the second hop (PCIe peer-to-peer), or null
  };
  Route route(unsigned src, unsigned dst) {
    if (kind_ == PeerAccess::Nvlink) return {&pairs_[std::size_t{src} * gpus_ + dst], nullptr};
    return {&host_[src].dtoh, &host_[dst].htod};
  }

  PeerAccess kind_;
  unsigned gpus_;
  std::vector<HostLink>& host_;
  std::vector<LinkDirection> pairs_;  ///< nvlink: [src * gpus + dst]
  TransferCurve curve_;
};

}  // namespace uvmsim
