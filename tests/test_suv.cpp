// SUV's decisions on crafted hints (policies/placement/suv/suv_plan.h): classification (§V-B),
// Algorithm 1 (per launch) and Algorithm 2 (per iteration), with exact expected values.
#include <gtest/gtest.h>

#include "core/config.h"
#include "models/occupancy.h"
#include "policies/placement/suv/suv_plan.h"

namespace uvmsim::test {
namespace {

using suv::Class;
using suv::Decision;

constexpr std::uint64_t kMB = 1 << 20;

/// What the driver answers for PolicyEngine::concurrent_threadblocks().
std::uint64_t concurrent(const GpuConfig& g, const trace::KernelInfo& k) {
  return threadblocks_per_sm(g, k) * g.num_sms;
}

trace::UseHint use(std::uint32_t alloc, trace::Poly reads, trace::Poly per_tb,
                   bool data_dependent = false, bool iteration_dependent = false) {
  trace::UseHint u;
  u.alloc = alloc;
  u.reads = reads;
  u.bytes = reads * 4;
  u.bytes_per_tb = per_tb;
  u.data_dependent = data_dependent;
  u.iteration_dependent = iteration_dependent;
  return u;
}

trace::KernelInfo kernel(std::uint32_t grid, std::uint32_t block, std::uint32_t regs = 0) {
  trace::KernelInfo k;
  k.grid = {grid, 1, 1};
  k.block = {block, 1, 1};
  k.regs_per_thread = regs;
  return k;
}

GpuConfig gtx1080ti() { return SimConfig::from_preset("gtx1080ti").gpu; }

TEST(SuvClassify, DensityTemporalUnknownIterative) {
  const GpuConfig g = gtx1080ti();  // 28 SMs, 2048 threads / 64 warps / 32 blocks per SM
  ASSERT_EQ(g.num_sms, 28u);
  trace::KernelHint kh;
  kh.uses = {use(0, 1000000, 16384),                 // one TB: 16 KB of a 64 MB array
             use(1, 4000000, 4 * kMB),               // every TB: all of it
             use(2, 500, 1024, true),                // indirect
             use(3, {100, 10}, 4096, false, true)};  // host-loop window
  trace::RefHint r;
  r.id = 7;
  r.alloc = 3;
  r.window = trace::IterationWindow{{0, 4096}, 4096};
  kh.refs = {r};
  const std::vector<suv::AllocSize> sizes = {
      {64 * kMB, 32}, {4 * kMB, 2}, {2 * kMB, 1}, {8 * kMB, 4}};
  // 256 threads per block: 8 TBs per SM (threads and warps), 224 in flight of 1024 (<= half).
  const auto ds =
      suv::classify(kh, kernel(1024, 256), 3, concurrent(g, kernel(1024, 256)), sizes, {});
  ASSERT_EQ(ds.size(), 4u);
  EXPECT_EQ(ds[0].wss, 16384u * 224);
  EXPECT_EQ(ds[0].cls, Class::Temporal);  // 3.5 MB < 32 MB
  EXPECT_DOUBLE_EQ(ds[0].density, 1000000.0 / (64 * kMB));
  EXPECT_EQ(ds[1].cls, Class::Density);  // WSS >= half the size
  EXPECT_EQ(ds[2].cls, Class::Unknown);
  EXPECT_FALSE(ds[2].iterative);
  EXPECT_DOUBLE_EQ(ds[3].accesses, 130);  // 100 + 10 x iteration 3
  EXPECT_TRUE(ds[3].iterative);
  EXPECT_TRUE(ds[3].window_only);
  EXPECT_EQ(ds[3].cls, Class::Temporal);  // 4 KB x 224 < 4 MB
  // Outside a host loop nothing is Iterative.
  EXPECT_FALSE(
      suv::classify(kh, kernel(1024, 256), -1, concurrent(g, kernel(1024, 256)), sizes, {})[3]
          .iterative);
  // 300 TBs: 224 in flight is more than half of them, so no Temporal structure.
  EXPECT_EQ(
      suv::classify(kh, kernel(300, 256), 3, concurrent(g, kernel(300, 256)), sizes, {})[0].cls,
      Class::Density);
  // 64 registers per thread: 65536 / (64 x 256) = 4 TBs per SM, 112 in flight.
  EXPECT_EQ(suv::classify(kh, kernel(1024, 256, 64), 3, concurrent(g, kernel(1024, 256, 64)), sizes,
                          {})[0]
                .wss,
            16384u * 112);
  // A stricter fraction: WSS 3.5 MB is not below 0.05 x 64 MB.
  suv::Params p;
  p.temporal_wss_fraction = 0.05;
  EXPECT_EQ(
      suv::classify(kh, kernel(1024, 256), 3, concurrent(g, kernel(1024, 256)), sizes, p)[0].cls,
      Class::Density);
}

suv::DataStructure ds(std::uint32_t alloc, std::uint64_t size, double density, Class c,
                      std::uint64_t wss = 0) {
  suv::DataStructure d;
  d.alloc = alloc;
  d.size = size;
  d.blocks = size / (2 * kMB);
  d.density = density;
  d.cls = c;
  d.wss = wss;
  return d;
}

std::vector<Decision> plan(const std::vector<suv::DataStructure>& d, std::uint64_t avail,
                           std::vector<std::uint64_t> held = {}) {
  held.resize(d.size(), 0);
  return suv::algorithm1(d, held, avail, {});
}

TEST(SuvAlgorithm1, DecisionsInDensityOrder) {
  const std::vector<suv::DataStructure> d = {
      ds(0, 8 * kMB, 0, Class::Unknown),              // 8 of 60 MB
      ds(1, 16 * kMB, 10, Class::Temporal, 3 * kMB),  // above the threshold of 5
      ds(2, 8 * kMB, 1, Class::Temporal, kMB),        // below it
      ds(3, 8 * kMB, 8, Class::Density), ds(4, 20 * kMB, 2, Class::Density)};
  // Unknown: floor(8/60 x 10) = 1 chunk set aside; then by density: 1 (on demand, WSS 3 MB = 2
  // chunks), 3 (4 chunks), 4 (3 of its 10 chunks, the rest on the DRAM), 2 (no HBM left).
  const std::vector<Decision> expect = {{Decision::Reserve, 0, 1},
                                        {Decision::OnDemand, 1, 2},
                                        {Decision::Pin, 3, 4},
                                        {Decision::Pin, 4, 3},
                                        {Decision::DramPin, 2, 0}};
  const auto got = plan(d, 10);
  ASSERT_EQ(got.size(), expect.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].kind, expect[i].kind) << i;
    EXPECT_EQ(got[i].alloc, expect[i].alloc) << i;
    EXPECT_EQ(got[i].chunks, expect[i].chunks) << i;
  }
}

