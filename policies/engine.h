// The engine a policy talks to (ObservUVM's userspace engine, §V-A and §V-C): metadata queries and
// driver actions. The driver model implements it (models/driver/policy_facade.h); unit tests use a
// scripted fake (tests/policy_test_engine.h). A policy author reads this and policies/policy.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <vector>

#include "core/types.h"
#include "state/page_mask.h"
#include "state/placement_state.h"
#include "state/program_position.h"
#include "state/va_space.h"
#include "traces/hints.h"
#include "traces/trace.h"

namespace uvmsim {

constexpr std::uint32_t kNoBlock = std::numeric_limits<std::uint32_t>::max();

/// Why a region is observed (§IV-A, §IV-B): eviction observability or prefetch feedback. Both use
/// the same mechanism; they have separate budgets (observe.max_regions,
/// observe.max_feedback_regions).
enum class ObservePurpose : std::uint8_t { Eviction = 0, Feedback = 1 };
const char* to_string(ObservePurpose p);

/// A region currently made observable: `samples` are its 64 KB sample pages (4 KB page mask),
/// moved to host memory, remote-mapped and watched by an access counter with threshold 1.
struct ObservedRegion {
  std::uint32_t block = kNoBlock;
  ObservePurpose purpose = ObservePurpose::Eviction;
  Tick since = 0;
  PageMask samples;
};

/// A threadblock the GPU is running, and how far its slowest unfinished warp has got.
struct ThreadblockProgress {
  std::uint64_t tb = 0;            ///< id within the current launch
  std::uint64_t records_done = 0;  ///< trace records its slowest running warp has issued
};

/// What became of an offered region.
enum class Offer : std::uint8_t {
  Accepted,  ///< the region is observed now
  Declined,  ///< not observable now (not resident, observed already, no sample page, ...)
  Full,      ///< the budget is used up: stop offering
};

/// Where a policy offers regions for observation. The engine accepts a region only if it can be
/// observed (GPU-resident, not observed already, has a sample page, budget left).
class ObservationSink {
 public:
  /// Offers `block`; its sample pages are drawn from the 64 KB pages whose pages all lie in
  /// `sample_from` if given (e.g. the pages a prefetch brings in), else from its GPU-resident
  /// 64 KB pages.
  virtual Offer offer(std::uint32_t block, const PageMask* sample_from = nullptr) = 0;

 protected:
  ~ObservationSink() = default;
};

/// The engine a policy talks to: ObservUVM's userspace engine (metadata, §V-C) plus the driver's
/// action interface (§V-A). Implemented by the driver model; unit tests use a fake. Placement
/// research (reservations, pinning, advice) extends this interface with further actions.
class PolicyEngine {
 public:
  virtual ~PolicyEngine() = default;

  // ---- metadata ----------------------------------------------------------------------------
  /// Allocation ranges (va_space().ranges()) and VA blocks with their residency state.
  virtual const VaSpace& va_space() const = 0;
  /// Usable GPU memory in 2 MB root chunks.
  virtual std::uint64_t capacity_chunks() const = 0;
  /// Blocks that currently hold a GPU chunk (GPU-resident regions), in no particular order.
  virtual std::span<const std::uint32_t> resident_regions() const = 0;
  /// Regions currently observed (eviction observability and prefetch feedback).
  virtual std::span<const ObservedRegion> observed_regions() const = 0;
  /// The region's observation, or nullptr. During on_eviction() of an observed region it is
  /// still visible (the observation ends right after): "evicted before being accessed".
  virtual const ObservedRegion* observation(std::uint32_t block) const = 0;
  bool is_observed(std::uint32_t block) const { return observation(block) != nullptr; }
  /// Regions of `purpose` that could still be made observable now.
  virtual std::uint32_t observation_budget(ObservePurpose purpose) const = 0;
  /// 64 KB pages sampled per observed region (adaptive, §V-D).
  virtual unsigned samples_per_region() const = 0;
  virtual const ProgramPosition& position() const = 0;
  /// GPU accesses completed so far (a clock that does not depend on timing).
  virtual std::uint64_t accesses_completed() const = 0;
  /// The threadblocks running now, with their progress (fills `out`; reuse it to avoid
  /// allocation). Costs O(resident warps): for decisions, not per access.
  virtual void running_threadblocks(std::vector<ThreadblockProgress>& out) const = 0;
  /// Id of the fault batch being serviced (0 outside fault batches).
  virtual std::uint64_t fault_batch() const = 0;
  /// Distinct pages of `block` that faulted in the fault batch being serviced and whose block
  /// is not serviced yet (a batch's blocks are serviced in address order; a serviced block's
  /// faulted pages are GPU-resident). Kept only with driver.prefetch_cross_block, for the tree
  /// prefetcher's nodes above the block; 0 otherwise and outside fault batches.
  virtual unsigned pending_fault_pages(std::uint32_t block) const {
    (void)block;
    return 0;
  }
  /// The trace being simulated (for oracles that read the program's future).
  virtual const std::filesystem::path& trace_path() const = 0;
  /// Threadblocks of kernel `k` the whole GPU runs at once (occupancy per SM x SMs); 0 when no
  /// GPU is attached (stand-alone unit tests).
  virtual std::uint64_t concurrent_threadblocks(const trace::KernelInfo& k) const {
    (void)k;
    return 0;
  }

