// The UVM driver model: replayable-fault servicing in batches exactly as
// uvm_gpu_replayable_faults.c does it (fetch <= fault_batch_count raw entries, coalesce, sort,
// service per 2 MB VA block, flush + replay per the replay policy, strictly serial batches), the
// make_resident path (chunk allocation, eviction on failure, zero-fill of first-touch pages, copy
// runs), CPU faults, cudaMemPrefetchAsync, cudaMemAdvise and access-counter servicing. Every
// eviction / prefetch / placement decision goes through the policies, and the driver is the
// PolicyEngine they talk to: metadata queries and actions, including the sampled-observability
// mechanism of ObservUVM (§IV-A; models/observability.h) and whole-region prefetches.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "models/access_counters.h"
#include "models/fault_buffer.h"
#include "models/observability.h"
#include "models/sim_context.h"
#include "models/thrashing.h"
#include "models/timing.h"
#include "policies/policy.h"
#include "state/placement_state.h"
#include "traces/trace.h"

namespace uvmsim {

class Gpu;

class UvmDriver final : public PolicyEngine {
 public:
  /// `hints` (may be null) must outlive the driver; policies read it through hints().
  UvmDriver(SimContext& ctx, FaultBuffer& buffer, std::uint64_t capacity_chunks,
            std::filesystem::path trace_path = {}, const trace::Hints* hints = nullptr);
  ~UvmDriver() override;

  EvictionPolicy& eviction() { return *eviction_; }
  PrefetchPolicy& prefetch() { return *prefetch_; }
  PlacementPolicy& placement() { return *placement_; }
  AccessCounters& access_counters() { return counters_; }
  std::uint64_t allocated_chunks() const { return allocated_chunks_; }

  /// The GMMU appended a fault entry valid at `valid_at`: raise the interrupt if idle.
  void on_fault_pushed(Tick valid_at);
  void on_driver_wake(Tick now);
  void on_batch_end(std::uint32_t batch, Tick now);
  /// A GPU access went to sysmem over the link (feeds the access counters).
  void on_remote_access(Addr va, std::uint32_t n, Tick now);
  /// The same for an access to `page` of managed block `b` (observed sample pages see it).
  void on_remote_access(const VaBlock& b, unsigned page, Addr va, std::uint32_t n, Tick now) {
    if (obs_.active() && obs_.on_remote_access(b.id, page)) {
      on_sample_access(n, now);
      return;
    }
    on_remote_access(va, n, now);
  }
  /// True if some policy asked for per-access notifications (the GPU then calls on_gpu_access).
  bool wants_access_notifications() const { return !access_subscribers_.empty(); }
  void on_gpu_access(const AccessEvent& a) {
    clock_ = a.now;
    for (auto* p : access_subscribers_) {
      // The eviction policy hears nothing about chunks withheld from it (pinned, reserved).
      if (p == eviction_.get() && place_.withheld(a.block.id)) continue;
      p->on_access(a);
    }
  }

  // Program structure, from the simulator (dispatched to every policy).
  void on_kernel_start(const trace::KernelInfo& k, std::uint32_t launch, std::int32_t iteration,
                       Tick now);
  void on_kernel_end(const trace::KernelInfo& k, std::uint32_t launch, std::int32_t iteration,
                     Tick now);
  void on_iteration(std::int32_t iteration, Tick now);
  void on_threadblock_end(std::uint64_t tb, Tick now) {
    each_policy([&](PolicyBase& p) { p.on_threadblock_end(tb, now); });
  }
  /// Final observability numbers and every policy's report() into the statistics.
  void finish_stats();

