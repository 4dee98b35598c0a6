// What the GPU model tells whoever subscribes, and what it can be asked: the narrow, one-way side
// of the hardware boundary. Faults and access-counter notifications reach the driver through the
// fault buffer, the notification buffer and the interrupt (models/fault_buffer.h,
// models/access_counters.h, models/interrupt.h); these hooks carry what no hardware buffer does
// and only policies want: every completed access (opt-in, it costs simulation speed) and
// threadblock completions, plus the running threadblocks' progress for oracle policies.
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"
#include "policies/engine.h"
#include "state/access_event.h"

namespace uvmsim {

class GpuListener {
 public:
  /// True if on_access() should be called for every completed access.
  virtual bool wants_accesses() const = 0;
  virtual void on_access(const AccessEvent& a) = 0;
  /// Threadblock `tb` of the current launch completed at `now`.
  virtual void on_threadblock_end(std::uint64_t tb, Tick now) = 0;

 protected:
  ~GpuListener() = default;
};

/// The running threadblocks and how far their slowest warp has got (implemented by the GPU).
class ThreadblockSource {
 public:
  virtual void running_threadblocks(std::vector<ThreadblockProgress>& out) const = 0;

 protected:
  ~ThreadblockSource() = default;
};

}  // namespace uvmsim
