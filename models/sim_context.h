// What the GPU and driver models share: configuration, the event queue, the address space,
// statistics, the event log and the host link. Owned by the Simulator.
#pragma once

#include <array>
#include <vector>

#include "core/config.h"
#include "core/event_log.h"
#include "core/event_queue.h"
#include "core/stats.h"
#include "models/host_link.h"
#include "models/peer_fabric.h"
#include "state/program_position.h"
#include "state/va_space.h"

namespace uvmsim {

struct SimContext {
  const SimConfig& cfg;
  EventQueue& queue;
  VaSpace& va;
  Stats& stats;
  EventLog& log;
  /// Each GPU's program position: kept by the simulator, the GPU model and the GPU's driver
  /// instance, read by that GPU's policies.
  std::array<ProgramPosition, kMaxGpus> positions{};
  /// Each GPU's host link, both directions of which its copy engines and remote accesses share.
  /// Every GPU of a node has its own (an x16 link each); what they share upstream, the host's
  /// root complex and memory, is not modelled (docs/multi-gpu.md).
  std::vector<HostLink> links = std::vector<HostLink>(
      cfg.system.gpus, HostLink{cfg.link.bandwidth_gbps, cfg.link.dtoh_bandwidth_gbps > 0
                                                             ? cfg.link.dtoh_bandwidth_gbps
                                                             : cfg.link.bandwidth_gbps});
  /// The links between the GPUs (system.peer): GPU-to-GPU copies and peer remote accesses.
  PeerFabric peers{cfg.system, links};

  ProgramPosition& position(unsigned gpu) { return positions[gpu]; }
  HostLink& link(unsigned gpu) { return links[gpu]; }
};

inline Tick ns_to_ps(double ns) { return static_cast<Tick>(ns * kPsPerNs + 0.5); }

}  // namespace uvmsim
