// The policy API: the driver model hands every eviction, prefetch and placement decision to a
// policy looked up by name. A policy is one folder under policies/, registered with the macros
// in policies/registry.h; adding one needs no engine edit (CMake globs policies/). The engine a
// policy queries and asks for actions is policies/engine.h: those two headers are all a policy
// author reads.
//
// The API mirrors ObservUVM's engine interface (Table I of "Observability-aided GPU Memory
// Oversubscription", §V-A to §V-C):
//
//   upstream (driver -> policy)        here
//   onPageFault(addr)                  PolicyBase::on_page_fault(block, page, now)
//   onAccessCounter(addr)              PolicyBase::on_access_counter(block, page, purpose, now)
//   onEviction(addr)                   PolicyBase::on_eviction(block, now)
//   onPrefetch(addr, bitmap)           PolicyBase::on_prefetch(block, pages, now)
//   downstream (policy -> driver)
//   setEvictionRegion                  EvictionPolicy::select_victim()        (pulled on demand)
//   setObservabilityCandidate          EvictionPolicy::observability_candidates(sink)
//   setPrefetchThreshold               PrefetchPolicy::prefetch_threshold()   (the tree's
//   threshold) setPrefetchRegion                  PolicyEngine::prefetch_region(block)   (an engine
//   action) setFeedbackCandidate               PrefetchPolicy::feedback_candidates(sink)
//
// Every policy of every family receives every upstream event, plus residency bookkeeping
// (chunk allocated, block populated / emptied), program structure (kernel start / end, host-loop
// iteration boundaries) and, only if it asks for them, per-access notifications. Policies query
// engine metadata (resident regions, observed regions, allocation ranges, program position) and
// request driver actions through the PolicyEngine they get in their PolicyContext.
//
// Contract (see docs/policies.md and docs/writing-a-policy.md):
//  * Policies never mutate driver state directly; they answer questions and request actions.
//    Block ids index VaSpace::blocks() and are stable for the whole run.
//  * Notifications run on the fault-service path, never per GPU access unless the policy asks
//    for it with wants_access_notifications() (that costs simulation speed).
//  * Policies must be deterministic given their PolicyContext (use ctx.seed for randomness).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/config.h"
#include "core/types.h"
#include "policies/engine.h"
#include "state/access_event.h"

namespace uvmsim {

struct KernelEvent {
  const trace::KernelInfo& kernel;
  std::uint32_t launch_index;
  std::int32_t iteration;
  Tick now;
};

struct PolicyContext {
  const SimConfig& config;
  const VaSpace& va_space;
  std::uint64_t seed;
  nlohmann::json params;               ///< this policy's knobs, defaults filled in by make_*_policy
  PolicyEngine* engine_ptr = nullptr;  ///< required: the driver's facade, or a test engine
  /// The GPU whose driver the policy serves: the block state it reads is VaBlock::gpu(gpu).
  unsigned gpu = 0;

  PolicyEngine& engine() const { return *engine_ptr; }
  /// The same context with `name`'s "policy.<name>.*" knobs from the configuration (used by
  /// meta-policies to create their constituents).
  PolicyContext for_policy(const std::string& name) const;
};

/// Upstream events and program-structure hooks every policy may receive. All default to no-ops.
class PolicyBase {
 public:
  virtual ~PolicyBase() = default;

  /// The GPU whose driver this policy serves (PolicyContext::gpu, set by the registry when it
  /// makes the policy): "resident", "has a chunk" and the like are about b.gpu(gpu()). Every
  /// GPU of a node has its own instance of each policy, as it has its own memory.
  unsigned gpu() const { return gpu_; }
  void bind_gpu(unsigned g) { gpu_ = g; }

  // ---- Table I upstream events ----------------------------------------------------------------
  /// onPageFault: a GPU fault on `page` of `b` was serviced (called after residency changed).
  virtual void on_page_fault(const VaBlock& b, unsigned page, Tick now) {
    (void)b, (void)page, (void)now;
  }
  /// onAccessCounter: the GPU accessed sample page `page` of observed region `b`; the page has
  /// migrated back and the region is no longer observed.
  virtual void on_access_counter(const VaBlock& b, unsigned page, ObservePurpose purpose,
                                 Tick now) {
    (void)b, (void)page, (void)purpose, (void)now;
  }
  /// onEviction: `b`'s chunk was evicted; `b` is no longer GPU-resident.
  virtual void on_eviction(const VaBlock& b, Tick now) { (void)b, (void)now; }
  /// onPrefetch: `pages` of `b` are being prefetched (tree prefetch of a fault, or a region
  /// prefetch); they migrate right after this call, except sample pages the prefetch policy
  /// makes observable for feedback from its feedback_candidates(), called next.
  virtual void on_prefetch(const VaBlock& b, const PageMask& pages, Tick now) {
    (void)b, (void)pages, (void)now;
  }

