// Rodinia's grid / dynamic-programming solvers (Che et al., IISWC 2009):
//  - `hotspot`: thermal simulation, 16x16 blocks computing a pyramid of `pyramid` time steps in
//    shared memory from a tile with a halo, ping-ponging two temperature grids;
//  - `srad`: speckle-reducing anisotropic diffusion (srad_v2), two stencil kernels per iteration
//    over the image and five coefficient arrays, with the host reading the image's region of
//    interest between iterations;
//  - `pathfinder`: dynamic programming down a rows x cols wall, `pyramid` rows per launch, so each
//    launch reads the next disjoint band of rows of the wall.
// Kernels that swap source and destination between launches appear once per pointer binding
// (docs/hints.md: a kernel entry is one function with one launch configuration and binding).
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

/// Threads t in [0, block) of blocks b in [0, blocks) whose index small*b - border + t lies in
/// [0, n) and whose t lies in [lo, hi]: how often a halo'd tile loop touches the grid.
std::int64_t covered(std::uint64_t blocks, std::uint64_t block, std::uint64_t small,
                     std::uint64_t border, std::uint64_t n, std::uint64_t lo, std::uint64_t hi) {
  std::int64_t c = 0;
  for (std::uint64_t b = 0; b < blocks; ++b) {
    for (std::uint64_t t = lo; t <= hi && t < block; ++t) {
      const std::int64_t x =
          static_cast<std::int64_t>(small * b + t) - static_cast<std::int64_t>(border);
      c += x >= 0 && x < static_cast<std::int64_t>(n);
    }
  }
  return c;
}

constexpr std::uint32_t kTile = 16;

// ---- per-thread work (compute_cost.h) ----
// hotspot calculate_temp: step/Cap, 1/Rx, 1/Ry, 1/Rz (four divisions), the block's and thread's
// coordinates and index, the IN_RANGE test, &temp_src[index] and &power[index] (independent
// loads).
constexpr Work kHotspotLoads =
    4 * kDivide + int_ops(10) + imad(3) + cmp(4) + branch(1) + 2 * kAddress;
// Then the two STS and __syncthreads(), the valid range and the clamped N, S, W, E (eight
// compares/selects, four adds); per pyramid step the IN_RANGE tests, and for a computed cell the
// update — in double, because Rodinia writes 2.0 * temp: ten conversions to and from double,
// seven DFMA/DMUL/DADD, three FADD, six LDS and the STS of temp_t — then __syncthreads(); all
// but the last step copy temp_t back (LDS, STS) between barriers. Finally LDS temp_t, if
// (computed), &temp_dst[index].
constexpr Work kHotspotPrologue = shared(2) + kBarrier + cmp(8) + int_ops(4);
constexpr Work kHotspotCell =
    cmp(8) + branch(1) + cvt64(10) + fp64(7) + fp32(3) + shared(7) + kBarrier + kLoop;
constexpr Work kHotspotCopy = branch(1) + shared(2) + kBarrier;
constexpr Work kHotspotStore = shared(1) + kGuard + kAddress;
// srad_cuda_1: the 2-D index, the edge fix-ups of the north/south/west/east indices, five
// addresses of J (independent loads).
constexpr Work kSrad1Loads = kGlobalIndex2D + cmp(8) + int_ops(8) + 5 * (kIndex2D + kAddress);
// Five STS, __syncthreads(), the four derivatives (LDS, FADD each), g2 and l (four FFMA, a
// division each), num, den and c = 1.0 / (1.0 + den) — srad_v2 writes 0.5, .25, 1.0 as double
// literals: seven conversions, eight double operations and a double reciprocal's MUFU — qsqr
// and den in float (two divisions, four FP32), the clamp of c to [0, 1]; __syncthreads(); the
// five output addresses.
constexpr Work kSrad1Compute = shared(5) + kBarrier + shared(5) + fp32(4) + fp32(5) + 2 * kDivide +
                               cvt64(7) + fp64(8) + sfu(1) + fp32(4) + 2 * kDivide + cmp(4) +
                               branch(2) + kBarrier + 5 * kAddress;
