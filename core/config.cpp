#include "core/config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/units.h"

namespace uvmsim {

using nlohmann::json;

Tick TransferCurve::time_ps(std::uint64_t bytes) const {
  if (points.empty() || bytes == 0) return 0;
  const auto& p = points;
  double ns;
  if (p.size() == 1 || bytes <= p.front().first) {
    // Below the first point: scale down at the first point's bandwidth, but never below half of
    // its time (the fixed set-up part of a DMA does not shrink with size).
    ns = p.front().second * std::max(0.5, static_cast<double>(bytes) / p.front().first);
    if (p.size() == 1) ns = p.front().second * static_cast<double>(bytes) / p.front().first;
  } else {
    std::size_t i = 1;
    while (i + 1 < p.size() && p[i].first < bytes) ++i;
    const double x0 = p[i - 1].first, y0 = p[i - 1].second, x1 = p[i].first, y1 = p[i].second;
    ns = y0 + (y1 - y0) * (static_cast<double>(bytes) - x0) / (x1 - x0);
  }
  return static_cast<Tick>(std::llround(ns * kPsPerNs));
}

const char* to_string(ReplayPolicy p) {
  switch (p) {
    case ReplayPolicy::Block:
      return "block";
    case ReplayPolicy::Batch:
      return "batch";
    case ReplayPolicy::BatchFlush:
      return "batch_flush";
    case ReplayPolicy::Once:
      return "once";
  }
  return "?";
}

namespace {

struct Knob {
  std::string name, type, doc, range;
  std::function<json(const SimConfig&)> get;
  std::function<void(SimConfig&, const json&, const std::string& where)> set;
};

[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& msg) {
  throw UserError(where, key, msg);
}

double as_number(const json& v, const std::string& where, const std::string& key) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    // Allow sizes with suffixes ("11G") for byte-valued knobs and plain numeric strings.
    const auto s = v.get<std::string>();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0') return d;
    return static_cast<double>(parse_size(s, where + ": " + key));
  }
  bad(where, key, "expected a number, got " + std::string(v.type_name()));
}

// Builds a knob for a numeric member reached through `access`.
template <typename T, typename Access>
Knob number(std::string name, Access access, double lo, double hi, std::string doc) {
  Knob k;
  k.name = name;
  k.type = std::is_floating_point_v<T> ? "number" : "integer";
  k.doc = std::move(doc);
  std::ostringstream r;
  r << lo << " .. " << hi;
  k.range = r.str();
  k.get = [access](const SimConfig& c) { return json(access(const_cast<SimConfig&>(c))); };
  k.set = [access, lo, hi, name](SimConfig& c, const json& v, const std::string& where) {
    const double d = as_number(v, where, name);
    if (!std::isfinite(d) || d < lo || d > hi) {
      std::ostringstream m;
      m << "value " << v.dump() << " out of range [" << lo << ", " << hi << "]";
      bad(where, name, m.str());
    }
    if constexpr (std::is_integral_v<T>) {
      if (d != std::floor(d)) bad(where, name, "expected an integer, got " + v.dump());
    }
    access(c) = static_cast<T>(d);
  };
  return k;
}

template <typename Access>
Knob boolean(std::string name, Access access, std::string doc) {
  Knob k{name, "bool", std::move(doc), "true|false", {}, {}};
  k.get = [access](const SimConfig& c) { return json(access(const_cast<SimConfig&>(c))); };
  k.set = [access, name](SimConfig& c, const json& v, const std::string& where) {
    if (v.is_boolean()) {
      access(c) = v.get<bool>();
    } else if (v.is_number_integer() && (v.get<int>() == 0 || v.get<int>() == 1)) {
      access(c) = v.get<int>() == 1;
    } else if (v.is_string() && (v == "true" || v == "false" || v == "on" || v == "off")) {
      access(c) = (v == "true" || v == "on");
    } else {
      bad(where, name, "expected true or false, got " + v.dump());
    }
  };
  return k;
}

template <typename Access>
Knob text(std::string name, Access access, std::string doc) {
  Knob k{name, "string", std::move(doc), "", {}, {}};
  k.get = [access](const SimConfig& c) { return json(access(const_cast<SimConfig&>(c))); };
  k.set = [access, name](SimConfig& c, const json& v, const std::string& where) {
    if (!v.is_string()) bad(where, name, "expected a string, got " + v.dump());
    access(c) = v.get<std::string>();
  };
  return k;
}

