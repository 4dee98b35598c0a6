// LEU eviction costs: the per-access statistics update, one priority evaluation, and whole runs
// of a cyclic workload at 50 % oversubscription with LEU against the driver's policy and LRU
// (simulated warp accesses per second of wall time; LEU also changes what is simulated).
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <filesystem>
#include <sstream>

#include "core/config.h"
#include "policies/eviction/leu/leu_model.h"
#include "sim/cli/commands.h"
#include "sim/simulator.h"

namespace {

// Per access: a sweep over 4096 blocks by 4 references, every access sampled (the default).
void BM_LeuModelAccess(benchmark::State& state) {
  uvmsim::leu::ModelParams p;
  p.sample_rate = static_cast<double>(state.range(0)) / 100.0;
  uvmsim::leu::LeuModel m(4096, p);
  std::uint32_t i = 0;
  for (auto _ : state) {
    m.access(i & 4095, (i >> 12) & 3);
    ++i;
  }
  benchmark::DoNotOptimize(m.now());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LeuModelAccess)->Arg(100)->Arg(1);

// One Eq. 1-2 evaluation on a distribution with short and long intervals.
void BM_LeuPriority(benchmark::State& state) {
  uvmsim::leu::RiHistogram h;
  std::uint64_t v = 1;
  for (int k = 0; k < 100000; ++k) {
    v = v * 6364136223846793005ull + 1442695040888963407ull;
    h.add(k % 50 ? (v >> 54) + 1 : (v >> 40) + 1000, 65536);
  }
  std::uint64_t tesla = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(uvmsim::leu::priority(h, tesla));
    tesla = (tesla + 977) & 0xFFFFF;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LeuPriority);

std::string blackscholes_trace() {
  const auto p = std::filesystem::temp_directory_path() /
                 ("uvmsim_bench_leu_bs_" + std::to_string(::getpid()) + ".uvt");
  if (!std::filesystem::exists(p)) {
    std::vector<std::string> args = {"uvmsim",  "gen",     "blackscholes", "--footprint", "128M",
                                     "--param", "iters=4", "-o",           p.string()};
    std::ostringstream out, err;
    if (uvmsim::cli::run_cli(args, out, err) != 0) throw std::runtime_error(err.str());
  }
  return p.string();
}

void run_cyclic(benchmark::State& state, const char* eviction) {
  const std::string trace = blackscholes_trace();
  std::uint64_t accesses = 0, evictions = 0;
  for (auto _ : state) {
    uvmsim::SimConfig cfg = uvmsim::SimConfig::from_preset("titanv");
    cfg.set_from_string(std::string("engine.eviction=") + eviction);
    uvmsim::RunOptions o;
    o.trace = trace;
    o.oversub_pct = 50;
    uvmsim::Simulator sim(cfg, o);
    const auto& s = sim.run();
    accesses += s.accesses;
    evictions = s.evictions;
  }
  state.counters["accesses/s"] =
      benchmark::Counter(static_cast<double>(accesses), benchmark::Counter::kIsRate);
  state.counters["evictions"] = static_cast<double>(evictions);
}
void BM_CyclicDriver(benchmark::State& state) { run_cyclic(state, "driver"); }
void BM_CyclicLru(benchmark::State& state) { run_cyclic(state, "lru"); }
void BM_CyclicLeu(benchmark::State& state) { run_cyclic(state, "leu"); }
BENCHMARK(BM_CyclicDriver)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CyclicLru)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CyclicLeu)->Unit(benchmark::kMillisecond);

}  // namespace
