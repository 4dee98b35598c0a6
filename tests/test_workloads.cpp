// The benchmark workload library: for every workload a small instance generates and reads back
// with the expected allocations, kernel sequence and access counts (derived here from the
// kernels' loop bounds), its static hints agree with its own records, and it simulates at 0 % and
// 50 % oversubscription.
#include <gtest/gtest.h>

#include <functional>

#include "core/config.h"
#include "core/error.h"
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
  /// The test's name when one generator has several cases (a variant parameter); else `name`.
  std::string variant = {};
  std::string key() const { return variant.empty() ? name : name + "-" + variant; }
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
  c.push_back({"sgemm", 3 * 256 * 256 * 4, {}, [](const TraceStats& s) {
                 const std::uint64_t n = 256, tiles = 2 * 2, slices = n / 8;
                 expect_allocs(s, {{"A", n * n * 4}, {"B", n * n * 4}, {"C", n * n * 4}});
                 expect_kernel(s, "sgemm_128x128_nn", {2, 2, 1}, {256, 1, 1}, 2 * 2 * 128 * 8 * 4);
                 EXPECT_EQ(kernel(s, "sgemm_128x128_nn").regs_per_thread, 128u);
                 EXPECT_EQ(launches(s), (Launches{{"sgemm_128x128_nn", -1}}));
                 // per block and slice a 128 x 8 tile of A and an 8 x 128 tile of B (4 KB each)
                 EXPECT_EQ(s.launches[0].read_bytes, tiles * slices * 2 * 4096);
                 EXPECT_EQ(s.launches[0].write_bytes, 4 * n * n);
                 // per slice and warp: one 512 B column of A (one page) and 16 columns of B,
                 // 1 KB apart, so four pages; at the end 16 columns of C per warp, four per page,
                 // which the writer folds into one record per page (same page and compute gap),
                 // except the first store, whose gap also holds the last slice's work: five
                 EXPECT_EQ(s.launches[0].records, tiles * (slices * 8 * (1 + 4) + 8 * 5));
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
  // SUV's blocked variant: per 16-vertex block k, phase 1 (tile (k, k)), phase 2 (tiles (i, k)
  // and (k, i), i != k) and phase 3 (every tile but (k, k)), each tile loaded and stored whole.
  c.push_back(
      {"floyd-warshall",
       736 * 736 * 4,  // two 2 MB chunks, so that 50 % oversubscription evicts
       {{"passes", "2"}, {"variant", "blocked"}},
       [](const TraceStats& s) {
         const std::uint64_t n = 736, tiles = 46, tile = 16 * 16 * 4;
         expect_allocs(s, {{"graph", n * n * 4}});
         expect_kernel(s, "floyd_warshall_block_kernel_phase1", {1, 1, 1}, {16, 16, 1}, tile);
         expect_kernel(s, "floyd_warshall_block_kernel_phase2", {46, 1, 1}, {16, 16, 1}, 3 * tile);
         expect_kernel(s, "floyd_warshall_block_kernel_phase3", {46, 46, 1}, {16, 16, 1}, 3 * tile);
         EXPECT_EQ(launches(s),
                   loop({"floyd_warshall_block_kernel_phase1", "floyd_warshall_block_kernel_phase2",
                         "floyd_warshall_block_kernel_phase3"},
                        2));
         for (std::size_t l = 0; l < s.launches.size(); ++l) {
           const std::uint64_t reads[] = {tile, 4 * (tiles - 1) * tile,
                                          3 * (tiles * tiles - 1) * tile};
           const std::uint64_t writes[] = {tile, 2 * (tiles - 1) * tile,
                                           (tiles * tiles - 1) * tile};
           EXPECT_EQ(s.launches[l].read_bytes, reads[l % 3]) << l;
           EXPECT_EQ(s.launches[l].write_bytes, writes[l % 3]) << l;
         }
       },
       "blocked"});
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
      {"bfs", 80 << 10, {{"graph", "rmat"}}, [](const TraceStats& s) {
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
  c.push_back({"hellinger", 3 * 64 * 64 * 4, {}, [](const TraceStats& s) {
                 const std::uint64_t n = 64;
                 expect_allocs(s, {{"A", n * n * 4}, {"B", n * n * 4}, {"C", n * n * 4}});
                 expect_kernel(s, "hellinger", {4, 4, 1}, {16, 16, 1});
                 EXPECT_EQ(launches(s), (Launches{{"hellinger", -1}}));
                 EXPECT_EQ(s.launches[0].read_bytes, 4 * 2 * n * n * n);  // a[i][k], b[k][j]
                 EXPECT_EQ(s.launches[0].write_bytes, 4 * n * n);
               }});
  for (const bool two : {false, true}) {
    const std::uint64_t n = 64, t = 16, ops = two ? 4 : 2;
    c.push_back({two ? "syr2k" : "syrk",
                 (two ? 3 : 2) * n * n * 4,
                 {{"tile", "16"}},
                 [=](const TraceStats& s) {
                   Allocs a = {{"A", n * n * 4}};
                   if (two) a.emplace_back("B", n * n * 4);
                   a.emplace_back("C", n * n * 4);
                   expect_allocs(s, a);
                   const std::string k = two ? "syr2k_kernel" : "syrk_kernel";
                   expect_kernel(s, k, {4, 4, 1}, {16, 16, 1}, ops * t * t * 4);
                   EXPECT_EQ(launches(s), (Launches{{k, -1}}));
                   // Lower-triangle blocks only: 4 * 5 / 2 = 10 of 16. Per thread and tile step
                   // one element of each operand; C read and written once.
                   const std::uint64_t threads = 10 * t * t;
                   EXPECT_EQ(s.launches[0].read_bytes, 4 * (ops * threads * (n / t) + threads));
                   EXPECT_EQ(s.launches[0].write_bytes, 4 * threads);
                 }});
  }
  c.push_back({"lu", 1024 * 1024 * 4, {{"iters", "2"}}, [](const TraceStats& s) {
                 const std::uint64_t n = 1024;  // 4 MB: at least two 2 MB blocks at 50 %
                 expect_allocs(s, {{"A", n * n * 4}});
                 expect_kernel(s, "lu_kernel1", {4, 1, 1}, {256, 1, 1});
                 expect_kernel(s, "lu_kernel2", {32, 128, 1}, {32, 8, 1});
                 EXPECT_EQ(launches(s), loop({"lu_kernel1", "lu_kernel2"}, 2));
                 for (std::uint64_t k = 0; k < 2; ++k) {
                   const std::uint64_t r = n - 1 - k;  // columns / rows beyond the pivot
                   EXPECT_EQ(s.launches[2 * k].read_bytes, 2 * r * 4);
                   EXPECT_EQ(s.launches[2 * k].write_bytes, r * 4);
                   EXPECT_EQ(s.launches[2 * k + 1].read_bytes, 3 * r * r * 4);
                   EXPECT_EQ(s.launches[2 * k + 1].write_bytes, r * r * 4);
                 }
               }});
  c.push_back(
      {"doitgen", (2 * 32 * 32 * 32 + 32 * 32) * 4, {{"iters", "2"}}, [](const TraceStats& s) {
         const std::uint64_t n = 32;
         expect_allocs(s, {{"A", n * n * n * 4}, {"C4", n * n * 4}, {"sum", n * n * n * 4}});
         expect_kernel(s, "doitgen_kernel1", {1, 4, 1}, {32, 8, 1});
         EXPECT_EQ(launches(s), loop({"doitgen_kernel1", "doitgen_kernel2"}, 2));
         for (std::uint64_t r = 0; r < 2; ++r) {
           EXPECT_EQ(s.launches[2 * r].read_bytes, 4 * 2 * n * n * n);  // A[r][q][s], C4[s][p]
           EXPECT_EQ(s.launches[2 * r].write_bytes, 4 * n * n);
           EXPECT_EQ(s.launches[2 * r + 1].read_bytes, 4 * n * n);
           EXPECT_EQ(s.launches[2 * r + 1].write_bytes, 4 * n * n);
         }
       }});
  c.push_back({"2dconv", 2 * 64 * 64 * 4, {{"iters", "2"}}, [](const TraceStats& s) {
                 const std::uint64_t n = 64, inner = (n - 2) * (n - 2);
                 expect_allocs(s, {{"A", n * n * 4}, {"B", n * n * 4}});
                 expect_kernel(s, "Convolution2D_kernel", {2, 8, 1}, {32, 8, 1});
                 EXPECT_EQ(launches(s), loop({"Convolution2D_kernel"}, 2));
                 for (const auto& l : s.launches) {
                   EXPECT_EQ(l.read_bytes, 9 * inner * 4);
                   EXPECT_EQ(l.write_bytes, inner * 4);
                 }
               }});
  c.push_back(
      {"fdtd-2d", 3 * 64 * 64 * 4 + 8, {{"tmax", "2"}}, [](const TraceStats& s) {
         const std::uint64_t n = 64;
         expect_allocs(s, {{"_fict_", 8}, {"ex", n * n * 4}, {"ey", n * n * 4}, {"hz", n * n * 4}});
         EXPECT_EQ(launches(s),
                   loop({"fdtd_step1_kernel", "fdtd_step2_kernel", "fdtd_step3_kernel"}, 2));
         for (std::uint64_t t = 0; t < 2; ++t) {
           EXPECT_EQ(s.launches[3 * t].read_bytes, (n + 3 * (n - 1) * n) * 4);
           EXPECT_EQ(s.launches[3 * t].write_bytes, n * n * 4);
           EXPECT_EQ(s.launches[3 * t + 1].read_bytes, 3 * n * (n - 1) * 4);
           EXPECT_EQ(s.launches[3 * t + 1].write_bytes, n * (n - 1) * 4);
           EXPECT_EQ(s.launches[3 * t + 2].read_bytes, 5 * (n - 1) * (n - 1) * 4);
           EXPECT_EQ(s.launches[3 * t + 2].write_bytes, (n - 1) * (n - 1) * 4);
         }
       }});
  c.push_back(
      {"hotspot", 3 * 64 * 64 * 4, {{"iters", "4"}, {"pyramid", "2"}}, [](const TraceStats& s) {
         const std::uint64_t n = 64, small = 16 - 2 * 2, blocks = (n + small - 1) / small;
         expect_allocs(
             s,
             {{"MatrixPower", n * n * 4}, {"MatrixTemp0", n * n * 4}, {"MatrixTemp1", n * n * 4}});
         expect_kernel(s, "calculate_temp", {6, 6, 1}, {16, 16, 1}, 3 * 256 * 4);
         EXPECT_EQ(launches(s), loop({"calculate_temp"}, 2));
         EXPECT_NE(s.launches[0].kernel, s.launches[1].kernel);  // swapped buffers
         // Threads whose halo'd index small*b - 2 + t falls inside the grid, per axis.
         std::uint64_t cov = 0;
         for (std::uint64_t b = 0; b < blocks; ++b) {
           for (std::uint64_t t = 0; t < 16; ++t)
             cov += small * b + t >= 2 && small * b + t - 2 < n;
         }
         for (const auto& l : s.launches) {
           EXPECT_EQ(l.read_bytes, 2 * cov * cov * 4);  // temperature and power tile
           EXPECT_EQ(l.write_bytes, n * n * 4);         // every cell computed once
         }
       }});
  c.push_back({"srad", 6 * 64 * 64 * 4, {{"iters", "2"}}, [](const TraceStats& s) {
                 const std::uint64_t n = 64;
                 Allocs a;
                 for (const char* name : {"J_cuda", "C_cuda", "E_C", "W_C", "N_C", "S_C"}) {
                   a.emplace_back(name, n * n * 4);
                 }
                 expect_allocs(s, a);
                 expect_kernel(s, "srad_cuda_1", {4, 4, 1}, {16, 16, 1}, 5 * 256 * 4);
                 EXPECT_EQ(launches(s), loop({"srad_cuda_1", "srad_cuda_2"}, 2));
                 for (std::uint64_t it = 0; it < 2; ++it) {
                   EXPECT_EQ(s.launches[2 * it].read_bytes, 5 * n * n * 4);   // J and 4 neighbours
                   EXPECT_EQ(s.launches[2 * it].write_bytes, 5 * n * n * 4);  // E, W, N, S, C
                   EXPECT_EQ(s.launches[2 * it + 1].read_bytes, 8 * n * n * 4);
                   EXPECT_EQ(s.launches[2 * it + 1].write_bytes, n * n * 4);
                 }
                 std::size_t roi_reads = 0;
                 for (const auto& e : s.host) {
                   roi_reads +=
                       e.type == trace::HostEventType::CpuAccess && e.kind == AccessKind::Read;
                 }
                 EXPECT_EQ(roi_reads, 2 * n);  // the host reads the ROI's rows every iteration
               }});
  c.push_back(
      {"pathfinder", 4 * 10 * 1024, {{"launches", "4"}, {"pyramid", "2"}}, [](const TraceStats& s) {
         const std::uint64_t cols = 1024, rows = 9, small = 252, blocks = 5;
         expect_allocs(s, {{"gpuWall", (rows - 1) * cols * 4},
                           {"gpuResult0", cols * 4},
                           {"gpuResult1", cols * 4}});
         expect_kernel(s, "dynproc_kernel", {5, 1, 1}, {256, 1, 1}, 2 * 256 * 4);
         EXPECT_EQ(launches(s), loop({"dynproc_kernel"}, 4));
         auto count = [&](std::uint64_t lo, std::uint64_t hi) {
           std::uint64_t c = 0;
           for (std::uint64_t b = 0; b < blocks; ++b) {
             for (std::uint64_t t = lo; t <= hi; ++t)
               c += small * b + t >= 2 && small * b + t - 2 < cols;
           }
           return c;
         };
         const std::uint64_t reads = count(0, 255) + count(1, 254) + count(2, 253);
         for (const auto& l : s.launches) {
           EXPECT_EQ(l.read_bytes, reads * 4);
           EXPECT_EQ(l.write_bytes, cols * 4);
         }
       }});
  c.push_back(
      {"backprop", 147664, {{"epochs", "1"}}, [](const TraceStats& s) {
         const std::uint64_t in = 1024, b = in / 16, w = 17;
         expect_allocs(s, {{"input_cuda", (in + 1) * 4},
                           {"input_hidden_cuda", (in + 1) * w * 4},
                           {"hidden_partial_sum", b * 16 * 4},
                           {"hidden_delta_cuda", w * 4},
                           {"input_prev_weights_cuda", (in + 1) * w * 4}});
         expect_kernel(s, "bpnn_layerforward_CUDA", {1, 64, 1}, {16, 16, 1}, (16 + 256) * 4);
         EXPECT_EQ(launches(s),
                   (Launches{{"bpnn_layerforward_CUDA", 0}, {"bpnn_adjust_weights_cuda", 0}}));
         EXPECT_EQ(s.launches[0].read_bytes, (b * 16 + b * 256) * 4);   // inputs, weights
         EXPECT_EQ(s.launches[0].write_bytes, (b * 256 + b * 16) * 4);  // weights, sums
         EXPECT_EQ(s.launches[1].read_bytes, (4 * b * 256 + 3 * 16) * 4);
         EXPECT_EQ(s.launches[1].write_bytes, (2 * b * 256 + 2 * 16) * 4);
       }});
  c.push_back(
      {"nw", 2 * 65 * 65 * 4, {}, [](const TraceStats& s) {
         const std::uint64_t cols = 65;
         expect_allocs(s, {{"referrence_cuda", cols * cols * 4}, {"matrix_cuda", cols * cols * 4}});
         const Launches seq = {{"needle_cuda_shared_1", 0}, {"needle_cuda_shared_1", 1},
                               {"needle_cuda_shared_1", 2}, {"needle_cuda_shared_1", 3},
                               {"needle_cuda_shared_2", 0}, {"needle_cuda_shared_2", 1},
                               {"needle_cuda_shared_2", 2}};
         EXPECT_EQ(launches(s), seq);
         const std::uint32_t grids[] = {1, 2, 3, 4, 3, 2, 1};
         for (std::size_t i = 0; i < 7; ++i) {
           const auto& k = s.meta.kernels.at(s.launches[i].kernel);
           EXPECT_EQ(k.grid, (trace::Dim3{grids[i], 1, 1}));
           EXPECT_EQ(k.block, (trace::Dim3{16, 1, 1}));
           // per tile: corner, 16x16 reference, west column, north row; 16x16 written
           EXPECT_EQ(s.launches[i].read_bytes, grids[i] * (1 + 256 + 16 + 16) * 4);
           EXPECT_EQ(s.launches[i].write_bytes, grids[i] * 256 * 4);
         }
       }});
  c.push_back({"kmeans",
               512 * 36 + 48,
               {{"features", "4"}, {"clusters", "3"}, {"iters", "2"}},
               [](const TraceStats& s) {
                 const std::uint64_t np = 512, f = 4, k = 3;
                 expect_allocs(s, {{"feature_d", np * f * 4},
                                   {"feature_flipped_d", np * f * 4},
                                   {"membership_d", np * 4},
                                   {"clusters_d", k * f * 4}});
                 expect_kernel(s, "kmeansPoint", {2, 1, 1}, {256, 1, 1});
                 EXPECT_EQ(
                     launches(s),
                     (Launches{{"invert_mapping", -1}, {"kmeansPoint", 0}, {"kmeansPoint", 1}}));
                 EXPECT_EQ(s.launches[0].read_bytes, np * f * 4);
                 EXPECT_EQ(s.launches[0].write_bytes, np * f * 4);
                 for (int i = 1; i <= 2; ++i) {
                   EXPECT_EQ(s.launches[i].read_bytes, 2 * np * f * k * 4);  // feature, centre
                   EXPECT_EQ(s.launches[i].write_bytes, np * 4);
                 }
               }});
  c.push_back({"nn", 12 * 1000, {{"queries", "2"}}, [](const TraceStats& s) {
                 const std::uint64_t n = 1000;
                 expect_allocs(s, {{"d_locations", n * 8}, {"d_distances", n * 4}});
                 expect_kernel(s, "euclid", {4, 1, 1}, {256, 1, 1});
                 EXPECT_EQ(launches(s), loop({"euclid"}, 2));
                 for (const auto& l : s.launches) {
                   EXPECT_EQ(l.read_bytes, n * 8);
                   EXPECT_EQ(l.write_bytes, n * 4);
                 }
               }});
  c.push_back({"ra", 70000, {{"threads", "256"}}, [](const TraceStats& s) {
                 // the largest power-of-two table with the thread starts in 70000 bytes
                 const std::uint64_t size = 8192, threads = 256, per = size / threads;
                 expect_allocs(s, {{"Table", size * 8}, {"ran", threads * 8}});
                 expect_kernel(s, "RandomAccessUpdate", {1, 1, 1}, {256, 1, 1});
                 EXPECT_EQ(launches(s), (Launches{{"RandomAccessUpdate", -1}}));
                 EXPECT_EQ(s.launches[0].read_bytes, (threads + threads * per) * 8);
                 EXPECT_EQ(s.launches[0].write_bytes, threads * per * 8);
               }});
  c.push_back({"btree", 15 * 4096, {{"queries", "64"}}, [](const TraceStats& s) {
                 const std::uint64_t q = 64, records = 4096, node = 4084;
                 const auto h = s.meta.params["height"].get<std::uint64_t>();
                 const auto nodes = s.meta.params["nodes"].get<std::uint64_t>();
                 EXPECT_EQ(h, 2u);  // 8..16 leaves of 254..507 records under one root
                 EXPECT_GE(nodes, 1 + records / 507);
                 EXPECT_LE(nodes, 1 + (records + 253) / 254);
                 expect_allocs(s, {{"knodesD", nodes * node},
                                   {"recordsD", records * 4},
                                   {"currKnodeD", q * 8},
                                   {"offsetD", q * 8},
                                   {"keysD", q * 4},
                                   {"ansD", q * 4}});
                 expect_kernel(s, "findK", {64, 1, 1}, {508, 1, 1});
                 // Per level every thread reads currKnode, the key and two node keys; the match
                 // reads offset and indices, thread 0 offset. At the leaf: currKnode, key, node
                 // key, and the hit reads indices and the record.
                 const std::uint64_t level = 508 * (8 + 4 + 4 + 4) + 8 + 4 + 8;
                 EXPECT_EQ(s.launches[0].read_bytes, q * (h * level + 508 * 16 + 8));
                 EXPECT_EQ(s.launches[0].write_bytes, q * ((h - 1) * 8 + h * 8 + 4));
               }});
  c.push_back({"xsbench", 22304 * 16, {{"lookups", "256"}}, [](const TraceStats& s) {
                 const std::uint64_t g = 16, u = 68 * g, l = 256;
                 expect_allocs(s, {{"num_nucs", 48},
                                   {"concs", 12 * 34 * 8},
                                   {"mats", 12 * 34 * 4},
                                   {"unionized_energy_array", u * 8},
                                   {"index_grid", u * 68 * 4},
                                   {"nuclide_grid", u * 48},
                                   {"verification", l * 8}});
                 expect_kernel(s, "xs_lookup_kernel_baseline", {1, 1, 1}, {256, 1, 1});
                 EXPECT_EQ(s.launches[0].write_bytes, l * 8);
                 // num_nucs; 10 or 11 binary-search probes; per nuclide (4 .. 34 of them) mats,
                 // concs, index grid and two nuclide grid points.
                 const std::uint64_t per_nuc = 4 + 8 + 4 + 2 * 48;
                 EXPECT_GE(s.launches[0].read_bytes, l * (4 + 10 * 8 + 4 * per_nuc));
                 EXPECT_LE(s.launches[0].read_bytes, l * (4 + 11 * 8 + 34 * per_nuc));
               }});
  c.push_back({"spmm", 80000, {{"cols", "32"}, {"edge_factor", "2"}}, [](const TraceStats& s) {
                 const std::uint64_t k = 256, n = 32;
                 const auto nnz = s.meta.params["nnz"].get<std::uint64_t>();
                 EXPECT_LE(nnz, 2 * 2 * k);
                 EXPECT_GT(nnz, 2 * 2 * k * 9 / 10);
                 expect_allocs(s, {{"csrRowPtrA", (k + 1) * 4},
                                   {"csrColIndA", nnz * 4},
                                   {"csrValA", nnz * 4},
                                   {"B", k * n * 4},
                                   {"C", k * n * 4}});
                 expect_kernel(s, "csrmm_kernel", {32, 1, 1}, {32, 8, 1});
                 // per element of C: two row pointers, then per non-zero of its row col, val, B
                 EXPECT_EQ(s.launches[0].read_bytes, 4 * (2 * k * n + 3 * nnz * n));
                 EXPECT_EQ(s.launches[0].write_bytes, 4 * k * n);
               }});
  c.push_back({"sssp", 80000, {{"edge_factor", "4"}}, [](const TraceStats& s) {
                 const std::uint64_t v = 1024;
                 const auto arcs = s.meta.params["arcs"].get<std::uint64_t>();
                 expect_allocs(s, {{"d_row_offsets", (v + 1) * 4},
                                   {"d_col_indices", arcs * 4},
                                   {"d_weights", arcs * 4},
                                   {"d_dist", v * 4},
                                   {"d_mask", v},
                                   {"d_updated", v},
                                   {"d_changed", 4}});
                 const auto seq = launches(s);
                 ASSERT_GE(seq.size(), 6u);  // several rounds
                 EXPECT_EQ(seq, loop({"sssp_relax", "sssp_update"},
                                     static_cast<std::int32_t>(seq.size() / 2)));
                 for (std::size_t i = 1; i < s.launches.size(); i += 2) {
                   EXPECT_EQ(s.launches[i].read_bytes, v);   // updated[tid]
                   EXPECT_GE(s.launches[i].write_bytes, v);  // mask[tid] = updated[tid], ...
                 }
                 // The last round relaxes the last frontier and finds no improvement.
                 EXPECT_EQ(s.launches[s.launches.size() - 1].write_bytes, v);
               }});
  c.push_back({"minivite", 90000, {{"iters", "2"}, {"edge_factor", "4"}}, [](const TraceStats& s) {
                 const std::uint64_t v = 512;
                 const auto arcs = s.meta.params["arcs"].get<std::uint64_t>();
                 expect_allocs(s, {{"edge_indices", (v + 1) * 8},
                                   {"edge_list", arcs * 16},
                                   {"vertex_degree", v * 8},
                                   {"curr_comm", v * 8},
                                   {"target_comm", v * 8},
                                   {"comm_degree", v * 8},
                                   {"modularity_partial", 2 * 8}});
                 EXPECT_EQ(
                     launches(s),
                     loop({"louvain_best_community", "louvain_update", "louvain_modularity"}, 2));
                 for (int it = 0; it < 2; ++it) {
                   // own community, two offsets; per arc tail, weight, its community, that degree
                   EXPECT_EQ(s.launches[3 * it].read_bytes, 8 * (3 * v + 4 * arcs));
                   EXPECT_EQ(s.launches[3 * it].write_bytes, 8 * v);
                   EXPECT_EQ(s.launches[3 * it + 2].read_bytes, 8 * v);
                   EXPECT_EQ(s.launches[3 * it + 2].write_bytes, 8 * 2);
                 }
               }});
  c.push_back({"fir", 8 * 2 * 512, {{"chunks", "2"}, {"taps", "4"}}, [](const TraceStats& s) {
                 const std::uint64_t len = 512, taps = 4;
                 expect_allocs(s, {{"input", 2 * len * 4},
                                   {"output", 2 * len * 4},
                                   {"coeff", taps * 4},
                                   {"history", taps * 4}});
                 expect_kernel(s, "fir_cuda", {2, 1, 1}, {256, 1, 1});
                 EXPECT_EQ(launches(s), loop({"fir_cuda", "fir_save_history"}, 2));
                 for (int c = 0; c < 2; ++c) {
                   // per output sample and tap: a coefficient and an input (or history) sample
                   EXPECT_EQ(s.launches[2 * c].read_bytes, 2 * len * taps * 4);
                   EXPECT_EQ(s.launches[2 * c].write_bytes, len * 4);
                   EXPECT_EQ(s.launches[2 * c + 1].read_bytes, taps * 4);
                   EXPECT_EQ(s.launches[2 * c + 1].write_bytes, taps * 4);
                 }
               }});
  c.push_back(
      {"radix-sort", 16 * 2048, {}, [](const TraceStats& s) {
         const std::uint64_t n = 2048, table = 16 * 2;
         expect_allocs(s, {{"d_keys0", n * 4},
                           {"d_keys1", n * 4},
                           {"d_values0", n * 4},
                           {"d_values1", n * 4},
                           {"d_counts", table * 4},
                           {"d_offsets", table * 4}});
         expect_kernel(s, "radix_scatter", {2, 1, 1}, {256, 1, 1}, (2048 + 16) * 4);
         EXPECT_EQ(launches(s), loop({"radix_histogram", "radix_scan", "radix_scatter"}, 8));
         for (int p = 0; p < 8; ++p) {
           EXPECT_EQ(s.launches[3 * p].read_bytes, n * 4);
           EXPECT_EQ(s.launches[3 * p].write_bytes, table * 4);
           EXPECT_EQ(s.launches[3 * p + 1].read_bytes, table * 4);
           EXPECT_EQ(s.launches[3 * p + 1].write_bytes, table * 4);
           EXPECT_EQ(s.launches[3 * p + 2].read_bytes, (2 * n + table) * 4);
           EXPECT_EQ(s.launches[3 * p + 2].write_bytes, 2 * n * 4);
         }
       }});
  c.push_back(
      {"hash-join", 3 << 19, {}, [](const TraceStats& s) {
         // |R| = 8192 (120 |R| + heads <= 1.5 MiB), |S| = 4 |R|; 4 partitions of ~2048 R
         // tuples, all in the first pass.
         const std::uint64_t nr = 8192, ns = 4 * nr, p1 = 4, parts = 4;
         Allocs a;
         for (const char* stage : {"", "_temp", "_final"}) {
           for (const auto& [name, n] : Allocs{{"R", nr}, {"Pr", nr}, {"S", ns}, {"Ps", ns}})
             a.emplace_back(name + std::string(stage), n * 4);
         }
         a.insert(a.end(),
                  {{"heads_R", (p1 + parts) * 8}, {"heads_S", (p1 + parts) * 8}, {"aggr_cnt", 4}});
         expect_allocs(s, a);
         EXPECT_EQ(s.meta.params["partitions"].get<std::uint64_t>(), parts);
         expect_kernel(s, "partition_pass_one", {2, 1, 1}, {1024, 1, 1},
                       (2 * 4096 + 4) * 4);  // R: two 4096-tuple chunks
         expect_kernel(s, "join_partitioned_aggregate", {4, 1, 1}, {512, 1, 1},
                       (4096 + 512) * 8 + 2048 * 4);
         EXPECT_EQ(launches(s), (Launches{{"init_metadata", -1},
                                          {"partition_pass_one", -1},
                                          {"partition_pass_two", -1},
                                          {"init_metadata", -1},
                                          {"partition_pass_one", -1},
                                          {"partition_pass_two", -1},
                                          {"join_partitioned_aggregate", -1}}));
         EXPECT_EQ(s.launches[0].write_bytes, (p1 + parts) * 8);
         for (std::size_t l : {1, 2, 4, 5}) {
           const std::uint64_t n = l < 3 ? nr : ns;
           // both columns read once (vec4 per thread) and written once, plus one
           // 8-byte reservation per partition present in each 4096-tuple chunk
           EXPECT_EQ(s.launches[l].read_bytes, n * 8) << l;
           EXPECT_GT(s.launches[l].write_bytes, n * 8) << l;
           EXPECT_LE(s.launches[l].write_bytes, n * 8 + n / 4096 * parts * 8) << l;
         }
         // per partition every thread loads both bounds; every tuple read once; one
         // aggregate atomic per thread
         EXPECT_EQ(s.launches[6].read_bytes, parts * 512 * 16 + (nr + ns) * 8);
         EXPECT_EQ(s.launches[6].write_bytes, p1 * 512 * 4);
         const auto m = s.meta.params["matches"].get<std::uint64_t>();
         EXPECT_GT(m, ns * 4 / 10);  // 50 % of the probes match
         EXPECT_LT(m, ns * 6 / 10);
       }});
  // The CNNs with every channel count divided by 16: each layer writes its output tensor once.
  auto dnn_case = [](const std::string& name, std::uint64_t footprint,
                     std::vector<std::string> layers, std::uint64_t batch) {
    return Case{
        name, footprint, {{"channel_div", "16"}, {"batches", "2"}}, [=](const TraceStats& s) {
          EXPECT_EQ(s.meta.params["batch"].get<std::uint64_t>(), batch);
          Launches seq;
          for (std::int32_t i = 0; i < 2; ++i) {
            for (const auto& l : layers) seq.emplace_back(l, i);
          }
          EXPECT_EQ(launches(s), seq);
          std::map<std::string, std::uint64_t> size;
          for (const auto& a : s.meta.allocations) size[a.name] = a.size;
          EXPECT_EQ(size["data"], batch * 3 * 227 * 227 * 4);
          for (const auto& l : s.launches) {
            const std::string k = s.meta.kernels.at(l.kernel).name;
            const auto e1 = k.find("_expand1x1"), e3 = k.find("_expand3x3");
            if (e1 == std::string::npos && e3 == std::string::npos) {
              EXPECT_EQ(l.write_bytes, size[k + "_out"]) << k;
            }
          }
          for (std::size_t i = 0; i + 1 < s.launches.size(); ++i) {
            const std::string k = s.meta.kernels.at(s.launches[i].kernel).name;
            if (k.find("_expand1x1") == std::string::npos) continue;
            const std::string fire = k.substr(0, k.find('_'));
            EXPECT_EQ(s.launches[i].write_bytes + s.launches[i + 1].write_bytes,
                      size[fire + "_concat"]);
          }
        }};
  };
  c.push_back(dnn_case(
      "alexnet", 2 << 20,
      {"conv1", "pool1", "conv2", "pool2", "conv3", "conv4", "conv5", "pool5", "fc6", "fc7", "fc8"},
      1));
  std::vector<std::string> sn = {"conv1", "pool1"};
  for (const char* f :
       {"fire2", "fire3", "fire4", "pool4", "fire5", "fire6", "fire7", "fire8", "pool8", "fire9"}) {
    if (f[0] == 'p') {
      sn.emplace_back(f);
      continue;
    }
    for (const char* part : {"_squeeze1x1", "_expand1x1", "_expand3x3"})
      sn.push_back(std::string(f) + part);
  }
  sn.insert(sn.end(), {"conv10", "pool10"});
  c.push_back(dnn_case("squeezenet", 2 << 20, sn, 1));
  // The multi-GPU patterns with gpus=1 (a one-device trace this one-GPU check simulates; their
  // devices, concurrency and staging are tests/test_generators_multi_gpu.cpp's).
  c.push_back({"mgpu-halo", 128 << 10, {{"gpus", "1"}, {"iters", "2"}}, [](const TraceStats& s) {
                 // nx = 1024 (one page per row), ny = 128K / 8 / 1024 = 16; rows 1..14 updated
                 const std::uint64_t nx = 1024, ny = 16, points = (ny - 2) * (nx - 2);
                 expect_allocs(s, {{"a", nx * ny * 4}, {"a_new", nx * ny * 4}});
                 expect_kernel(s, "jacobi_kernel", {32, 4, 1}, {32, 4, 1});
                 EXPECT_EQ(launches(s), loop({"jacobi_kernel"}, 2));
                 for (const auto& l : s.launches) {
                   // four neighbours and the centre; the point and the two periodic rows
                   EXPECT_EQ(l.read_bytes, 5 * points * 4);
                   EXPECT_EQ(l.write_bytes, (points + 2 * (nx - 2)) * 4);
                   // a warp is 32 columns of one row: one record per instruction
                   EXPECT_EQ(l.records, (ny - 2) * (nx / 32) * 6 + 2 * (nx / 32));
                 }
               }});
  c.push_back({"mgpu-pipeline",
               49152,
               {{"gpus", "1"}, {"microbatches", "2"}, {"batch", "32"}},
               [](const TraceStats& s) {
                 // hidden = 64: 64^2 x 4 weights + 2 buffers of 2 x 32 x 64 x 4 = 49152
                 const std::uint64_t h = 64, b = 32;
                 expect_allocs(
                     s,
                     {{"weights0", h * h * 4}, {"act0", 2 * b * h * 4}, {"act1", 2 * b * h * 4}});
                 expect_kernel(s, "layer_forward", {2, 1, 1}, {32, 32, 1}, 2 * 32 * 32 * 4);
                 EXPECT_EQ(launches(s), loop({"layer_forward"}, 2));
                 for (const auto& l : s.launches) {
                   EXPECT_EQ(l.read_bytes, 2 * b * h * (h / 32) * 4);  // x and w per tile step
                   EXPECT_EQ(l.write_bytes, b * h * 4);
                   EXPECT_EQ(l.records, b * h / 32 * (2 * h / 32 + 1));
                 }
               }});
  c.push_back({"mgpu-alltoall", 64 << 10, {{"gpus", "1"}}, [](const TraceStats& s) {
                 const std::uint64_t chunk = 32 << 10;  // footprint / 2
                 expect_allocs(s, {{"send0", chunk}, {"recv0", chunk}});
                 expect_kernel(s, "pack", {32, 1, 1}, {256, 1, 1});
                 expect_kernel(s, "alltoall", {32, 1, 1}, {256, 1, 1});
                 EXPECT_EQ(launches(s),
                           (Launches{{"pack", 0}, {"alltoall", 0}, {"pack", 1}, {"alltoall", 1}}));
                 for (std::size_t l = 0; l < 4; ++l) {
                   EXPECT_EQ(s.launches[l].read_bytes, l % 2 ? chunk : 0) << l;
                   EXPECT_EQ(s.launches[l].write_bytes, chunk) << l;
                   EXPECT_EQ(s.launches[l].records, chunk / 128 * (l % 2 ? 2 : 1)) << l;
                 }
               }});
  return c;
}

class Workloads : public ::testing::TestWithParam<std::string> {};

TEST_P(Workloads, GeneratesAsSpecifiedHintsMatchAndSimulates) {
  for (const Case& c : cases()) {
    if (c.key() != GetParam()) continue;
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
  for (const Case& c : cases()) names.push_back(c.key());
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

namespace uvmsim::test {
namespace {

TEST(WorkloadLibrary, TinyFootprintsGenerateOrFailCleanly) {
  // The smallest footprints clamp the problem to its minimum size or are a UserError; nothing
  // crashes and nothing is left behind on failure.
  TempDir dir;
  for (const gen::Generator* g : gen::generators()) {
    if (g->name == "touch") continue;  // sized by its own parameters
    for (std::uint64_t fp : {std::uint64_t{1}, std::uint64_t{4096}}) {
      const std::string out = dir.file("tiny.uvt");
      try {
        gen::generate(g->name, fp, {}, 1, out);
        trace::TraceReader r(out);
        EXPECT_GT(r.launches().size(), 0u) << g->name;
      } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("--footprint"), std::string::npos)
            << g->name << ": " << e.what();
        EXPECT_FALSE(std::filesystem::exists(out)) << g->name;
      }
      std::filesystem::remove(out);
    }
  }
}

}  // namespace
}  // namespace uvmsim::test
