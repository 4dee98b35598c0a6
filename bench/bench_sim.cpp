// Simulator hot paths: whole runs of generated traces (TLB-hit dominated and fault dominated),
// reported as simulated warp accesses per second of wall time, plus the event queue alone.
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <filesystem>
#include <sstream>

#include "core/config.h"
#include "core/event_queue.h"
#include "models/gpu.h"
#include "sim/cli/commands.h"
#include "sim/simulator.h"

namespace {

std::string trace_path(const std::string& name, const std::vector<std::string>& gen_args) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("uvmsim_bench_" + name + "_" + std::to_string(::getpid()) + ".uvt");
  if (!std::filesystem::exists(p)) {
    std::vector<std::string> args = {"uvmsim", "gen"};
    args.insert(args.end(), gen_args.begin(), gen_args.end());
    args.push_back("-o");
    args.push_back(p.string());
    std::ostringstream out, err;
    if (uvmsim::cli::run_cli(args, out, err) != 0) throw std::runtime_error(err.str());
  }
  return p.string();
}

void run_sim(benchmark::State& state, const std::string& trace, double oversub,
             const std::vector<std::string>& sets = {}) {
  std::uint64_t accesses = 0, entries = 0;
  for (auto _ : state) {
    uvmsim::RunOptions o;
    o.trace = trace;
    o.oversub_pct = oversub;
    uvmsim::SimConfig cfg = uvmsim::SimConfig::from_preset("titanv");
    for (const auto& s : sets) cfg.set_from_string(s);
    uvmsim::Simulator sim(cfg, o);
    const auto& stats = sim.run();
    accesses += stats.accesses;
    entries += stats.gpu_faults;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(accesses));
  state.counters["accesses/s"] =
      benchmark::Counter(static_cast<double>(accesses), benchmark::Counter::kIsRate);
  // The fault path's own rate: fault-buffer entries (replays' re-raised ones included) per second.
  state.counters["fault_entries/s"] =
      benchmark::Counter(static_cast<double>(entries), benchmark::Counter::kIsRate);
}

// The TLB-hit shortcut (Gpu::memo_hit) on for argument 1, off for 0: what it saves, measured
// where it matters. It changes no result (tests/test_translation_memo.cpp).
struct MemoSwitch {
  explicit MemoSwitch(const benchmark::State& state) {
    uvmsim::Gpu::set_translation_memo(state.range(0) != 0);
  }
  ~MemoSwitch() { uvmsim::Gpu::set_translation_memo(true); }
};

// Hot path without faults: STREAM triad over 96 MB, 4 iterations; after the first iteration
// every access is a TLB hit or a page walk to resident memory.
void BM_StreamTlbHits(benchmark::State& state) {
  const MemoSwitch memo(state);
  run_sim(state, trace_path("stream", {"stream", "--footprint", "96M", "--param", "iters=4"}), 0);
}
BENCHMARK(BM_StreamTlbHits)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// Tiled reuse, mostly TLB hits on a few pages per SM: gemm 4 MB at 50 % oversubscription, the
// gemm row of the README's table against libCacheSim.
void BM_GemmTlbHits(benchmark::State& state) {
  const MemoSwitch memo(state);
  run_sim(state, trace_path("gemm", {"gemm", "--footprint", "4M"}), 50);
}
BENCHMARK(BM_GemmTlbHits)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// Fault path: one page per thread, so every access faults at least once.
void BM_RegularFaults(benchmark::State& state) {
  run_sim(state, trace_path("regular", {"regular", "--footprint", "256M"}),
          static_cast<double>(state.range(0)));
}
BENCHMARK(BM_RegularFaults)->Arg(0)->Arg(50)->Unit(benchmark::kMillisecond);

void BM_RandomFaults(benchmark::State& state) {
  run_sim(state, trace_path("random", {"random", "--footprint", "256M"}),
          static_cast<double>(state.range(0)));
}
BENCHMARK(BM_RandomFaults)->Arg(0)->Arg(50)->Unit(benchmark::kMillisecond);

// The fault path end to end on irregular workloads at 50 % oversubscription (issue 16's bfs and
// mvt targets): fault batches, eviction, prefetch, replays and re-raised faults.
void BM_WorkloadFaults(benchmark::State& state, const char* workload, const char* footprint) {
  state.SetLabel(std::string(workload) + " " + footprint);
  run_sim(state, trace_path(workload, {workload, "--footprint", footprint}), 50);
}
BENCHMARK_CAPTURE(BM_WorkloadFaults, bfs, "bfs", "32M")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WorkloadFaults, mvt, "mvt", "64M")->Unit(benchmark::kMillisecond);

// Research policies on a cyclic workload at 50 % oversubscription: the driver's defaults, and
// ObservUVM's TM++ (tournament + fdp + rgp, sampled observability on), and the OPT oracle.
void BM_PolicyCyclic(benchmark::State& state) {
  static const char* kSets[][2] = {{"engine.eviction=driver", "engine.prefetch=tree"},
                                   {"engine.eviction=tournament", "engine.prefetch=fdp+rgp"},
                                   {"engine.eviction=opt", "engine.prefetch=tree"}};
  const auto& s = kSets[state.range(0)];
  state.SetLabel(std::string(s[0]) + " " + s[1]);
  run_sim(state,
          trace_path("blackscholes", {"blackscholes", "--footprint", "64M", "--param", "iters=4"}),
          50, {s[0], s[1]});
}
BENCHMARK(BM_PolicyCyclic)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// The event queue alone: a steady population of `n` warps each rescheduling itself.
void BM_EventQueue(benchmark::State& state) {
  const auto n = static_cast<std::uint32_t>(state.range(0));
  uvmsim::EventQueue q;
  std::uint64_t rng = 1;
  for (std::uint32_t i = 0; i < n; ++i) q.schedule(i * 100, uvmsim::EventType::WarpWake, i);
  for (auto _ : state) {
    const auto e = q.pop();
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    q.schedule(e.time + 200'000 + (rng >> 40) % 400'000, uvmsim::EventType::WarpWake, e.arg);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventQueue)->Arg(64)->Arg(5120)->Arg(65536);

}  // namespace
