// The benchmark workload library: for every workload a small instance generates and reads back
// with the expected allocations, kernel sequence and access counts (derived here from the
// kernels' loop bounds), its static hints agree with its own records, and it simulates at 0 % and
// 50 % oversubscription.
#include <gtest/gtest.h>

#include <functional>

#include "sim/config.h"
#include "sim/simulator.h"
#include "tests/workload_check.h"

namespace uvmsim::test {
namespace {

using Allocs = std::vector<std::pair<std::string, std::uint64_t>>;
using Launches = std::vector<std::pair<std::string, std::int32_t>>;

struct Case {
  std::string name;
  std::uint64_t footprint;
  gen::ParamMap params;
  std::function<void(const TraceStats&)> expect;
};

void expect_allocs(const TraceStats& s, const Allocs& want) {
  ASSERT_EQ(s.meta.allocations.size(), want.size()) << s.meta.workload;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(s.meta.allocations[i].name, want[i].first) << s.meta.workload;
    EXPECT_EQ(s.meta.allocations[i].size, want[i].second) << want[i].first;
    EXPECT_TRUE(s.meta.allocations[i].managed);
  }
}

const trace::KernelInfo& kernel(const TraceStats& s, const std::string& name) {
  for (const auto& k : s.meta.kernels) {
    if (k.name == name) return k;
  }
  ADD_FAILURE() << "no kernel " << name;
  static trace::KernelInfo none;
  return none;
}

void expect_kernel(const TraceStats& s, const std::string& name, trace::Dim3 grid,
                   trace::Dim3 block, std::uint32_t smem = 0) {
  const trace::KernelInfo& k = kernel(s, name);
  EXPECT_EQ(k.grid, grid) << name;
  EXPECT_EQ(k.block, block) << name;
  EXPECT_EQ(k.shared_mem_bytes, smem) << name;
}

Launches launches(const TraceStats& s) {
  Launches out;
  for (const auto& l : s.launches) out.emplace_back(s.meta.kernels.at(l.kernel).name, l.iteration);
  return out;
}

/// Host loop of `kernels` launched in order for iterations 0..iters-1.
Launches loop(const std::vector<std::string>& kernels, std::int32_t iters) {
  Launches out;
  for (std::int32_t i = 0; i < iters; ++i) {
    for (const auto& k : kernels) out.emplace_back(k, i);
  }
  return out;
}

std::uint64_t u(const nlohmann::json& j) { return j.get<std::uint64_t>(); }

// ---- the cases ---------------------------------------------------------------------------------

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"gemm", 3 * 64 * 64 * 4, {}, [](const TraceStats& s) {
                 const std::uint64_t n = 64;
                 expect_allocs(s, {{"A", n * n * 4}, {"B", n * n * 4}, {"C", n * n * 4}});
                 expect_kernel(s, "gemm_kernel", {2, 8, 1}, {32, 8, 1});
                 EXPECT_EQ(launches(s), (Launches{{"gemm_kernel", -1}}));
                 // per thread: read C, N x (read A, read B), write C
                 EXPECT_EQ(s.launches[0].read_bytes, 4 * (2 * n * n * n + n * n));
                 EXPECT_EQ(s.launches[0].write_bytes, 4 * n * n);
                 // every warp instruction stays within one page: one record each
                 EXPECT_EQ(s.launches[0].records, n * n / 32 * (2 * n + 2));
               }});
  c.push_back({"mm-tiled", 3 * 64 * 64 * 4, {{"tile", "16"}}, [](const TraceStats& s) {
                 const std::uint64_t n = 64, t = 16;
                 expect_allocs(s, {{"A", n * n * 4}, {"B", n * n * 4}, {"C", n * n * 4}});
                 expect_kernel(s, "matrixMul", {4, 4, 1}, {16, 16, 1}, 2 * t * t * 4);
                 EXPECT_EQ(launches(s), (Launches{{"matrixMul", -1}}));
                 // per thread and tile step one element of A and of B; one C element at the end
                 EXPECT_EQ(s.launches[0].read_bytes, 4 * 2 * n * n * (n / t));
                 EXPECT_EQ(s.launches[0].write_bytes, 4 * n * n);
               }});
  c.push_back({"blackscholes", 40960, {{"iters", "3"}}, [](const TraceStats& s) {
                 const std::uint64_t opt = 40960 / 20;
                 Allocs a;
                 for (const char* n : {"d_CallResult", "d_PutResult", "d_StockPrice",
                                       "d_OptionStrike", "d_OptionYears"}) {
                   a.emplace_back(n, opt * 4);
                 }
                 expect_allocs(s, a);
                 expect_kernel(s, "BlackScholesGPU", {opt / 2 / 128, 1, 1}, {128, 1, 1});
                 EXPECT_EQ(launches(s), loop({"BlackScholesGPU"}, 3));
                 for (const auto& l : s.launches) {
                   EXPECT_EQ(l.read_bytes, 3 * opt * 4);    // S, X, T of every option
                   EXPECT_EQ(l.write_bytes, 2 * opt * 4);   // call and put
                   EXPECT_EQ(l.records, opt / 2 / 32 * 5);  // 256 contiguous bytes per array
                 }
               }});
  const std::uint64_t mv = 256;  // matrix order of the matrix-vector cases
  auto mv_case = [&](const std::string& name, std::uint64_t vectors, const Allocs& allocs,
                     const Launches& seq, std::uint64_t reads_per_launch) {
    return Case{name, (mv * mv + vectors * mv) * 4, {}, [=](const TraceStats& s) {
                  expect_allocs(s, allocs);
                  EXPECT_EQ(launches(s), seq);
                  for (const auto& l : s.launches) {
                    expect_kernel(s, s.meta.kernels.at(l.kernel).name, {1, 1, 1}, {256, 1, 1});
                    EXPECT_EQ(l.read_bytes, reads_per_launch) << name;
                    EXPECT_EQ(l.write_bytes, mv * 4) << name;
                  }
                }};
  };
  const std::uint64_t m = mv * mv * 4, v = mv * 4;
  // Each thread: N iterations reading A and the vector (+ its output first if it accumulates).
  c.push_back(mv_case("mvt", 4, {{"a", m}, {"x1", v}, {"x2", v}, {"y_1", v}, {"y_2", v}},
                      {{"mvt_kernel1", -1}, {"mvt_kernel2", -1}}, 4 * (2 * mv * mv + mv)));
  c.push_back(mv_case("bicg", 4, {{"A", m}, {"r", v}, {"s", v}, {"p", v}, {"q", v}},
                      {{"bicg_kernel1", -1}, {"bicg_kernel2", -1}}, 4 * 2 * mv * mv));
  c.push_back(mv_case("atax", 3, {{"A", m}, {"x", v}, {"y", v}, {"tmp", v}},
                      {{"atax_kernel1", -1}, {"atax_kernel2", -1}}, 4 * 2 * mv * mv));
  Case gemv = mv_case("gemv", 2, {{"A", m}, {"x", v}, {"y", v}}, loop({"gemv_kernel"}, 2),
                      4 * (2 * mv * mv + mv));
  gemv.params = {{"iters", "2"}};
  c.push_back(gemv);
  c.push_back({"floyd-warshall", 2 * 64 * 64 * 4, {{"passes", "4"}}, [](const TraceStats& s) {
                 const std::uint64_t n = 64;
                 expect_allocs(s, {{"pathDistanceBuffer", n * n * 4}, {"pathBuffer", n * n * 4}});
                 expect_kernel(s, "floydWarshallPass", {4, 4, 1}, {16, 16, 1});
                 EXPECT_EQ(launches(s), loop({"floydWarshallPass"}, 4));
                 std::uint64_t writes = 0;
                 for (const auto& l : s.launches) {
                   EXPECT_EQ(l.read_bytes, 3 * n * n * 4);  // d[y][x], d[y][k], d[k][x]
                   writes += l.write_bytes;
                 }
                 EXPECT_GT(writes, 0u);      // random distances: some paths improve
                 EXPECT_EQ(writes % 8, 0u);  // dist and path written together
               }});
  c.push_back(
      {"gramschmidt", 3 * 512 * 512 * 4, {{"iters", "2"}}, [](const TraceStats& s) {
         const std::uint64_t n = 512;
         expect_allocs(s, {{"A", n * n * 4}, {"R", n * n * 4}, {"Q", n * n * 4}});
         expect_kernel(s, "gramschmidt_kernel1", {1, 1, 1}, {256, 1, 1});
         expect_kernel(s, "gramschmidt_kernel2", {2, 1, 1}, {256, 1, 1});
         expect_kernel(s, "gramschmidt_kernel3", {2, 1, 1}, {256, 1, 1});
         EXPECT_EQ(launches(s),
                   loop({"gramschmidt_kernel1", "gramschmidt_kernel2", "gramschmidt_kernel3"}, 2));
         for (std::uint64_t k = 0; k < 2; ++k) {
           const auto& k1 = s.launches[3 * k];
           const auto& k2 = s.launches[3 * k + 1];
           const auto& k3 = s.launches[3 * k + 2];
           EXPECT_EQ(k1.read_bytes, n * 4);  // column k of A by one thread
           EXPECT_EQ(k1.write_bytes, 4u);    // R[k][k]
           EXPECT_EQ(k2.read_bytes, 2 * n * 4);
           EXPECT_EQ(k2.write_bytes, n * 4);
           const std::uint64_t cols = n - 1 - k;  // threads j > k
           EXPECT_EQ(k3.read_bytes, cols * 4 * n * 4);
           EXPECT_EQ(k3.write_bytes, cols * (n + 1) * 4);
         }
       }});
  c.push_back(
      {"bfs", 80 << 10, {}, [](const TraceStats& s) {
         const std::uint64_t vtx = 1024;  // scale 10: 79 bytes per vertex
         EXPECT_EQ(s.meta.params["scale"], 10);
         const std::uint64_t arcs = s.meta.params["arcs"].get<std::uint64_t>();
         EXPECT_GT(arcs, 14000u);  // 2 x 8 x 1024 minus self-loops
         EXPECT_LE(arcs, 16384u);
         expect_allocs(s, {{"d_graph_nodes", vtx * 8},
                           {"d_graph_edges", arcs * 4},
                           {"d_graph_mask", vtx},
                           {"d_updating_graph_mask", vtx},
                           {"d_graph_visited", vtx},
                           {"d_cost", vtx * 4},
                           {"d_over", 1}});
         expect_kernel(s, "Kernel", {2, 1, 1}, {512, 1, 1});
         expect_kernel(s, "Kernel2", {2, 1, 1}, {512, 1, 1});
         const auto seq = launches(s);
         ASSERT_GE(seq.size(), 4u);
         EXPECT_EQ(seq, loop({"Kernel", "Kernel2"}, static_cast<std::int32_t>(seq.size() / 2)));
         // Every vertex reads its mask once per level; each arc out of a frontier vertex
         // is read once over the whole search.
         std::uint64_t edge_bytes = 0;
         const Addr edges = s.meta.allocations[1].base;
         for (const auto& l : s.launches) {
           for (const auto& [ref, rs] : l.refs) {
             if (rs.min_va >= edges && rs.min_va < edges + arcs * 4) edge_bytes += rs.bytes;
           }
         }
         EXPECT_LE(edge_bytes, arcs * 4);
         EXPECT_GT(edge_bytes, arcs * 4 / 2);  // the giant component
       }});
  c.push_back({"cfd", 132 * 192 * 8, {{"iters", "1"}}, [](const TraceStats& s) {
                 const std::uint64_t e = 192 * 8;
                 expect_allocs(s, {{"areas", e * 4},
                                   {"elements_surrounding_elements", e * 16},
                                   {"normals", e * 48},
                                   {"variables", e * 20},
                                   {"old_variables", e * 20},
                                   {"fluxes", e * 20},
                                   {"step_factors", e * 4}});
                 expect_kernel(s, "cuda_compute_flux", {8, 1, 1}, {192, 1, 1});
                 expect_kernel(s, "memcpy_dtod", {40, 1, 1}, {192, 1, 1});
                 EXPECT_EQ(launches(s), (Launches{{"cuda_initialize_variables", -1},
                                                  {"memcpy_dtod", 0},
                                                  {"cuda_compute_step_factor", 0},
                                                  {"cuda_compute_flux", 0},
                                                  {"cuda_time_step", 0},
                                                  {"cuda_compute_flux", 0},
                                                  {"cuda_time_step", 0},
                                                  {"cuda_compute_flux", 0},
                                                  {"cuda_time_step", 0}}));
                 EXPECT_EQ(s.launches[1].read_bytes, e * 20);   // copy
                 EXPECT_EQ(s.launches[2].read_bytes, e * 24);   // 5 variables + area
                 EXPECT_EQ(s.launches[4].read_bytes, e * 44);   // step, 5 old, 5 fluxes
                 EXPECT_EQ(s.launches[4].write_bytes, e * 20);  // 5 variables
                 // flux: own 5 variables, 4 neighbour ids, 12 normals, <= 4 x 5 neighbour vars
                 EXPECT_GE(s.launches[3].read_bytes, e * 4 * (5 + 4 + 12));
                 EXPECT_LE(s.launches[3].read_bytes, e * 4 * (5 + 4 + 12 + 20));
                 EXPECT_EQ(s.launches[3].write_bytes, e * 20);
               }});
  return c;
}

