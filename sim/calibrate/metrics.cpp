#include "sim/calibrate/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "sim/simulator.h"

namespace uvmsim::calib {

using meas::Cause;
using meas::Direction;
using meas::RecordType;

const char* dir_name(int d) { return d == kHtoD ? "htod" : "dtoh"; }

std::string sim_cause(Direction d, Cause c) {
  if (d == Direction::HtoD) {
    switch (c) {
      case Cause::Coherence:
        return "demand";
      case Cause::Prefetch:
        return "prefetch";
      case Cause::User:
        return "user_prefetch";
      case Cause::AccessCounters:
        return "access_counter";
      default:
        return "unknown";
    }
  }
  switch (c) {
    case Cause::Eviction:
      return "eviction";
    // A CPU fault migrates the faulted page (coherence) and the prefetcher's choice
    // (prefetch); the simulator counts both as cpu_fault.
    case Cause::Coherence:
    case Cause::Prefetch:
      return "cpu_fault";
    case Cause::User:
      return "user_prefetch";
    default:
      return "unknown";
  }
}

RunMetrics from_measurement(const meas::Measurement& m) {
  RunMetrics r;
  std::map<std::pair<std::uint64_t, std::uint64_t>, FaultGroup> groups;
  std::vector<std::pair<std::uint64_t, double>> kernels;
  for (const auto& rec : m.records) {
    switch (rec.type) {
      case RecordType::GpuFault: {
        // CUPTI reports one record per faulting page with the group's service window
        // (start = driver starts processing, end = replay queued): records sharing the window
        // belong to one fault group.
        r.has_fault_data = true;
        auto& g = groups[{rec.start, rec.end}];
        g.start_ns = rec.start;
        g.duration_ns = static_cast<double>(rec.duration());
        g.faults += rec.count;
        break;
      }
      case RecordType::Kernel:
        kernels.emplace_back(rec.start, static_cast<double>(rec.duration()));
        break;
      case RecordType::Transfer:
      case RecordType::Memcpy: {
        if (rec.dir != Direction::HtoD && rec.dir != Direction::DtoH) break;
        const int d = rec.dir == Direction::HtoD ? kHtoD : kDtoH;
        const TransferSample s{rec.bytes, static_cast<double>(rec.duration())};
        if (rec.type == RecordType::Memcpy) {
          if (s.bytes > 0 && s.ns > 0) r.memcpys[d].push_back(s);
          break;
        }
        r.has_transfers[d] = true;
        r.bytes[d][sim_cause(rec.dir, rec.cause)] += rec.bytes;
        if (s.bytes > 0 && s.ns > 0) r.transfers[d].push_back(s);
        break;
      }
      case RecordType::CpuFault:
        r.cpu_faults += rec.count;
        break;
      case RecordType::Thrashing:
        ++r.thrashing;
        break;
      case RecordType::Throttling:
        ++r.throttling;
        break;
      case RecordType::RemoteMap:
        ++r.remote_maps;
        break;
      default:
        break;
    }
  }
  for (const auto& [k, g] : groups) r.groups.push_back(g);
  std::stable_sort(r.groups.begin(), r.groups.end(), [](const FaultGroup& a, const FaultGroup& b) {
    return a.start_ns < b.start_ns;
  });
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& k : kernels) {
    r.kernel_start_ns.push_back(static_cast<double>(k.first));
    r.kernel_ns.push_back(k.second);
  }
  return r;
}