template <typename Access>
Knob curve(std::string name, Access access, std::string doc) {
  Knob k{name, "curve", std::move(doc), "[[bytes, ns], ...] increasing", {}, {}};
  k.get = [access](const SimConfig& c) {
    json a = json::array();
    for (const auto& [b, ns] : access(const_cast<SimConfig&>(c)).points) a.push_back({b, ns});
    return a;
  };
  k.set = [access, name](SimConfig& c, const json& v, const std::string& where) {
    if (!v.is_array() || v.empty()) bad(where, name, "expected a non-empty array of [bytes, ns]");
    TransferCurve tc;
    for (const auto& p : v) {
      if (!p.is_array() || p.size() != 2 || !p[1].is_number())
        bad(where, name, "expected [bytes, ns] pairs, got " + p.dump());
      const double b = as_number(p[0], where, name), ns = p[1].get<double>();
      if (b <= 0 || ns <= 0 ||
          (!tc.points.empty() && (b <= tc.points.back().first || ns < tc.points.back().second)))
        bad(where, name, "points must be positive and increasing, got " + p.dump());
      tc.points.emplace_back(static_cast<std::uint64_t>(b), ns);
    }
    access(c) = std::move(tc);
  };
  return k;
}

std::vector<Knob> build_knobs() {
  std::vector<Knob> k;
  constexpr double kU32 = std::numeric_limits<std::uint32_t>::max();
  constexpr double kBig = 1e18;
#define ACC(path) \
  [](SimConfig & c) -> auto& { return c.path; }
  // --- GPU
  k.push_back(text("gpu.name", ACC(gpu.name), "preset name"));
  k.push_back(
      number<std::uint32_t>("gpu.num_sms", ACC(gpu.num_sms), 1, 4096, "streaming multiprocessors"));
  k.push_back(number<double>("gpu.clock_mhz", ACC(gpu.clock_mhz), 1, 10000,
                             "SM clock; converts compute-gap cycles to time"));
  k.push_back(number<std::uint32_t>("gpu.max_threads_per_sm", ACC(gpu.max_threads_per_sm), 32,
                                    65536, "resident threads per SM"));
  k.push_back(number<std::uint32_t>("gpu.max_warps_per_sm", ACC(gpu.max_warps_per_sm), 1, 2048,
                                    "resident warps per SM"));
  k.push_back(number<std::uint32_t>("gpu.max_blocks_per_sm", ACC(gpu.max_blocks_per_sm), 1, 1024,
                                    "resident threadblocks per SM"));
  k.push_back(number<std::uint32_t>("gpu.regs_per_sm", ACC(gpu.regs_per_sm), 1, kU32,
                                    "register file size per SM (32-bit registers)"));
  k.push_back(number<std::uint32_t>("gpu.smem_per_sm", ACC(gpu.smem_per_sm), 0, kU32,
                                    "shared memory bytes per SM"));
  k.push_back(number<std::uint32_t>("gpu.sms_per_utlb", ACC(gpu.sms_per_utlb), 1, 4096,
                                    "SMs sharing one uTLB (fault source)"));
  k.push_back(number<std::uint32_t>("gpu.utlb_max_outstanding_faults",
                                    ACC(gpu.utlb_max_outstanding_faults), 1, 65536,
                                    "outstanding far faults per uTLB (Allen & Ge: 56)"));
  k.push_back(number<std::uint32_t>("gpu.fault_buffer_entries", ACC(gpu.fault_buffer_entries), 1,
                                    1 << 24, "replayable fault buffer entries"));
  k.push_back(number<double>("gpu.fault_latency_ns", ACC(gpu.fault_latency_ns), 0, 1e9,
                             "TLB miss to fault entry visible in the buffer"));
  k.push_back(number<double>("gpu.utlb_fault_interval_ns", ACC(gpu.utlb_fault_interval_ns), 0, 1e9,
                             "a uTLB reports one far fault per this interval (0: all at once); "
                             "the GMMU interleaves all uTLBs' reports in time"));
  k.push_back(number<double>("gpu.fault_write_interval_ns", ACC(gpu.fault_write_interval_ns), 0,
                             1e9,
                             "the GMMU writes at most one fault-buffer entry per this interval"));
  k.push_back(number<double>("gpu.interrupt_latency_ns", ACC(gpu.interrupt_latency_ns), 0, 1e9,
                             "fault interrupt to bottom half running"));
  // --- TLB
  k.push_back(number<std::uint32_t>("tlb.l1_entries", ACC(tlb.l1_entries), 1, 1 << 20,
                                    "per-SM L1 TLB entries"));
  k.push_back(
      number<std::uint32_t>("tlb.l1_assoc", ACC(tlb.l1_assoc), 1, 1 << 20, "per-SM L1 TLB ways"));
  k.push_back(number<std::uint32_t>("tlb.l2_entries", ACC(tlb.l2_entries), 1, 1 << 24,
                                    "shared L2 TLB entries"));
  k.push_back(
      number<std::uint32_t>("tlb.l2_assoc", ACC(tlb.l2_assoc), 1, 1 << 24, "shared L2 TLB ways"));
  k.push_back(number<std::uint32_t>("tlb.l1_latency_cycles", ACC(tlb.l1_latency_cycles), 0, 1e6,
                                    "L1 TLB hit latency"));
  k.push_back(number<std::uint32_t>("tlb.l2_latency_cycles", ACC(tlb.l2_latency_cycles), 0, 1e6,
                                    "L2 TLB hit latency"));
  k.push_back(number<double>("tlb.walk_latency_ns", ACC(tlb.walk_latency_ns), 0, 1e9,
                             "GMMU page walk after an L2 TLB miss"));
  // --- HBM
  k.push_back(number<std::uint64_t>("hbm.capacity", ACC(hbm.capacity), 2 << 20, kBig,
                                    "usable device memory bytes (--hbm / --oversub override)"));
  k.push_back(number<double>("hbm.bandwidth_gbps", ACC(hbm.bandwidth_gbps), 1e-3, 1e6,
                             "device memory bandwidth, GB/s"));
  k.push_back(number<double>("hbm.latency_ns", ACC(hbm.latency_ns), 0, 1e9,
                             "device memory access latency"));
  // --- link
  k.push_back(text("link.type", ACC(link.type), "host link (pcie3x16, pcie4x16, nvlink2, ...)"));
  k.push_back(number<double>("link.bandwidth_gbps", ACC(link.bandwidth_gbps), 1e-3, 1e6,
                             "remote-access bandwidth per direction, GB/s"));
  k.push_back(number<double>("link.remote_latency_ns", ACC(link.remote_latency_ns), 0, 1e9,
                             "latency of a remote (zero-copy) access"));
  k.push_back(number<std::uint32_t>("link.sector_bytes", ACC(link.sector_bytes), 1, 4096,
                                    "remote access granularity"));
  k.push_back(
      curve("link.htod_curve", ACC(link.htod), "host-to-device copy time by size (per copy run)"));
  k.push_back(
      curve("link.dtoh_curve", ACC(link.dtoh), "device-to-host copy time by size (per copy run)"));
  // --- driver
  k.push_back(number<std::uint32_t>("driver.fault_batch_count", ACC(driver.fault_batch_count), 1,
                                    1 << 24, "uvm_perf_fault_batch_count: raw entries per batch"));
  {
    Knob r{"driver.replay_policy",         "enum", "uvm_perf_fault_replay_policy",
           "block|batch|batch_flush|once", {},     {}};
    r.get = [](const SimConfig& c) { return json(to_string(c.driver.replay_policy)); };
    r.set = [](SimConfig& c, const json& v, const std::string& where) {
      static const std::pair<const char*, ReplayPolicy> names[] = {
          {"block", ReplayPolicy::Block},
          {"batch", ReplayPolicy::Batch},
          {"batch_flush", ReplayPolicy::BatchFlush},
          {"once", ReplayPolicy::Once}};
      if (v.is_number_integer() && v.get<int>() >= 0 && v.get<int>() <= 3) {
        c.driver.replay_policy = static_cast<ReplayPolicy>(v.get<int>());
        return;
      }
      if (v.is_string()) {
        for (const auto& [n, p] : names) {
          if (v == n) {
            c.driver.replay_policy = p;
            return;
          }
        }
      }
      bad(where, "driver.replay_policy", "expected block|batch|batch_flush|once, got " + v.dump());
    };
    k.push_back(r);
  }
  k.push_back(number<std::uint32_t>("driver.replay_update_put_ratio",
                                    ACC(driver.replay_update_put_ratio), 0, 100,
                                    "duplicate % above which the flush re-reads PUT"));
  k.push_back(number<std::uint32_t>("driver.max_batches_per_service",
                                    ACC(driver.max_batches_per_service), 1, 1 << 20,
                                    "batches per bottom-half run"));
  k.push_back(number<std::uint32_t>("driver.max_throttle_per_service",
                                    ACC(driver.max_throttle_per_service), 1, 1 << 20,
                                    "throttled batches per bottom-half run"));
  k.push_back(
      boolean("driver.fault_coalesce", ACC(driver.fault_coalesce), "uvm_perf_fault_coalesce"));
  k.push_back(
      boolean("driver.prefetch_enable", ACC(driver.prefetch_enable), "uvm_perf_prefetch_enable"));
  k.push_back(number<std::uint32_t>("driver.prefetch_threshold", ACC(driver.prefetch_threshold), 0,
                                    100, "uvm_perf_prefetch_threshold (%)"));
  k.push_back(number<std::uint32_t>("driver.prefetch_min_faults", ACC(driver.prefetch_min_faults),
                                    1, 20, "uvm_perf_prefetch_min_faults"));
  k.push_back(
      boolean("driver.evict_dirty_only", ACC(driver.evict_dirty_only),
              "what-if: copy back only written pages on eviction (the real driver copies all)"));
  k.push_back(number<std::uint32_t>("driver.pma_batch_chunks", ACC(driver.pma_batch_chunks), 1,
                                    1 << 20, "root chunks per PMA allocation call"));
  k.push_back(boolean("driver.managed_tail_pow2", ACC(driver.managed_tail_pow2),
                      "round a managed range's last partial 2 MB block up to a power of two "
                      "(calibration: 2M+192K -> 2M+256K)"));
  // --- thrashing
  k.push_back(boolean("thrashing.enable", ACC(thrashing.enable), "uvm_perf_thrashing_enable"));
  k.push_back(number<std::uint32_t>("thrashing.threshold", ACC(thrashing.threshold), 1, 7,
                                    "uvm_perf_thrashing_threshold"));
  k.push_back(number<std::uint32_t>("thrashing.pin_threshold", ACC(thrashing.pin_threshold), 1, 255,
                                    "uvm_perf_thrashing_pin_threshold"));
  k.push_back(number<double>("thrashing.lapse_us", ACC(thrashing.lapse_us), 1, 1e9,
                             "uvm_perf_thrashing_lapse_usec"));
  k.push_back(number<std::uint32_t>("thrashing.nap", ACC(thrashing.nap), 1, 100,
                                    "uvm_perf_thrashing_nap (x lapse)"));
  k.push_back(number<std::uint32_t>("thrashing.epoch", ACC(thrashing.epoch), 1, 1e6,
                                    "uvm_perf_thrashing_epoch (x lapse)"));
  k.push_back(number<std::uint32_t>("thrashing.pin", ACC(thrashing.pin), 0, 1e6,
                                    "uvm_perf_thrashing_pin (x lapse, 0 = forever)"));
  k.push_back(number<std::uint32_t>("thrashing.max_resets", ACC(thrashing.max_resets), 0, 1e6,
                                    "uvm_perf_thrashing_max_resets"));
  // --- access counters
  k.push_back(boolean("access_counters.migration", ACC(access_counters.migration),
                      "access-counter based migration (ACBM); off on x86"));
  k.push_back(number<std::uint32_t>("access_counters.count", ACC(access_counters.count), 1, 1 << 20,
                                    "hardware access counters"));
  {
    Knob g{"access_counters.granularity",
           "size",
           "region tracked per counter",
           "64K|2M|16M|16G",
           {},
           {}};
    g.get = [](const SimConfig& c) { return json(c.access_counters.granularity); };
    g.set = [](SimConfig& c, const json& v, const std::string& where) {
      const auto b = static_cast<std::uint64_t>(as_number(v, where, "access_counters.granularity"));
      if (b != (64u << 10) && b != (2u << 20) && b != (16u << 20) && b != (std::uint64_t{16} << 30))
        bad(where, "access_counters.granularity", "must be 64K, 2M, 16M or 16G, got " + v.dump());
      c.access_counters.granularity = b;
    };
    k.push_back(g);
  }
  k.push_back(number<std::uint32_t>("access_counters.threshold", ACC(access_counters.threshold), 1,
                                    65535, "uvm_perf_access_counter_threshold"));
  k.push_back(number<std::uint32_t>("access_counters.batch_count", ACC(access_counters.batch_count),
                                    1, 1 << 20, "notifications per batch"));
  // --- costs
  k.push_back(number<double>("cost.batch_fixed_ns", ACC(cost.batch_fixed_ns), 0, 1e12,
                             "per batch: fetch, sort, flush, replay push"));
  k.push_back(number<double>("cost.fault_entry_ns", ACC(cost.fault_entry_ns), 0, 1e12,
                             "per raw fault entry fetched"));
  k.push_back(
      number<double>("cost.block_ns", ACC(cost.block_ns), 0, 1e12, "per VA block serviced"));
  k.push_back(number<double>("cost.page_ns", ACC(cost.page_ns), 0, 1e12,
                             "per 4 KB page made resident (unmap + PTE)"));
  k.push_back(number<double>("cost.copy_run_ns", ACC(cost.copy_run_ns), 0, 1e12,
                             "per copy run: copy-engine push set-up"));
  k.push_back(number<double>("cost.first_fault_ns", ACC(cost.first_fault_ns), 0, 1e12,
                             "one-time cost of the process's first fault batch"));
  k.push_back(number<double>("cost.replay_ns", ACC(cost.replay_ns), 0, 1e12,
                             "replay push to warps retrying"));
  k.push_back(number<double>("cost.eviction_ns", ACC(cost.eviction_ns), 0, 1e12,
                             "per evicted root chunk, CPU side"));
  k.push_back(number<double>("cost.pma_alloc_ns", ACC(cost.pma_alloc_ns), 0, 1e12,
                             "per PMA allocation call"));
  k.push_back(number<double>("cost.cpu_fault_ns", ACC(cost.cpu_fault_ns), 0, 1e12,
                             "per CPU page fault serviced"));
  k.push_back(number<double>("cost.launch_overhead_ns", ACC(cost.launch_overhead_ns), 0, 1e12,
                             "per kernel launch"));
  k.push_back(number<double>("cost.user_prefetch_ns", ACC(cost.user_prefetch_ns), 0, 1e12,
                             "per cudaMemPrefetchAsync call"));
  k.push_back(number<double>("cost.zero_fill_gbps", ACC(cost.zero_fill_gbps), 0, 1e6,
                             "GPU zero-fill rate of new chunks (0 = HBM bandwidth)"));
  k.push_back(number<double>("cost.placement_call_ns", ACC(cost.placement_call_ns), 0, 1e12,
                             "per placement action that changes state (pin, reserve, advise, "
                             "...: one enhanced-driver ioctl)"));
  k.push_back(number<double>("cost.host_memset_gbps", ACC(cost.host_memset_gbps), 1e-3, 1e6,
                             "host memset rate for first-touching pages pinned on the host"));
  // --- sampled observability (ObservUVM)
  k.push_back(number<std::uint32_t>("observe.max_regions", ACC(observe.max_regions), 0, 65536,
                                    "regions observed for eviction at once (paper: 100); with "
                                    "max_feedback_regions at most access_counters.count"));
  k.push_back(number<std::uint32_t>("observe.max_feedback_regions",
                                    ACC(observe.max_feedback_regions), 0, 65536,
                                    "regions observed for prefetch feedback / triggers at once"));
  k.push_back(number<double>("observe.max_regions_pct", ACC(observe.max_regions_pct), 0, 100,
                             "caps both budgets at this % of usable GPU memory (at least one "
                             "region): the regions at imminent risk, not all of them"));
  k.push_back(boolean("observe.only_under_pressure", ACC(observe.only_under_pressure),
                      "observe for eviction only while memory fills, not while the GPU is full "
                      "without evicting, and from the first eviction on (false: always)"));
  k.push_back(number<double>("observe.min_occupancy_pct", ACC(observe.min_occupancy_pct), 0, 100,
                             "with only_under_pressure, observing while memory fills starts at "
                             "this % of usable GPU memory allocated"));
  k.push_back(number<std::uint32_t>("observe.samples_per_region", ACC(observe.samples_per_region),
                                    1, 32,
                                    "64 KB sample pages per observed 2 MB region (initial)"));
  k.push_back(number<std::uint32_t>("observe.max_samples_per_region",
                                    ACC(observe.max_samples_per_region), 1, 32,
                                    "adaptive doubling stops here (the paper evaluates 1-3)"));
  k.push_back(boolean("observe.adaptive_samples", ACC(observe.adaptive_samples),
                      "double/halve samples per region from the re-fault rate of recently "
                      "evicted regions (paper section V-D)"));
  k.push_back(number<std::uint32_t>("observe.adapt_window", ACC(observe.adapt_window), 1, 1e6,
                                    "recently evicted regions tracked; evaluated every window"));
  k.push_back(number<double>("observe.adapt_grow_fraction", ACC(observe.adapt_grow_fraction), 0, 1,
                             "re-faulted share of the window above which samples double"));
  k.push_back(number<double>("observe.adapt_shrink_fraction", ACC(observe.adapt_shrink_fraction), 0,
                             1, "not-re-faulted share above which samples halve"));
  // --- engine
  k.push_back(number<std::uint64_t>("engine.seed", ACC(engine.seed), 0, 1.8e19,
                                    "seed for randomised policies"));
  k.push_back(text("engine.eviction", ACC(engine.eviction), "eviction policy (--eviction)"));
  k.push_back(text("engine.prefetch", ACC(engine.prefetch), "prefetch policy (--prefetch)"));
  k.push_back(text("engine.placement", ACC(engine.placement), "placement policy (--placement)"));
  k.push_back(number<double>("engine.max_sim_time_s", ACC(engine.max_sim_time_s), 0, 1e9,
                             "stop after this much simulated time (0 = no limit)"));
  k.push_back(text("engine.hints", ACC(engine.hints),
                   "static hints file (--hints; docs/hints.md); empty = the trace's own hints"));
#undef ACC
  return k;
}