  // PolicyEngine: metadata
  const VaSpace& va_space() const override { return ctx_.va; }
  std::uint64_t capacity_chunks() const override { return capacity_chunks_; }
  /// Blocks holding an evictable chunk: pinned and reserved chunks are withheld from eviction
  /// policies and not listed.
  std::span<const std::uint32_t> resident_regions() const override {
    return place_.active() ? std::span<const std::uint32_t>(evictable_) : resident_;
  }
  std::span<const ObservedRegion> observed_regions() const override { return obs_.regions(); }
  const ObservedRegion* observation(std::uint32_t block) const override { return obs_.find(block); }
  std::uint32_t observation_budget(ObservePurpose p) const override {
    return obs_.active() ? obs_.budget(p) : 0;
  }
  unsigned samples_per_region() const override { return obs_.samples(); }
  const ProgramPosition& position() const override { return ctx_.position; }
  std::uint64_t accesses_completed() const override { return ctx_.stats.accesses; }
  void running_threadblocks(std::vector<ThreadblockProgress>& out) const override;
  /// The GPU whose threadblocks running_threadblocks() reports (set by the simulator).
  void attach_gpu(const Gpu* gpu) { gpu_ = gpu; }
  std::uint64_t fault_batch() const override { return log_batch_ < 0 ? 0 : batch_id_; }
  const std::filesystem::path& trace_path() const override { return trace_path_; }
  std::uint64_t concurrent_threadblocks(const trace::KernelInfo& k) const override;
  // PolicyEngine: actions
  void prefetch_region(std::uint32_t block) override;
  void enable_access_counter_migration(std::uint64_t granularity, std::uint32_t threshold) override;
  // PolicyEngine: placement (models/uvm_driver_placement.cpp, docs/driver-model.md)
  const trace::Hints* hints() const override { return hints_; }
  const BlockPlacement& block_placement(std::uint32_t block) const override {
    return place_.block(block);
  }
  const Reservation* reservation(std::uint32_t id) const override { return place_.reservation(id); }
  std::uint64_t pinned_chunks() const override { return place_.pinned_chunks(); }
  std::uint64_t pin_on_gpu(Addr va, std::uint64_t size) override;
  void unpin_on_gpu(Addr va, std::uint64_t size) override;
  void pin_on_host(Addr va, std::uint64_t size) override;
  void unpin_on_host(Addr va, std::uint64_t size) override;
  std::uint32_t reserve_on_demand(Addr va, std::uint64_t size, std::uint64_t bytes) override;
  void release_reservation(Addr va, std::uint64_t size) override;
  void release_range(Addr va, std::uint64_t size) override;
  void prefetch_range(Addr va, std::uint64_t size, Processor dest) override;
  void set_access_counter_migration(Addr va, std::uint64_t size, bool on) override;
  void set_no_migrate(Addr va, std::uint64_t size, bool on) override;
  void set_preferred_location(Addr va, std::uint64_t size, PreferredLocation where) override;
  /// When the host may go on after the placement actions policies ran at a program-structure
  /// hook (the simulator starts the next launch no earlier).
  Tick host_ready() const { return host_ready_; }

  // Host-side operations; each returns the time the host continues.
  Tick cpu_access(Addr va, std::uint64_t size, AccessKind kind, Tick t);
  Tick user_prefetch(Addr va, std::uint64_t size, Processor dest, Tick t);
  void advise(Addr va, std::uint64_t size, trace::Advice advice, Processor device);

  bool busy() const { return bh_running_ || wake_scheduled_; }

 private:
  struct BatchFault {
    Addr page_va;
    AccessKind kind;
    std::uint32_t utlb;
    std::uint32_t instances;
  };
  struct ServiceTimes {
    Tick cpu;        ///< driver CPU time cursor
    Tick copy_done;  ///< latest copy completion of the current unit of work
  };

  void start_batch(Tick now);
  void end_bottom_half(Tick now);
  void schedule_replay(Tick t);
  /// Services the faults [first, last) of batch_ (all in one VA block).
  void service_block(std::size_t first, std::size_t last, ServiceTimes& st, bool& throttled);
  /// Makes `demand | prefetch` resident on the GPU. Returns pages newly resident.
  unsigned make_resident_gpu(VaBlock& b, const PageMask& demand, const PageMask& prefetch,
                             HtodCause demand_cause, ServiceTimes& st, const PageMask* dirty,
                             bool track_thrashing = true);
  /// Moves `pages` of `b` from the GPU to the CPU (CPU fault, user prefetch to CPU).
  void migrate_to_cpu(VaBlock& b, const PageMask& pages, DtohCause cause, ServiceTimes& st);
  /// Gets a chunk for `b`, evicting if needed. Returns when the chunk is usable.
  Tick allocate_chunk(VaBlock& b, ServiceTimes& st);
  void evict(VaBlock& victim, ServiceTimes& st);
  void copy_runs(const VaBlock& b, const PageMask& pages, bool htod, const char* cause, Tick start,
                 ServiceTimes& st, std::uint64_t& bytes_out);
  void service_access_counters(ServiceTimes& st);

