// Placement state of the driver's address space: what the placement actions of SUV's enhanced
// driver (Pratheek et al., MICRO 2024, §V-D) and the cudaMemAdvise-style actions set per page, and
// how GPU memory is partitioned between pinned chunks, HBM reservations and the general pool that
// the eviction policy manages. The driver model (models/uvm_driver_placement.cpp) performs the
// actions and their data movement; this file only keeps the bookkeeping and answers "may this
// block take a chunk, and whose chunk does it take?".
//
// Partition (in 2 MB root chunks, C = usable capacity):
//  * pinned   — chunks of blocks with a GPU-pinned page. Never evicted; withheld from the eviction
//               policy (SUV removes them from the driver's LRU list).
//  * reserved — per reservation r, chunks of its blocks (quota_r chunks guaranteed). A block of r
//               under quota takes a free chunk (or one from the general pool / an over-quota
//               reservation); at quota it evicts within r, oldest allocation first. Withheld from
//               the eviction policy as well.
//  * general  — everything else, capped at C - pinned - sum(quota). Victims come from the
//               eviction policy and are always general chunks.
#pragma once

#include <cstdint>
#include <vector>

#include "state/page_mask.h"
#include "state/va_space.h"

namespace uvmsim {

/// Per-block placement state (4 KB page masks over the block's 2 MB window).
struct BlockPlacement {
  PageMask gpu_pinned;   ///< pinned on the GPU: resident, never evicted
  PageMask host_pinned;  ///< pinned on the host: remote-mapped, never migrated
  PageMask no_migrate;   ///< never migrated by the driver (faults map remotely, counters ignored)
  PageMask acm;          ///< access-counter migration enabled (remote-mapped until migrated)
  std::uint32_t reservation = 0;  ///< HBM reservation id, 0 = none
};

/// An HBM reservation: `quota` chunks that only its blocks use and only its blocks evict.
struct Reservation {
  std::uint64_t quota = 0;             ///< chunks
  std::uint64_t used = 0;              ///< chunks held by its (unpinned) blocks
  std::uint64_t evictions = 0;         ///< chunks evicted within the reservation
  std::vector<std::uint32_t> members;  ///< its blocks
  bool live = false;
};

class PlacementState {
 public:
  enum class ChunkClass : std::uint8_t { General = 0, Reserved = 1, Pinned = 2 };
  /// Where a block's next chunk comes from.
  struct Source {
    enum Kind : std::uint8_t { Free, PolicyVictim, Victim, None } kind = None;
    std::uint32_t victim = 0;  ///< for Victim: the block to evict
  };

  /// The placement state of GPU `gpu`'s memory (`capacity_chunks` root chunks).
  void configure(std::size_t nblocks, std::uint64_t capacity_chunks, unsigned gpu = 0);
  /// True once any placement action changed state; until then the driver behaves exactly as
  /// without this module.
  bool active() const { return active_; }
  void activate() { active_ = true; }

  const BlockPlacement& block(std::uint32_t id) const { return blocks_[id]; }
  BlockPlacement& block(std::uint32_t id) { return blocks_[id]; }
  /// Withheld from the eviction policy: GPU-pinned or inside a reservation.
  bool withheld(std::uint32_t id) const { return withheld_[id] != 0; }
  ChunkClass chunk_class(std::uint32_t id) const;

  /// Recomputes `b`'s class and the chunk counters after its masks, reservation or chunk
  /// changed. Returns the previous withheld state (the driver tells the eviction policy about a
  /// change while `b` holds a chunk).
  bool refresh(const VaBlock& b);
  /// `b` got a (new) chunk: it becomes the newest of its reservation.
  void on_chunk_allocated(const VaBlock& b);

  /// Where `b` (which has no chunk) gets one, given `allocated` chunks in use: a free chunk, the
  /// eviction policy's victim (a general chunk), a given victim (a reservation's own or an
  /// over-quota reservation's chunk), or none (every chunk it could take is pinned or reserved).
  Source chunk_source(const VaBlock& b, std::uint64_t allocated,
                      const std::vector<VaBlock>& blocks) const;

  // Reservations (ids start at 1).
  std::uint32_t create_reservation(std::uint64_t quota_chunks);
  /// Removes `b` from its reservation (call refresh(b) afterwards); a reservation without
  /// members is deleted.
  void leave_reservation(const VaBlock& b);
  /// Adds `b` to reservation `id` (it must not be in one; call refresh(b) afterwards).
  void join_reservation(const VaBlock& b, std::uint32_t id);
  const Reservation* reservation(std::uint32_t id) const {
    return id && id <= reservations_.size() && reservations_[id - 1].live ? &reservations_[id - 1]
                                                                          : nullptr;
  }
  Reservation* reservation(std::uint32_t id) {
    return id && id <= reservations_.size() && reservations_[id - 1].live ? &reservations_[id - 1]
                                                                          : nullptr;
  }

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t pinned_chunks() const { return pinned_; }
  std::uint64_t reserved_quota() const { return quota_total_; }
  /// Chunks the general pool may hold: C - pinned - sum(quota), at least 0.
  std::uint64_t general_cap() const {
    const std::uint64_t held = pinned_ + quota_total_;
    return held >= capacity_ ? 0 : capacity_ - held;
  }
  std::uint64_t general_used(std::uint64_t allocated) const {
    return allocated - pinned_ - reserved_used_;
  }

 private:
  /// Oldest chunk-holding member of reservation `r` other than `requester` (empty blocks first,
  /// as the driver evicts UNUSED chunks before USED ones); kNoVictim if none.
  std::uint32_t reservation_victim(std::uint32_t r, std::uint32_t requester,
                                   const std::vector<VaBlock>& blocks) const;
  std::uint32_t over_quota_victim(std::uint32_t requester,
                                  const std::vector<VaBlock>& blocks) const;

  static constexpr std::uint32_t kNoVictim = ~std::uint32_t{0};
  bool active_ = false;
  unsigned gpu_ = 0;  ///< whose chunks (VaBlock::gpu)
  std::uint64_t capacity_ = 0;
  std::vector<BlockPlacement> blocks_;
  std::vector<std::uint8_t> withheld_;
  std::vector<std::uint8_t> counted_;       ///< per block: class counted (kUncounted if no chunk)
  std::vector<std::uint32_t> counted_res_;  ///< per block: reservation its chunk is counted in
  std::vector<std::uint64_t> alloc_order_;  ///< per block: allocation sequence number
  std::uint64_t alloc_seq_ = 0;
  std::vector<Reservation> reservations_;
  std::uint64_t pinned_ = 0, quota_total_ = 0, reserved_used_ = 0;
  static constexpr std::uint8_t kUncounted = 0xFF;
};

}  // namespace uvmsim
