#include "traces/collector/collector.h"

#include <algorithm>
#include <tuple>

#include "core/error.h"
#include "traces/collector/access_file.h"
#include "traces/trace.h"

namespace uvmsim::collector {

Collector::Collector(Options opts) : opts_(std::move(opts)) {
  part_ = opts_.measurement;
  part_ += ".part";
  part_out_.open(part_);
  if (!part_out_) throw UserError(part_.string() + ": cannot open for writing");
  header_.source = "cupti";
  header_.app = opts_.app;
  header_.extra["collector"] =
      "uvmsim libuvmtrace (CUPTI " + std::to_string(CUPTI_API_VERSION) + ")";
}

Collector::~Collector() {
  try {
    finish();
  } catch (...) {
  }
}

void Collector::on_activity(const Decoded& d) {
  std::lock_guard lock(mu_);
  if (finished_) return;
  if (d.kind == Decoded::Device) {
    if (header_.gpu.empty()) header_.gpu = d.device.value("name", "");
    header_.device["devices"].push_back(d.device);
    return;
  }
  if (d.kind != Decoded::Measurement) return;
  const meas::Record& r = d.record;
  part_out_ << meas::to_json(r).dump() << "\n";
  ++summary_.records;
  switch (r.type) {
    case meas::RecordType::Kernel:
      kernels_.push_back(r);
      break;
    case meas::RecordType::Alloc:
      allocs_.push_back(r);
      break;
    case meas::RecordType::Free:
      frees_.push_back(r);
      break;
    case meas::RecordType::Transfer:
      if (r.dir == meas::Direction::HtoD && r.src == meas::kCpuDevice) transfers_in_.push_back(r);
      break;
    case meas::RecordType::CpuFault:
      cpu_faults_.push_back(r);
      break;
    default:
      break;
  }
}

void Collector::on_api(const ApiCall& c) {
  std::lock_guard lock(mu_);
  if (finished_ || c.kind == ApiCall::None) return;
  if (c.kind != ApiCall::Launch) {
    part_out_ << meas::to_json(c.record).dump() << "\n";
    ++summary_.records;
  }
  calls_.push_back(c);
}

void Collector::add_dropped(std::uint64_t n) {
  std::lock_guard lock(mu_);
  summary_.dropped_records += n;
}

void Collector::warn(const std::string& w) {
  std::lock_guard lock(mu_);
  if (std::find(summary_.warnings.begin(), summary_.warnings.end(), w) == summary_.warnings.end())
    summary_.warnings.push_back(w);
}

FinishReport Collector::finish() {
  std::lock_guard lock(mu_);
  if (finished_) return report_;
  finished_ = true;
  part_out_.close();
  FinishReport rep;
  if (summary_.dropped_records)
    summary_.warnings.push_back(std::to_string(summary_.dropped_records) +
                                " CUPTI activity records were dropped (buffers full): counts are "
                                "lower bounds; raise UVMTRACE_BUFFER_MB");
  if (!opts_.trace.empty()) write_trace(rep);
  {
    std::ofstream out(opts_.measurement);
    if (!out) throw UserError(opts_.measurement.string() + ": cannot open for writing");
    out << meas::to_json(header_).dump() << "\n";
    std::ifstream part(part_);
    out << part.rdbuf();
    nlohmann::json s = {{"type", "summary"},
                        {"records", summary_.records},
                        {"dropped_records", summary_.dropped_records},
                        {"warnings", summary_.warnings}};
    out << s.dump() << "\n";
    out.close();
    if (!out) throw UserError(opts_.measurement.string() + ": write failed");
  }
  std::error_code ec;
  std::filesystem::remove(part_, ec);
  rep.records = summary_.records;
  rep.dropped = summary_.dropped_records;
  rep.warnings = summary_.warnings;
  report_ = rep;
  return rep;
}

namespace {

struct Live {
  std::uint64_t orig, size, base, born, died;
};

trace::Advice advice_of(const std::string& n) {
  using trace::Advice;
  if (n == "set_read_mostly") return Advice::SetReadMostly;
  if (n == "unset_read_mostly") return Advice::UnsetReadMostly;
  if (n == "set_preferred_location") return Advice::SetPreferredLocation;
  if (n == "unset_preferred_location") return Advice::UnsetPreferredLocation;
  if (n == "set_accessed_by") return Advice::SetAccessedBy;
  return Advice::UnsetAccessedBy;
}

/// The trace's processor for a CUDA device ordinal (CUPTI's deviceId). The format holds GPUs
/// 0 ... kMaxGpus-1; a larger id is reported rather than folded onto another GPU.
Processor gpu_of(std::int64_t device) {
  if (device < 0 || device >= static_cast<std::int64_t>(kMaxGpus))
    throw UserError("collector: CUDA device " + std::to_string(device) +
                    ": the trace format holds GPUs 0 ... " + std::to_string(kMaxGpus - 1));
  return gpu_processor(static_cast<unsigned>(device));
}

}  // namespace

void Collector::write_trace(FinishReport& rep) {
  // 1. Allocations in time order. Callback records name the API; MEMORY2 activity records add
  //    allocations made outside the hooked calls (cudaMalloc, static __managed__ variables).
  std::vector<meas::Record> allocs;
  for (const auto& c : calls_)
    if (c.kind == ApiCall::Alloc) allocs.push_back(c.record);
  for (const auto& a : allocs_) {
    const bool dup = std::any_of(allocs.begin(), allocs.end(), [&](const meas::Record& x) {
      return x.address == a.address && x.name.rfind("activity:", 0) != 0;
    });
    if (!dup && a.bytes > 0) allocs.push_back(a);
  }
  std::stable_sort(allocs.begin(), allocs.end(),
                   [](const auto& a, const auto& b) { return a.start < b.start; });
  std::vector<meas::Record> frees = frees_;
  for (const auto& c : calls_)
    if (c.kind == ApiCall::Free) frees.push_back(c.record);

  // A range freed and allocated again at the same address would overlap in the trace, where
  // every allocation lives for the whole run: later ones move to fresh, 2 MB aligned VA.
  std::vector<Live> live;
  trace::Metadata meta;
  std::uint64_t top = 0;
  for (const auto& a : allocs) top = std::max(top, a.address + a.bytes);
  top = (top + (std::uint64_t{2} << 20) - 1) & ~((std::uint64_t{2} << 20) - 1);
  nlohmann::json relocations = nlohmann::json::array();
  for (const auto& a : allocs) {
    if (a.bytes == 0 || a.address == 0) continue;
    std::uint64_t died = ~std::uint64_t{0};
    for (const auto& f : frees)
      if (f.address == a.address && f.start >= a.start) died = std::min(died, f.start);
    std::uint64_t base = a.address;
    const bool overlaps = std::any_of(live.begin(), live.end(), [&](const Live& l) {
      return l.base < base + a.bytes && base < l.base + l.size;
    });
    if (overlaps) {
      base = top;
      top += (a.bytes + (std::uint64_t{2} << 20) - 1) & ~((std::uint64_t{2} << 20) - 1);
      relocations.push_back({{"address", a.address}, {"bytes", a.bytes}, {"moved_to", base}});
      ++rep.relocated_allocations;
    }
    live.push_back({a.address, a.bytes, base, a.start, died});
    trace::Allocation al;
    al.id = static_cast<std::uint32_t>(meta.allocations.size());
    al.name = std::string(a.managed ? "managed" : "device");
    al.name += std::to_string(al.id);
    al.base = base;
    al.size = a.bytes;
    al.managed = a.managed;
    meta.allocations.push_back(al);
  }
  auto translate = [&](std::uint64_t addr, std::uint64_t t) {
    const Live* best = nullptr;
    for (const auto& l : live)
      if (addr >= l.orig && addr < l.orig + l.size && l.born <= t && (!best || l.born > best->born))
        best = &l;
    return best ? addr - best->orig + best->base : addr;
  };

  // 2. Kernels, deduplicated by shape; each kernel record is matched to the launch call with its
  //    correlation id (runtime or driver), which gives its place in program order.
  std::map<std::tuple<std::string, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t,
                      std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>,
           std::uint32_t>
      kid;
  std::map<std::uint32_t, const ApiCall*> launch_by_corr;
  for (const auto& c : calls_)
    if (c.kind == ApiCall::Launch) launch_by_corr[c.correlation] = &c;
  struct Ev {
    std::uint64_t t;
    std::uint64_t seq;
    trace::HostEvent e;
  };
  std::vector<Ev> events;
  std::uint64_t seq = 0;
  for (const auto& k : kernels_) {
    const auto key = std::make_tuple(k.name, k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y,
                                     k.block.z, k.regs, k.smem);
    auto it = kid.find(key);
    if (it == kid.end()) {
      trace::KernelInfo info;
      info.id = static_cast<std::uint32_t>(meta.kernels.size());
      info.name = k.name;
      info.grid = k.grid;
      info.block = k.block;
      info.regs_per_thread = k.regs;
      info.shared_mem_bytes = k.smem;
      meta.kernels.push_back(info);
      it = kid.emplace(key, info.id).first;
    }
    const auto call = launch_by_corr.find(k.correlation);
    std::uint64_t t = k.start;
    if (call != launch_by_corr.end()) {
      t = call->second->record.start;
    } else {
      ++rep.unmatched_kernels;  // e.g. launched from a CUDA graph: placed at its start time
    }
    trace::HostEvent e;
    e.type = trace::HostEventType::KernelLaunch;
    e.kernel_id = it->second;
    e.device = gpu_of(k.device);  // not stored with the launch: written as a SetDevice below
    events.push_back({t, seq++, e});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Ev& a, const Ev& b) { return a.t < b.t; });
  // Anchors a CPU write must precede: launches and user prefetches (both can migrate HtoD).
  std::vector<std::uint64_t> launch_times;
  for (const auto& e : events) launch_times.push_back(e.t);
  for (const auto& c : calls_)
    if (c.kind == ApiCall::Prefetch) launch_times.push_back(c.record.start);
  std::sort(launch_times.begin(), launch_times.end());