  // ---- actions -----------------------------------------------------------------------------
  /// setPrefetchRegion: migrate the whole 2 MB region `block` to the GPU at the driver's next
  /// service point (evicting if needed). Ignored if it is fully resident or already queued.
  virtual void prefetch_region(std::uint32_t block) = 0;
  /// The tree prefetcher's what-if driver.prefetch_cross_block: prefetch_region(block) for a
  /// block of a passing tree node above the faulting block; its regions and bytes are also
  /// counted apart (driver.cross_block_prefetches / cross_block_prefetch_bytes).
  virtual void prefetch_cross_block(std::uint32_t block) { prefetch_region(block); }
  /// Turns on access-counter based migration (ACBM) with this counter granularity (64 KB, 2 MB,
  /// 16 MB or 16 GB) and threshold; evicted pages are then mapped remotely (§II-B).
  virtual void enable_access_counter_migration(std::uint64_t granularity,
                                               std::uint32_t threshold) = 0;

  // ---- placement: SUV's enhanced driver (§V-D), cudaMemAdvise, cudaMemPrefetchAsync ----------
  // docs/driver-model.md "Placement actions" documents each. Ranges are byte ranges of managed
  // allocations, rounded out to 4 KB pages; bytes outside managed allocations are ignored. Called
  // from a program-structure hook (on_kernel_start / on_kernel_end / on_iteration) or outside a
  // kernel, an action runs at once as a host-side driver call and the next launch waits for it;
  // called during a kernel it is queued to the driver's service thread. The defaults below do
  // nothing (engines without placement support).

  /// The program's static hints (docs/hints.md): the trace's embedded hints, or the file given
  /// with --hints / engine.hints. nullptr if there are none.
  virtual const trace::Hints* hints() const { return nullptr; }
  /// Placement state of `block` (pinned / no-migrate / access-counter pages, reservation).
  virtual const BlockPlacement& block_placement(std::uint32_t block) const {
    (void)block;
    static const BlockPlacement none{};
    return none;
  }
  /// Reservation `id` (from reserve_on_demand), nullptr once released.
  virtual const Reservation* reservation(std::uint32_t id) const {
    (void)id;
    return nullptr;
  }
  /// Chunks held by blocks with GPU-pinned pages.
  virtual std::uint64_t pinned_chunks() const { return 0; }

  /// suvPinOnGPU, also prefetch-and-pin: migrates the range to the GPU (copies of host-resident
  /// pages, zero-fill of untouched ones) and pins it there: never evicted, withheld from the
  /// eviction policy. Pins block by block in address order while a chunk can be had without
  /// evicting pinned or reserved memory; returns the bytes pinned.
  virtual std::uint64_t pin_on_gpu(Addr va, std::uint64_t size) {
    (void)va, (void)size;
    return 0;
  }
  /// Ends GPU pins in the range: the pages stay resident and become evictable again.
  virtual void unpin_on_gpu(Addr va, std::uint64_t size) { (void)va, (void)size; }
  /// suvPinOnHost: GPU-resident pages migrate to the host, untouched pages are first-touched
  /// (memset) on the host, and the GPU maps the range remotely: accesses go over the link
  /// without faulting and the range never migrates (no-migrate).
  virtual void pin_on_host(Addr va, std::uint64_t size) { (void)va, (void)size; }
  /// Ends host pins: the remote mapping is removed, the next GPU access faults and migrates.
  virtual void unpin_on_host(Addr va, std::uint64_t size) { (void)va, (void)size; }
  /// SUV's ONDEMAND(ds, wss): clears the range's pins and no-migrate so it migrates on faults
  /// (access-counter migration, if on, stays on), and gives its blocks an HBM reservation of
  /// `bytes` (rounded up to 2 MB chunks): they only take reserved chunks and, at the quota,
  /// evict only each other. Returns the reservation id.
  virtual std::uint32_t reserve_on_demand(Addr va, std::uint64_t size, std::uint64_t bytes) {
    (void)va, (void)size, (void)bytes;
    return 0;
  }
  /// Takes the range's blocks out of their reservations (they join the general pool).
  virtual void release_reservation(Addr va, std::uint64_t size) { (void)va, (void)size; }
  /// Releases an expired range: ends its GPU pins and migrates its GPU-resident pages to the host
  /// (SUV Algorithm 2's eviction of spans whose utility expired).
  virtual void release_range(Addr va, std::uint64_t size) { (void)va, (void)size; }
  /// cudaMemPrefetchAsync: migrates the range to `dest` (no pinning). Pages pinned on the other
  /// side are left alone.
  virtual void prefetch_range(Addr va, std::uint64_t size, Processor dest) {
    (void)va, (void)size, (void)dest;
  }
  /// suvEnableAccessCounter for a range: pages not on the GPU are mapped remotely (first-touched
  /// on the host if untouched), the access counters count the GPU's accesses to them, and a
  /// notification migrates them (into the block's reservation if it has one); evicted pages are
  /// mapped remotely again. `on = false` turns it off for the range.
  virtual void set_access_counter_migration(Addr va, std::uint64_t size, bool on) {
    (void)va, (void)size, (void)on;
  }
  /// suvSetNoMigrateRegion: the driver never migrates the range to the GPU: access-counter
  /// notifications for it are ignored and its faults are served by mapping the host copy.
  virtual void set_no_migrate(Addr va, std::uint64_t size, bool on) {
    (void)va, (void)size, (void)on;
  }
  /// cudaMemAdvise(SetPreferredLocation / UnsetPreferredLocation) on the range's VA blocks.
  virtual void set_preferred_location(Addr va, std::uint64_t size, PreferredLocation where) {
    (void)va, (void)size, (void)where;
  }
};

}  // namespace uvmsim
