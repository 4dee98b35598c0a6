// What every part of the driver model shares: the simulation context (configuration, event queue,
// VA space, statistics, event log), the current fault batch's id for event-log rows, and the
// driver's clock for requests that arrive outside the service thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/types.h"
#include "models/driver/driver_shared.h"
#include "models/sim_context.h"

namespace uvmsim {

struct DriverContext {
  SimContext& sim;
  const SimConfig& cfg;
  DriverShared& shared;         ///< the per-process part: thrashing detector, batch ids
  std::uint8_t gpu = 0;         ///< the GPU this driver instance serves (its ordinal)
  std::int64_t log_batch = -1;  ///< batch id for event-log rows, -1 outside fault batches
  Tick clock = 0;  ///< time of the latest hook or access notification (for action wake-ups)
  std::string trace_name{};  ///< the trace's path, for errors about what it does

  Stats& stats() { return sim.stats; }
  EventLog& log() { return sim.log; }
  VaSpace& va() { return sim.va; }
  VaBlock& block(std::uint32_t id) { return sim.va.blocks()[id]; }
  /// This driver's GPU as a processor.
  Processor processor() const { return gpu_processor(gpu); }
  /// This driver's GPU's state of `b`, made on first use for a GPU other than 0.
  GpuBlockState& gpu_state(VaBlock& b) {
    if (gpu == 0) [[likely]]
      return b.gpu(0);
    sim.va.add_gpu_states(b);
    return b.gpu(gpu);
  }
  const GpuBlockState& gpu_state(const VaBlock& b) const { return b.gpu(gpu); }
  /// GPUs that may hold a state of `b` (0 .. this - 1): all of the machine's once a GPU other
  /// than 0 touched it, else GPU 0 alone.
  unsigned gpus_of(const VaBlock& b) const { return b.has_peer_states() ? sim.va.gpus() : 1; }
  /// Pages of `b` resident on any GPU.
  PageMask resident_on_gpus(const VaBlock& b) const {
    PageMask m = b.gpu(0).resident;
    for (unsigned g = 1; g < gpus_of(b); ++g) m |= b.gpu(g).resident;
    return m;
  }
};

/// For its lifetime, `dc`'s event-log rows carry `batch`: work one GPU's driver does for another
/// GPU's fault batch (a peer's copies, a preferred GPU's migration) is logged with that batch.
class LogBatchScope {
 public:
  LogBatchScope(DriverContext& dc, std::int64_t batch) : dc_(dc), own_(dc.log_batch) {
    dc.log_batch = batch;
  }
  ~LogBatchScope() { dc_.log_batch = own_; }
  LogBatchScope(const LogBatchScope&) = delete;
  LogBatchScope& operator=(const LogBatchScope&) = delete;

 private:
  DriverContext& dc_;
  std::int64_t own_;
};

/// Time cursors of one unit of driver work on the serial service thread.
struct ServiceTimes {
  Tick cpu;        ///< driver CPU time cursor
  Tick copy_done;  ///< latest copy completion of the current unit of work
};

/// Calls f(block, first_page, end_page) for every managed VA block overlapping [va, va+size),
/// with the overlapping valid pages of the block. Freed allocations are skipped: nothing a
/// policy or the driver does brings them back.
template <typename F>
void for_each_block_page(VaSpace& space, Addr va, std::uint64_t size, F&& f) {
  const Addr end = va + size;
  for (const auto& r : space.ranges()) {
    if (!r.managed || r.freed) continue;
    const Addr lo = std::max(va, r.base), hi = std::min(end, r.base + r.size);
    if (lo >= hi) continue;
    for (Addr a = lo; a < hi;) {
      const Addr bend = std::min(hi, (a & ~(kBlockSize - 1)) + kBlockSize);
      VaBlock& b = space.blocks()[space.block_index(r, a)];
      const unsigned p0 = VaSpace::page_index(a);
      const unsigned p1 = static_cast<unsigned>(((bend - 1) & (kBlockSize - 1)) >> kPageShift) + 1;
      f(b, std::max(p0, b.first_page), std::min(p1, b.end_page));
      a = bend;
    }
  }
}

}  // namespace uvmsim