  // Policy work on the service thread (uvm_driver_policy.cpp): observation notifications,
  // queued region prefetches, and topping up observed regions.
  bool policy_work_pending() const {
    return !obs_.pending().empty() || !region_queue_.empty() || obs_refill_due_ ||
           !deferred_.empty();
  }
  /// Returns true if it took driver time.
  bool service_policy_work(ServiceTimes& st);
  void service_observations(ServiceTimes& st);
  void service_region_prefetches(ServiceTimes& st);
  bool refill_observations(ServiceTimes& st);
  bool under_memory_pressure() const;
  bool try_observe(std::uint32_t block, ObservePurpose purpose, const PageMask* sample_from,
                   ServiceTimes& st);
  /// Prefetch feedback decided while `prefetch` pages of `b` are about to migrate: the prefetch
  /// policy may make `b` observable with samples from those pages, which then stay on the host
  /// (removed from `prefetch`) instead of migrating there and back (§IV-B).
  void observe_prefetch(VaBlock& b, PageMask& prefetch, ServiceTimes& st);
  /// Ends an observation the driver did not complete (eviction / prefetch / advice): the sample
  /// pages stay on the host and lose their remote mapping unless something else maps them.
  void drop_observation(VaBlock& b, bool evicted);
  void on_sample_access(std::uint32_t n, Tick now);
  void request_service(Tick now);
  template <typename F>
  void each_policy(F&& f) {
    f(static_cast<PolicyBase&>(*eviction_));
    f(static_cast<PolicyBase&>(*prefetch_));
    f(static_cast<PolicyBase&>(*placement_));
  }
  /// each_policy(), but the eviction policy is skipped for a block withheld from it.
  template <typename F>
  void each_policy_for(const VaBlock& b, F&& f) {
    if (!place_.withheld(b.id)) f(static_cast<PolicyBase&>(*eviction_));
    f(static_cast<PolicyBase&>(*prefetch_));
    f(static_cast<PolicyBase&>(*placement_));
  }

  // Placement (uvm_driver_placement.cpp).
  /// Runs placement action `op` on [va, va + size): at once on the host (hook or outside a
  /// kernel; the next launch waits for it) or queued for the service thread (during a kernel).
  /// `f(st)` returns true if it changed anything (only then is the call charged and logged).
  void placement_action(const char* op, Addr va, std::uint64_t size,
                        std::function<bool(ServiceTimes&)> f);
  /// A placement action over [va, va + size): f(block, pages of the range in it, st) per VA
  /// block, returning true if it changed the block.
  template <typename F>
  void placement_on_range(const char* op, Addr va, std::uint64_t size, F f);
  /// True if `b` (without a chunk) can get one under the placement partition.
  bool chunk_obtainable(const VaBlock& b) const;
  /// The block to evict for `b`'s new chunk, or kNoBlock for a free one (chunk_obtainable()).
  std::uint32_t choose_victim(const VaBlock& b, Tick now);
  /// Re-evaluates `b`'s chunk class; tells the eviction policy if `b` was withheld / returned.
  void refresh_placement(const VaBlock& b, Tick now);
  /// Pages of `b` that evicted pages remote-map again (access-counter migration).
  PageMask remap_on_eviction(const VaBlock& b, const PageMask& pages) const;
  /// True if access-counter notifications may migrate `page` of `b`.
  bool counter_migration_allowed(const VaBlock& b, unsigned page) const;
  /// Pages of `b` in [p0, p1) that leave the GPU lose their GPU pin (CPU fault, migration).
  void unpin_leaving(VaBlock& b, const PageMask& pages, Tick now);
  /// Marks pages as first-touched on the host (memset) and returns the time it takes.
  Tick host_first_touch(VaBlock& b, const PageMask& pages);
  void service_deferred_actions(ServiceTimes& st);