// srad_cuda_2: the 2-D index, edge fix-ups, eight addresses (independent loads).
constexpr Work kSrad2Loads = kGlobalIndex2D + cmp(4) + int_ops(4) + 8 * (kIndex2D + kAddress);
// Eight STS, __syncthreads(), the coefficients and derivatives from shared memory, d_sum (four
// FFMA), J += 0.25 * lambda * d_sum in double (four conversions, two double operations).
constexpr Work kSrad2Update =
    shared(8) + kBarrier + shared(8) + fp32(4) + cvt64(4) + fp64(2) + kBarrier;
// pathfinder dynproc_kernel: the block's columns, the valid range, W and E clamped, isValid,
// if (IN_RANGE(xidx, 0, cols-1)) &gpuSrc[xidx].
constexpr Work kPathLoad = int_ops(8) + imad(2) + cmp(8) + branch(1) + kAddress;
// Each pyramid row: the IN_RANGE test, three LDS of prev, two MIN, the wall index and address;
// the first row after STS prev and __syncthreads(), later ones after the previous row's add, STS
// of result, barrier, the copy back (LDS, STS) and barrier.
constexpr Work kPathRow = cmp(4) + branch(1) + shared(3) + cmp(2) + imad(1) + kAddress + kLoop;
constexpr Work kPathFirstRow = shared(1) + kBarrier + kPathRow;
constexpr Work kPathNextRow =
    int_ops(1) + shared(1) + kBarrier + branch(1) + shared(2) + kBarrier + kPathRow;
// The last row's add, STS, barrier, if (computed) LDS and &gpuResults[xidx].
constexpr Work kPathStore = int_ops(1) + shared(1) + kBarrier + kGuard + shared(1) + kAddress;

void write_hotspot(GenContext& ctx) {
  const std::uint64_t iters = ctx.params.integer("iters", 1, 100000);
  const std::uint64_t pyr = ctx.params.integer("pyramid", 1, 7);
  const std::uint64_t n = fit(ctx.footprint, kTile, [](std::uint64_t v) { return 3 * v * v * 4; });
  const std::uint64_t small = kTile - 2 * pyr, blocks = ceil_div(n, small);
  const std::uint64_t launches = ceil_div(iters, pyr);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t power = wl.alloc("MatrixPower", n * n * 4);
  const std::uint32_t temp[2] = {wl.alloc("MatrixTemp0", n * n * 4),
                                 wl.alloc("MatrixTemp1", n * n * 4)};
  const auto nn = static_cast<std::int64_t>(n), sm = static_cast<std::int64_t>(small);
  const std::int64_t cov = covered(blocks, kTile, small, pyr, n, 0, kTile - 1);
  const std::int64_t loads = cov * cov, tile = ((kTile - 1) * nn + kTile) * 4;
  const auto g = static_cast<std::uint32_t>(blocks);
  std::uint32_t k[2];
  std::vector<Ref> first;
  for (int b = 0; b < 2; ++b) {  // binding b: temp_src = temp[b], temp_dst = temp[1 - b]
    k[b] = wl.kernel("calculate_temp", {g, g, 1}, {kTile, kTile, 1}, 3 * kTile * kTile * 4);
    const Ref* same = first.empty() ? nullptr : first.data();
    const Ref src = wl.ref(k[b], {temp[b], AccessKind::Read, loads, tile}, same);
    const Ref pw = wl.ref(k[b], {power, AccessKind::Read, loads, tile}, same ? same + 1 : nullptr);
    const Ref dst =
        wl.ref(k[b], {temp[1 - b], AccessKind::Write, nn * nn, ((sm - 1) * nn + sm) * 4},
               same ? same + 2 : nullptr);
    if (first.empty()) first = {src, pw, dst};
    wl.body(k[b], [=](Block& blk, std::int32_t) {
      blk.warps([&](Warp& w) {
        auto idx = [&](const Thread& t, bool computed) -> std::uint64_t {
          const std::int64_t y =
              static_cast<std::int64_t>(small * blk.y + t.y) - static_cast<std::int64_t>(pyr);
          const std::int64_t x =
              static_cast<std::int64_t>(small * blk.x + t.x) - static_cast<std::int64_t>(pyr);
          if (y < 0 || x < 0 || y >= nn || x >= nn) return kOff;
          if (computed &&
              (t.x < pyr || t.y < pyr || t.x > kTile - 1 - pyr || t.y > kTile - 1 - pyr))
            return kOff;
          return static_cast<std::uint64_t>(y) * n + static_cast<std::uint64_t>(x);
        };
        w.op(src, kHotspotLoads, [&](const Thread& t) { return idx(t, false); });
        w.op(pw, kNoWork, [&](const Thread& t) { return idx(t, false); });
        const auto steps = static_cast<std::uint32_t>(pyr);
        w.op(dst,
             kHotspotPrologue + steps * kHotspotCell + (steps - 1) * kHotspotCopy + kHotspotStore,
             [&](const Thread& t) { return idx(t, true); });
      });
    });
  }
  wl.cpu_write({power, temp[0]});
  for (std::uint64_t t = 0; t < launches; ++t) wl.launch(k[t % 2], static_cast<std::int32_t>(t));
  wl.write();
}

