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

#include "core/types.h"

namespace uvmsim {

enum class ReplayPolicy : std::uint8_t { Block = 0, Batch = 1, BatchFlush = 2, Once = 3 };

/// A size-dependent transfer-time curve: (bytes, ns) points, linearly interpolated and
/// extrapolated past the last point at the last segment's slope. Fitted to measured copy times.
struct TransferCurve {
  std::vector<std::pair<std::uint64_t, double>> points;
  Tick time_ps(std::uint64_t bytes) const;
};

struct GpuConfig {
  std::string name = "generic";
  std::uint32_t num_sms = 28;
  double clock_mhz = 1481;
  std::uint32_t max_threads_per_sm = 2048;
  std::uint32_t max_warps_per_sm = 64;
  std::uint32_t max_blocks_per_sm = 32;
  std::uint32_t regs_per_sm = 65536;
  std::uint32_t smem_per_sm = 98304;
  std::uint32_t sms_per_utlb = 1;
  std::uint32_t utlb_max_outstanding_faults = 56;
  std::uint32_t fault_buffer_entries = 8192;
  double fault_latency_ns = 500;       ///< TLB miss → fault entry visible in the buffer
  /// A uTLB reports its far faults one at a time, this far apart (0: all at once). The GMMU
  /// interleaves the reports of all uTLBs in time, so a batch holds faults from every SM.
  double utlb_fault_interval_ns = 0;
  double fault_write_interval_ns = 0;  ///< the GMMU writes one fault entry per this interval
  double interrupt_latency_ns = 5000;  ///< fault interrupt → bottom half running
};

struct TlbConfig {
  std::uint32_t l1_entries = 32, l1_assoc = 8;
  std::uint32_t l2_entries = 2048, l2_assoc = 16;
  std::uint32_t l1_latency_cycles = 5, l2_latency_cycles = 80;
  double walk_latency_ns = 400;
};

struct HbmConfig {
  std::uint64_t capacity = std::uint64_t{11} << 30;
  double bandwidth_gbps = 484;
  double latency_ns = 400;
};

struct LinkConfig {
  std::string type = "pcie3x16";
  double bandwidth_gbps = 12;  ///< remote (zero-copy) accesses, per direction
  double remote_latency_ns = 1200;
  std::uint32_t sector_bytes = 32;
  TransferCurve htod, dtoh;
};

struct DriverConfig {
  std::uint32_t fault_batch_count = 256;
  ReplayPolicy replay_policy = ReplayPolicy::BatchFlush;
  std::uint32_t replay_update_put_ratio = 50;
  std::uint32_t max_batches_per_service = 20;
  std::uint32_t max_throttle_per_service = 5;
  bool fault_coalesce = true;
  bool prefetch_enable = true;
  std::uint32_t prefetch_threshold = 51;
  std::uint32_t prefetch_min_faults = 1;
  bool evict_dirty_only = false;
  std::uint32_t pma_batch_chunks = 64;
  bool managed_tail_pow2 = true;
};

struct ThrashingConfig {
  bool enable = true;
  std::uint32_t threshold = 3;
  std::uint32_t pin_threshold = 10;
  double lapse_us = 500;
  std::uint32_t nap = 1;
  std::uint32_t epoch = 2000;
  std::uint32_t pin = 300;
  std::uint32_t max_resets = 4;
};

struct AccessCounterConfig {
  bool migration = false;  ///< ACBM; off by default as on x86 + PCIe (uvm-driver.md §4)
  std::uint32_t count = 256;
  std::uint64_t granularity = std::uint64_t{2} << 20;
  std::uint32_t threshold = 256;
  std::uint32_t batch_count = 256;
};

/// Sampled observability (ObservUVM §IV-A, §V-A, §V-D): a policy marks a GPU-resident 2 MB region
/// observable; sample 64 KB pages move to host memory, remote-mapped, watched by an access
/// counter with threshold 1. Used only when a policy asks for it.
struct ObservabilityConfig {
  std::uint32_t max_regions = 100;          ///< regions observed for eviction at once
  std::uint32_t max_feedback_regions = 32;  ///< regions observed for prefetch feedback at once
  double max_regions_pct = 20;  ///< and each at most this % of usable GPU memory (>= 1 region)
  /// Eviction observability under memory pressure only: while memory fills (from
  /// min_occupancy_pct of it), not while the GPU is full without evicting, and from the first
  /// eviction on. Eviction policies decide nothing otherwise, and the paper's overhead (~2.4 %,
  /// §VII) is that of oversubscribed runs.
  bool only_under_pressure = true;
  double min_occupancy_pct = 80;
  std::uint32_t samples_per_region = 1;      ///< 64 KB sample pages per region (initial)
  std::uint32_t max_samples_per_region = 4;  ///< adaptive doubling stops here
  bool adaptive_samples = true;              ///< §V-D: double / halve from re-fault rate
  std::uint32_t adapt_window = 100;          ///< recently evicted regions tracked
  double adapt_grow_fraction = 0.5;          ///< re-faulted share above which samples double
  double adapt_shrink_fraction = 0.8;        ///< not-re-faulted share above which samples halve
};

/// Host-side driver costs (ns). Defaults are fitted to the GTX 1080 Ti fault-group timings in
/// shared/reference/calibration-facts.md; see docs/cost-model.md.
struct CostConfig {
  double batch_fixed_ns = 4000;    ///< fetch + sort + flush + replay push, per batch
  double fault_entry_ns = 40;      ///< per raw fault-buffer entry fetched
  double block_ns = 4460;          ///< per VA block serviced (lock, residency, PTE, TLB inval)
  double page_ns = 218;            ///< per 4 KB page made resident (CPU unmap + PTE)
  double copy_run_ns = 2000;       ///< per copy run: copy-engine push set-up
  double first_fault_ns = 140000;  ///< one-time: the process's first fault batch
  double replay_ns = 1500;         ///< replay push → warps retry
  double eviction_ns = 6000;       ///< per evicted root chunk (CPU side)
  double pma_alloc_ns = 20000;     ///< per PMA allocation call (pma_batch_chunks root chunks)
  double cpu_fault_ns = 15000;     ///< per CPU fault serviced
  double launch_overhead_ns = 5000;
  double user_prefetch_ns = 10000;  ///< per cudaMemPrefetchAsync call
  double zero_fill_gbps = 0;        ///< 0 = HBM bandwidth
  double placement_call_ns = 2000;  ///< per placement action that changes state (an ioctl)
  double host_memset_gbps = 8;      ///< host first-touch (memset) rate for host-pinned pages
};

struct EngineConfig {
  std::uint64_t seed = 1;
  std::string eviction = "driver";
  std::string prefetch = "tree";
  std::string placement = "driver";
  double max_sim_time_s = 0;  ///< 0 = unlimited
  std::string hints;          ///< hints file overriding the trace's embedded hints ("" = none)
};

struct SimConfig {
  GpuConfig gpu;
  TlbConfig tlb;
  HbmConfig hbm;
  LinkConfig link;
  DriverConfig driver;
  ThrashingConfig thrashing;
  AccessCounterConfig access_counters;
  CostConfig cost;
  ObservabilityConfig observe;
  EngineConfig engine;
  nlohmann::json policy_params = nlohmann::json::object();  ///< "policy.<name>.<key>" knobs
  /// Where a preset's numbers come from: {"<knob>" or "<group>.*": "<kind>" or {"kind", "source"}}
  /// with kind one of provenance_kinds() (docs/calibration.md, "Presets and provenance").
  nlohmann::json provenance = nlohmann::json::object();
  /// Where each "policy.<name>.<key>" was set ("--set" or a file), for error messages.
  std::map<std::string, std::string> policy_param_source;

  /// Throws UserError("<where>: <key>: ...") for unknown keys or bad values.
  void set(const std::string& key, const nlohmann::json& value, const std::string& where);
  /// `--set KEY=VALUE`: VALUE is parsed as JSON if it parses, else taken as a string.
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

struct KnobInfo {
  std::string name, type, doc, range;
};
const std::vector<KnobInfo>& knob_table();

const char* to_string(ReplayPolicy p);

}  // namespace uvmsim