  // ---- residency bookkeeping (the driver's root-chunk list events, uvm-driver.md §5) ----------
  /// A GPU chunk was (re)allocated to `b` (it becomes a GPU-resident region).
  virtual void on_chunk_allocated(const VaBlock& b, Tick now) { (void)b, (void)now; }
  /// `b` went from no GPU-resident page to some (chunk already allocated).
  virtual void on_populated(const VaBlock& b, Tick now) { (void)b, (void)now; }
  /// `b`'s last GPU-resident page left; its chunk stays allocated.
  virtual void on_emptied(const VaBlock& b, Tick now) { (void)b, (void)now; }
  /// A migration to the GPU (fault servicing with its prefetch, access-counter servicing,
  /// cudaMemPrefetchAsync, placement and region prefetches) finished on `b`, which has
  /// GPU-resident pages: uvm_va_block_make_resident_finish's block_mark_memory_used, called
  /// after on_populated when the block was empty, and also when pages arrive in a block that
  /// already had some, or when none had to move.
  virtual void on_made_resident(const VaBlock& b, Tick now) { (void)b, (void)now; }
  /// The allocation `b` belongs to is being freed (cudaFree): called for each of its blocks
  /// that holds a chunk or host pages, before they go without a copy-back; `b` is never used
  /// again. EvictionPolicy's default treats a chunk-holding block as evicted.
  virtual void on_freed(const VaBlock& b, Tick now) { (void)b, (void)now; }
  /// `b`'s chunk left the eviction candidates: it was GPU-pinned or joined an HBM reservation.
  /// The eviction policy gets no event about `b` until on_chunk_returned() and must never
  /// return it from select_victim (EvictionPolicy's default treats this as an eviction).
  virtual void on_chunk_withheld(const VaBlock& b, Tick now) { (void)b, (void)now; }
  /// `b`'s chunk is an eviction candidate again (unpinned, reservation released).
  /// EvictionPolicy's default treats this as a fresh allocation.
  virtual void on_chunk_returned(const VaBlock& b, Tick now) { (void)b, (void)now; }

  // ---- program structure ----------------------------------------------------------------------
  virtual void on_kernel_start(const KernelEvent& k) { (void)k; }
  virtual void on_kernel_end(const KernelEvent& k) { (void)k; }
  /// The host-loop iteration index changed (called before the first launch of `iteration`).
  virtual void on_iteration(std::int32_t iteration, Tick now) { (void)iteration, (void)now; }
  /// Threadblock `tb` of the current launch completed (threadblocks start in id order and
  /// complete in any order; PolicyEngine::position() counts them).
  virtual void on_threadblock_end(std::uint64_t tb, Tick now) { (void)tb, (void)now; }

  // ---- per access (opt-in) --------------------------------------------------------------------
  /// Return true to receive on_access() for every completed GPU access (costs simulation speed).
  virtual bool wants_access_notifications() const { return false; }
  virtual void on_access(const AccessEvent& a) { (void)a; }

  /// True if the policy offers observability or feedback candidates. When no active policy does,
  /// the observability mechanism is off and costs nothing.
  virtual bool uses_observability() const { return false; }

  // ---- decision costs -----------------------------------------------------------------------
  /// True if the policy runs in ObservUVM's userspace engine (§V-C): every upstream event the
  /// driver relays to it and every decision the driver takes from it is a message through the
  /// communication layer (eBPF, §V-B), which costs the driver cost.userspace_message_ns.
  virtual bool runs_in_userspace() const { return false; }
  /// Host CPU time (ps) the policy's own computation took since the last call, for a policy
  /// whose decisions are computed on the host (LEU's RIMM host, §3.3). The driver charges it on
  /// its service thread where it takes the decision (right after select_victim). Default: free.
  virtual Tick take_decision_time() { return 0; }
  /// Policy-specific results for the statistics ("policies" in --stats-out).
  virtual void report(nlohmann::json& out) const { (void)out; }