TEST(SuvAlgorithm1, EdgeCases) {
  // A Temporal structure below the density threshold is only DRAM-pinned (no fall-through).
  auto p = plan({ds(0, 8 * kMB, 4.9, Class::Temporal, kMB)}, 10);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].kind, Decision::DramPin);
  // Window chunks already held are not pinned again; a window-only structure is left alone.
  auto w = ds(1, 8 * kMB, 3, Class::Density);
  w.window_only = true;
  p = plan({ds(0, 8 * kMB, 9, Class::Density), w}, 10, {1, 2});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].kind, Decision::Pin);
  EXPECT_EQ(p[0].chunks, 3u);
  EXPECT_EQ(p[1].kind, Decision::Window);
  // No HBM: everything on the DRAM, Unknown reservations of nothing.
  p = plan({ds(0, 8 * kMB, 0, Class::Unknown), ds(1, 8 * kMB, 9, Class::Density)}, 0);
  EXPECT_EQ(p[0].kind, Decision::Reserve);
  EXPECT_EQ(p[0].chunks, 0u);
  EXPECT_EQ(p[1].kind, Decision::DramPin);
  // A small Unknown structure still gets one chunk; the WSS reservation is capped by what is
  // left; equal densities keep allocation order.
  p = plan({ds(0, 2 * kMB, 0, Class::Unknown), ds(1, 100 * kMB, 6, Class::Temporal, 9 * kMB),
            ds(2, 2 * kMB, 6, Class::Density)},
           4);
  EXPECT_EQ(p[0].chunks, 1u);
  EXPECT_EQ(p[1].kind, Decision::OnDemand);
  EXPECT_EQ(p[1].chunks, 3u);
  EXPECT_EQ(p[2].kind, Decision::DramPin);
}

