// The driver's host-side entry points (uvm-driver.md §3, §7): CPU page faults on managed memory
// (the faulted page plus the tree prefetcher's choice migrate to the host; read-duplicated pages
// are kept), cudaMemPrefetchAsync and cudaMemAdvise. Each returns when the host may continue.
#pragma once

#include <cstdint>

#include "models/driver/driver_context.h"
#include "models/driver/observation_service.h"
#include "models/driver/policy_set.h"
#include "models/driver/residency.h"
#include "models/driver/root_chunk_pool.h"
#include "models/driver/thrashing_hints.h"
#include "models/thrashing.h"
#include "traces/trace.h"

namespace uvmsim {

class HostOperations {
 public:
  HostOperations(DriverContext& dc, RootChunkPool& pool, PolicySet& policies,
                 ThrashingDetector& thrashing, ObservationService& observations,
                 Residency& residency)
      : dc_(dc),
        pool_(pool),
        policies_(policies),
        thrashing_(thrashing),
        observations_(observations),
        residency_(residency) {}

  /// The CPU touches [va, va+size) at `t`; returns when it may continue.
  Tick cpu_access(Addr va, std::uint64_t size, AccessKind kind, Tick t);
  /// cudaMemPrefetchAsync of [va, va+size) to `dest` at `t`; returns when it completes.
  Tick user_prefetch(Addr va, std::uint64_t size, Processor dest, Tick t);
  /// cudaFree of the managed range `r` at `t` (uvm_va_range_destroy): every block's GPU chunk
  /// goes back to the free list and its host pages are released, without a copy-back; policies
  /// hear on_freed first. Returns when the host may continue.
  Tick free_allocation(VaRange& r, Tick t);
  /// cudaMemAdvise on the range's VA blocks (no host time modelled).
  void advise(Addr va, std::uint64_t size, trace::Advice advice, Processor device);

 private:
  /// This GPU's part of freeing `b` (its chunk, policies and placement state; the per-block cost
  /// if it has a chunk, or on GPU 0 if the block has host pages).
  void free_block(VaBlock& b, bool host_pages, ServiceTimes& st);
  /// Whether a CPU fault (an access of `kind`) on GPU-held `page` of `b` keeps the page there
  /// and maps it for the CPU (only where the topology lets the CPU map GPU memory:
  /// system.coherent_host), given the thrashing detector's `hint`.
  bool cpu_keeps_on_gpu(const VaBlock& b, unsigned page, AccessKind kind,
                        const ThrashingDetector::Result& hint) const;
  /// A CPU fault on GPU-resident `page` of `b`.
  void cpu_fault(VaBlock& b, unsigned page, bool write, ServiceTimes& st);

  DriverContext& dc_;
  RootChunkPool& pool_;
  PolicySet& policies_;
  ThrashingDetector& thrashing_;
  ObservationService& observations_;
  Residency& residency_;
};

}  // namespace uvmsim
