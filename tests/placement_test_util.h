// Helpers for the placement tests: hand-written multi-allocation traces whose kernels walk chosen
// byte ranges page by page (one warp, each access waiting for the previous one, so faults and
// evictions happen in a known order), and a one-call simulation returning the stats JSON.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "sim/simulator.h"
#include "test_util.h"
#include "traces/trace.h"

namespace uvmsim::test {

constexpr Addr kPlaceBase = 0x7f0000000000;

/// A program over allocations placed at 2 MB-aligned bases with a 2 MB gap between them.
struct Program {
  trace::Metadata meta;
  std::unique_ptr<trace::TraceWriter> w;

  explicit Program(const std::vector<std::pair<std::string, std::uint64_t>>& allocs,
                   std::uint32_t kernels = 1) {
    meta.workload = "placement-test";
    Addr base = kPlaceBase;
    for (std::uint32_t i = 0; i < allocs.size(); ++i) {
      meta.allocations.push_back({i, allocs[i].first, base, allocs[i].second, true, false});
      base += (allocs[i].second + (4 << 20) - 1) / (2 << 20) * (2 << 20);
    }
    for (std::uint32_t k = 0; k < kernels; ++k) {
      trace::KernelInfo ki;
      ki.id = k;
      ki.name = "walk" + std::to_string(k);
      ki.grid = {1, 1, 1};
      ki.block = {32, 1, 1};
      meta.kernels.push_back(ki);
    }
  }
  Addr base(std::uint32_t alloc) const { return meta.allocations[alloc].base; }
  void open(const std::string& path) { w = std::make_unique<trace::TraceWriter>(path, meta); }
  /// The CPU writes [off, off + size) of `alloc` (it is then resident on the host).
  void cpu_write(std::uint32_t alloc, std::uint64_t off, std::uint64_t size) {
    trace::HostEvent e;
    e.type = trace::HostEventType::CpuAccess;
    e.va = base(alloc) + off;
    e.size = size;
    e.device = Processor::Cpu;
    e.kind = AccessKind::Write;
    w->host_event(e);
  }
  /// One launch of `kernel`: a single warp reads every page of each (alloc, offset, size) range
  /// in order, `repeat` times per page; each access waits for the previous one.
  void walk(std::uint32_t kernel,
            const std::vector<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>>& ranges,
            std::uint32_t repeat = 1, std::int32_t iteration = -1) {
    w->begin_launch(kernel, iteration);
    w->begin_block(1);
    for (const auto& [alloc, off, size] : ranges) {
      for (std::uint64_t o = off; o < off + size; o += 4096) {
        trace::AccessRecord r;
        r.va = base(alloc) + o;
        r.ref_id = alloc;
        r.bytes = 128;
        r.gap_cycles = 10;
        r.repeat = repeat;
        w->access(0, r);
      }
    }
    w->end_block();
    trace::HostEvent s;
    s.type = trace::HostEventType::Synchronize;
    w->host_event(s);
  }
  void finish() { w->finish(); }
};

/// One launch of `kernel` without a synchronisation after it (the host goes on): a single warp
/// touches every page of [off, off+size) of `alloc` in order with `kind`, 128 B each, each access
/// waiting for the previous one.
inline void launch(Program& p, std::uint32_t kernel, std::uint32_t alloc, std::uint64_t off,
                   std::uint64_t size, AccessKind kind = AccessKind::Read) {
  p.w->begin_launch(kernel, -1);
  p.w->begin_block(1);
  for (std::uint64_t o = off; o < off + size; o += 4096) {
    trace::AccessRecord r;
    r.va = p.base(alloc) + o;
    r.ref_id = alloc;
    r.bytes = 128;
    r.gap_cycles = 10;
    r.kind = kind;
    p.w->access(0, r);
  }
  p.w->end_block();
}

/// Host events for hand-written traces: cudaSetDevice(gpu), cudaDeviceSynchronize,
/// cudaMemPrefetchAsync and cudaMemAdvise of [va, va+size).
inline trace::HostEvent set_device(unsigned gpu) {
  trace::HostEvent e;
  e.type = trace::HostEventType::SetDevice;
  e.device = gpu_processor(gpu);
  return e;
}
inline trace::HostEvent synchronize() {
  trace::HostEvent e;
  e.type = trace::HostEventType::Synchronize;
  return e;
}
inline trace::HostEvent prefetch(Addr va, std::uint64_t size, Processor to) {
  trace::HostEvent e;
  e.type = trace::HostEventType::MemPrefetch;
  e.va = va;
  e.size = size;
  e.device = to;
  return e;
}
inline trace::HostEvent advise(Addr va, std::uint64_t size, trace::Advice a, Processor p) {
  trace::HostEvent e;
  e.type = trace::HostEventType::MemAdvise;
  e.va = va;
  e.size = size;
  e.advice = a;
  e.device = p;
  return e;
}

/// Simulates `trace` on GPU preset `preset` with the knob settings `sets` applied.
inline nlohmann::json run_preset(const std::string& preset, const std::string& trace,
                                 const std::vector<std::string>& sets = {}) {
  SimConfig cfg = SimConfig::from_preset(preset);
  for (const auto& s : sets) cfg.set_from_string(s);
  RunOptions o;
  o.trace = trace;
  Simulator sim(cfg, o);
  sim.run();
  return sim.to_json();
}

/// Simulates `trace` on the gtx1080ti preset with `sets` applied; `hbm` sizes usable memory.
inline nlohmann::json run_sim(const std::string& trace, const std::vector<std::string>& sets,
                              std::optional<std::uint64_t> hbm = std::nullopt,
                              std::optional<double> oversub = std::nullopt,
                              const std::string& events = "") {
  SimConfig cfg = SimConfig::from_preset("gtx1080ti");
  for (const auto& s : sets) cfg.set_from_string(s);
  RunOptions o;
  o.trace = trace;
  o.hbm_bytes = hbm;
  o.oversub_pct = oversub;
  o.events_out = events;
  Simulator sim(cfg, o);
  sim.run();
  return sim.to_json();
}

inline std::uint64_t num(const nlohmann::json& j) { return j.get<std::uint64_t>(); }

/// `uvmsim gen NAME --footprint FOOTPRINT --param P ...` into the test's directory.
inline std::string gen(const TempDir& d, const std::string& name, const std::string& footprint,
                       const std::vector<std::string>& params = {}) {
  const auto t = d.file(name + ".uvt");
  std::vector<std::string> args = {"gen", name, "--footprint", footprint, "-o", t};
  for (const auto& p : params) {
    args.push_back("--param");
    args.push_back(p);
  }
  cli_ok(args);
  return t;
}

}  // namespace uvmsim::test
