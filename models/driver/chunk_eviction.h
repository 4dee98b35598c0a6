// Evicting a root chunk (uvm_pmm_gpu.c pick_and_evict_root_chunk, uvm_va_block.c
// block_evict_pages_from_gpu; uvm-driver.md §5): the victim block's GPU-resident pages are
// copied back to host memory, its GPU state is dropped, and the chunk goes straight to the
// block that needed it.
#pragma once

#include "models/driver/access_counter_service.h"
#include "models/driver/copy_engines.h"
#include "models/driver/driver_context.h"
#include "models/driver/observation_service.h"
#include "models/driver/policy_set.h"
#include "models/driver/root_chunk_pool.h"

namespace uvmsim {

class ChunkEviction {
 public:
  ChunkEviction(DriverContext& dc, CopyEngines& copies, RootChunkPool& pool, PolicySet& policies,
                ObservationService& observations, const AccessCounterService& counters)
      : dc_(dc),
        copies_(copies),
        pool_(pool),
        policies_(policies),
        observations_(observations),
        counters_(counters) {}

  /// Evicts `v`'s chunk, starting at st.cpu (which already includes the eviction's CPU cost).
  void evict(VaBlock& v, ServiceTimes& st);

 private:
  DriverContext& dc_;
  CopyEngines& copies_;
  RootChunkPool& pool_;
  PolicySet& policies_;
  ObservationService& observations_;
  const AccessCounterService& counters_;
};

}  // namespace uvmsim