namespace {

struct SimRun {
  RunMetrics metrics;
  std::vector<meas::Record> rows;  ///< filled only when `want_records`
  Stats stats;
};

Cause cupti_cause(const std::string& sim) {
  if (sim == "demand" || sim == "cpu_fault") return Cause::Coherence;
  if (sim == "prefetch") return Cause::Prefetch;
  if (sim == "user_prefetch") return Cause::User;
  if (sim == "access_counter") return Cause::AccessCounters;
  if (sim == "eviction") return Cause::Eviction;
  return Cause::Unknown;
}

SimRun run_sim(const SimConfig& cfg, const std::filesystem::path& trace, bool want_records) {
  SimRun out;
  RunMetrics& r = out.metrics;
  RunOptions opts;
  opts.trace = trace;
  opts.event_sink = [&](const EventRow& e) {
    const std::string ev = e.event;
    const double t_ns = static_cast<double>(e.time) / kPsPerNs;
    const double d_ns = static_cast<double>(e.duration) / kPsPerNs;
    if (ev == "batch") {
      r.groups.push_back({static_cast<std::uint64_t>(t_ns), d_ns, e.pages});
      if (want_records) {
        meas::Record rec;
        rec.type = RecordType::GpuFault;
        rec.start = static_cast<std::uint64_t>(std::llround(t_ns));
        rec.end = static_cast<std::uint64_t>(std::llround(t_ns + d_ns));
        rec.count = e.pages;
        rec.access = "unknown";
        out.rows.push_back(rec);
      }
    } else if (ev == "migration") {
      const int d = std::string(e.direction) == "htod" ? kHtoD : kDtoH;
      r.transfers[d].push_back({e.bytes, d_ns});
      if (want_records) {
        meas::Record rec;
        rec.type = RecordType::Transfer;
        rec.dir = d == kHtoD ? Direction::HtoD : Direction::DtoH;
        rec.cause = cupti_cause(e.cause);
        rec.start = static_cast<std::uint64_t>(std::llround(t_ns));
        rec.end = static_cast<std::uint64_t>(std::llround(t_ns + d_ns));
        rec.address = e.va;
        rec.bytes = e.bytes;
        rec.src = d == kHtoD ? meas::kCpuDevice : 0;
        rec.dst = d == kHtoD ? 0 : meas::kCpuDevice;
        out.rows.push_back(rec);
      }
    }
  };
  Simulator sim(cfg, opts);
  out.stats = sim.run();
  const Stats& s = out.stats;
  r.has_fault_data = true;
  r.has_transfers = {true, true};
  for (std::size_t i = 0; i < s.htod_by_cause.size(); ++i)
    r.bytes[kHtoD][to_string(static_cast<HtodCause>(i))] = s.htod_by_cause[i];
  for (std::size_t i = 0; i < s.dtoh_by_cause.size(); ++i)
    r.bytes[kDtoH][to_string(static_cast<DtohCause>(i))] = s.dtoh_by_cause[i];
  for (const auto& k : s.kernels) {
    r.kernel_start_ns.push_back(static_cast<double>(k.start) / kPsPerNs);
    r.kernel_ns.push_back(static_cast<double>(k.end - k.start) / kPsPerNs);
  }
  r.cpu_faults = s.cpu_faults;
  r.thrashing = s.thrashing_pages;
  r.throttling = s.throttle_hints;
  r.remote_maps = s.remote_maps;
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Residual make(const std::string& family, const std::string& run, int index, std::string what,
              double measured, double simulated, double floor) {
  Residual r{family, run, index, std::move(what), measured, simulated, 0};
  r.rel = (simulated - measured) / std::max(std::fabs(measured), floor);
  return r;
}

constexpr double kTimeFloorNs = 1000;        // 1 us: below that relative errors mean nothing
constexpr double kBytesFloor = 64.0 * 1024;  // one big page

/// Median measured time per distinct size, compared against the configured curve.
void compare_curve(const std::string& family, const std::string& run,
                   const std::vector<TransferSample>& samples, const TransferCurve& curve,
                   std::vector<Residual>& out) {
  std::map<std::uint64_t, std::vector<double>> by_size;
  for (const auto& s : samples) by_size[s.bytes].push_back(s.ns);
  int i = 0;
  for (const auto& [bytes, times] : by_size) {
    const double model = static_cast<double>(curve.time_ps(bytes)) / kPsPerNs;
    out.push_back(
        make(family, run, i++, std::to_string(bytes) + " B", median(times), model, kTimeFloorNs));
  }
}

}  // namespace

RunMetrics simulate(const SimConfig& cfg, const std::filesystem::path& trace) {
  return run_sim(cfg, trace, false).metrics;
}

meas::Measurement simulated_measurement(const SimConfig& cfg, const std::filesystem::path& trace) {
  SimRun run = run_sim(cfg, trace, true);
  meas::Measurement m;
  m.label = trace.stem().string();
  m.header.source = "uvmsim";
  m.header.gpu = cfg.gpu.name;
  m.header.app = trace.string();
  trace::TraceReader reader(trace);
  const auto& meta = reader.metadata();
  for (const auto& k : run.stats.kernels) {
    meas::Record rec;
    rec.type = RecordType::Kernel;
    rec.start = k.start / kPsPerNs;
    rec.end = k.end / kPsPerNs;
    rec.name = k.name;
    rec.correlation = k.launch_index;
    if (const auto* info = meta.find_kernel(k.kernel_id)) {
      rec.grid = info->grid;
      rec.block = info->block;
      rec.regs = info->regs_per_thread;
      rec.smem = info->shared_mem_bytes;
    }
    run.rows.push_back(rec);
  }
  std::stable_sort(run.rows.begin(), run.rows.end(),
                   [](const meas::Record& a, const meas::Record& b) { return a.start < b.start; });
  m.records = std::move(run.rows);
  m.summary.records = m.records.size();
  return m;
}

std::vector<Residual> compare(const std::string& run, const RunMetrics& m, const RunMetrics* sim,
                              const SimConfig& cfg, const CompareOptions& opts) {
  std::vector<Residual> out;
  const TransferCurve* curves[2] = {&cfg.link.htod_curve, &cfg.link.dtoh_curve};
  for (int d = 0; d < 2; ++d) {
    compare_curve(std::string("transfer_time.") + dir_name(d), run, m.transfers[d], *curves[d],
                  out);
    if (opts.memcpy_defines_curve[d])
      compare_curve(std::string("memcpy_time.") + dir_name(d), run, m.memcpys[d], *curves[d], out);
  }
  if (sim == nullptr) return out;

  if (m.has_fault_data) {
    const double mc = static_cast<double>(m.groups.size());
    const double sc = static_cast<double>(sim->groups.size());
    out.push_back(make("fault_group_count", run, -1, "groups", mc, sc, 1.0));
    if (m.groups.size() == sim->groups.size()) {
      for (std::size_t i = 0; i < m.groups.size(); ++i)
        out.push_back(make("fault_group_time", run, static_cast<int>(i),
                           "group " + std::to_string(i + 1), m.groups[i].duration_ns,
                           sim->groups[i].duration_ns, kTimeFloorNs));
    } else {
      // Different group structure: only the total service time is comparable.
      double mt = 0, st = 0;
      for (const auto& g : m.groups) mt += g.duration_ns;
      for (const auto& g : sim->groups) st += g.duration_ns;
      out.push_back(make("fault_group_time", run, -1, "total", mt, st, kTimeFloorNs));
    }
  }
  if (!m.kernel_ns.empty()) {
    if (m.kernel_ns.size() == sim->kernel_ns.size()) {
      for (std::size_t i = 0; i < m.kernel_ns.size(); ++i)
        out.push_back(make("kernel_time", run, static_cast<int>(i), "launch " + std::to_string(i),
                           m.kernel_ns[i], sim->kernel_ns[i], kTimeFloorNs));
      // From one kernel's end to the next one's start: launch overhead (and host work).
      auto gap = [](const RunMetrics& x, std::size_t i) {
        return x.kernel_start_ns[i] - (x.kernel_start_ns[i - 1] + x.kernel_ns[i - 1]);
      };
      for (std::size_t i = 1; i < m.kernel_ns.size(); ++i)
        if (gap(m, i) >= 0)
          out.push_back(make("kernel_gap", run, static_cast<int>(i),
                             "before launch " + std::to_string(i), gap(m, i), gap(*sim, i),
                             kTimeFloorNs));
    } else {
      double mt = 0, st = 0;
      for (double k : m.kernel_ns) mt += k;
      for (double k : sim->kernel_ns) st += k;
      out.push_back(make("kernel_time", run, -1, "total", mt, st, kTimeFloorNs));
    }
  }
  for (int d = 0; d < 2; ++d) {
    if (!m.has_transfers[d]) continue;
    const auto& mb = m.bytes[d];
    const auto& sb = sim->bytes[d];
    const std::string fam = std::string("bytes.") + dir_name(d) + ".";
    const auto unknown = mb.find("unknown");
    if (unknown != mb.end() && unknown->second > 0) {
      // Causes were not recorded (e.g. nvprof): compare the direction's total.
      std::uint64_t mt = 0, st = 0;
      for (const auto& [c, b] : mb) mt += b;
      for (const auto& [c, b] : sb) st += b;
      out.push_back(make(fam + "total", run, -1, "total", static_cast<double>(mt),
                         static_cast<double>(st), kBytesFloor));
      continue;
    }
    std::map<std::string, std::pair<double, double>> both;
    for (const auto& [c, b] : mb) both[c].first = static_cast<double>(b);
    for (const auto& [c, b] : sb) both[c].second = static_cast<double>(b);
    for (const auto& [c, v] : both) {
      if (v.first == 0 && v.second == 0) continue;
      out.push_back(make(fam + c, run, -1, "total", v.first, v.second, kBytesFloor));
    }
  }
  return out;
}

bool fit_curve(const std::vector<TransferSample>& samples, const TransferCurve& base,
               TransferCurve& out) {
  if (samples.empty()) return false;
  std::map<std::uint64_t, std::vector<double>> by_size;
  for (const auto& s : samples)
    if (s.bytes > 0 && s.ns > 0) by_size[s.bytes].push_back(s.ns);
  if (by_size.empty()) return false;
  struct Point {
    double bytes, ns, weight;
  };
  std::vector<Point> pts;
  if (by_size.size() <= 24) {
    for (const auto& [b, t] : by_size)
      pts.push_back({static_cast<double>(b), median(t), static_cast<double>(t.size())});
  } else {
    // Many distinct run sizes (a real application): merge into half-octave buckets.
    std::map<int, std::pair<std::vector<double>, std::vector<double>>> buckets;
    for (const auto& [b, t] : by_size) {
      const int key = static_cast<int>(std::floor(2.0 * std::log2(static_cast<double>(b))));
      for (double x : t) {
        buckets[key].first.push_back(static_cast<double>(b));
        buckets[key].second.push_back(x);
      }
    }
    for (const auto& [k, v] : buckets)
      pts.push_back(
          {std::round(median(v.first)), median(v.second), static_cast<double>(v.first.size())});
  }
  // Pool-adjacent-violators: the time of a copy never decreases with its size.
  std::vector<Point> blocks;
  for (const auto& p : pts) {
    blocks.push_back(p);
    while (blocks.size() >= 2 && blocks[blocks.size() - 2].ns > blocks.back().ns) {
      Point b = blocks.back();
      blocks.pop_back();
      Point& a = blocks.back();
      const double w = a.weight + b.weight;
      a.ns = (a.ns * a.weight + b.ns * b.weight) / w;
      a.bytes = b.bytes;  // the pooled block ends at the larger size
      a.weight = w;
    }
  }
  // Re-expand pooled blocks onto every measured size so each size keeps a knot.
  std::vector<std::pair<std::uint64_t, double>> fitted;
  std::size_t bi = 0;
  for (const auto& p : pts) {
    while (bi + 1 < blocks.size() && blocks[bi].bytes < p.bytes) ++bi;
    const double ns = blocks[bi].ns;
    const auto b = static_cast<std::uint64_t>(p.bytes);
    if (!fitted.empty() && fitted.back().first == b) continue;
    fitted.emplace_back(b, std::max(ns, fitted.empty() ? 0.0 : fitted.back().second));
  }
  out.points.clear();
  // Base points below the measured range, scaled to meet the first fitted point.
  const auto first = fitted.front(), last = fitted.back();
  if (!base.points.empty()) {
    const double at_first = static_cast<double>(base.time_ps(first.first)) / kPsPerNs;
    const double scale_lo = at_first > 0 ? first.second / at_first : 1.0;
    for (const auto& [b, ns] : base.points)
      if (b < first.first && ns * scale_lo <= first.second)
        out.points.emplace_back(b, ns * scale_lo);
  }
  for (const auto& p : fitted) out.points.push_back(p);
  if (!base.points.empty()) {
    const double at_last = static_cast<double>(base.time_ps(last.first)) / kPsPerNs;
    const double scale_hi = at_last > 0 ? last.second / at_last : 1.0;
    for (const auto& [b, ns] : base.points)
      if (b > last.first && ns * scale_hi >= out.points.back().second)
        out.points.emplace_back(b, ns * scale_hi);
  }
  return true;
}

}  // namespace uvmsim::calib
