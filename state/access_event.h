// One completed GPU access, as the GPU model reports it to whoever subscribed
// (models/gpu_listener.h; policies opt in with PolicyBase::wants_access_notifications). A noun of
// the simulated state, so that the GPU model and the policies share it without depending on each
// other.
#pragma once

#include <cstdint>

#include "core/types.h"
#include "state/va_space.h"

namespace uvmsim {

struct AccessEvent {
  const VaBlock& block;
  unsigned page;  ///< 4 KB page index in the block's 2 MB window
  Addr va;
  std::uint32_t ref_id;  ///< static instruction id from the trace (LEU-style per-reference state)
  std::uint32_t bytes;
  std::uint32_t repeat;  ///< folded identical accesses
  AccessKind kind;
  bool remote;  ///< served over the link (host memory), not from HBM
  Tick now;
};

}  // namespace uvmsim