const std::vector<Knob>& knobs() {
  static const std::vector<Knob> k = build_knobs();
  return k;
}

}  // namespace

const std::vector<KnobInfo>& knob_table() {
  static const std::vector<KnobInfo> t = [] {
    std::vector<KnobInfo> v;
    for (const auto& k : knobs()) v.push_back({k.name, k.type, k.doc, k.range});
    return v;
  }();
  return t;
}

void SimConfig::set(const std::string& key, const json& value, const std::string& where) {
  // Policy parameters are owned by policies; they are validated when the policy is created.
  if (key.rfind("policy.", 0) == 0) {
    const auto rest = key.substr(7);
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == rest.size())
      bad(where, key, "policy knobs are named policy.<policy>.<param>");
    policy_params[rest.substr(0, dot)][rest.substr(dot + 1)] = value;
    policy_param_source[key] = where;
    return;
  }
  for (const auto& k : knobs()) {
    if (k.name == key) {
      k.set(*this, value, where);
      return;
    }
  }
  bad(where, key, "unknown configuration key (uvmsim run --list-knobs lists them)");
}

void SimConfig::set_from_string(const std::string& assignment, const std::string& where) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError(where + ": expected KEY=VALUE, got '" + assignment + "'");
  const std::string key = assignment.substr(0, eq), val = assignment.substr(eq + 1);
  json v = json::parse(val, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) v = val;
  set(key, v, where);
}