void write_srad(GenContext& ctx) {
  const std::uint64_t iters = ctx.params.integer("iters", 1, 100000);
  const std::uint64_t n = fit(ctx.footprint, kTile, [](std::uint64_t v) { return 6 * v * v * 4; });
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t j = wl.alloc("J_cuda", n * n * 4), c = wl.alloc("C_cuda", n * n * 4),
                      e = wl.alloc("E_C", n * n * 4), wc = wl.alloc("W_C", n * n * 4),
                      nc = wl.alloc("N_C", n * n * 4), sc = wl.alloc("S_C", n * n * 4);
  const auto g = static_cast<std::uint32_t>(n / kTile);
  const auto nn = static_cast<std::int64_t>(n);
  const std::int64_t all = nn * nn, tile = ((kTile - 1) * nn + kTile) * 4;
  const std::int64_t row = kTile * 4, col = ((kTile - 1) * nn + 1) * 4;  // halo row / column
  // Neighbour element (dy, dx) of the thread's pixel, with Rodinia's fix-ups at the image edge
  // (a block in the first row reads its own first row as "north", and so on).
  auto at = [n, g](const Block& b, const Thread& t, int dy, int dx) -> std::uint64_t {
    std::uint64_t y = std::uint64_t{b.y} * kTile + t.y, x = std::uint64_t{b.x} * kTile + t.x;
    if (dy < 0) y = b.y == 0 ? 0 : std::uint64_t{b.y} * kTile - 1;
    if (dy > 0) y = b.y == g - 1 ? n - 1 : std::uint64_t{b.y + 1} * kTile;
    if (dx < 0) x = b.x == 0 ? 0 : std::uint64_t{b.x} * kTile - 1;
    if (dx > 0) x = b.x == g - 1 ? n - 1 : std::uint64_t{b.x + 1} * kTile;
    return y * n + x;
  };
  // srad_cuda_1: J centre, north, south, west, east -> E_C, W_C, N_C, S_C, C_cuda
  const std::uint32_t k1 =
      wl.kernel("srad_cuda_1", {g, g, 1}, {kTile, kTile, 1}, 5 * kTile * kTile * 4);
  const Ref r1[5] = {
      wl.ref(k1, {j, AccessKind::Read, all, tile}), wl.ref(k1, {j, AccessKind::Read, all, row}),
      wl.ref(k1, {j, AccessKind::Read, all, row}), wl.ref(k1, {j, AccessKind::Read, all, col}),
      wl.ref(k1, {j, AccessKind::Read, all, col})};
  const int dirs[5][2] = {{0, 0}, {-1, 0}, {1, 0}, {0, -1}, {0, 1}};
  std::vector<Ref> w1;
  for (std::uint32_t out : {e, wc, nc, sc, c})
    w1.push_back(wl.ref(k1, {out, AccessKind::Write, all, tile}));
  wl.body(k1, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      for (int d = 0; d < 5; ++d) {
        w.op(r1[d], d == 0 ? kSrad1Loads : kNoWork,
             [&](const Thread& t) { return at(b, t, dirs[d][0], dirs[d][1]); });
      }
      for (std::size_t o = 0; o < w1.size(); ++o) {
        w.op(w1[o], o == 0 ? kSrad1Compute : kNoWork,
             [&](const Thread& t) { return at(b, t, 0, 0); });
      }
    });
  });
  // srad_cuda_2: C south, east, centre; N_C, S_C, W_C, E_C; J -> J
  const std::uint32_t k2 =
      wl.kernel("srad_cuda_2", {g, g, 1}, {kTile, kTile, 1}, 3 * kTile * kTile * 4);
  const Ref c_s = wl.ref(k2, {c, AccessKind::Read, all, row});
  const Ref c_e = wl.ref(k2, {c, AccessKind::Read, all, col});
  const Ref c_c = wl.ref(k2, {c, AccessKind::Read, all, tile});
  std::vector<Ref> r2;
  for (std::uint32_t in : {nc, sc, wc, e, j})
    r2.push_back(wl.ref(k2, {in, AccessKind::Read, all, tile}));
  const Ref w2 = wl.ref(k2, {j, AccessKind::Write, all, tile});
  wl.body(k2, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      w.op(c_s, kSrad2Loads, [&](const Thread& t) { return at(b, t, 1, 0); });
      w.op(c_e, kNoWork, [&](const Thread& t) { return at(b, t, 0, 1); });
      w.op(c_c, kNoWork, [&](const Thread& t) { return at(b, t, 0, 0); });
      for (const Ref& r : r2) w.op(r, kNoWork, [&](const Thread& t) { return at(b, t, 0, 0); });
      w.op(w2, kSrad2Update, [&](const Thread& t) { return at(b, t, 0, 0); });
    });
  });
  wl.cpu_write(j);
  const std::uint64_t roi = std::min<std::uint64_t>(128, n);  // rows/cols r1..r2, c1..c2 = 0..127
  for (std::uint64_t it = 0; it < iters; ++it) {
    for (std::uint64_t r = 0; r < roi; ++r) wl.cpu(j, AccessKind::Read, r * n * 4, roi * 4);
    wl.launch(k1, static_cast<std::int32_t>(it));
    wl.launch(k2, static_cast<std::int32_t>(it));
  }
  wl.write();
}

