// Statistics of one simulation run, written by `uvmsim run --stats-out` (docs/stats.md).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/types.h"

namespace uvmsim {

enum class HtodCause : std::uint8_t {
  Demand = 0,
  Prefetch,
  UserPrefetch,
  AccessCounter,
  Observation,     ///< a sampled page migrating back after its notification (ObservUVM)
  RegionPrefetch,  ///< a whole 2 MB region a policy asked for (setPrefetchRegion)
  Placement,       ///< a placement action: pin on the GPU / prefetch-and-pin, policy prefetch
  kCount
};
enum class DtohCause : std::uint8_t {
  Eviction = 0,
  CpuFault,
  UserPrefetch,
  Observation,
  Placement,  ///< a placement action: pin on the host, release of an expired range
  /// Another GPU's copy moving to the host on the way to the faulting GPU, as the driver stages
  /// a copy between GPUs without peer access (block_copy_resident_pages, pages_staged).
  PeerStaged,
  kCount
};
const char* to_string(HtodCause c);
const char* to_string(DtohCause c);

/// Count, mean, (population) standard deviation, minimum and maximum of a series, kept
/// incrementally (Welford's algorithm) so that per-batch distributions cost no memory.
struct RunningStat {
  std::uint64_t count = 0;
  double mean = 0, m2 = 0, min = 0, max = 0;
  void add(double x) {
    ++count;
    if (count == 1) min = max = x;
    min = x < min ? x : min;
    max = x > max ? x : max;
    const double d = x - mean;
    mean += d / static_cast<double>(count);
    m2 += d * (x - mean);
  }
  double stddev() const;
  nlohmann::json to_json() const;  ///< {"count", "mean", "std", "min", "max"}
};

/// What each fault batch held, as the instrumented driver of Allen & Ge (SC'21, Tables 2 and 3)
/// reports it: raw fault-buffer entries (duplicates included) per batch and per VA block.
struct BatchStats {
  RunningStat va_blocks_per_batch;      ///< VA blocks with a fault in the batch
  RunningStat faults_per_va_block;      ///< raw entries of one VA block in one batch
  RunningStat faults_per_sm_per_batch;  ///< raw entries in a batch / SMs (their Table 2 metric)
  RunningStat sources_per_batch;        ///< distinct uTLBs with an entry in the batch
};

struct KernelStats {
  std::uint32_t launch_index = 0;
  std::uint32_t kernel_id = 0;
  std::string name;
  std::int32_t iteration = -1;
  Tick start = 0, end = 0;
  std::uint64_t threadblocks = 0;
  std::uint64_t accesses = 0;
  std::uint64_t gpu_faults = 0;
  std::uint64_t fault_batches = 0;
  std::uint8_t gpu = 0;  ///< the GPU it ran on (SetDevice); in the JSON when system.gpus > 1
};

/// What one GPU of a multi-GPU run did (system.gpus > 1; Stats::gpus_json). Its kernels'
/// accesses, faults and batches are summed from `kernels`; these are what kernels do not hold.
struct GpuStats {
  std::uint64_t evictions = 0;  ///< chunks its memory evicted
  /// Bytes its copy engines moved over its host link, each way: staged copies to another GPU
  /// are in dtoh_bytes (and in the run's dtoh_bytes_by_cause.peer_staged).
  std::uint64_t htod_bytes = 0, dtoh_bytes = 0;
  std::uint64_t peer_staged_bytes = 0;  ///< of dtoh_bytes: its copies staged for another GPU
  std::uint64_t remote_bytes = 0;       ///< its zero-copy accesses' bytes over its host link
  // Peer access (system.peer): GPU-to-GPU copies out of and into its memory, its remote
  // accesses to other GPUs' memory (bytes, sector-rounded), and the pages it mapped there.
  std::uint64_t peer_copy_out_bytes = 0, peer_copy_in_bytes = 0;
  std::uint64_t peer_remote_bytes = 0, peer_maps = 0;
  /// Its fault servicing waited for another GPU's service of the same VA block (the block lock).
  std::uint64_t block_lock_waits = 0;
  Tick block_lock_wait = 0;
};

/// Cost and outcome of sampled observability (ObservUVM §IV-A), indexed by ObservePurpose
/// (0 = eviction observability, 1 = prefetch feedback).
struct ObservabilityStats {
  bool active = false;                                ///< a policy used the mechanism
  std::array<std::uint64_t, 2> regions{};             ///< regions made observable
  std::array<std::uint64_t, 2> accessed{};            ///< ended by an access-counter notification
  std::array<std::uint64_t, 2> evicted_unaccessed{};  ///< ended by the region's eviction
  std::array<std::uint64_t, 2> cancelled{};           ///< ended by user prefetch / advice
  std::uint64_t sample_pages = 0;     ///< 4 KB pages moved to host memory as samples
  std::uint64_t remote_accesses = 0;  ///< GPU accesses served by sample pages over the link
  std::uint64_t max_observed = 0;     ///< most regions observed at once
  Tick service_time = 0;              ///< driver time spent observing and restoring samples
  std::uint64_t samples_doubled = 0, samples_halved = 0;
  std::uint32_t samples_per_region = 0;  ///< at the end of the run
};

/// System-allocated memory on an ATS platform (driver.ats, docs/platforms.md).
struct SystemMemoryStats {
  std::uint64_t gpu_first_touch_pages = 0;  ///< 4 KB pages populated in GPU memory by a GPU touch
  std::uint64_t cpu_first_touch_pages = 0;  ///< populated in host memory by a CPU touch
  std::uint64_t host_fallback_pages = 0;    ///< GPU first touches populated on the host (GPU full)
  std::uint64_t migrated_pages = 0;  ///< host pages the OS moved to GPU memory (access counters)
  std::uint64_t max_gpu_pages = 0;   ///< most system pages resident in GPU memory at once
};

/// What the placement actions did (docs/driver-model.md "Placement actions", docs/stats.md).
struct PlacementStats {
  std::uint64_t actions = 0;                 ///< placement actions that changed state
  std::uint64_t gpu_pinned_pages = 0;        ///< pages newly pinned on the GPU (cumulative)
  std::uint64_t host_pinned_pages = 0;       ///< pages newly pinned on the host (cumulative)
  std::uint64_t host_memset_pages = 0;       ///< untouched pages first-touched on the host
  std::uint64_t released_pages = 0;          ///< GPU pages moved to the host by release_range
  std::uint64_t max_pinned_chunks = 0;       ///< most chunks GPU-pinned at once
  std::uint64_t reservations = 0;            ///< reservations created
  std::uint64_t reservation_evictions = 0;   ///< evictions of a reservation's chunk for itself
  std::uint64_t no_chunk_remote_maps = 0;    ///< faulted pages mapped remotely: no chunk available
  std::uint64_t no_migrate_remote_maps = 0;  ///< faulted no-migrate pages mapped remotely
  std::uint64_t notifications_ignored = 0;   ///< access-counter pages left remote (no-migrate /
                                             ///< counters not enabled for them)
  Tick host_time = 0;  ///< host time spent in placement actions (delays the next launch)
};

/// What became of the pages each prefetch mechanism brought to the GPU before any access asked for
/// them (issue 15): a page is *useful* when a GPU access finds it resident, *useless* when it
/// leaves the GPU (eviction, migration to the host) first, *unresolved* while neither happened.
/// Kept with a per-page bit in VaBlock (state/prefetch_use.h), so the counting costs one bit test
/// per local access and allocates nothing.
enum class PrefetchCause : std::uint8_t {
  Prefetch = 0,    ///< the driver's tree prefetcher (or a prefetch policy replacing it)
  RegionPrefetch,  ///< whole regions a policy asked for (setPrefetchRegion)
  UserPrefetch,    ///< cudaMemPrefetchAsync to the GPU
  Placement,       ///< placement actions that move pages to the GPU ahead of use
  kCount
};
const char* to_string(PrefetchCause c);

struct PrefetchUseStats {
  static constexpr std::size_t kCauses = static_cast<std::size_t>(PrefetchCause::kCount);
  std::array<std::uint64_t, kCauses> pages{};    ///< pages brought in ahead of an access
  std::array<std::uint64_t, kCauses> useful{};   ///< later accessed while resident
  std::array<std::uint64_t, kCauses> useless{};  ///< left the GPU without an access
  std::uint64_t demand_pages = 0;  ///< pages made resident because a fault asked for them
  std::uint64_t unresolved(std::size_t c) const { return pages[c] - useful[c] - useless[c]; }
};

struct Stats {
  // GPU side
  std::uint64_t accesses = 0;  ///< completed warp accesses (repeat-expanded)
  std::uint64_t records = 0;   ///< trace records consumed
  std::uint64_t l1_tlb_lookups = 0, l1_tlb_hits = 0;
  std::uint64_t l2_tlb_lookups = 0, l2_tlb_hits = 0;
  std::uint64_t page_walks = 0;
  std::uint64_t gpu_faults = 0;     ///< fault entries written to the fault buffer
  std::uint64_t utlb_stalls = 0;    ///< faulting accesses held back by the uTLB limit / full buffer
  std::uint64_t fault_retries = 0;  ///< accesses retried at a replay
  /// paced fault reports dropped because the GMMU's walk found the page mapped by then
  std::uint64_t faults_resolved_at_walk = 0;
  std::uint64_t remote_accesses = 0, remote_bytes = 0;
  std::uint64_t remote_read_bytes = 0, remote_write_bytes = 0;  ///< remote_bytes by access kind
  std::uint64_t unmapped_accesses = 0;  ///< addresses outside every allocation (treated as local)
  // Driver side
  std::uint64_t fault_batches = 0;
  std::uint64_t bottom_halves = 0;
  std::uint64_t replays = 0;
  std::uint64_t faults_fetched = 0;    ///< raw entries fetched
  std::uint64_t faults_coalesced = 0;  ///< merged while fetching
  std::uint64_t faults_duplicate = 0;  ///< same page as the previous sorted fault
  std::uint64_t faults_serviced = 0;   ///< pages made resident or mapped for a fault
  std::uint64_t faults_already_resident = 0;
  std::uint64_t faults_flushed = 0;  ///< discarded by BATCH_FLUSH
  std::uint64_t faults_throttled = 0;
  std::uint64_t va_blocks_serviced = 0;
  std::uint64_t evictions = 0;
  std::uint64_t evicted_pages = 0;
  std::uint64_t cpu_backing_pages = 0;  ///< host pages allocated when data first left the GPU
  std::uint64_t chunk_allocations = 0, pma_calls = 0;
  std::uint64_t zero_filled_pages = 0;
  std::uint64_t remote_maps = 0;
  std::uint64_t cpu_faults = 0, cpu_first_touch_pages = 0;
  std::uint64_t thrashing_pages = 0, throttle_hints = 0, pin_hints = 0;
  std::uint64_t thrashing_block_resets = 0;  ///< epoch resets (uvm_perf_thrashing_get_hint)
  std::uint64_t cpu_read_duplicates = 0;     ///< pages a CPU read duplicated (read-mostly)
  std::uint64_t cpu_remote_maps = 0;  ///< GPU-resident pages the CPU mapped (coherent host link)
  std::uint64_t access_counter_notifications = 0, access_counter_batches = 0;
  std::uint64_t access_counter_single_page = 0;  ///< 2 MB notifications narrowed to one page
  std::uint64_t frees = 0;                       ///< MemFree host events (cudaFree) applied
  std::uint64_t freed_gpu_pages = 0;  ///< GPU-resident pages dropped by a free (no copy-back)
  std::uint64_t freed_cpu_pages = 0;  ///< host pages released by a free
  std::uint64_t policy_messages = 0;  ///< driver <-> userspace policy messages (ObservUVM)
  Tick policy_time = 0;  ///< driver time charged for policy decisions (messages, host compute)
  std::uint64_t htod_bytes = 0, dtoh_bytes = 0;
  std::uint64_t htod_copies = 0, dtoh_copies = 0;
  std::array<std::uint64_t, static_cast<std::size_t>(HtodCause::kCount)> htod_by_cause{};
  std::array<std::uint64_t, static_cast<std::size_t>(DtohCause::kCount)> dtoh_by_cause{};
  /// Raw entries per batch: bucket i counts batches of size in [2^i, 2^(i+1)).
  std::array<std::uint64_t, 16> batch_size_hist{};
  std::uint64_t max_batch_size = 0;
  Tick batch_time_total = 0;
  Tick flush_time = 0;  ///< bottom-half time spent discarding flushed fault-buffer entries
  /// Pushes that found every GPFIFO entry of their copy engine's channels held, and the host
  /// time the driver spent waiting for one (driver.gpfifo_entries).
  std::uint64_t channel_full_waits = 0;
  Tick channel_full_wait = 0;
  BatchStats batch;
  std::uint64_t region_prefetches = 0;  ///< whole regions migrated for setPrefetchRegion
  /// Of those, the regions the tree prefetcher asked for across the 2 MB block
  /// (driver.prefetch_cross_block), and the bytes they copied to the GPU (cause region_prefetch).
  std::uint64_t cross_block_prefetches = 0, cross_block_prefetch_bytes = 0;
  ObservabilityStats observe;
  PlacementStats placement;
  SystemMemoryStats system;
  PrefetchUseStats prefetch_use;
  nlohmann::json policy_report = nlohmann::json::object();  ///< PolicyBase::report() per family
  std::vector<KernelStats> kernels;                         ///< in launch order
  unsigned gpus = 1;  ///< system.gpus: above 1, each kernel names its GPU
  std::vector<GpuStats> per_gpu = std::vector<GpuStats>(1);  ///< one per GPU (sized by the run)
  /// With peer access: bytes from GPU src's memory to GPU dst, copied and read or written
  /// remotely, at [src * gpus + dst] (sized by the run; empty without peer access).
  std::vector<std::uint64_t> peer_copy_bytes, peer_remote_bytes;
  /// A GPU-to-GPU copy of `bytes` from `src` to `dst`.
  void add_peer_copy(unsigned src, unsigned dst, std::uint64_t bytes) {
    per_gpu[src].peer_copy_out_bytes += bytes;
    per_gpu[dst].peer_copy_in_bytes += bytes;
    peer_copy_bytes[std::size_t{src} * gpus + dst] += bytes;
  }
  Tick sim_time = 0;
  bool truncated = false;  ///< stopped by engine.max_sim_time_s
  double wall_seconds = 0;

  void add_htod(HtodCause c, std::uint64_t bytes) {
    htod_bytes += bytes;
    htod_by_cause[static_cast<std::size_t>(c)] += bytes;
    ++htod_copies;
  }
  void add_dtoh(DtohCause c, std::uint64_t bytes) {
    dtoh_bytes += bytes;
    dtoh_by_cause[static_cast<std::size_t>(c)] += bytes;
    ++dtoh_copies;
  }
  void add_batch(std::uint64_t size);

  /// Everything but the resolved configuration (the caller adds it under "config").
  nlohmann::json to_json() const;

 private:
  // Parts of to_json(), one per top-level object.
  nlohmann::json driver_json() const;
  void batches_json(
      nlohmann::json& j) const;  ///< batch_size_histogram, max_batch_size, batch_stats
  nlohmann::json kernels_json() const;
  /// Per GPU (system.gpus > 1 only): its kernels' totals and its GpuStats.
  nlohmann::json gpus_json() const;
  /// One entry per ordered pair of GPUs: the bytes each peer link carried.
  nlohmann::json peer_links_json() const;
  nlohmann::json observability_json() const;
  nlohmann::json placement_json() const;
  nlohmann::json prefetch_use_json() const;
};

}  // namespace uvmsim