  for (const auto& c : calls_) {
    trace::HostEvent e;
    const auto& r = c.record;
    switch (c.kind) {
      case ApiCall::Prefetch:
        e.type = trace::HostEventType::MemPrefetch;
        e.va = translate(r.address, r.start);
        e.size = r.bytes;
        e.device = r.device < 0 ? Processor::Cpu : gpu_of(r.device);
        break;
      case ApiCall::Advise:
        e.type = trace::HostEventType::MemAdvise;
        e.va = translate(r.address, r.start);
        e.size = r.bytes;
        e.advice = advice_of(r.name);
        e.device = r.device < 0 ? Processor::Cpu : gpu_of(r.device);
        break;
      case ApiCall::Sync:
        e.type = trace::HostEventType::Synchronize;
        break;
      default:
        continue;
    }
    events.push_back({r.start, seq++, e});
  }

  // 3. CPU accesses are invisible to CUPTI, but their effect is not: a page migrated HtoD from
  //    the CPU was populated by the CPU before the launch that faulted it (without this the
  //    simulator would zero-fill it instead of copying). A CPU page fault is a CPU access.
  std::map<std::uint64_t, std::uint64_t> populated;  // page-aligned [begin, end) intervals
  auto covered = [&](std::uint64_t a, std::uint64_t b) {
    auto it = populated.upper_bound(a);
    if (it == populated.begin()) return false;
    --it;
    return it->first <= a && it->second >= b;
  };
  auto cover = [&](std::uint64_t a, std::uint64_t b) {
    auto it = populated.upper_bound(a);
    if (it != populated.begin()) --it;
    while (it != populated.end() && it->first <= b) {
      if (it->second >= a) {
        a = std::min(a, it->first);
        b = std::max(b, it->second);
        it = populated.erase(it);
      } else {
        ++it;
      }
    }
    populated[a] = b;
  };
  std::vector<meas::Record> ins = transfers_in_;
  std::stable_sort(ins.begin(), ins.end(),
                   [](const auto& a, const auto& b) { return a.start < b.start; });
  for (const auto& x : ins) {
    const std::uint64_t a = x.address & ~std::uint64_t{4095};
    const std::uint64_t b = (x.address + x.bytes + 4095) & ~std::uint64_t{4095};
    if (covered(a, b)) continue;
    cover(a, b);
    // Just before the latest launch / prefetch issued before the migration started.
    auto it = std::upper_bound(launch_times.begin(), launch_times.end(), x.start);
    const std::uint64_t t = it == launch_times.begin() ? x.start : *(it - 1);
    trace::HostEvent e;
    e.type = trace::HostEventType::CpuAccess;
    e.kind = AccessKind::Write;
    e.va = translate(a, x.start);
    e.size = b - a;
    events.push_back({t == 0 ? 0 : t - 1, seq++, e});
    ++rep.inferred_cpu_accesses;
  }
  for (const auto& f : cpu_faults_) {
    trace::HostEvent e;
    e.type = trace::HostEventType::CpuAccess;
    e.kind = AccessKind::Read;
    e.va = translate(f.address & ~std::uint64_t{4095}, f.start);
    e.size = 4096;
    events.push_back({f.start, seq++, e});
    ++rep.inferred_cpu_accesses;
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Ev& a, const Ev& b) { return a.t != b.t ? a.t < b.t : a.seq < b.seq; });

  meta.workload = opts_.app.empty() ? "captured" : opts_.app.substr(0, opts_.app.find(' '));
  meta.workload = std::filesystem::path(meta.workload).filename().string();
  meta.params = {{"command", opts_.app}};
  meta.captured_gpu = header_.gpu;
  meta.extra = {
      {"collector", header_.extra["collector"]},
      {"accesses", "none: CUPTI records no addresses; use the Sanitizer tracer or a generator"},
      {"inferred_cpu_accesses", rep.inferred_cpu_accesses},
      {"relocated_allocations", relocations}};
  if (!opts_.access_dir.empty())
    meta.extra["accesses"] = "Sanitizer tracer: one record per warp instruction and 4 KB page";
  trace::TraceWriter w(opts_.trace, meta);
  std::vector<AccessRec> acc;
  std::vector<std::size_t> order;
  Processor current = Processor::Gpu;  // CUDA's current device before any cudaSetDevice
  for (const auto& ev : events) {
    if (ev.e.type == trace::HostEventType::KernelLaunch) {
      if (ev.e.device != current) {
        // A launch on another GPU: the program switched devices (cudaSetDevice) before it.
        trace::HostEvent set;
        set.type = trace::HostEventType::SetDevice;
        set.device = current = ev.e.device;
        w.host_event(set);
        ++rep.host_events;
      }
      const auto& k = meta.kernels[ev.e.kernel_id];
      acc.clear();
      std::uint64_t dropped = 0;
      if (!opts_.access_dir.empty()) {
        // The tracer numbers launches in the order the process issued them, as here.
        if (read_access_file(access_file(opts_.access_dir, rep.launches), acc, dropped)) {
          rep.access_records += acc.size();
          rep.access_records_dropped += dropped;
        } else {
          ++rep.launches_without_accesses;
        }
      }
      // Group by threadblock, keeping each warp's program order (stable sort).
      order.resize(acc.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return acc[a].block < acc[b].block; });
      const std::uint32_t warps = k.warps_per_block();
      w.begin_launch(ev.e.kernel_id);
      std::size_t next = 0;
      for (std::uint64_t tb = 0; tb < k.threadblocks(); ++tb) {
        w.begin_block(warps);
        for (; next < order.size() && acc[order[next]].block <= tb; ++next) {
          const AccessRec& a = acc[order[next]];
          if (a.block != tb || a.warp >= warps || a.kind < 1 || a.kind > 3) continue;
          trace::AccessRecord r;
          r.va = translate(a.va, ev.t);
          r.bytes = std::max<std::uint32_t>(1, a.bytes);
          r.kind = static_cast<AccessKind>(a.kind);
          w.access(a.warp, r);
        }
        w.end_block();
      }
      ++rep.launches;
    } else {
      w.host_event(ev.e);
    }
    ++rep.host_events;
  }
  w.finish();
  rep.allocations = meta.allocations.size();
  if (rep.access_records_dropped)
    summary_.warnings.push_back(std::to_string(rep.access_records_dropped) +
                                " access records dropped by the Sanitizer tracer (device buffer "
                                "full): raise UVMTRACE_ACCESS_BUFFER_MB");
  if (!opts_.access_dir.empty() && rep.launches_without_accesses)
    summary_.warnings.push_back(std::to_string(rep.launches_without_accesses) +
                                " launch(es) have no access file: written without accesses");
}

}  // namespace uvmsim::collector
