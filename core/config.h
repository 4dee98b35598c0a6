// Simulation configuration: every knob of the GPU, driver and cost models, addressable by a
// documented dotted name ("driver.fault_batch_count"). GPU presets (configs/gpus/NAME.json) and
// `--set KEY=VALUE` use the same names; unknown names and out-of-range values are UserErrors
// naming the file (or "--set") and the key. `uvmsim run --list-knobs` prints the table.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/knob.h"
#include "core/types.h"

namespace uvmsim {

enum class ReplayPolicy : std::uint8_t { Block = 0, Batch = 1, BatchFlush = 2, Once = 3 };
/// Which held-back misses a uTLB raises again after a replay (models/gpu.cpp, Gpu::on_replay).
enum class UtlbReplayOrder : std::uint8_t { Age = 0, RoundRobin = 1 };
/// Which waiting uTLB's report the GMMU writes next (models/gpu.cpp, Gpu::on_gmmu_free).
enum class GmmuArbitration : std::uint8_t { RoundRobin = 0, Random = 1 };
/// How the GPUs of a node reach each other's memory (system.peer): not at all (copies are
/// staged through host memory), PCIe peer-to-peer through the host's root complex, or NVLink (a
/// fast link with native atomics). uvm_va_space.c: enable_peers, has_fast_link.
enum class PeerAccess : std::uint8_t { None = 0, Pcie = 1, Nvlink = 2 };

/// A size-dependent transfer-time curve: (bytes, ns) points, linearly interpolated and
/// extrapolated past the last point at the last segment's slope. Fitted to measured copy times.
struct TransferCurve {
  std::vector<std::pair<std::uint64_t, double>> points;
  Tick time_ps(std::uint64_t bytes) const;
};

/// Simulated time is stopped here at the latest (max_sim_time_s's upper bound; also the limit
/// when it is 0): 1e6 s = 1e18 ps leaves a margin of 1.7e19 ps below the Tick's 2^64 for the
/// events in flight, so no time computed from the bounded knobs can wrap.
inline constexpr double kMaxSimTimeS = 1e6;

// Every engine knob is declared once, in the lists below: one row per knob,
//   X(field, C++ type, default, Knob kind, range or choices..., "one-line doc")
// The row declares the struct field with its default initialiser and the Knob
// "<group>.<field>" (core/knob.h) that checks values, lists the knob and documents it
// (`uvmsim run --list-knobs`, docs/knobs.md). The kinds are the Knob factories: integer(lo, hi),
// integer_pow2(lo, hi) (a power of two in [lo, hi]), number(lo, hi), number_or_zero(lo, hi),
// boolean, text, choice({names}) for an enum whose values are 0, 1, ... in the names' order,
// size_choice({sizes}) and curve.
//
// Bounds on time-valued knobs keep simulated time far below the 64-bit picosecond clock's
// limit: every latency and per-item cost is at most 1 s, the run stops at max_sim_time_s
// (at most kMaxSimTimeS), so no accepted configuration makes a Tick wrap.
#define UVMSIM_KNOB_FIELD(field, Type, def, ...) Type field = def;

// clang-format off
#define UVMSIM_SYSTEM_KNOBS(X)                                                                    \
  X(gpus, std::uint32_t, 1, integer, 1, kMaxGpus,                                                  \
    "GPUs of the node, each a copy of the gpu/tlb/hbm/link preset with its own fault buffer, access counters, memory and driver bottom half; a trace's SetDevice picks the GPU of its launches (docs/multi-gpu.md)") \
  X(peer, PeerAccess, PeerAccess::None, choice, {"none", "pcie", "nvlink"},                        \
    "peer access between every pair of GPUs: none (GPU-to-GPU copies are staged through host memory), pcie (peer-to-peer over each GPU's host link) or nvlink (a direct link per pair, with native atomics)") \
  X(peer_bandwidth_gbps, double, 25, number, 1e-3, 1e6,                                           \
    "peer link bandwidth per direction between two GPUs, GB/s (copies and remote accesses)")     \
  X(peer_latency_ns, double, 1000, number, 0, 1e9,                                                 \
    "latency of a remote access to a peer GPU's memory; a peer copy run's fixed cost")          \
  X(coherent_host, bool, false, boolean,                                                          \
    "the CPU and the GPUs share a cache-coherent fast link (NVLink-C2C on Grace Hopper): a fast link with native atomics both ways, and the CPU maps GPU memory where the driver keeps a page there instead of faulting it back (docs/platforms.md)")

#define UVMSIM_GPU_KNOBS(X)                                                                       \
  X(name, std::string, "generic", text, "preset name")                                            \
  X(num_sms, std::uint32_t, 28, integer, 1, 4096, "streaming multiprocessors")                    \
  X(clock_mhz, double, 1481, number, 1, 10000, "SM clock; converts compute-gap cycles to time")   \
  X(issue_slots_per_cycle, double, 0, number, 0, 64,                                             \
    "warp instructions one SM issues per cycle (its schedulers); its warps' compute gaps share them (0: no limit)") \
  X(l1_sectors_per_cycle, double, 0, number, 0, 1024,                                             \
    "32-byte sectors one SM's LSU/L1 moves per cycle; its warps' accesses share it (0: no limit)") \
  X(max_threads_per_sm, std::uint32_t, 2048, integer, 32, 65536, "resident threads per SM")       \
  X(max_warps_per_sm, std::uint32_t, 64, integer, 1, 2048, "resident warps per SM")               \
  X(max_blocks_per_sm, std::uint32_t, 32, integer, 1, 1024, "resident threadblocks per SM")       \
  X(regs_per_sm, std::uint32_t, 65536, integer, 1, UINT32_MAX,                                    \
    "register file size per SM (32-bit registers)")                                               \
  X(smem_per_sm, std::uint32_t, 98304, integer, 0, UINT32_MAX, "shared memory bytes per SM")      \
  X(sms_per_utlb, std::uint32_t, 1, integer, 1, 4096, "SMs sharing one uTLB (fault source)")      \
  X(utlb_max_outstanding_faults, std::uint32_t, 56, integer, 1, 65536,                            \
    "outstanding far faults per uTLB (Allen & Ge: 56)")                                           \
  X(utlb_fault_per_access, bool, true, boolean,                                                   \
    "a uTLB writes a fault entry for every access that misses (up to its outstanding limit), not one per page; the driver's fetch coalesces a uTLB's repeats of a page (docs/driver-model.md, Local-reuse duplicates)") \
  X(utlb_limit_counts_misses, bool, false, boolean,                                                \
    "the outstanding limit counts a uTLB's misses (pages), so a further entry for a page it has already reported takes no slot; false: every entry takes one (titanv: true, fitted; docs/driver-model.md)") \
  X(utlb_replay_order, UtlbReplayOrder, UtlbReplayOrder::RoundRobin, choice,                      \
    {"age", "round_robin"},                                                                       \
    "which held-back misses a uTLB raises after a replay: round_robin (a miss raised again goes behind those still held back; fitted, docs/driver-model.md) or its oldest first (age)") \
  X(fault_buffer_entries, std::uint32_t, 8192, integer, 1, 1 << 24,                               \
    "replayable fault buffer entries")                                                            \
  X(fault_latency_ns, double, 500, number, 0, 1e9, "TLB miss to fault entry visible in the buffer") \
  X(utlb_fault_interval_ns, double, 0, number, 0, 1e9, "a uTLB reports one far fault per this interval (0: all at once); the GMMU interleaves all uTLBs' reports in time") \
  X(fault_write_interval_ns, double, 0, number, 0, 1e9, "the GMMU writes at most one fault-buffer entry per this interval (0: no limit)") \
  X(gmmu_arbitration, GmmuArbitration, GmmuArbitration::RoundRobin, choice,                       \
    {"round_robin", "random"},                                                                    \
    "which waiting uTLB's report the GMMU writes next: round_robin (in turn, in the order they started waiting) or random (any of them, drawn with engine.seed); undocumented by NVIDIA, a sensitivity option (docs/driver-model.md, Which uTLB the GMMU serves next)") \
  X(fault_write_rechecks_pte, bool, true, boolean,                                                \
    "a paced fault report walks the page table when the GMMU gets to it: a page mapped since the miss writes no entry (docs/driver-model.md, Paced fault reporting)") \
  X(interrupt_latency_ns, double, 5000, number, 0, 1e9, "fault interrupt to bottom half running")

#define UVMSIM_TLB_KNOBS(X)                                                                       \
  X(l1_entries, std::uint32_t, 32, integer, 1, 1 << 20, "per-SM L1 TLB entries")                  \
  X(l1_assoc, std::uint32_t, 8, integer, 1, 1 << 20, "per-SM L1 TLB ways")                        \
  X(l2_entries, std::uint32_t, 2048, integer, 1, 1 << 24, "shared L2 TLB entries")                \
  X(l2_assoc, std::uint32_t, 16, integer, 1, 1 << 24, "shared L2 TLB ways")                       \
  X(l1_latency_cycles, std::uint32_t, 5, integer, 0, 1000000, "L1 TLB hit latency")               \
  X(l2_latency_cycles, std::uint32_t, 80, integer, 0, 1000000, "L2 TLB hit latency")              \
  X(walk_latency_ns, double, 400, number, 0, 1e9, "GMMU page walk after an L2 TLB miss")

#define UVMSIM_HBM_KNOBS(X)                                                                       \
  X(capacity, std::uint64_t, std::uint64_t{11} << 30, integer, 2 << 20, 1000000000000000000,       \
    "usable device memory bytes (--hbm / --oversub override)")                                    \
  X(bandwidth_gbps, double, 484, number, 1e-3, 1e6, "device memory bandwidth, GB/s")              \
  X(latency_ns, double, 400, number, 0, 1e9, "device memory access latency")

#define UVMSIM_LINK_KNOBS(X)                                                                      \
  X(type, std::string, "pcie3x16", text, "host link (pcie3x16, pcie4x16, nvlink2, ...)")          \
  X(bandwidth_gbps, double, 12, number, 1e-3, 1e6,                                                \
    "remote (zero-copy) access bandwidth per direction, GB/s (host to device, and device to host unless link.dtoh_bandwidth_gbps says otherwise)") \
  X(dtoh_bandwidth_gbps, double, 0, number_or_zero, 1e-3, 1e6,                                    \
    "device-to-host bandwidth of the link (remote writes, copy-backs' wire time), GB/s; 0: link.bandwidth_gbps, a symmetric link") \
  X(remote_latency_ns, double, 1200, number, 0, 1e9, "latency of a remote (zero-copy) access")    \
  X(sector_bytes, std::uint32_t, 32, integer, 1, 4096, "remote access granularity")               \
  X(htod_curve, TransferCurve, {}, curve,                                                         \
    "host-to-device copy time by size (per copy run); a preset must give it")                     \
  X(dtoh_curve, TransferCurve, {}, curve,                                                         \
    "device-to-host copy time by size (per copy run); a preset must give it")

#define UVMSIM_DRIVER_KNOBS(X)                                                                    \
  X(fault_batch_count, std::uint32_t, 256, integer, 1, 1 << 24,                                   \
    "uvm_perf_fault_batch_count: raw entries per batch")                                          \
  X(replay_policy, ReplayPolicy, ReplayPolicy::BatchFlush, choice,                                \
    {"block", "batch", "batch_flush", "once"}, "uvm_perf_fault_replay_policy")                    \
  X(replay_update_put_ratio, std::uint32_t, 50, integer, 0, 100,                                  \
    "duplicate % above which the flush re-reads PUT")                                             \
  X(max_batches_per_service, std::uint32_t, 20, integer, 1, 1 << 20,                              \
    "batches per bottom-half run")                                                                \
  X(gpfifo_entries, std::uint32_t, 1024, integer, 32, 1 << 20,                                    \
    "uvm_channel_num_gpfifo_entries: GPFIFO entries per channel, 2 channels per copy engine; the " \
    "driver waits for a free entry before it pushes a copy")                                       \
  X(max_throttle_per_service, std::uint32_t, 5, integer, 1, 1 << 20,                              \
    "throttled batches per bottom-half run")                                                      \
  X(fault_coalesce, bool, true, boolean, "uvm_perf_fault_coalesce")                               \
  X(prefetch_enable, bool, true, boolean, "uvm_perf_prefetch_enable")                             \
  X(prefetch_threshold, std::uint32_t, 51, integer, 0, 100, "uvm_perf_prefetch_threshold (%)")    \
  X(prefetch_min_faults, std::uint32_t, 1, integer, 1, 20, "uvm_perf_prefetch_min_faults")        \
  X(prefetch_cross_block, bool, false, boolean,                                                   \
    "what-if: the tree prefetcher extends its density tree above the 2 MB block (4 MB, 8 MB, ... "  \
    "nodes aligned to the allocation) and prefetches a passing node's other blocks whole; the "     \
    "real driver never crosses the block (docs/driver-model.md)")                                  \
  X(prefetch_cross_block_max_mb, std::uint32_t, 32, integer_pow2, 4, 1024,                        \
    "largest tree node above the block with prefetch_cross_block, in MB (a power of two)")        \
  X(evict_dirty_only, bool, false, boolean,                                                       \
    "what-if: copy back only written pages on eviction (the real driver copies all)")             \
  X(pma_batch_chunks, std::uint32_t, 64, integer, 1, 1 << 20,                                     \
    "root chunks per PMA allocation call")                                                        \
  X(managed_tail_pow2, bool, true, boolean,                                                       \
    "round a managed range's last partial 2 MB block up to a power of two "                       \
    "(calibration: 2M+192K -> 2M+256K)") \
  X(cpu_chunk_2m, bool, true, boolean,                                                            \
    "uvm_cpu_chunk_allocation_sizes includes 2M: a full 2 MB block's host copy is one 2 MB "      \
    "chunk (expand_notification_block then migrates the notified sub-regions, else one page)") \
  X(ats, bool, false, boolean,                                                                    \
    "the GPU translates through the CPU's page table (ATS, NVLink-C2C: Grace Hopper): system-"    \
    "allocated memory is placed by first touch and read remotely where it lies; without it a "    \
    "system allocation is migrated on fault like managed memory (HMM), docs/platforms.md")        \
  X(system_page_size, std::uint64_t, std::uint64_t{64} << 10, size_choice, {"4K", "64K"},         \
    "the OS page size of system-allocated memory (ATS): first touch populates, and the GPU "      \
    "translates, one such page at a time")

#define UVMSIM_THRASHING_KNOBS(X)                                                                 \
  X(enable, bool, true, boolean, "uvm_perf_thrashing_enable")                                     \
  X(threshold, std::uint32_t, 3, integer, 1, 7, "uvm_perf_thrashing_threshold")                   \
  X(pin_threshold, std::uint32_t, 10, integer, 1, 255, "uvm_perf_thrashing_pin_threshold")        \
  X(lapse_us, double, 500, number, 1, 1e6, "uvm_perf_thrashing_lapse_usec")                       \
  X(nap, std::uint32_t, 1, integer, 1, 100, "uvm_perf_thrashing_nap (x lapse)")                   \
  X(epoch, std::uint32_t, 2000, integer, 1, 1000000, "uvm_perf_thrashing_epoch (x lapse)")        \
  X(pin, std::uint32_t, 300, integer, 0, 1000000, "uvm_perf_thrashing_pin (x lapse, 0 = forever)") \
  X(max_resets, std::uint32_t, 4, integer, 0, 255, "uvm_perf_thrashing_max_resets")          \
  X(lapse_vote_threshold, std::uint32_t, 32, integer, 1, 127,                                     \
    "uvm_perf_lapse_vote_threshold: votes to adapt the lapse (only at lapse_us = 500)")        \
  X(map_remote_on_native_atomics, bool, false, boolean,                                           \
    "uvm_perf_map_remote_on_native_atomics_fault: an atomic fault on a page a GPU reaches over NVLink maps it there instead of migrating it")

#define UVMSIM_ACCESS_COUNTER_KNOBS(X)                                                            \
  X(migration, bool, false, boolean,                                                              \
    "access-counter based migration (ACBM); off on x86 + PCIe (uvm-driver.md section 4)")         \
  X(count, std::uint32_t, 256, integer, 1, 1 << 20, "hardware access counters")                   \
  X(granularity, std::uint64_t, std::uint64_t{2} << 20, size_choice,                              \
    {"64K", "2M", "16M", "16G"}, "region tracked per counter")                                    \
  X(threshold, std::uint32_t, 256, integer, 1, 65535, "uvm_perf_access_counter_threshold")        \
  X(batch_count, std::uint32_t, 256, integer, 1, 1 << 20, "notifications per batch")

/* Host-side driver costs (ns). Defaults are fitted to the GTX 1080 Ti fault-group timings in
   shared/reference/calibration-facts.md; see docs/cost-model.md. */
#define UVMSIM_COST_KNOBS(X)                                                                      \
  X(batch_fixed_ns, double, 4000, number, 0, 1e9, "per batch: fetch, sort, flush, replay push")   \
  X(fault_entry_ns, double, 40, number, 0, 1e9, "per raw fault entry fetched")                    \
  X(block_ns, double, 4460, number, 0, 1e9,                                                       \
    "per VA block serviced (lock, residency, PTE, TLB invalidate)")                               \
  X(page_ns, double, 218, number, 0, 1e9, "per 4 KB page made resident (unmap + PTE)")            \
  X(copy_run_ns, double, 2000, number, 0, 1e9, "per copy run: copy-engine push set-up")           \
  X(first_fault_ns, double, 140000, number, 0, 1e9,                                               \
    "one-time cost of the process's first fault batch")                                           \
  X(replay_ns, double, 1500, number, 0, 1e9, "replay push to warps retrying")                     \
  X(eviction_ns, double, 6000, number, 0, 1e9,                                                   \
    "per evicted root chunk, CPU side: pick, lock, one unmap push + TLB invalidate, chunk free")  \
  X(eviction_page_ns, double, 172.3, number, 0, 1e9,                                              \
    "per page evicted, CPU side: unmap and per-page state of uvm_va_block_evict_chunks (fitted "  \
    "to the RTX 3080 Ti fir evictions, docs/cost-model.md)")                                      \
  X(cpu_page_alloc_ns, double, 250, number, 0, 1e9,                                               \
    "per evicted page with no host backing yet: CPU page allocation + DMA map "                   \
    "(block_populate_pages_cpu); an estimate, not measured")                                      \
  X(pma_alloc_ns, double, 20000, number, 0, 1e9,                                                  \
    "per PMA allocation call (pma_batch_chunks root chunks)")                                     \
  X(cpu_fault_ns, double, 15000, number, 0, 1e9, "per CPU page fault serviced")                   \
  X(system_page_fault_ns, double, 2000, number, 0, 1e9,                                           \
    "per system page (driver.system_page_size) populated by a GPU first touch under ATS: the "    \
    "OS fault and the system page-table entry; an estimate, not measured (docs/platforms.md)")    \
  X(launch_overhead_ns, double, 5000, number, 0, 1e9, "per kernel launch")                        \
  X(user_prefetch_ns, double, 10000, number, 0, 1e9, "per cudaMemPrefetchAsync call")             \
  X(zero_fill_gbps, double, 0, number_or_zero, 1e-3, 1e6,                                         \
    "GPU zero-fill rate of new chunks, GB/s (0 = HBM bandwidth)")                                 \
  X(placement_call_ns, double, 2000, number, 0, 1e9,                                              \
    "per placement action that changes state (pin, reserve, advise, ...: one enhanced-driver "    \
    "ioctl)")                                                                                     \
  X(host_memset_gbps, double, 8, number, 1e-3, 1e6,                                               \
    "host memset rate for first-touching pages pinned on the host, GB/s")                        \
  X(userspace_message_ns, double, 140, number, 0, 1e9,                         \
    "per message between the driver and a policy in ObservUVM's userspace engine (an event "     \
    "relayed, a decision taken; eBPF, section V-B): the paper's 1.8 % overhead (section VII) "   \
    "over our runs' messages, docs/cost-model.md")

/* Sampled observability (ObservUVM section IV-A, V-A, V-D): a policy marks a GPU-resident 2 MB
   region observable; sample 64 KB pages move to host memory, remote-mapped, watched by an
   access counter with threshold 1. Used only when a policy asks for it. Eviction observability
   works under memory pressure only (only_under_pressure): eviction policies decide nothing
   otherwise, and the paper's overhead (~2.4 %, section VII) is that of oversubscribed runs. */
#define UVMSIM_OBSERVE_KNOBS(X)                                                                   \
  X(max_regions, std::uint32_t, 100, integer, 0, 65536,                                           \
    "regions observed for eviction at once (paper: 100); with max_feedback_regions at most "      \
    "access_counters.count")                                                                      \
  X(max_feedback_regions, std::uint32_t, 32, integer, 0, 65536,                                   \
    "regions observed for prefetch feedback / triggers at once")                                  \
  X(max_regions_pct, double, 20, number, 0, 100,                                                  \
    "caps both budgets at this % of usable GPU memory (at least one region): the regions at "     \
    "imminent risk, not all of them")                                                             \
  X(only_under_pressure, bool, true, boolean,                                                     \
    "observe for eviction only while memory fills, not while the GPU is full without evicting, "  \
    "and from the first eviction on (false: always)")                                             \
  X(min_occupancy_pct, double, 80, number, 0, 100,                                                \
    "with only_under_pressure, observing while memory fills starts at this % of usable GPU "      \
    "memory allocated")                                                                           \
  X(samples_per_region, std::uint32_t, 1, integer, 1, 32,                                         \
    "64 KB sample pages per observed 2 MB region (initial)")                                      \
  X(max_samples_per_region, std::uint32_t, 4, integer, 1, 32,                                     \
    "adaptive doubling stops here (the paper evaluates 1-3)")                                     \
  X(adaptive_samples, bool, true, boolean,                                                        \
    "double/halve samples per region from the re-fault rate of recently evicted regions (paper "  \
    "section V-D)")                                                                               \
  X(adapt_window, std::uint32_t, 100, integer, 1, 1000000,                                        \
    "recently evicted regions tracked; evaluated every window")                                   \
  X(adapt_grow_fraction, double, 0.5, number, 0, 1,                                               \
    "re-faulted share of the window above which samples double")                                  \
  X(adapt_shrink_fraction, double, 0.8, number, 0, 1,                                             \
    "not-re-faulted share above which samples halve")

#define UVMSIM_ENGINE_KNOBS(X)                                                                    \
  X(seed, std::uint64_t, 1, integer, 0, UINT64_MAX, "seed for randomised policies")               \
  X(eviction, std::string, "driver", text, "eviction policy (--eviction)")                        \
  X(prefetch, std::string, "tree", text, "prefetch policy (--prefetch)")                          \
  X(placement, std::string, "driver", text, "placement policy (--placement)")                     \
  X(max_sim_time_s, double, 0, number, 0, kMaxSimTimeS,                                           \
    "stop after this much simulated time (0 = at most the clock's horizon of 1e6 s)")             \
  X(livelock_batches, std::uint64_t, 10000, integer, 0, UINT64_MAX,                               \
    "stop with an error after this many fault batches in a row with no warp access completed "    \
    "(a livelock: each batch evicts what the last one brought before its warps retry; 0 = off)")  \
  X(hints, std::string, "", text,                                                                 \
    "static hints file (--hints; docs/hints.md); empty = the trace's own hints")                  \
  X(decoded_trace_mb, std::uint64_t, 256, integer, 0, 1048576,                                    \
    "MiB of decoded trace chunks a kernel launch holds at once; further chunks whose records "    \
    "compress >= 4x are held re-compressed per warp, decoded 16 KB at a time as warps read them " \
    "(same results; bounds memory when long threadblocks are all resident, e.g. mvt at GB "       \
    "footprints; docs/trace-format.md)")

/// The groups, in listing order: X(member of SimConfig, struct, its list).
#define UVMSIM_KNOB_GROUPS(X)                                                                     \
  X(system, SystemConfig, UVMSIM_SYSTEM_KNOBS)                                                    \
  X(gpu, GpuConfig, UVMSIM_GPU_KNOBS)                                                             \
  X(tlb, TlbConfig, UVMSIM_TLB_KNOBS)                                                             \
  X(hbm, HbmConfig, UVMSIM_HBM_KNOBS)                                                             \
  X(link, LinkConfig, UVMSIM_LINK_KNOBS)                                                          \
  X(driver, DriverConfig, UVMSIM_DRIVER_KNOBS)                                                    \
  X(thrashing, ThrashingConfig, UVMSIM_THRASHING_KNOBS)                                           \
  X(access_counters, AccessCounterConfig, UVMSIM_ACCESS_COUNTER_KNOBS)                            \
  X(cost, CostConfig, UVMSIM_COST_KNOBS)                                                          \
  X(observe, ObservabilityConfig, UVMSIM_OBSERVE_KNOBS)                                           \
  X(engine, EngineConfig, UVMSIM_ENGINE_KNOBS)
// clang-format on

#define UVMSIM_DECLARE_KNOB_GROUP(member, Struct, LIST) \
  struct Struct {                                       \
    LIST(UVMSIM_KNOB_FIELD)                             \
  };
UVMSIM_KNOB_GROUPS(UVMSIM_DECLARE_KNOB_GROUP)
#undef UVMSIM_DECLARE_KNOB_GROUP

/// The simulated time at which a run stops (max_sim_time_s, or the horizon when it is 0).
Tick sim_time_limit(const EngineConfig& e);

struct SimConfig {
#define UVMSIM_DECLARE_KNOB_MEMBER(member, Struct, LIST) Struct member;
  UVMSIM_KNOB_GROUPS(UVMSIM_DECLARE_KNOB_MEMBER)
#undef UVMSIM_DECLARE_KNOB_MEMBER
  nlohmann::json policy_params = nlohmann::json::object();  ///< "policy.<name>.<key>" knobs
  /// Where a preset's numbers come from: {"<knob>" or "<group>.*": "<kind>" or {"kind", "source"}}
  /// with kind one of provenance_kinds() (docs/calibration.md, "Presets and provenance").
  nlohmann::json provenance = nlohmann::json::object();
  /// Where each key was last set ("--set", "--eviction", a file), for error messages that are
  /// raised after the setting, e.g. an unknown policy name or policy knob.
  std::map<std::string, std::string> source;
  /// source[key], or `fallback` if the key was never set.
  std::string source_of(const std::string& key, const std::string& fallback) const;