const std::vector<std::string>& provenance_kinds() {
  static const std::vector<std::string> k = {"measured", "published",    "derived",
                                             "fitted",   "extrapolated", "default"};
  return k;
}

/// Validates a preset's "provenance" section: every key names a knob (or "group.*" matching at
/// least one knob), every value is a known kind or {"kind": ..., "source"/"note": "..."}.
static void check_provenance(const json& p, const std::string& where) {
  if (!p.is_object()) bad(where, "provenance", "expected an object");
  const auto& kinds = provenance_kinds();
  for (const auto& [key, v] : p.items()) {
    const std::string field = "provenance." + key;
    bool known = false;
    if (key.size() > 2 && key.ends_with(".*")) {
      const std::string prefix = key.substr(0, key.size() - 1);
      for (const auto& k : knobs()) known |= k.name.rfind(prefix, 0) == 0;
    } else {
      for (const auto& k : knobs()) known |= k.name == key;
    }
    if (!known) bad(where, field, "not a configuration key (uvmsim run --list-knobs lists them)");
    const json* kind = &v;
    if (v.is_object()) {
      for (const auto& [f, x] : v.items()) {
        if (f != "kind" && f != "source" && f != "note")
          bad(where, field + "." + f, "unknown field (expected kind, source, note)");
        if (!x.is_string()) bad(where, field + "." + f, "expected a string");
      }
      if (!v.contains("kind")) bad(where, field + ".kind", "missing required field");
      kind = &v["kind"];
    }
    if (!kind->is_string() ||
        std::find(kinds.begin(), kinds.end(), kind->get<std::string>()) == kinds.end())
      bad(where, field,
          "provenance must be one of measured, published, derived, fitted, extrapolated, "
          "default; got " +
              kind->dump());
  }
}