void write_pathfinder(GenContext& ctx) {
  constexpr std::uint32_t kBlock = 256;
  const std::uint64_t pyr = ctx.params.integer("pyramid", 1, 100);
  const std::uint64_t steps = ctx.params.integer("launches", 1, 1000000);
  const std::uint64_t rows = steps * pyr + 1;  // the wall has rows - 1 rows below the first
  const std::uint64_t cols = std::max<std::uint64_t>(kBlock, ctx.footprint / 4 / (rows + 1));
  const std::uint64_t small = kBlock - 2 * pyr, blocks = ceil_div(cols, small);
  Workload wl(ctx);
  wl.metadata().params["rows"] = rows;
  wl.metadata().params["cols"] = cols;
  const std::uint32_t wall = wl.alloc("gpuWall", (rows - 1) * cols * 4);
  const std::uint32_t result[2] = {wl.alloc("gpuResult0", cols * 4),
                                   wl.alloc("gpuResult1", cols * 4)};
  const auto c = static_cast<std::int64_t>(cols), p = static_cast<std::int64_t>(pyr);
  const std::int64_t loads = covered(blocks, kBlock, small, pyr, cols, 0, kBlock - 1);
  std::int64_t wall_reads = 0;
  for (std::uint64_t i = 0; i < pyr; ++i) {
    // IN_RANGE(tx, i+1, BLOCK_SIZE-i-2) and inside the wall
    wall_reads += covered(blocks, kBlock, small, pyr, cols, i + 1, kBlock - i - 2);
  }
  const std::int64_t stores = covered(blocks, kBlock, small, pyr, cols, pyr, kBlock - 1 - pyr);
  std::uint32_t k[2];
  std::vector<Ref> first;
  for (int b = 0; b < 2; ++b) {
    k[b] = wl.kernel("dynproc_kernel", {static_cast<std::uint32_t>(blocks), 1, 1}, {kBlock, 1, 1},
                     2 * kBlock * 4);
    const Ref* same = first.empty() ? nullptr : first.data();
    const Ref src = wl.ref(k[b], {result[b], AccessKind::Read, loads, kBlock * 4}, same);
    const Ref wr = wl.ref(k[b],
                          Access(wall, AccessKind::Read, wall_reads, ((p - 1) * c + kBlock - 2) * 4)
                              .iterates({0, p * c * 4}, p * c * 4),
                          same ? same + 1 : nullptr);
    const Ref dst = wl.ref(
        k[b], {result[1 - b], AccessKind::Write, stores, static_cast<std::int64_t>(small) * 4},
        same ? same + 2 : nullptr);
    if (first.empty()) first = {src, wr, dst};
    wl.body(k[b], [=](Block& blk, std::int32_t it) {
      const std::uint64_t start = static_cast<std::uint64_t>(it) * pyr;  // startStep
      blk.warps([&](Warp& w) {
        auto x = [&](const Thread& t, std::uint64_t lo, std::uint64_t hi) -> std::uint64_t {
          const std::int64_t v = static_cast<std::int64_t>(small * blk.x + t.x) - p;
          return v < 0 || v >= c || t.x < lo || t.x > hi ? kOff : static_cast<std::uint64_t>(v);
        };
        w.op(src, kPathLoad, [&](const Thread& t) { return x(t, 0, kBlock - 1); });
        for (std::uint64_t i = 0; i < pyr; ++i) {
          w.op(wr, i == 0 ? kPathFirstRow : kPathNextRow, [&](const Thread& t) {
            const std::uint64_t v = x(t, i + 1, kBlock - i - 2);
            return v == kOff ? kOff : (start + i) * cols + v;
          });
        }
        w.op(dst, kPathStore, [&](const Thread& t) { return x(t, pyr, kBlock - 1 - pyr); });
      });
    });
  }
  wl.cpu_write(wall);
  wl.cpu_write(result[0]);
  for (std::uint64_t t = 0; t < steps; ++t) wl.launch(k[t % 2], static_cast<std::int32_t>(t));
  wl.write();
}

