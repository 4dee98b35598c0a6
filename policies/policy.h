// The policy API: the driver model hands every eviction, prefetch and placement decision to a
// policy looked up by name. A policy is one folder under policies/, registered with the macros
// at the bottom of this file; adding one needs no engine edit (CMake globs policies/).
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
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/config.h"
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

struct KernelEvent {
  const trace::KernelInfo& kernel;
  std::uint32_t launch_index;
  std::int32_t iteration;
  Tick now;
};

/// One completed GPU access (opt-in, see PolicyBase::wants_access_notifications).
struct AccessEvent {
  const VaBlock& block;
  unsigned page;  ///< 4 KB page index in the block's 2 MB window
  Addr va;
  std::uint32_t ref_id;  ///< static instruction id from the trace (LEU-style per-reference state)
  std::uint32_t bytes;
  std::uint32_t repeat;  ///< folded identical accesses
  AccessKind kind;
  bool remote;  ///< served over the link (host memory), not from HBM
  Tick now;
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

/// Declared parameter of a policy: `--set policy.<policy>.<name>=VALUE`. Values are checked
/// against the type and range before the policy is created; unknown names are errors.
struct PolicyKnob {
  enum class Type : std::uint8_t { Integer, Number, Boolean, Text, Choice };
  std::string name;
  Type type = Type::Integer;
  nlohmann::json default_value;  ///< null: derived at run time, the doc says from what
  std::string doc;
  double min = 0, max = 0;           ///< Integer, Number
  std::vector<std::string> choices;  ///< Choice

  static PolicyKnob integer(std::string name, nlohmann::json def, double lo, double hi,
                            std::string doc);
  static PolicyKnob number(std::string name, double def, double lo, double hi, std::string doc);
  static PolicyKnob boolean(std::string name, bool def, std::string doc);
  static PolicyKnob text(std::string name, std::string def, std::string doc);
  static PolicyKnob choice(std::string name, std::string def, std::vector<std::string> choices,
                           std::string doc);
  const char* type_name() const;
  std::string range() const;
  /// The normalised value, or UserError(where, key, ...) naming the problem.
  nlohmann::json check(const nlohmann::json& v, const std::string& where,
                       const std::string& key) const;
};

/// Engine used when a policy is created without one (stand-alone unit tests): no resident or
/// observed regions, no budget, actions ignored.
PolicyEngine& detached_engine(const VaSpace& va);

struct PolicyContext {
  const SimConfig& config;
  const VaSpace& va_space;
  std::uint64_t seed;
  nlohmann::json params;  ///< this policy's knobs, defaults filled in by make_*_policy
  PolicyEngine* engine_ptr = nullptr;

  PolicyEngine& engine() const { return engine_ptr ? *engine_ptr : detached_engine(va_space); }
  /// The same context with `name`'s "policy.<name>.*" knobs from the configuration (used by
  /// meta-policies to create their constituents).
  PolicyContext for_policy(const std::string& name) const;
};

/// Upstream events and program-structure hooks every policy may receive. All default to no-ops.
class PolicyBase {
 public:
  virtual ~PolicyBase() = default;

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
  /// Policy-specific results for the statistics ("policies" in --stats-out).
  virtual void report(nlohmann::json& out) const { (void)out; }

  // Older names of the same events, kept so existing callers compile.
  void on_fault(const VaBlock& b, unsigned page, Tick now) { on_page_fault(b, page, now); }
  void on_chunk_freed(const VaBlock& b, Tick now) { on_eviction(b, now); }
  void on_access(const VaBlock& b, unsigned page, Tick now) {
    on_access(AccessEvent{b, page, b.page_va(page), 0, 0, 1, AccessKind::Read, false, now});
  }
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
  /// Withheld chunks (pinned, reserved) leave the candidates: by default exactly as if evicted,
  /// so list-based policies drop them; override to tell the two apart.
  void on_chunk_withheld(const VaBlock& b, Tick now) override { on_eviction(b, now); }
  /// ... and come back as if freshly allocated.
  void on_chunk_returned(const VaBlock& b, Tick now) override {
    on_chunk_allocated(b, now);
    if (b.gpu_count)
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
      : default_threshold_(ctx.config.driver.prefetch_threshold) {}
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

  /// The driver's tree-based prefetcher (uvm_perf_prefetch.c, uvm-driver.md §1) at `threshold`.
  static void tree_prefetch(const Request& req, unsigned threshold, PageMask& out);

 private:
  unsigned default_threshold_;
};

/// Chooses where a faulted page goes: migrate to the GPU (the driver's default) or map the
/// host copy remotely (zero-copy over the link).
class PlacementPolicy : public PolicyBase {
 public:
  enum class Decision : std::uint8_t { MigrateToGpu, MapRemote };
  virtual Decision place(const VaBlock& b, unsigned page, AccessKind kind, Tick now) = 0;
};

template <typename Base>
class PolicyRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Base>(const PolicyContext&)>;
  struct Entry {
    std::string name;
    std::string description;
    Factory make;
    std::vector<PolicyKnob> knobs;
    std::vector<std::string> aliases;  ///< filled from alias registrations on lookup
  };
  static bool add(Entry e) {
    entries().push_back(std::move(e));
    return true;
  }
  /// Registers `alias` as another name of `target` (any registration order).
  static bool add_alias(std::string alias, std::string target) {
    aliases().emplace_back(std::move(alias), std::move(target));
    return true;
  }
  static const std::vector<Entry>& all() {
    resolve_aliases();
    return entries();
  }
  /// By name or alias.
  static const Entry* find(const std::string& name) {
    for (const auto& e : all()) {
      if (e.name == name) return &e;
      for (const auto& a : e.aliases)
        if (a == name) return &e;
    }
    return nullptr;
  }

