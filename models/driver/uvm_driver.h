// The UVM driver model: it builds its parts and coordinates them, as the real driver's service
// thread does (uvm_gpu_replayable_faults.c uvm_parent_gpu_service_replayable_faults; uvm-driver.md
// §2). Woken by the interrupt (models/interrupt.h), the bottom half runs, strictly serially:
// pending policy work (observation notifications, region prefetches, deferred placement
// actions, observation top-ups), access-counter notification batches, and fault batches —
// fetch, coalesce and sort (FaultBatch), service per 2 MB VA block (BlockService, which makes
// pages resident through Residency, allocating chunks from the RootChunkPool and evicting through
// ChunkEviction), then flush and replay per the replay policy — until the buffer is empty or the
// per-run limits are hit. Every eviction / prefetch / placement decision goes to the policies
// (PolicySet), which talk to the driver through the PolicyFacade.
#pragma once

#include <cstdint>
#include <filesystem>

#include "models/access_counters.h"
#include "models/driver/access_counter_service.h"
#include "models/driver/block_service.h"
#include "models/driver/chunk_eviction.h"
#include "models/driver/copy_engines.h"
#include "models/driver/driver_context.h"
#include "models/driver/fault_batch.h"
#include "models/driver/host_operations.h"
#include "models/driver/observation_service.h"
#include "models/driver/policy_facade.h"
#include "models/driver/policy_set.h"
#include "models/driver/residency.h"
#include "models/driver/root_chunk_pool.h"
#include "models/driver/thrashing_hints.h"
#include "models/fault_buffer.h"
#include "models/interrupt.h"
#include "models/thrashing.h"
#include "state/placement_state.h"

namespace uvmsim {

class UvmDriver {
 public:
  /// `shared` is the per-process state (its thrashing detector configured by the owner);
  /// `buffer`, `counters` and `irq` are the GPU's (all owned by the simulator); `hints` (may be
  /// null) must outlive the driver.
  UvmDriver(SimContext& ctx, DriverShared& shared, FaultBuffer& buffer, AccessCounters& counters,
            Interrupt& irq, std::uint64_t capacity_chunks, std::filesystem::path trace_path = {},
            const trace::Hints* hints = nullptr);

  /// What policies talk to, and what hears the GPU's access and threadblock notifications.
  PolicyFacade& facade() { return facade_; }

  // ---- the service thread (events from the simulator's queue) ------------------------------
  void on_driver_wake(Tick now);
  void on_batch_end(std::uint32_t batch, Tick now);

  // ---- the host side -------------------------------------------------------------------------
  void on_kernel_start(const trace::KernelInfo& k, std::uint32_t launch, std::int32_t iteration,
                       Tick now) {
    facade_.on_kernel_start(k, launch, iteration, now);
  }
  void on_kernel_end(const trace::KernelInfo& k, std::uint32_t launch, std::int32_t iteration,
                     Tick now) {
    facade_.on_kernel_end(k, launch, iteration, now);
  }
  void on_iteration(std::int32_t iteration, Tick now) { facade_.on_iteration(iteration, now); }
  /// When the host may go on after placement actions run at a program-structure hook.
  Tick host_ready() const { return facade_.host_ready(); }
  Tick cpu_access(Addr va, std::uint64_t size, AccessKind kind, Tick t) {
    return host_.cpu_access(va, size, kind, t);
  }
  Tick user_prefetch(Addr va, std::uint64_t size, Processor dest, Tick t) {
    return host_.user_prefetch(va, size, dest, t);
  }
  /// cudaFree of the managed range `r` at `t`; returns when the host may continue.
  Tick free_allocation(VaRange& r, Tick t) { return host_.free_allocation(r, t); }
  void advise(Addr va, std::uint64_t size, trace::Advice advice, Processor device) {
    host_.advise(va, size, advice, device);
  }
  /// Final observability numbers and every policy's report() into the statistics.
  void finish_stats();
  /// Fault batches this GPU's driver instance has serviced.
  std::uint64_t batches() const { return batches_; }

 private:
  /// The next unit of work of the running bottom half.
  void start_batch(Tick now);
  /// Policy work, then access-counter notifications; true if one took driver time (the bottom
  /// half continues when it is done).
  bool service_other_work(Tick now);
  bool policy_work_pending() const {
    return observations_.work_pending() || facade_.work_pending();
  }
  /// Runs the policy work that is pending; true if it took driver time.
  bool service_policy_work(ServiceTimes& st);
  /// Fetches and services one fault batch; false if the buffer had nothing valid.
  bool service_fault_batch(Tick now);
  /// With driver.prefetch_cross_block: each block's distinct faulted pages of the fetched batch,
  /// for PolicyEngine::pending_fault_pages (the tree's nodes above the block).
  void note_batch_faults();
  /// The VA block holding `va` in a live managed range, or kNoBlock.
  std::uint32_t managed_block_of(Addr va);
  void end_bottom_half(Tick now);
  void schedule_replay(Tick t);
  void wake_at(Tick t);
  /// A policy asked for service: the thread wakes at `now` unless running or scheduled.
  void request_service(Tick now);

  DriverContext dc_;
  FaultBuffer& buffer_;
  Interrupt& irq_;
  ThrashingDetector& thrashing_;  ///< the process's (DriverShared)
  PlacementState placement_;
  PolicySet policies_;
  RootChunkPool pool_;
  CopyEngines copies_;
  ObservationService observations_;
  AccessCounterService counter_service_;
  ChunkEviction eviction_;
  Residency residency_;
  BlockService blocks_;
  HostOperations host_;
  PolicyFacade facade_;
  FaultBatch batch_;

  // Bottom-half state.
  bool bh_running_ = false;
  bool replay_issued_in_run_ = false;
  bool batch_throttled_ = false;
  /// When the last batch's copies finish, and every batch's of this bottom half: a replay push
  /// acquires the batch tracker, so the GPU replays only after them (push_replay_on_parent_gpu).
  Tick batch_copies_done_ = 0, run_copies_done_ = 0;
  std::uint32_t batches_in_run_ = 0, throttled_in_run_ = 0;
  std::uint64_t batches_ = 0;
};

}  // namespace uvmsim