const Registrar kHotspot{Generator{
    "hotspot",
    "thermal simulation on an N x N grid (power + two temperature grids), 16x16 tiles with halo, "
    "ceil(iters/pyramid) launches; N = largest multiple of 16 with 3*N*N*4 <= footprint",
    {{"iters", "8", "simulated time steps"},
     {"pyramid", "2", "time steps per launch (pyramid height, 1..7)"}},
    write_hotspot,
    "cyclic",
    std::uint64_t{96} << 20,
    "Rodinia hotspot",
}};

const Registrar kSrad{Generator{
    "srad",
    "speckle-reducing anisotropic diffusion on an N x N image, two stencil kernels per "
    "iteration over six arrays; N = largest multiple of 16 with 6*N*N*4 <= footprint",
    {{"iters", "4", "diffusion iterations (host loop)"}},
    write_srad,
    "cyclic",
    std::uint64_t{96} << 20,
    "Rodinia srad_v2",
}};

const Registrar kPathfinder{Generator{
    "pathfinder",
    "shortest path down a wall of launches*pyramid rows, pyramid rows per launch (a disjoint band "
    "of the wall each); cols = footprint / 4 / (rows + 1)",
    {{"launches", "64", "host-loop launches"}, {"pyramid", "2", "wall rows per launch"}},
    write_pathfinder,
    "iterative-disjoint",
    std::uint64_t{128} << 20,
    "Rodinia pathfinder",
}};

}  // namespace
}  // namespace uvmsim::gen
