// The driver as the engine its policies talk to (ObservUVM §V-A, §V-C; policies/engine.h):
// metadata queries, actions requested by policies (whole-region prefetch, access-counter
// migration, and the placement actions of SUV's enhanced driver, placement_actions.cpp), the
// program-structure hooks, and the GPU's access and threadblock notifications, relayed to the
// policies that asked for them.
//
// An action requested from a program-structure hook (or outside a kernel) runs at once on the
// host and the next launch waits for it (host_ready()); one requested during a kernel is queued
// for the driver's serial service thread, which the facade wakes through `request_service`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <vector>

#include "models/driver/access_counter_service.h"
#include "models/driver/driver_context.h"
#include "models/driver/observation_service.h"
#include "models/driver/policy_set.h"
#include "models/driver/residency.h"
#include "models/driver/root_chunk_pool.h"
#include "models/gpu_listener.h"
#include "policies/engine.h"

namespace uvmsim {

class PolicyFacade final : public PolicyEngine, public GpuListener {
 public:
  struct Parts {
    RootChunkPool& pool;
    PolicySet& policies;
    ObservationService& observations;
    AccessCounterService& counters;
    Residency& residency;
  };
  /// `hints` (may be null) must outlive the facade. `request_service(t)` wakes the driver's
  /// service thread at `t` unless it is running or scheduled.
  PolicyFacade(DriverContext& dc, Parts parts, std::filesystem::path trace_path,
               const trace::Hints* hints, std::function<void(Tick)> request_service);

  /// The GPU whose running threadblocks running_threadblocks() reports.
  void attach_gpu(const ThreadblockSource* gpu) { gpu_ = gpu; }

  // ---- PolicyEngine: metadata --------------------------------------------------------------
  const VaSpace& va_space() const override { return dc_.sim.va; }
  std::uint64_t capacity_chunks() const override { return p_.pool.capacity(); }
  /// Blocks holding an evictable chunk: pinned and reserved chunks are withheld from eviction
  /// policies and not listed.
  std::span<const std::uint32_t> resident_regions() const override {
    return p_.pool.evictable_regions();
  }
  std::span<const ObservedRegion> observed_regions() const override {
    return p_.observations.regions();
  }
  const ObservedRegion* observation(std::uint32_t block) const override {
    return p_.observations.find(block);
  }
  std::uint32_t observation_budget(ObservePurpose p) const override {
    return p_.observations.budget(p);
  }
  unsigned samples_per_region() const override { return p_.observations.samples(); }
  const ProgramPosition& position() const override { return dc_.sim.position(dc_.gpu); }
  std::uint64_t accesses_completed() const override { return dc_.sim.stats.accesses; }
  void running_threadblocks(std::vector<ThreadblockProgress>& out) const override;
  std::uint64_t fault_batch() const override { return dc_.log_batch < 0 ? 0 : dc_.shared.batch_id; }
  const std::filesystem::path& trace_path() const override { return trace_path_; }
  unsigned pending_fault_pages(std::uint32_t block) const override {
    return batch_pending_.empty() ? 0 : batch_pending_[block];
  }
  std::uint64_t concurrent_threadblocks(const trace::KernelInfo& k) const override;

  // ---- PolicyEngine: actions ---------------------------------------------------------------
  void prefetch_region(std::uint32_t block) override;
  void prefetch_cross_block(std::uint32_t block) override;
  void enable_access_counter_migration(std::uint64_t granularity, std::uint32_t threshold) override;

  // ---- PolicyEngine: placement (placement_actions.cpp, docs/driver-model.md) ----------------
  const trace::Hints* hints() const override { return hints_; }
  const BlockPlacement& block_placement(std::uint32_t block) const override {
    return p_.pool.placement().block(block);
  }
  const Reservation* reservation(std::uint32_t id) const override {
    return p_.pool.placement().reservation(id);
  }
  std::uint64_t pinned_chunks() const override { return p_.pool.placement().pinned_chunks(); }
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