  /// Throws UserError("<where>: <key>: ...") for unknown keys or bad values.
  void set(const std::string& key, const nlohmann::json& value, const std::string& where);
  /// `--set KEY=VALUE`: VALUE is parsed as JSON if it parses (and does not start or end with
  /// white space), else taken as a string.
  void set_from_string(const std::string& assignment, const std::string& where = "--set");
  /// Applies a nested JSON object (a preset file) recursively: {"gpu": {"num_sms": 28}}.
  void apply_json(const nlohmann::json& j, const std::string& where);
  nlohmann::json to_json() const;  ///< the full resolved configuration, nested by group

  /// A preset by name (configs/gpus/NAME.json, searched in $UVMSIM_CONFIG_DIR, ./configs,
  /// <install prefix>/share/uvmsim/configs, the source tree) or by path.
  static SimConfig from_preset(const std::string& name_or_path);
  static std::filesystem::path find_preset(const std::string& name_or_path);
  static std::vector<std::string> preset_names();
};

/// measured, published, derived, fitted, extrapolated, default.
const std::vector<std::string>& provenance_kinds();

/// The engine's knobs ("gpu.num_sms", ...), in listing order, with their defaults.
const std::vector<Knob>& config_knobs();
/// The engine knob named `name`, or nullptr.
const Knob* find_config_knob(const std::string& name);

}  // namespace uvmsim