void SimConfig::apply_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw UserError(where + ": expected a JSON object");
  for (const auto& [group, body] : j.items()) {
    // Free-text documentation and the calibration summary written by `uvmsim calibrate`.
    if (group == "description" || group == "source" || group == "calibration") continue;
    if (group == "provenance") {
      check_provenance(body, where);
      for (const auto& [k, v] : body.items()) provenance[k] = v;
      continue;
    }
    if (group == "policy" && body.is_object()) {
      for (const auto& [pol, params] : body.items()) {
        if (!params.is_object()) bad(where, "policy." + pol, "expected an object");
        for (const auto& [p, v] : params.items()) set("policy." + pol + "." + p, v, where);
      }
      continue;
    }
    if (!body.is_object()) bad(where, group, "expected an object of knobs");
    for (const auto& [key, v] : body.items()) set(group + "." + key, v, where);
  }
}

json SimConfig::to_json() const {
  json j = json::object();
  for (const auto& k : knobs()) {
    const auto dot = k.name.find('.');
    j[k.name.substr(0, dot)][k.name.substr(dot + 1)] = k.get(*this);
  }
  if (!policy_params.empty()) j["policy"] = policy_params;
  if (!provenance.empty()) j["provenance"] = provenance;
  return j;
}

static std::vector<std::filesystem::path> preset_dirs() {
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("UVMSIM_CONFIG_DIR")) dirs.emplace_back(env);
  dirs.emplace_back("configs");
  // An installed uvmsim (cmake --install) keeps its presets in <prefix>/share/uvmsim/configs,
  // found from the executable wherever the prefix is.
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.emplace_back(exe.parent_path().parent_path() / "share" / "uvmsim" / "configs");
  dirs.emplace_back(std::filesystem::path(UVMSIM_SOURCE_DIR) / "configs");
  return dirs;
}

std::filesystem::path SimConfig::find_preset(const std::string& name) {
  namespace fs = std::filesystem;
  if (name.find('/') != std::string::npos || name.ends_with(".json")) {
    if (!fs::exists(name)) throw UserError(name + ": --gpu: file not found");
    return name;
  }
  for (const auto& d : preset_dirs()) {
    const auto p = d / "gpus" / (name + ".json");
    if (fs::exists(p)) return p;
  }
  std::string known;
  for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw UserError("--gpu: unknown preset '" + name + "' (known: " + known + ")");
}

std::vector<std::string> SimConfig::preset_names() {
  std::vector<std::string> names;
  for (const auto& d : preset_dirs()) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(d / "gpus", ec)) {
      if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    }
    if (!names.empty()) break;
  }
  std::sort(names.begin(), names.end());
  return names;
}

SimConfig SimConfig::from_preset(const std::string& name_or_path) {
  const auto path = find_preset(name_or_path);
  std::ifstream in(path);
  if (!in) throw UserError(path.string() + ": cannot open");
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) throw UserError(path.string() + ": not valid JSON");
  SimConfig c;
  c.apply_json(j, path.string());
  return c;
}

}  // namespace uvmsim