  // ---- GpuListener --------------------------------------------------------------------------
  bool wants_accesses() const override { return !p_.policies.access_subscribers().empty(); }
  void on_access(const AccessEvent& a) override {
    dc_.clock = a.now;
    p_.policies.on_access(a);
  }
  void on_threadblock_end(std::uint64_t tb, Tick now) override {
    p_.policies.each([&](PolicyBase& p) { p.on_threadblock_end(tb, now); });
  }

  // ---- program structure, from the simulator ---------------------------------------------
  void on_kernel_start(const trace::KernelInfo& k, std::uint32_t launch, std::int32_t iteration,
                       Tick now);
  void on_kernel_end(const trace::KernelInfo& k, std::uint32_t launch, std::int32_t iteration,
                     Tick now);
  void on_iteration(std::int32_t iteration, Tick now);
  /// When the host may go on after the placement actions policies ran at a hook.
  Tick host_ready() const { return host_ready_; }
  /// Every policy's report() into the statistics.
  void finish_stats();

  // ---- the fault batch, for pending_fault_pages() (driver.prefetch_cross_block only) ---------
  /// `pages` distinct pages of `block` faulted in the batch about to be serviced.
  void note_batch_faults(std::uint32_t block, unsigned pages);
  /// `block`'s faults are being serviced: they are no longer pending.
  void clear_batch_faults(std::uint32_t block) {
    if (!batch_pending_.empty()) batch_pending_[block] = 0;
  }

  // ---- work for the service thread ---------------------------------------------------------
  bool work_pending() const { return !region_queue_.empty() || !deferred_.empty(); }
  /// Whole-region prefetches policies asked for (if any).
  void service_region_prefetches(ServiceTimes& st);
  /// Placement actions requested during a kernel (if any).
  void service_deferred_actions(ServiceTimes& st);

 private:
  /// Runs placement action `op` on [va, va + size): at once on the host (hook or outside a
  /// kernel; the next launch waits for it) or queued for the service thread (during a kernel).
  /// `f(st)` returns true if it changed anything (only then is the call charged and logged).
  void placement_action(const char* op, Addr va, std::uint64_t size,
                        std::function<bool(ServiceTimes&)> f);
  /// A placement action over [va, va + size): f(block, pages of the range in it, st) per VA
  /// block, returning true if it changed the block.
  template <typename F>
  void placement_on_range(const char* op, Addr va, std::uint64_t size, F f);
  /// True if an action requested now runs at once on the host.
  bool on_host() const { return host_context_ || !dc_.sim.position(dc_.gpu).in_kernel; }
  /// Marks pages as first-touched on the host (memset) and returns the time it takes.
  Tick host_first_touch(VaBlock& b, const PageMask& pages);
  /// Ends `b`'s observation, if any, before an action changes it.
  void drop_observation(VaBlock& b) {
    if (p_.observations.find(b.id)) p_.observations.drop(b, false);
  }
  /// Runs a program-structure hook on every policy, as host context.
  template <typename F>
  void host_hook(F&& f) {
    host_context_ = true;  // placement actions run on the host before the launch
    p_.policies.each(f);
    host_context_ = false;
  }

  DriverContext& dc_;
  Parts p_;
  std::filesystem::path trace_path_;
  const trace::Hints* hints_;
  std::function<void(Tick)> request_service_;
  const ThreadblockSource* gpu_ = nullptr;
  std::vector<std::uint32_t> region_queue_;      ///< prefetch_region() requests, in order
  std::vector<std::uint32_t> region_servicing_;  ///< the requests being serviced
  std::vector<std::uint8_t> region_queued_;      ///< per block: 1 queued, 2 queued cross-block
  std::vector<std::uint32_t> batch_pending_;     ///< per block (cross-block what-if only)
  bool host_context_ = false;                    ///< dispatching a program-structure hook
  Tick host_ready_ = 0;
  std::vector<std::function<bool(ServiceTimes&)>> deferred_;
};

}  // namespace uvmsim
