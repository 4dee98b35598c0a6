// What the GPU and driver models share: configuration, the event queue, the address space,
// statistics, the event log and the host link. Owned by the Simulator.
#pragma once

#include "core/config.h"
#include "core/event_log.h"
#include "core/event_queue.h"
#include "core/stats.h"
#include "models/host_link.h"
#include "state/program_position.h"
#include "state/va_space.h"

namespace uvmsim {

struct SimContext {
  const SimConfig& cfg;
  EventQueue& queue;
  VaSpace& va;
  Stats& stats;
  EventLog& log;
  ProgramPosition position{};  ///< kept by the simulator and the GPU model, read by policies
  /// The host link both directions of which the copy engines and remote accesses share.
  HostLink link{cfg.link.bandwidth_gbps};
};

inline Tick ns_to_ps(double ns) { return static_cast<Tick>(ns * kPsPerNs + 0.5); }

}  // namespace uvmsim