  void set_gpu_resident(VaBlock& b, const PageMask& pages, Tick now);
  void clear_gpu_resident(VaBlock& b, const PageMask& pages, Tick now);
  /// Calls f(block, first_page, end_page) for every managed VA block overlapping [va, va+size),
  /// with the overlapping valid pages of the block.
  template <typename F>
  void for_each_block_page(Addr va, std::uint64_t size, F&& f) {
    const Addr end = va + size;
    for (const auto& r : ctx_.va.ranges()) {
      if (!r.managed) continue;
      const Addr lo = std::max(va, r.base), hi = std::min(end, r.base + r.size);
      if (lo >= hi) continue;
      for (Addr a = lo; a < hi;) {
        const Addr bend = std::min(hi, (a & ~(kBlockSize - 1)) + kBlockSize);
        VaBlock& b = ctx_.va.blocks()[ctx_.va.block_index(r, a)];
        const unsigned p0 = VaSpace::page_index(a);
        const unsigned p1 =
            static_cast<unsigned>(((bend - 1) & (kBlockSize - 1)) >> kPageShift) + 1;
        f(b, std::max(p0, b.first_page), std::min(p1, b.end_page));
        a = bend;
      }
    }
  }

  SimContext& ctx_;
  const SimConfig& cfg_;
  FaultBuffer& buffer_;
  std::unique_ptr<EvictionPolicy> eviction_;
  std::unique_ptr<PrefetchPolicy> prefetch_;
  std::unique_ptr<PlacementPolicy> placement_;
  ThrashingDetector thrashing_;
  AccessCounters counters_;
  CopyEngine ce_htod_, ce_dtoh_;

  std::uint64_t capacity_chunks_;
  std::uint64_t allocated_chunks_ = 0;
  std::uint64_t pma_reserve_ = 0;  ///< chunks left from the last PMA batch call

  // Bottom-half state.
  bool bh_running_ = false;
  bool wake_scheduled_ = false;
  bool first_batch_done_ = false;
  bool replay_issued_in_run_ = false;
  std::uint32_t batches_in_run_ = 0, throttled_in_run_ = 0;
  std::uint32_t batch_id_ = 0;
  std::int64_t log_batch_ = -1;           ///< batch id for event-log rows, -1 outside fault batches
  std::size_t cached_put_unfetched_ = 0;  ///< valid entries left in the buffer at fetch time
  std::uint64_t batch_duplicates_ = 0, batch_raw_ = 0;
  bool batch_throttled_ = false;
  Tick batch_start_ = 0;
  std::vector<BatchFault> batch_;
  std::vector<std::uint32_t> utlb_last_;  ///< index in batch_ of each uTLB's last fault
  PageMask scratch_;

  // Policy engine state.
  const Gpu* gpu_ = nullptr;
  std::filesystem::path trace_path_;
  Observability obs_;
  bool obs_refill_due_ = false;
  std::vector<PolicyBase*> access_subscribers_;
  std::vector<std::uint32_t> resident_;          ///< blocks holding a chunk
  std::vector<std::uint32_t> resident_pos_;      ///< per block: index in resident_, or ~0
  std::vector<std::uint32_t> region_queue_;      ///< prefetch_region() requests, in order
  std::vector<std::uint32_t> region_servicing_;  ///< the requests being serviced
  std::vector<std::uint8_t> region_queued_;      ///< per block
  Tick clock_ = 0;  ///< time of the latest hook or access notification (for action wake-ups)

  // Placement state (uvm_driver_placement.cpp).
  PlacementState place_;
  const trace::Hints* hints_ = nullptr;
  bool acm_all_ = false;       ///< access-counter migration for every page (not range-scoped)
  bool host_context_ = false;  ///< dispatching a program-structure hook
  Tick host_ready_ = 0;
  std::vector<std::function<bool(ServiceTimes&)>> deferred_;
  /// Once placement is active: resident_ minus withheld blocks, and each block's index in it.
  std::vector<std::uint32_t> evictable_, evictable_pos_;
  void track_evictable(const VaBlock& b);
  /// The first placement action switches the driver to the partitioned chunk accounting.
  void activate_placement();
};

}  // namespace uvmsim
