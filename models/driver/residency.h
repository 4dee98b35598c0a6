// Making pages resident (uvm_va_block_make_resident, uvm-driver.md §5, §6): migrating pages of a
// VA block to the GPU (a chunk first, evicting if the pool is full; zero-fill of pages resident
// nowhere; copy runs split where the cause changes) or back to the host, with the per-page host
// work, read duplication, thrashing bookkeeping and the policies' residency events.
#pragma once

#include <cstdint>

#include "models/driver/chunk_eviction.h"
#include "models/driver/copy_engines.h"
#include "models/driver/driver_context.h"
#include "models/driver/policy_set.h"
#include "models/driver/root_chunk_pool.h"
#include "models/thrashing.h"

namespace uvmsim {

class Residency {
 public:
  Residency(DriverContext& dc, RootChunkPool& pool, PolicySet& policies,
            ThrashingDetector& thrashing, CopyEngines& copies, ChunkEviction& eviction)
      : dc_(dc),
        pool_(pool),
        policies_(policies),
        thrashing_(thrashing),
        copies_(copies),
        eviction_(eviction) {}

  /// Makes `demand | prefetch` of `b` resident on the GPU; `writes` (may be null) become dirty.
  /// Returns the number of pages newly resident.
  unsigned make_resident_gpu(VaBlock& b, const PageMask& demand, const PageMask& prefetch,
                             HtodCause demand_cause, ServiceTimes& st, const PageMask* writes,
                             bool track_thrashing = true);
  /// Another GPU's fault batch `batch` chose this GPU's memory for `pages` of `b` and maps them
  /// here (peer access): they migrate in as demand, their PTEs here ready when the copies are.
  void make_resident_for(VaBlock& b, const PageMask& pages, const PageMask& writes,
                         std::int64_t batch, ServiceTimes& st);
  /// Moves `pages` of `b` from the GPU to the host (CPU fault, user prefetch, placement). With
  /// `duplicate` (a CPU read of a read-mostly block) the GPU keeps its copy, read-only.
  void migrate_to_cpu(VaBlock& b, const PageMask& pages, DtohCause cause, ServiceTimes& st,
                      bool duplicate = false);
  /// True if `b` is system-allocated memory on an ATS platform (driver.ats): the OS, not UVM's
  /// chunk pool, holds its GPU pages, and no policy tracks it (docs/platforms.md).
  bool ats_system(const VaBlock& b) const { return b.system && dc_.cfg.driver.ats; }
  /// `pages` of an ATS system block resident nowhere are populated in host memory (the first
  /// touch's fallback when GPU memory is full) and mapped remotely: returns how many.
  unsigned populate_system_host(VaBlock& b, const PageMask& pages, ServiceTimes& st);
  /// Widens `pages` to whole system pages (driver.system_page_size) within the block.
  PageMask system_pages_of(const VaBlock& b, const PageMask& pages) const;
  /// Removes `pages` from the GPU copy (the policies hear when the block empties).
  void clear_gpu_resident(VaBlock& b, const PageMask& pages, Tick now);
  /// Drops this GPU's copy of `pages` of `b` without a copy-back: read duplicates another
  /// processor's write or migration invalidates (break_read_duplication_in_region).
  void invalidate(VaBlock& b, const PageMask& pages, Tick now);
  /// Before this GPU takes `want` of `b` (or maps it in host memory): copies other GPUs hold
  /// move to the host on their copy engines first, the first leg of a GPU-to-GPU copy staged
  /// through host memory (no peer access: block_copy_resident_pages, pages_staged). Read
  /// duplicates the request keeps (read-mostly, not in `writes`) stay; the others are
  /// invalidated. Returns when the staged copies are done.
  Tick stage_from_peers(VaBlock& b, const PageMask& want, const PageMask* writes, ServiceTimes& st);
  /// With peer access: copies `pages` of `b`, which other GPUs hold, from the holders straight
  /// into this GPU's memory, no earlier than `ready`. The holders keep `keep` (read duplicates,
  /// then read-only) and drop the rest.
  void pull_from_peers(VaBlock& b, const PageMask& pages, const PageMask& keep, HtodCause cause,
                       Tick ready, ServiceTimes& st);
  /// Drops the other GPUs' copies of `pages` of `b` (invalidate on each; nothing at one GPU).
  void invalidate_peers(VaBlock& b, const PageMask& pages, Tick now);
  /// A migration to the GPU finished on `b`: the policies hear on_made_resident if it has
  /// GPU-resident pages (make_resident_gpu calls it; so does a fault that only collapsed read
  /// duplication, which moves nothing).
  void made_resident(const VaBlock& b, Tick now);

 private:
  /// Gets a chunk for `b`, evicting if needed. Returns when the chunk is usable.
  Tick allocate_chunk(VaBlock& b, ServiceTimes& st);
  void set_gpu_resident(VaBlock& b, const PageMask& pages, Tick now);
  /// make_resident_gpu for an ATS system block: no chunk, no eviction, no policy events.
  unsigned make_resident_system(VaBlock& b, const PageMask& demand, const PageMask& prefetch,
                                HtodCause demand_cause, ServiceTimes& st, const PageMask* writes);
  /// Prefetch accuracy bookkeeping of pages that just became resident (docs/stats.md).
  void account_prefetch_use(VaBlock& b, const PageMask& asked, const PageMask& prefetched,
                            HtodCause cause);
  /// Copies the host-resident pages `from_cpu` of `b` in address order, one run per cause.
  void copy_in(VaBlock& b, const PageMask& from_cpu, const PageMask& demand, HtodCause demand_cause,
               Tick ready, ServiceTimes& st);

  DriverContext& dc_;
  RootChunkPool& pool_;
  PolicySet& policies_;
  ThrashingDetector& thrashing_;
  CopyEngines& copies_;
  ChunkEviction& eviction_;

  /// Feeds copied pages to the thrashing detector (thrashing_event_cb: per copy, never for
  /// zero-filled pages).
  void note_migration(VaBlock& b, const PageMask& pages, Processor dest, Tick now,
                      ThrashingDetector::Cause cause);
};

}  // namespace uvmsim
