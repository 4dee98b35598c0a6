// The GPU's copy engines as the driver uses them: one per direction, each fed with copy runs
// (contiguous pages of one VA block) that it moves one after another (models/timing.h). Each run
// is one CUPTI-visible transfer; the event log gets a "migration" row per run.
#pragma once

#include <cstdint>

#include "models/driver/driver_context.h"
#include "models/timing.h"
#include "state/page_mask.h"

namespace uvmsim {

class CopyEngines {
 public:
  explicit CopyEngines(DriverContext& dc);
  /// Queues one copy per contiguous run of `pages` of `b`, no earlier than `start`, host to
  /// device if `htod`; st.copy_done becomes the latest completion; adds the bytes to `bytes_out`.
  /// A copy out of the GPU also waits for the block's copies in (b.copies_in_done), which a copy
  /// in extends. The call is one push: if the engine's channels have no free GPFIFO entry
  /// (driver.gpfifo_entries), the host (st.cpu) first waits for one.
  void copy_runs(VaBlock& b, const PageMask& pages, bool htod, const char* cause, Tick start,
                 ServiceTimes& st, std::uint64_t& bytes_out);
  /// Copies `pages` of `b` from this GPU's memory to GPU `dst`'s over the peer link, one run per
  /// contiguous range, on this GPU's GPU-to-GPU engine (the driver pushes a GPU-to-GPU copy on
  /// the source GPU: block_copy_begin_push); like copy_runs otherwise. Returns the bytes.
  std::uint64_t copy_to_peer(VaBlock& b, const PageMask& pages, unsigned dst, const char* cause,
                             Tick start, ServiceTimes& st);

 private:
  /// Waits for a GPFIFO entry of `ce`'s channels (see copy_runs); returns the push's start.
  Tick reserve_push(CopyEngine& ce, Tick start, ServiceTimes& st);
  /// One push on `ce` of `pages`' contiguous runs from `start`: `submit(start, bytes, begin)`
  /// queues a run and returns its end; each run is logged as a `direction` migration and
  /// counted in st.copy_done (and in the block's copies_in_done when `into_gpu`). Returns the
  /// bytes.
  template <class Submit>
  std::uint64_t push_runs(CopyEngine& ce, VaBlock& b, const PageMask& pages, Tick start,
                          ServiceTimes& st, const char* direction, const char* cause, bool into_gpu,
                          Submit submit);

  DriverContext& dc_;
  CopyEngine htod_, dtoh_;
  CopyEngine peer_;  ///< its GPU-to-GPU channel's engine (system.peer)
};

}  // namespace uvmsim
