// Servicing the faults of one VA block in a batch (uvm_gpu_replayable_faults.c
// service_fault_batch_block_locked → uvm_va_block_service_locked; uvm-driver.md §2, §1):
// classify each faulted page (duplicate, already resident, throttled or pinned by the thrashing
// detector, a write to a read-duplicated page, mapped remotely by the placement, or migrated),
// choose the pages to prefetch with them, make them resident, and tell the policies.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "models/driver/driver_context.h"
#include "models/driver/fault_batch.h"
#include "models/driver/observation_service.h"
#include "models/driver/policy_set.h"
#include "models/driver/residency.h"
#include "models/driver/root_chunk_pool.h"
#include "models/driver/thrashing_hints.h"
#include "models/thrashing.h"

namespace uvmsim {

class BlockService {
 public:
  BlockService(DriverContext& dc, RootChunkPool& pool, PolicySet& policies,
               ThrashingDetector& thrashing, ObservationService& observations, Residency& residency)
      : dc_(dc),
        pool_(pool),
        policies_(policies),
        thrashing_(thrashing),
        observations_(observations),
        residency_(residency) {}

  /// Services `faults` (sorted, all in one VA block) of the current batch. Sets `throttled` if
  /// the thrashing detector held a fault back; returns the duplicates found.
  std::uint64_t service(std::span<const BatchFault> faults, ServiceTimes& st, bool& throttled);

 private:
  /// What the faults of one block asked for, page by page.
  struct Classified {
    PageMask faulted;  ///< to migrate to the GPU
    PageMask remote;   ///< to map remotely (zero-copy)
    PageMask writes;   ///< faulted pages written
    PageMask peer;     ///< to map in another GPU's memory (peer access)
    /// The GPU whose memory each `peer` page is mapped in (only those entries are set).
    std::array<std::uint8_t, kPagesPerBlock> peer_gpu;
    bool collapsed = false;  ///< a write ended read duplication of a GPU-resident page
    std::uint64_t duplicates = 0;
  };
  /// service() once the block's lock is held.
  std::uint64_t service_locked(VaBlock& b, std::span<const BatchFault> faults, ServiceTimes& st,
                               bool& throttled);
  Classified classify(VaBlock& b, std::span<const BatchFault> faults, Tick now, bool& throttled);
  void map_remote(VaBlock& b, const PageMask& remote, ServiceTimes& st);
  /// With peer access, the GPU whose memory serves `page` of `b` for this GPU's fault instead of
  /// a migration here, or -1: block_select_processor_residency's choices that keep a page on a
  /// peer (a thrashing pin there; resident nowhere with a preferred location there; accessed-by
  /// with the closest copy there; an atomic over NVLink with
  /// thrashing.map_remote_on_native_atomics; a preferred location there).
  int peer_target(const VaBlock& b, unsigned page, AccessKind kind,
                  const ThrashingDetector::Result& hint) const;
  /// Makes the `c.peer` pages resident on their GPUs (if they are not) and maps them there.
  void map_peer(VaBlock& b, const Classified& c, ServiceTimes& st);
  /// The faults of an ATS system block (uvm_ats_service_faults): returns the duplicates.
  std::uint64_t service_system(VaBlock& b, std::span<const BatchFault> faults, ServiceTimes& st);
  /// The tree prefetcher's (or the prefetch policy's) pages to migrate with `faulted`.
  PageMask choose_prefetch(VaBlock& b, const PageMask& faulted, const PageMask& remote, Tick now);

  DriverContext& dc_;
  RootChunkPool& pool_;
  PolicySet& policies_;
  ThrashingDetector& thrashing_;
  ObservationService& observations_;
  Residency& residency_;
};

}  // namespace uvmsim