 private:
  static std::vector<Entry>& entries() {
    static std::vector<Entry> v;
    return v;
  }
  static std::vector<std::pair<std::string, std::string>>& aliases() {
    static std::vector<std::pair<std::string, std::string>> v;
    return v;
  }
  static void resolve_aliases() {
    auto& al = aliases();
    for (auto it = al.begin(); it != al.end();) {
      bool done = false;
      for (auto& e : entries()) {
        if (e.name == it->second) {
          e.aliases.push_back(it->first);
          done = true;
        }
      }
      it = done ? al.erase(it) : it + 1;
    }
  }
};

using EvictionRegistry = PolicyRegistry<EvictionPolicy>;
using PrefetchRegistry = PolicyRegistry<PrefetchPolicy>;
using PlacementRegistry = PolicyRegistry<PlacementPolicy>;

/// Creates the named policy or throws UserError listing the known names. `ctx.params` is
/// checked against the policy's knobs and completed with their defaults. A prefetch name may
/// combine policies with '+' ("fdp+rgp"): their masks are united, every event reaches each.
std::unique_ptr<EvictionPolicy> make_eviction_policy(const std::string& name,
                                                     const PolicyContext& ctx);
std::unique_ptr<PrefetchPolicy> make_prefetch_policy(const std::string& name,
                                                     const PolicyContext& ctx);
std::unique_ptr<PlacementPolicy> make_placement_policy(const std::string& name,
                                                       const PolicyContext& ctx);

/// Checks every "policy.<name>.<knob>" of `cfg`: the policy must exist in some family and the
/// knob must be declared with a valid value. Errors name the file or "--set" it came from.
void validate_policy_params(const SimConfig& cfg);

/// A named bundle of policies (and their knobs), e.g. the paper's TM++ = tournament + fdp + rgp.
struct PolicyPreset {
  std::string name;
  std::string description;
  std::string eviction, prefetch, placement;         ///< empty: leave as configured
  nlohmann::json params = nlohmann::json::object();  ///< {"policy": {"knob": value}}
};
bool register_policy_preset(PolicyPreset p);
const std::vector<PolicyPreset>& policy_presets();
const PolicyPreset* find_policy_preset(const std::string& name);
/// Sets engine.eviction / prefetch / placement and the preset's knobs on `cfg`.
void apply_policy_preset(SimConfig& cfg, const std::string& name, const std::string& where);

}  // namespace uvmsim

#define UVMSIM_CONCAT_(a, b) a##b
#define UVMSIM_CONCAT(a, b) UVMSIM_CONCAT_(a, b)
/// Registers `Class` (constructible from `const PolicyContext&`) under `name`, with its knobs
/// (PolicyKnob values) as the remaining arguments.
#define UVMSIM_REGISTER_POLICY(Registry, name, description, Class, ...)                    \
  static const bool UVMSIM_CONCAT(uvmsim_registered_, __LINE__) = ::uvmsim::Registry::add( \
      {name,                                                                               \
       description,                                                                        \
       [](const ::uvmsim::PolicyContext& ctx) { return std::make_unique<Class>(ctx); },    \
       std::vector<::uvmsim::PolicyKnob>{__VA_ARGS__},                                     \
       {}})
#define UVMSIM_REGISTER_EVICTION(name, description, Class, ...) \
  UVMSIM_REGISTER_POLICY(EvictionRegistry, name, description, Class __VA_OPT__(, ) __VA_ARGS__)
#define UVMSIM_REGISTER_PREFETCH(name, description, Class, ...) \
  UVMSIM_REGISTER_POLICY(PrefetchRegistry, name, description, Class __VA_OPT__(, ) __VA_ARGS__)
#define UVMSIM_REGISTER_PLACEMENT(name, description, Class, ...) \
  UVMSIM_REGISTER_POLICY(PlacementRegistry, name, description, Class __VA_OPT__(, ) __VA_ARGS__)
/// Another name for a registered policy: UVMSIM_REGISTER_ALIAS(EvictionRegistry, "lrm", "driver").
#define UVMSIM_REGISTER_ALIAS(Registry, alias, target)       \
  static const bool UVMSIM_CONCAT(uvmsim_alias_, __LINE__) = \
      ::uvmsim::Registry::add_alias(alias, target)
/// Registers a policy bundle: UVMSIM_REGISTER_PRESET({"tm++", "...", "tournament", "fdp+rgp"}).
#define UVMSIM_REGISTER_PRESET(...)                           \
  static const bool UVMSIM_CONCAT(uvmsim_preset_, __LINE__) = \
      ::uvmsim::register_policy_preset(::uvmsim::PolicyPreset __VA_ARGS__)