 private:
  unsigned gpu_ = 0;
};

/// Chooses which allocated 2 MB root chunk (identified by its VA block) to evict when the
/// driver needs a chunk and none is free. Eviction happens only on allocation failure.
class EvictionPolicy : public PolicyBase {
 public:
  /// setEvictionRegion: the block whose chunk to evict, never `requester`; kNoBlock if nothing
  /// is evictable.
  virtual std::uint32_t select_victim(std::uint32_t requester, Tick now) = 0;
  /// setObservabilityCandidate: offer regions to observe, most wanted first. Called at the
  /// driver's service points (after fault batches and notification batches) while budget is left.
  virtual void observability_candidates(ObservationSink& sink, Tick now) { (void)sink, (void)now; }
  /// A freed block's chunk leaves the candidates: by default exactly as if evicted.
  void on_freed(const VaBlock& b, Tick now) override {
    if (b.gpu(gpu()).has_chunk) on_eviction(b, now);
  }
  /// Withheld chunks (pinned, reserved) leave the candidates: by default exactly as if evicted,
  /// so list-based policies drop them; override to tell the two apart.
  void on_chunk_withheld(const VaBlock& b, Tick now) override { on_eviction(b, now); }
  /// ... and come back as if freshly allocated.
  void on_chunk_returned(const VaBlock& b, Tick now) override {
    on_chunk_allocated(b, now);
    if (b.gpu(gpu()).count)
      on_populated(b, now);
    else
      on_emptied(b, now);
  }
};

/// Decides which extra pages of a VA block to migrate along with the faulted ones.
class PrefetchPolicy : public PolicyBase {
 public:
  struct Request {
    const VaBlock& block;
    Processor dest;
    const PageMask& resident_on_dest;  ///< pages already resident at the destination
    const PageMask& faulted;           ///< pages faulted to `dest` in this batch
    const PageMask& thrashing;         ///< pages the thrashing detector flags
    Tick now;
  };
  explicit PrefetchPolicy(const PolicyContext& ctx)
      : default_threshold_(ctx.config.driver.prefetch_threshold),
        va_(&ctx.va_space),
        engine_(ctx.engine_ptr),
        cross_block_max_blocks_(ctx.config.driver.prefetch_cross_block
                                    ? ctx.config.driver.prefetch_cross_block_max_mb /
                                          static_cast<std::uint32_t>(kBlockSize >> 20)
                                    : 0) {}
  /// setPrefetchThreshold: the occupancy threshold (%) of the driver's tree prefetcher.
  virtual unsigned prefetch_threshold() const { return default_threshold_; }
  /// Adds the pages to prefetch to `out` (cleared by the caller). Pages already resident at the
  /// destination and the faulted pages themselves may be included; the driver drops them.
  /// Default: the driver's tree prefetcher at prefetch_threshold().
  virtual void compute(const Request& req, PageMask& out) {
    tree_prefetch(req, prefetch_threshold(), out);
  }
  /// setFeedbackCandidate: offer prefetched regions to observe for feedback (§IV-B).
  virtual void feedback_candidates(ObservationSink& sink, Tick now) { (void)sink, (void)now; }

  /// The driver's tree-based prefetcher (uvm_perf_prefetch.c, uvm-driver.md §1) at `threshold`:
  /// tree_prefetch_block, and with the what-if driver.prefetch_cross_block (GPU destination
  /// only) the tree's levels above the 2 MB block, whose passing node's other blocks are
  /// prefetched whole through PolicyEngine::prefetch_cross_block (policies/prefetch/tree).
  void tree_prefetch(const Request& req, unsigned threshold, PageMask& out);
  /// The driver's tree prefetcher within the request's block, as the real driver does it.
  /// `leaves`, if given, receives the tree's leaf bitmap (pages resident at the destination or
  /// faulted, after the 64 KB upgrade).
  static void tree_prefetch_block(const Request& req, unsigned threshold, PageMask& out,
                                  PageMask* leaves = nullptr);

 private:
  /// The what-if levels above the block (driver.prefetch_cross_block).
  void tree_prefetch_cross_block(const Request& req, unsigned threshold, const PageMask& leaves,
                                 PageMask& out);

  unsigned default_threshold_;
  const VaSpace* va_;
  PolicyEngine* engine_;
  std::uint32_t cross_block_max_blocks_;  ///< largest node above the block, in blocks; 0: off
};

/// Chooses where a faulted page goes: migrate to the GPU (the driver's default) or map the
/// host copy remotely (zero-copy over the link).
class PlacementPolicy : public PolicyBase {
 public:
  enum class Decision : std::uint8_t { MigrateToGpu, MapRemote };
  virtual Decision place(const VaBlock& b, unsigned page, AccessKind kind, Tick now) = 0;
};

}  // namespace uvmsim
