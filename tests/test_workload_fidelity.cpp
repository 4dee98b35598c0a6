// Workloads that resemble their applications (issue 13, the generator part): compute gaps from
// the per-instruction-class cost table, the host prefetches of UVM-Discard's apps, the
// partitioned hash join, Rodinia's graph shape, backprop above CUDA's grid.y limit, stream's host
// initialisation of all three arrays, and the footprint `gen` reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "tests/test_util.h"
#include "tests/workload_check.h"
#include "traces/generators/compute_cost.h"
#include "traces/generators/graph.h"

namespace uvmsim::test {
namespace {

using gen::Work;
using trace::HostEventType;

// ---- the cost table --------------------------------------------------------------------------

TEST(ComputeCost, SlotsAreIssueCyclesPerWarpInstructionAtComputeCapability61) {
  // 128 thread operations per clock per SM (4 sub-partitions x 32 lanes) over each class's
  // throughput; the classes without a table row have their documented costs.
  for (const gen::OpClassCost& c : gen::kOpClassCost) {
    if (c.per_clock_per_sm != 0) {
      EXPECT_EQ(c.slots * c.per_clock_per_sm, 128u) << c.name;
    }
  }
  EXPECT_EQ(gen::fp32(1).slots(), 1u);
  EXPECT_EQ(gen::fp64(1).slots(), 32u);
  EXPECT_EQ(gen::int_ops(1).slots(), 1u);
  EXPECT_EQ(gen::imad(1).slots(), 3u);
  EXPECT_EQ(gen::cmp(1).slots(), 2u);
  EXPECT_EQ(gen::branch(1).slots(), 1u);
  EXPECT_EQ(gen::sfu(1).slots(), 4u);
  EXPECT_EQ(gen::cvt(1).slots(), 4u);
  EXPECT_EQ(gen::cvt64(1).slots(), 32u);
  EXPECT_EQ(gen::shared(1).slots(), 4u);
  EXPECT_EQ(gen::shuffle(1).slots(), 4u);
}

TEST(ComputeCost, IdiomsAddUpFromTheirInstructions) {
  EXPECT_EQ(gen::kGlobalIndex.slots(), 5u);  // 2 S2R + IMAD
  EXPECT_EQ(gen::kGuard.slots(), 3u);        // ISETP + BRA
  EXPECT_EQ(gen::kAddress.slots(), 2u);      // LEA + LEA.HI.X
  EXPECT_EQ(gen::kLoop.slots(), 4u);         // IADD + ISETP + BRA
  EXPECT_EQ(gen::kDivide.slots(), 10u);      // MUFU.RCP + 4 FFMA + check
  EXPECT_EQ(gen::kSqrt.slots(), 9u);         // two MUFU + FFMA
  EXPECT_EQ(gen::kExp.slots(), 6u);
  EXPECT_EQ(gen::kIntDivide.slots(), 8u + 4u + 9u + 3u + 4u);
  // Work adds and scales per class, so a kernel's description reads as its source.
  const Work w = gen::kGlobalIndex + 3 * gen::fp32(2) + gen::kGuard;
  EXPECT_EQ(w[gen::OpClass::Fp32], 6u);
  EXPECT_EQ(w[gen::OpClass::IntMul], 1u);
  EXPECT_EQ(w.slots(), 5u + 6u + 3u);
  EXPECT_TRUE(gen::kNoWork.empty());
  EXPECT_EQ(gen::kNoWork.slots(), 0u);
  // Saturates instead of wrapping the 32-bit gap field.
  EXPECT_EQ((0xffffffffu * gen::fp64(1)).slots(), 0xffffffffu);
}

TEST(ComputeCost, SharedWavefrontsCountDistinctWordsPerBank) {
  using A = std::array<std::uint32_t, 32>;
  A consecutive{}, stride16{}, broadcast{}, stride32{};
  for (std::uint32_t l = 0; l < 32; ++l) {
    consecutive[l] = 100 + l;              // 32 banks, one word each
    stride16[l] = (l % 16) * 16 + l / 16;  // words 16 apart: 8 per bank in 4 banks (FW's C)
    broadcast[l] = 7;                      // one word: one pass
    stride32[l] = l * 32;                  // all in bank 0
  }
  EXPECT_EQ(gen::shared_wavefronts(consecutive), 1u);
  EXPECT_EQ(gen::shared_wavefronts(stride16), 8u);
  EXPECT_EQ(gen::shared_wavefronts(broadcast), 1u);
  EXPECT_EQ(gen::shared_wavefronts(stride32), 32u);
  // Repeats of a word share its pass; no active lane, no pass.
  EXPECT_EQ(gen::shared_wavefronts(std::array<std::uint32_t, 4>{0, 32, 0, 32}), 2u);
  EXPECT_EQ(gen::shared_wavefronts(std::array<std::uint32_t, 0>{}), 0u);
  EXPECT_EQ(gen::shared_conflicted(8).slots(), 32u);  // 8 passes of a 4-slot access
}

/// The gaps of the records of static instruction `ref` in launch 0 (first records only).
std::vector<std::uint32_t> gaps_of(const std::string& path, std::uint32_t ref) {
  std::vector<std::uint32_t> out;
  trace_stats(
      path, [&](std::uint32_t launch, std::uint64_t, std::uint32_t, const trace::AccessRecord& r) {
        if (launch == 0 && r.ref_id == ref && r.gap_cycles != 0) out.push_back(r.gap_cycles);
      });
  return out;
}

TEST(ComputeCost, GeneratorsTakeTheirGapsFromTheTable) {
  TempDir dir;
  // BlackScholes: two options priced (each: sqrtf as rsqrt + rcp, two IEEE divisions, __logf,
  // two cndGPU with __expf, __expf(-RT), 14 FP32 around them: 107 slots) and the two result
  // addresses: 218 slots before the call-price store (ref 3).
  const std::string bs = gen_trace(dir, "blackscholes", 40960, {{"iters", "1"}});
  const auto bs_gaps = gaps_of(bs, 3);
  ASSERT_FALSE(bs_gaps.empty());
  for (std::uint32_t g : bs_gaps) EXPECT_EQ(g, 218u);
  // Rodinia hotspot does its cell update in double (2.0 * temp): 10 conversions and 7 DP
  // operations at 32 slots each dominate a pyramid step (597 slots); with pyramid 2, the store
  // (ref 2) comes after two steps, one copy-back between them, and the prologue and store work.
  const std::string hs = gen_trace(dir, "hotspot", 3 * 64 * 64 * 4, {{"iters", "2"}});
  const Work cell = gen::cmp(8) + gen::branch(1) + gen::cvt64(10) + gen::fp64(7) + gen::fp32(3) +
                    gen::shared(7) + gen::kBarrier + gen::kLoop;
  EXPECT_EQ(cell.slots(), 16u + 1u + 320u + 224u + 3u + 28u + 1u + 4u);
  const Work store = gen::shared(2) + gen::kBarrier + gen::cmp(8) + gen::int_ops(4) + 2 * cell +
                     gen::branch(1) + gen::shared(2) + gen::kBarrier + gen::shared(1) +
                     gen::kGuard + gen::kAddress;
  const auto hs_gaps = gaps_of(hs, 2);
  ASSERT_FALSE(hs_gaps.empty());
  for (std::uint32_t g : hs_gaps) EXPECT_EQ(g, store.slots());
}

// ---- host prefetches of UVM-Discard's apps -----------------------------------------------------

/// Bytes of [base, base + size) covered by MemPrefetch events to `dest` (overlaps counted once).
std::uint64_t prefetched(const TraceStats& s, const trace::Allocation& a, Processor dest) {
  std::vector<std::pair<Addr, Addr>> iv;
  for (const auto& e : s.host) {
    if (e.type != HostEventType::MemPrefetch || e.device != dest) continue;
    const Addr lo = std::max(e.va, a.base), hi = std::min(e.va + e.size, a.base + a.size);
    if (lo < hi) iv.emplace_back(lo, hi);
  }
  std::sort(iv.begin(), iv.end());
  std::uint64_t covered = 0;
  Addr end = 0;
  for (const auto& [lo, hi] : iv) {
    if (hi <= end) continue;
    covered += hi - std::max(lo, end);
    end = hi;
  }
  return covered;
}

const trace::Allocation& alloc(const TraceStats& s, const std::string& name) {
  for (const auto& a : s.meta.allocations) {
    if (a.name == name) return a;
  }
  ADD_FAILURE() << "no allocation " << name;
  static trace::Allocation none;
  return none;
}

nlohmann::json run_stats(const TempDir& dir, const std::string& trace, const std::string& oversub) {
  const std::string stats = dir.file("stats.json");
  cli_ok({"run", "--gpu", "gtx1080ti", "--trace", trace, "--oversub", oversub, "--stats-out", stats,
          "--quiet"});
  return read_json(stats);
}

TEST(UvmDiscardApps, FirPrefetchesEveryWindowBeforeItsLaunchesAndTakesNoGpuFault) {
  TempDir dir;
  const std::string path =
      gen_trace(dir, "fir", 8 * 8 * 4096, {{"chunks", "8"}, {"taps", "16"}, {"window", "3"}});
  const TraceStats s = trace_stats(path);
  const std::uint64_t len = 4096;  // samples per chunk: 8 * 8 * 4096 / 8 / 8
  EXPECT_EQ(s.meta.params["samples_per_chunk"].get<std::uint64_t>(), len);
  // The input is populated on the host first, then every byte of input and output, the
  // coefficients and the history goes to the GPU by cudaMemPrefetchAsync.
  ASSERT_EQ(s.host[0].type, HostEventType::MemPrefetch);
  EXPECT_EQ(s.host[0].device, Processor::Cpu);
  EXPECT_EQ(s.host[0].va, alloc(s, "input").base);
  for (const char* name : {"input", "output", "coeff", "history"}) {
    EXPECT_EQ(prefetched(s, alloc(s, name), Processor::Gpu), alloc(s, name).size) << name;
  }
  // Windows of 3 chunks (3, 3, 2): each window's input and output range arrive right before the
  // window's first launch.
  std::vector<std::pair<std::int32_t, Addr>> window_starts;  // (next launch's chunk, input VA)
  for (std::size_t i = 0; i < s.host.size(); ++i) {
    const auto& e = s.host[i];
    if (e.type != HostEventType::MemPrefetch || e.device != Processor::Gpu) continue;
    if (e.va < alloc(s, "input").base || e.va >= alloc(s, "input").base + alloc(s, "input").size)
      continue;
    std::size_t j = i;
    while (s.host[j].type != HostEventType::KernelLaunch) ++j;
    window_starts.emplace_back(s.host[j].iteration, e.va);
    EXPECT_EQ(s.host[i + 1].type, HostEventType::MemPrefetch);  // the output's range
    EXPECT_EQ(s.host[i + 1].size, e.size);
  }
  const Addr in = alloc(s, "input").base;
  EXPECT_EQ(window_starts, (std::vector<std::pair<std::int32_t, Addr>>{
                               {0, in}, {3, in + 3 * len * 4}, {6, in + 6 * len * 4}}));
  // Simulated at 0 % oversubscription: no GPU fault, as the real fir.
  const auto j = run_stats(dir, path, "0");
  EXPECT_EQ(j["gpu_faults"].get<std::uint64_t>(), 0u);
  EXPECT_GT(j["htod_bytes_by_cause"]["user_prefetch"].get<std::uint64_t>(), 0u);
  // prefetch=off: no prefetch event, and the kernels fault their data in.
  const std::string off =
      gen_trace(dir, "fir", 8 * 8 * 4096, {{"chunks", "8"}, {"taps", "16"}, {"prefetch", "off"}}, 1,
                "off.uvt");
  const TraceStats so = trace_stats(off);
  EXPECT_EQ(
      std::count_if(so.host.begin(), so.host.end(),
                    [](const trace::HostEvent& e) { return e.type == HostEventType::MemPrefetch; }),
      0);
  EXPECT_GT(run_stats(dir, off, "0")["gpu_faults"].get<std::uint64_t>(), 0u);
}

TEST(UvmDiscardApps, RadixSortPrefetchesKeysAndValuesToTheGpuAndBack) {
  TempDir dir;
  const std::string path = gen_trace(dir, "radix-sort", 16 * 4096);
  const TraceStats s = trace_stats(path);
  const auto& keys = alloc(s, "d_keys0");
  const auto& vals = alloc(s, "d_values0");
  // Host writes, then both prefetched to the GPU before the first launch ...
  std::size_t first_launch = 0;
  while (s.host[first_launch].type != HostEventType::KernelLaunch) ++first_launch;
  ASSERT_EQ(first_launch, 4u);
  EXPECT_EQ(s.host[2].type, HostEventType::MemPrefetch);
  EXPECT_EQ(s.host[2].va, keys.base);
  EXPECT_EQ(s.host[2].size, keys.size);
  EXPECT_EQ(s.host[2].device, Processor::Gpu);
  EXPECT_EQ(s.host[3].va, vals.base);
  EXPECT_EQ(s.host[3].device, Processor::Gpu);
  // ... and back to the CPU after the last, where the host reads them.
  const std::size_t n = s.host.size();
  EXPECT_EQ(s.host[n - 4].type, HostEventType::MemPrefetch);
  EXPECT_EQ(s.host[n - 4].va, keys.base);
  EXPECT_EQ(s.host[n - 4].device, Processor::Cpu);
  EXPECT_EQ(s.host[n - 3].va, vals.base);
  EXPECT_EQ(s.host[n - 3].device, Processor::Cpu);
  EXPECT_EQ(s.host[n - 2].type, HostEventType::CpuAccess);
  EXPECT_EQ(s.host[n - 1].type, HostEventType::CpuAccess);
  // The prefetched inputs are never faulted in: every host-to-device byte of them is a user
  // prefetch, and the kernels only fault on the buffers the GPU writes first.
  const auto j = run_stats(dir, path, "0");
  EXPECT_EQ(j["htod_bytes_by_cause"]["user_prefetch"].get<std::uint64_t>(), keys.size + vals.size);
  EXPECT_EQ(j["htod_bytes"].get<std::uint64_t>(), keys.size + vals.size);
}

TEST(UvmDiscardApps, HashJoinIsPartitionedAndOnlyItsInputsGoToTheGpu) {
  TempDir dir;
  const std::uint64_t nr = 8192, ns = 4 * nr;
  const std::string path = gen_trace(dir, "hash-join", 3 << 19);  // 120 |R| + heads <= 1.5 MiB
  const TraceStats s = trace_stats(path);
  EXPECT_EQ(s.meta.params["build_tuples"].get<std::uint64_t>(), nr);
  EXPECT_EQ(s.meta.params["probe_tuples"].get<std::uint64_t>(), ns);
  EXPECT_EQ(s.meta.params["partitions"].get<std::uint64_t>(), 4u);  // 8192 / 2048 R tuples
  std::uint64_t inputs = 0, footprint = 0;
  for (const auto& a : s.meta.allocations) footprint += a.size;
  for (const char* name : {"R", "Pr", "S", "Ps"}) {
    inputs += alloc(s, name).size;
    EXPECT_EQ(prefetched(s, alloc(s, name), Processor::Gpu), alloc(s, name).size) << name;
  }
  EXPECT_EQ(inputs, (nr + ns) * 8);
  for (const char* name :
       {"R_temp", "Pr_temp", "S_temp", "Ps_temp", "R_final", "Pr_final", "S_final", "Ps_final"}) {
    EXPECT_EQ(prefetched(s, alloc(s, name), Processor::Gpu), 0u) << name;
  }
  // Partition passes then the join, as prepare_Relation_payload_triple and the join kernel.
  std::vector<std::string> seq;
  for (const auto& l : s.launches) seq.push_back(s.meta.kernels.at(l.kernel).name);
  EXPECT_EQ(seq, (std::vector<std::string>{
                     "init_metadata", "partition_pass_one", "partition_pass_two", "init_metadata",
                     "partition_pass_one", "partition_pass_two", "join_partitioned_aggregate"}));
  // Each pass reads its relation's two columns once and writes them once.
  for (std::size_t l : {1, 2, 4, 5}) {
    const std::uint64_t n = l < 3 ? nr : ns;
    EXPECT_EQ(s.launches[l].read_bytes, n * 8) << l;
    EXPECT_GE(s.launches[l].write_bytes, n * 8) << l;  // and the reservations
  }
  // The join reads every final tuple of both relations once.
  EXPECT_GE(s.launches[6].read_bytes, (nr + ns) * 8);
  // A third of the footprint goes host-to-device: the inputs, by prefetch; the partitions are
  // GPU-written.
  const auto j = run_stats(dir, path, "0");
  EXPECT_EQ(j["htod_bytes"].get<std::uint64_t>(), inputs);
  EXPECT_LT(static_cast<double>(inputs) / static_cast<double>(footprint), 0.34);
  EXPECT_GT(static_cast<double>(inputs) / static_cast<double>(footprint), 0.30);
}

// ---- Rodinia's graphs ---------------------------------------------------------------------------

TEST(RodiniaGraph, DegreesAreGraphgensUniformRangeWithoutHubs) {
  const std::uint64_t n = 1 << 16;
  const gen::Csr g = gen::rodinia_graph(n, 7);
  ASSERT_EQ(g.vertices, n);
  // Every vertex picked 2..4 neighbours, each pick stored both ways: arcs = 2 x picks.
  EXPECT_EQ(g.arcs() % 2, 0u);
  EXPECT_GE(g.arcs(), 2 * 2 * n);
  EXPECT_LE(g.arcs(), 2 * 4 * n);
  std::uint64_t min_deg = ~std::uint64_t{0}, max_deg = 0;
  for (std::uint64_t v = 0; v < n; ++v) {
    min_deg = std::min(min_deg, g.degree(v));
    max_deg = std::max(max_deg, g.degree(v));
  }
  EXPECT_GE(min_deg, gen::kRodiniaMinPicks);
  // Mean degree 6 (3 picks of its own, 3 by others on average) within a percent.
  const double mean = static_cast<double>(g.arcs()) / static_cast<double>(n);
  EXPECT_NEAR(mean, 6.0, 0.06);
  // No hubs: picks are uniform, so the largest degree is a Poisson tail (a few tens at most),
  // where the R-MAT graph of the same size has a vertex with hundreds of arcs.
  EXPECT_LE(max_deg, 24u);
  const gen::Csr r = gen::rmat_graph(16, 3, 7);
  std::uint64_t rmat_max = 0;
  for (std::uint64_t v = 0; v < r.vertices; ++v) rmat_max = std::max(rmat_max, r.degree(v));
  EXPECT_GT(rmat_max, 10 * max_deg);
  // Every arc has its reverse, and the same seed gives the same graph.
  std::uint64_t forward = 0, backward = 0;
  for (std::uint64_t v = 0; v < n; ++v) {
    for (std::uint64_t a = g.offsets[v]; a < g.offsets[v + 1]; ++a)
      (g.targets[a] >= v ? forward : backward) += 1;
  }
  EXPECT_GT(forward, 0u);
  EXPECT_GT(backward, 0u);
  const gen::Csr again = gen::rodinia_graph(n, 7);
  EXPECT_EQ(again.offsets, g.offsets);
  EXPECT_EQ(again.targets, g.targets);
}

TEST(RodiniaGraph, SizingFitsTheBudgetExactly) {
  const auto bytes = [](std::uint64_t v, std::uint64_t arcs) { return v * 15 + arcs * 4 + 1; };
  const std::uint64_t budget = 1 << 20;
  const std::uint64_t n = gen::rodinia_vertices(3, budget, bytes);
  const gen::Csr g = gen::rodinia_graph(n, 3), bigger = gen::rodinia_graph(n + 1, 3);
  EXPECT_LE(bytes(n, g.arcs()), budget);
  EXPECT_GT(bytes(n + 1, bigger.arcs()), budget);
  EXPECT_GT(bytes(n, g.arcs()), budget - 64);           // within a vertex of the budget
  EXPECT_EQ(gen::rodinia_vertices(3, 100, bytes), 0u);  // fewer than graphgen's 20 vertices
}

TEST(RodiniaGraph, BfsDefaultsToIt) {
  TempDir dir;
  const std::string path = gen_trace(dir, "bfs", 1 << 20);
  const TraceStats s = trace_stats(path);
  EXPECT_EQ(s.meta.params["graph"], "rodinia");
  EXPECT_EQ(s.meta.params["source"].get<std::uint64_t>(), 0u);  // Rodinia's bfs: source = 0
  const auto v = s.meta.params["vertices"].get<std::uint64_t>();
  const auto arcs = s.meta.params["arcs"].get<std::uint64_t>();
  EXPECT_EQ(v, gen::rodinia_vertices(1, 1 << 20, [](std::uint64_t n, std::uint64_t a) {
              return n * 15 + a * 4 + 1;
            }));
  EXPECT_EQ(alloc(s, "d_graph_nodes").size, v * 8);
  EXPECT_EQ(alloc(s, "d_graph_edges").size, arcs * 4);
  EXPECT_FALSE(s.meta.params.contains("scale"));
  // sssp keeps R-MAT by default and takes the Rodinia shape on request.
  const TraceStats ss = trace_stats(gen_trace(dir, "sssp", 1 << 20, {{"graph", "rodinia"}}));
  EXPECT_EQ(ss.meta.params["graph"], "rodinia");
  EXPECT_EQ(alloc(ss, "d_col_indices").size, ss.meta.params["arcs"].get<std::uint64_t>() * 4);
}

// ---- backprop above CUDA's grid.y limit, stream, gen's footprint --------------------------------

TEST(Backprop, TilesItsGridAbove65535RowsAndSimulatesAt256MB) {
  TempDir dir;
  const std::string path = gen_trace(dir, "backprop", 256ull << 20, {{"epochs", "1"}});
  const TraceStats s = trace_stats(path);
  const auto in = s.meta.params["inputs"].get<std::uint64_t>();
  const std::uint64_t rows = in / 16;
  ASSERT_GT(rows, 65535u);  // Rodinia's grid (1, rows) would not launch
  for (const char* k : {"bpnn_layerforward_CUDA", "bpnn_adjust_weights_cuda"}) {
    const auto it = std::find_if(s.meta.kernels.begin(), s.meta.kernels.end(),
                                 [&](const trace::KernelInfo& x) { return x.name == k; });
    ASSERT_NE(it, s.meta.kernels.end());
    EXPECT_EQ(it->grid, (trace::Dim3{static_cast<std::uint32_t>((rows + 65534) / 65535), 65535, 1}))
        << k;
    EXPECT_GE(it->threadblocks(), rows);
  }
  // Every row of 16 inputs is still processed exactly once (the spare blocks exit).
  EXPECT_EQ(s.launches[0].read_bytes, (rows * 16 + rows * 256) * 4);
  EXPECT_EQ(s.launches[0].write_bytes, (rows * 256 + rows * 16) * 4);
  EXPECT_EQ(s.launches[1].read_bytes, (4 * rows * 256 + 3 * 16) * 4);
  expect_hints_match_trace(s);
  std::uint64_t accesses = 0;
  {
    trace::TraceReader r(path);
    for (const auto& l : r.launches()) accesses += l.accesses;
  }
  const auto j = run_stats(dir, path, "0");
  EXPECT_EQ(j["accesses"].get<std::uint64_t>(), accesses);
}

TEST(GenCommand, PrintsTheFootprintItProduced) {
  TempDir dir;
  for (const auto& [name, param] : std::vector<std::pair<std::string, std::string>>{
           {"bfs", "graph=rmat"}, {"bfs", "graph=rodinia"}, {"backprop", "epochs=1"}}) {
    const std::string out = dir.file(name + ".uvt");
    const auto r = cli_ok({"gen", name, "--footprint", "4M", "--param", param, "-o", out});
    // "footprint: <N> bytes" (plain parsing: <regex> draws a GCC 12 -Wmaybe-uninitialized
    // false positive in the -O1 sanitizer build).
    const auto at = r.out.find("footprint: ");
    ASSERT_NE(at, std::string::npos) << r.out;
    std::size_t digits = 0;
    const std::uint64_t printed = std::stoull(r.out.substr(at + 11), &digits);
    ASSERT_EQ(r.out.compare(at + 11 + digits, 6, " bytes"), 0) << r.out;
    std::uint64_t managed = 0;
    trace::TraceReader reader(out);
    for (const auto& a : reader.metadata().allocations) managed += a.managed ? a.size : 0;
    EXPECT_EQ(printed, managed) << name << " " << param;
    EXPECT_NE(r.out.find("--footprint 4 MiB"), std::string::npos) << r.out;
    EXPECT_LE(managed, 4u << 20) << name << " " << param;
    // R-MAT graphs come in powers of two (here 2^15 vertices, 2.5 MiB); graphgen's fits.
    if (param == "graph=rmat") {  // 2^15 vertices (2^16 would not fit): 2.5 MiB of 4
      EXPECT_EQ(reader.metadata().params["vertices"].get<std::uint64_t>(), 32768u);
      EXPECT_LT(managed, (4u << 20) * 2 / 3);
    }
    if (param == "graph=rodinia") {
      EXPECT_GT(managed, (4u << 20) - 64);
    }
  }
}

}  // namespace
}  // namespace uvmsim::test