class Workloads : public ::testing::TestWithParam<std::string> {};

TEST_P(Workloads, GeneratesAsSpecifiedHintsMatchAndSimulates) {
  for (const Case& c : cases()) {
    if (c.name != GetParam()) continue;
    TempDir dir;
    const std::string path = gen_trace(dir, c.name, c.footprint, c.params);
    const TraceStats s = trace_stats(path);
    EXPECT_EQ(s.meta.workload, c.name);
    c.expect(s);
    expect_hints_match_trace(s);
    // Simulates without error, with and without oversubscription, every access accounted for.
    std::uint64_t accesses = 0;
    {
      trace::TraceReader r(path);
      for (const auto& l : r.launches()) accesses += l.accesses;
    }
    for (double over : {0.0, 50.0}) {
      RunOptions o;
      o.trace = path;
      o.oversub_pct = over;
      Simulator sim(SimConfig::from_preset("titanv"), o);
      sim.run();
      const auto j = sim.to_json();
      EXPECT_EQ(u(j["accesses"]), accesses) << c.name << " at " << over << " %";
      if (over > 0) {
        EXPECT_GT(u(j["evictions"]), 0u) << c.name;
      }
    }
    return;
  }
  FAIL() << "no case for " << GetParam();
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const Case& c : cases()) names.push_back(c.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(All, Workloads, ::testing::ValuesIn(case_names()), [](const auto& info) {
  std::string n = info.param;
  for (char& ch : n) {
    if (ch == '-') ch = '_';
  }
  return n;
});

TEST(WorkloadLibrary, EveryBenchmarkGeneratorHasACase) {
  const auto names = case_names();
  for (const gen::Generator* g : gen::generators()) {
    if (g->pattern == "micro" || g->name == "regular" || g->name == "random" ||
        g->name == "stream" || g->name == "vecadd") {
      continue;  // the core's micro-workloads are covered by test_generators.cpp
    }
    EXPECT_NE(std::find(names.begin(), names.end(), g->name), names.end()) << g->name;
    EXPECT_FALSE(g->source.empty()) << g->name;
  }
}

TEST(WorkloadLibrary, RefIdsAreUniqueAcrossTheTrace) {
  TempDir dir;
  const TraceStats s = trace_stats(gen_trace(dir, "cfd", 132 * 192 * 8, {{"iters", "1"}}));
  std::set<std::uint32_t> ids;
  std::size_t refs = 0;
  for (const auto& k : s.meta.hints->kernels) {
    for (const auto& r : k.refs) ids.insert(r.id), ++refs;
  }
  EXPECT_EQ(ids.size(), refs);
  EXPECT_GT(refs, 40u);
  // Ids are 0..refs-1 and every launch only uses its own kernel's refs (checked per case).
  EXPECT_EQ(*ids.rbegin(), refs - 1);
}

}  // namespace
}  // namespace uvmsim::test
