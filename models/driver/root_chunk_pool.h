// GPU memory as the driver's physical memory manager sees it (uvm_pmm_gpu.c, uvm-driver.md §5):
// `capacity` root chunks of 2 MB, handed out from PMA in batches of `pma_batch_chunks`, each owned
// by one VA block while allocated. Keeps the list of chunk-holding blocks the eviction policy
// chooses from and, once a placement policy pins or reserves memory, the partition of the chunks
// into pinned, reserved and general-pool ones (state/placement_state.h): withheld chunks leave
// the eviction candidates, and the policies are told.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/driver/driver_context.h"
#include "models/driver/policy_set.h"
#include "state/placement_state.h"

namespace uvmsim {

class RootChunkPool {
 public:
  RootChunkPool(DriverContext& dc, PlacementState& place, PolicySet& policies,
                std::uint64_t capacity_chunks);

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t allocated() const { return allocated_; }
  /// Blocks holding an evictable chunk (pinned and reserved chunks are withheld once placement
  /// is active).
  std::span<const std::uint32_t> evictable_regions() const {
    return place_.active() ? std::span<const std::uint32_t>(evictable_) : resident_;
  }

  /// True if `b` (without a chunk) can get one under the placement partition.
  bool chunk_obtainable(const VaBlock& b) const;
  /// The block to evict for `b`'s new chunk, or kNoBlock for a free one (chunk_obtainable()).
  std::uint32_t choose_victim(const VaBlock& b, Tick now);
  /// True if the last choose_victim() took the eviction policy's decision (setEvictionRegion).
  bool policy_decided() const { return policy_decided_; }
  /// `b`'s allocation was freed: its chunk goes back to UVM's free list (no copy-back) and it
  /// leaves the lists.
  void free_chunk(VaBlock& b);
  /// A free chunk from PMA: one PMA call per `pma_batch_chunks` chunks charges the driver CPU.
  void take_free_chunk(ServiceTimes& st);
  /// `b` now owns a chunk (free or recycled from an evicted block).
  void assign(VaBlock& b);
  /// `v`'s chunk was evicted (and handed on): it leaves the lists.
  void release(const VaBlock& v);

  // ---- system-allocated memory (ATS, docs/platforms.md) -------------------------------------
  /// 4 KB pages of system-allocated memory resident in GPU memory. The OS placed them there
  /// (first touch, access-counter migration); UVM neither evicts them nor uses their memory:
  /// they take whole 2 MB chunks' worth of capacity from the pool, rounded up.
  std::uint64_t system_pages() const { return system_pages_; }
  /// True if `pages` more system pages fit beside the allocated chunks.
  bool system_room(std::uint64_t pages) const {
    return allocated_ + chunks_for(system_pages_ + pages) <= capacity_;
  }
  void add_system_pages(std::uint64_t pages) { system_pages_ += pages; }
  void remove_system_pages(std::uint64_t pages) { system_pages_ -= pages; }

  // ---- placement partition ------------------------------------------------------------------
  PlacementState& placement() { return place_; }
  const PlacementState& placement() const { return place_; }
  /// The first placement action switches to the partitioned chunk accounting.
  void activate_placement();
  /// Re-evaluates `b`'s chunk class; tells the policies if `b` was withheld / returned.
  void refresh(const VaBlock& b, Tick now);
  /// Pages of `b` that leave the GPU lose their GPU pin (CPU fault, migration).
  void unpin_leaving(const VaBlock& b, const PageMask& pages, Tick now);

 private:
  static std::uint64_t chunks_for(std::uint64_t pages) {
    return (pages + kPagesPerBlock - 1) / kPagesPerBlock;
  }
  /// Chunks allocated to UVM plus the capacity system pages take.
  std::uint64_t used_chunks() const { return allocated_ + chunks_for(system_pages_); }
  void track_evictable(const VaBlock& b);
  /// `v` no longer holds its chunk: off the resident (and evictable) lists.
  void leave_lists(const VaBlock& v);

  DriverContext& dc_;
  PlacementState& place_;
  PolicySet& policies_;
  std::uint64_t capacity_;
  std::uint64_t allocated_ = 0;
  std::uint64_t pma_reserve_ = 0;  ///< chunks left from the last PMA batch call
  std::uint64_t system_pages_ = 0;
  bool policy_decided_ = false;
  std::vector<std::uint32_t> resident_;      ///< blocks holding a chunk
  std::vector<std::uint32_t> resident_pos_;  ///< per block: index in resident_, or ~0
  /// Once placement is active: resident_ minus withheld blocks, and each block's index in it.
  std::vector<std::uint32_t> evictable_, evictable_pos_;
};

}  // namespace uvmsim