trace::Hints window_hints() {
  trace::Hints h;
  trace::KernelHint k;
  k.kernel = 0;
  trace::RefHint row;  // one 4 KB row per iteration
  row.id = 1;
  row.alloc = 0;
  row.window = trace::IterationWindow{{0, 4096}, 4096};
  trace::RefHint col;  // a column: 3 MB span moving 4 bytes per iteration
  col.id = 2;
  col.alloc = 0;
  col.window = trace::IterationWindow{{0, 4}, 3 * kMB};
  k.refs = {row, col};
  h.kernels = {k};
  trace::KernelHint other;  // a kernel not launched in the iterations below
  other.kernel = 1;
  trace::RefHint x;
  x.id = 3;
  x.alloc = 1;
  x.window = trace::IterationWindow{0, 4096};
  other.refs = {x};
  h.kernels.push_back(other);
  return h;
}

TEST(SuvAlgorithm2, WindowsBatchingAndExpiry) {
  const trace::Hints h = window_hints();
  const std::vector<suv::AllocSize> sizes = {{4 * kMB, 2}, {2 * kMB, 1}};
  const suv::Params p;
  // Iteration 0 of 10 (0..9): the 4 KB row is below 2 MB, so rows 0..9 are fetched at once
  // (2 MB / 4 KB = 512 iterations, capped by the last); the 3 MB column only for iteration 0.
  auto a0 = suv::algorithm2(h, {0}, 0, 9, sizes, p, {});
  ASSERT_EQ(a0.size(), 2u);
  EXPECT_EQ(a0[1].window, (suv::Window{0, 0, 10 * 4096}));
  EXPECT_EQ(a0[1].until, 10);
  EXPECT_EQ(a0[2].window, (suv::Window{0, 0, 3 * kMB}));
  EXPECT_EQ(a0[2].until, 1);
  EXPECT_EQ(suv::windows_of(a0), (std::vector<suv::Window>{{0, 0, 3 * kMB}}));
  // Iteration 1: the row batch still holds; the column moves by 4 bytes.
  auto a1 = suv::algorithm2(h, {0}, 1, 9, sizes, p, a0);
  EXPECT_EQ(a1[1], a0[1]);
  EXPECT_EQ(a1[2].window, (suv::Window{0, 4, 4 + 3 * kMB}));
  // Clamped to the allocation, and expired for kernels not launched.
  trace::Hints wide = h;
  wide.kernels[0].refs[1].window->start = {2 * kMB, 0};
  auto c = suv::algorithm2(wide, {0}, 0, 0, sizes, p, {});
  EXPECT_EQ(c[2].window, (suv::Window{0, 2 * kMB, 4 * kMB}));
  EXPECT_EQ(c[1].window, (suv::Window{0, 0, 4096}));  // batching stops at the last iteration
  EXPECT_EQ(c[1].until, 1);
  auto other = suv::algorithm2(h, {1}, 1, 9, sizes, p, a1);
  EXPECT_EQ(other.size(), 1u);
  EXPECT_EQ(other.count(std::uint64_t{1} << 32 | 3), 1u);
  // Outside the host loop every window has expired.
  EXPECT_TRUE(suv::algorithm2(h, {0}, -1, 9, sizes, p, a1).empty());
  // Without batching each iteration gets its own row.
  suv::Params nb;
  nb.batch_bytes = 0;
  EXPECT_EQ(suv::algorithm2(h, {0}, 5, 9, sizes, nb, {})[1].window,
            (suv::Window{0, 5 * 4096, 6 * 4096}));
}

TEST(SuvAlgorithm2, MergeAndSubtract) {
  const std::vector<suv::Window> a =
      suv::merge({{1, 10, 20}, {0, 5, 8}, {0, 0, 6}, {1, 20, 25}, {0, 9, 9}});
  EXPECT_EQ(a, (std::vector<suv::Window>{{0, 0, 8}, {1, 10, 25}}));
  EXPECT_EQ(suv::subtract(a, {{0, 2, 3}, {1, 0, 12}, {1, 20, 30}}),
            (std::vector<suv::Window>{{0, 0, 2}, {0, 3, 8}, {1, 12, 20}}));
}

}  // namespace
}  // namespace uvmsim::test
