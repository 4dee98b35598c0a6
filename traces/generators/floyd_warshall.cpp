// `floyd-warshall`: all-pairs shortest paths, in two variants (`--param variant=`).
//
// `pass` (default), as in HeCBench's floydwarshall (from the AMD APP SDK): the host launches one
// pass per intermediate vertex k, and pass k relaxes every pair (y, x) through k. Each pass reads
// the whole distance matrix, but the row k it reads for every pair moves to a new, disjoint part
// of the matrix each iteration, which is what SUV prefetches at iteration boundaries (§V-C,
// Algorithm 2). Writes happen only where a path improves; the generator runs the algorithm on a
// random dense graph to know where.
//
// `blocked`, as in SUV's artifact (eval/fw/main.cu, floyd_warshall_blocked_cuda): one int matrix,
// written by the host (memcpy into the managed buffer), and per block k of 16 vertices three
// kernels of 16 x 16 threads: phase 1 relaxes the diagonal tile (k, k), phase 2 (one block per
// tile index i, i != k) the tiles (i, k) and (k, i) through it, phase 3 (one block per tile (i, j)
// but (k, k)) every other tile through (i, k) and (k, j). Every tile is staged through shared
// memory and relaxed 16 times (block_calc: 16 steps, each behind a __syncthreads), so a sweep of
// the matrix carries 16 vertices' work: 16 times the compute per byte of a `pass` launch, N / 16
// sweeps instead of N. Each thread loads and stores whole tiles unconditionally, so its records
// do not depend on the graph.
#include <algorithm>
#include <array>
#include <limits>
#include <random>
#include <vector>

#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kTile = 16;  // BLOCK_SIZE x BLOCK_SIZE threads, one pair each

// ---- per-thread work (compute_cost.h) ----
// x and y from the 2-D index; the three independent loads dist[y][x], dist[y][k], dist[k][x],
// each a row-major index and an address. Then tempWeight = the sum, if (tempWeight < oldWeight),
// and the path buffer's address for the two stores.
constexpr Work kLoads = kGlobalIndex2D + 3 * (kIndex2D + kAddress);
constexpr Work kRelax = int_ops(1) + kGuard + kAddress;

// ---- the blocked variant (eval/fw/main.cu) ----
// A tile element's index: (tile row * 16 + threadIdx.y) * n + tile column * 16 + threadIdx.x,
// two IMADs and the address.
constexpr Work kTileIndex = imad(2) + kAddress;
// Staging a loaded element into its shared tile (C[bi*16+bj] = graph[...]; bi = threadIdx.y,
// bj = threadIdx.x, so a warp's 32 lanes write 32 consecutive words): one conflict-free STS.
constexpr Work kStage = shared(1);
// The early-return test of phases 2 and 3 (i == k, i == k && j == k).
constexpr Work kSkipTest = cmp(2) + branch(1);

// block_calc's shared-memory accesses. The kernels call block_calc(C, A, B, bi, bj) but the
// function's parameters are (C, A, B, bj, bi), so inside it bi = threadIdx.x and bj =
// threadIdx.y: thread (x, y) relaxes element (row x, column y), reading A[x*16 + k], B[k*16 + y]
// and C[x*16 + y]. A warp holds threadIdx.y = 2w, 2w+1 and threadIdx.x = 0..15, so its A words
// are 16 apart (two banks, 8 words each) and its C words fall in four banks (8 each): 8-way
// bank conflicts, computed here from those addresses (the pattern is the same for every warp and
// step); B is two words, one pass.
template <class Word>
constexpr std::uint32_t warp0_wavefronts(Word word) {
  std::array<std::uint32_t, 32> w{};
  for (std::uint32_t lane = 0; lane < 32; ++lane) w[lane] = word(lane % 16, lane / 16);
  return shared_wavefronts(w);
}
constexpr std::uint32_t kLoadAWays = warp0_wavefronts([](auto x, auto) { return x * 16; });
constexpr std::uint32_t kLoadBWays = warp0_wavefronts([](auto, auto y) { return y; });
constexpr std::uint32_t kLoadCWays = warp0_wavefronts([](auto x, auto y) { return x * 16 + y; });
static_assert(kLoadAWays == 8 && kLoadBWays == 1 && kLoadCWays == 8);
// One step of block_calc, unrolled (the trip count is the constant BLOCK_DIM): the three LDS,
// the add, the compare and __syncthreads. The predicated STS of the new C is costed per warp and
// step from the lanes whose path improved (BlockCalc).
constexpr Work kCalcStep = shared_conflicted(kLoadAWays) + shared_conflicted(kLoadBWays) +
                           shared_conflicted(kLoadCWays) + int_ops(1) + cmp(1) + kBarrier;
// block_calc with the barriers around it, then the LDS of the thread's C for the store back
// (C[threadIdx.y*16 + threadIdx.x] in the kernel: conflict-free).
constexpr Work kCalc = kBarrier + 16 * kCalcStep + kBarrier + shared(1);

/// The artifact's "infinity": the largest value two of which still add without overflow.
constexpr std::int32_t kInfinity = std::numeric_limits<std::int32_t>::max() / 2;

/// block_calc on the distance matrix: relaxes the 16 x 16 tile at `c` through the tiles at `a`
/// and `b` (element offsets into `d`, rows `n` apart), in place, step by step as the barriers
/// order it, and returns per warp the cost of its 16 predicated stores: a step where some lanes
/// improve stores with the conflict degree of those lanes' C words (lane (x, y) of warp y / 2
/// writes word x*16 + y: bank 16 (x % 2) + y), a step where none does issues the STS to no lane.
struct BlockCalc {
  std::array<Work, 8> stores{};
};
BlockCalc block_calc(std::vector<std::int32_t>& d, std::uint64_t n, std::uint64_t c,
                     std::uint64_t a, std::uint64_t b) {
  BlockCalc out;
  std::array<std::uint32_t, 8> total{}, idle{};
  for (std::uint64_t k = 0; k < kTile; ++k) {
    // Improved lanes per column y and row parity (the bank of word x*16 + y), branch-free so
    // that the compiler vectorises the row (a full-size sweep is 2^34 relaxations).
    std::uint32_t improved[2][kTile] = {};
    // B's row k is read before any C row is written: in place (b == c, phase 2's second call)
    // step k leaves row k unchanged (relaxing (k, y) through k adds d[k][k] = 0).
    std::int32_t brow[kTile];
    std::copy_n(&d[b + k * n], kTile, brow);
    for (std::uint64_t x = 0; x < kTile; ++x) {
      const std::int32_t via = d[a + x * n + k];
      std::int32_t* row = &d[c + x * n];
      std::uint32_t* count = improved[x % 2];
      for (std::uint64_t y = 0; y < kTile; ++y) {
        const std::int32_t sum = via + brow[y];
        const bool better = row[y] > sum;
        row[y] = better ? sum : row[y];
        count[y] += better;
      }
    }
    for (std::uint32_t w = 0; w < 8; ++w) {
      const std::uint32_t ways = std::max(
          {improved[0][2 * w], improved[1][2 * w], improved[0][2 * w + 1], improved[1][2 * w + 1]});
      (ways == 0 ? idle[w] : total[w]) += ways == 0 ? 1 : ways;
    }
  }
  for (std::uint32_t w = 0; w < 8; ++w) {
    out.stores[w] = shared_conflicted(total[w]) + int_ops(idle[w]);  // an idle STS: its slot
  }
  return out;
}

void write_floyd_warshall_blocked(GenContext& ctx, std::uint64_t n) {
  const std::uint64_t tiles = n / kTile;  // the artifact's `blocks`
  const std::uint64_t passes = iteration_limit(ctx, "passes", tiles);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  wl.metadata().params["passes"] = passes;
  const std::uint32_t graph = wl.alloc("graph", n * n * 4);
  const auto nn = static_cast<std::int64_t>(n), s = static_cast<std::int64_t>(tiles);
  const auto ts = static_cast<std::uint32_t>(tiles);
  const Dim3 tb{kTile, kTile, 1};
  constexpr std::int64_t kThreads = kTile * kTile, kT = kTile;
  // One tile's extent: 16 rows of 16 ints, n apart.
  const std::int64_t tile = ((kT - 1) * nn + kT) * 4;
  // Windows: the tile (k, k) (offset k * (16 n + 16) ints), column block k (tiles (i, k) for every
  // i: offset 16 k ints, through the last row), row block k (tiles (k, j): 16 rows from 16 k n).
  const IterationWindow diag{{0, (kT * nn + kT) * 4}, tile};
  const IterationWindow column{{0, kT * 4}, ((nn - 1) * nn + kT) * 4};
  const IterationWindow row{{0, kT * nn * 4}, kT * nn * 4};
  auto in = [&](std::uint32_t kernel, AccessKind kind, std::int64_t count, const IterationWindow& w,
                AccessPattern pattern) {
    return wl.ref(kernel, Access(graph, kind, count, tile, pattern).iterates(w.start, w.span));
  };

  // Phase 1: one block relaxes tile (k, k) through itself.
  const std::uint32_t k1 =
      wl.kernel("floyd_warshall_block_kernel_phase1", {1, 1, 1}, tb, kThreads * 4);
  const Ref p1_r = in(k1, AccessKind::Read, kThreads, diag, AccessPattern::Shared);
  const Ref p1_w = in(k1, AccessKind::Write, kThreads, diag, AccessPattern::Shared);
  // Phase 2: block i (i != k) relaxes tile (i, k) through (k, k), then tile (k, i) through it.
  // Block k returns at once, so tiles (i, k) and (k, i) miss one tile of column / row block k:
  // the windows bound those accesses (they start past it at k = 0), hence `guarded`.
  const std::uint32_t k2 =
      wl.kernel("floyd_warshall_block_kernel_phase2", {ts, 1, 1}, tb, 3 * kThreads * 4);
  const std::int64_t p2_count = (s - 1) * kThreads;
  auto p2 = [&](AccessKind kind, const IterationWindow& w, AccessPattern pattern, bool bound) {
    Access a(graph, kind, p2_count, tile, pattern);
    a.iterates(w.start, w.span);
    if (bound) a.guarded();
    return wl.ref(k2, a);
  };
  const Ref p2_c = p2(AccessKind::Read, column, AccessPattern::Strided, true);
  const Ref p2_b = p2(AccessKind::Read, diag, AccessPattern::Shared, false);
  const Ref p2_cw = p2(AccessKind::Write, column, AccessPattern::Strided, true);
  const Ref p2_c2 = p2(AccessKind::Read, row, AccessPattern::Shared, true);
  const Ref p2_a = p2(AccessKind::Read, diag, AccessPattern::Shared, false);
  const Ref p2_c2w = p2(AccessKind::Write, row, AccessPattern::Shared, true);
  // Phase 3: block (i, j) (not (k, k)) relaxes tile (i, j) through (i, k) and (k, j).
  const std::uint32_t k3 =
      wl.kernel("floyd_warshall_block_kernel_phase3", {ts, ts, 1}, tb, 3 * kThreads * 4);
  const std::int64_t p3_count = (s * s - 1) * kThreads;
  const Ref p3_c = wl.ref(k3, {graph, AccessKind::Read, p3_count, tile});
  const Ref p3_a = in(k3, AccessKind::Read, p3_count, column, AccessPattern::Strided);
  const Ref p3_b = in(k3, AccessKind::Read, p3_count, row, AccessPattern::Shared);
  const Ref p3_w = wl.ref(k3, {graph, AccessKind::Write, p3_count, tile});

  // The input graph as floyd_warshall_blocked_init draws it: an edge with probability 0.5,
  // weights 1..100, 0 on the diagonal, kInfinity for no edge.
  std::vector<std::int32_t> d(n * n);
  std::mt19937_64 rng(ctx.seed);
  for (std::uint64_t e = 0; e < n * n; ++e) {
    d[e] = e / n == e % n               ? 0
           : uniform_below(rng, 2) == 0 ? static_cast<std::int32_t>(1 + uniform_below(rng, 100))
                                        : kInfinity;
  }
  // Element (threadIdx.y, threadIdx.x) of tile (ti, tj), and the tile's first element.
  auto at = [n](std::uint64_t ti, std::uint64_t tj, const Thread& t) {
    return (ti * kTile + t.y) * n + tj * kTile + t.x;
  };
  auto origin = [n](std::uint64_t ti, std::uint64_t tj) { return ti * kTile * n + tj * kTile; };
  wl.body(k1, [=, &d](Block& b, std::int32_t it) {
    const auto k = static_cast<std::uint64_t>(it);
    const BlockCalc calc = block_calc(d, n, origin(k, k), origin(k, k), origin(k, k));
    b.warps([&](Warp& w) {
      w.op(p1_r, kTileIndex, [&](const Thread& t) { return at(k, k, t); });
      w.op(p1_w, kStage + kCalc + calc.stores[w.index()] + kAddress,
           [&](const Thread& t) { return at(k, k, t); });
    });
  });
  wl.body(k2, [=, &d](Block& b, std::int32_t it) {
    const auto k = static_cast<std::uint64_t>(it), i = std::uint64_t{b.x};
    if (i == k) return;
    // block_calc(C, C, B): tile (i, k) through itself and (k, k); then block_calc(C, A, C):
    // tile (k, i) through (k, k) and itself.
    const BlockCalc first = block_calc(d, n, origin(i, k), origin(i, k), origin(k, k));
    const BlockCalc second = block_calc(d, n, origin(k, i), origin(k, k), origin(k, i));
    b.warps([&](Warp& w) {
      w.op(p2_c, kSkipTest + kTileIndex, [&](const Thread& t) { return at(i, k, t); });
      w.op(p2_b, kTileIndex, [&](const Thread& t) { return at(k, k, t); });
      w.op(p2_cw, 2 * kStage + kCalc + first.stores[w.index()] + kAddress,
           [&](const Thread& t) { return at(i, k, t); });
      w.op(p2_c2, kTileIndex, [&](const Thread& t) { return at(k, i, t); });
      w.op(p2_a, kAddress, [&](const Thread& t) { return at(k, k, t); });
      w.op(p2_c2w, 2 * kStage + kCalc + second.stores[w.index()] + kAddress,
           [&](const Thread& t) { return at(k, i, t); });
    });
  });
  wl.body(k3, [=, &d](Block& b, std::int32_t it) {
    const auto k = static_cast<std::uint64_t>(it), i = std::uint64_t{b.y}, j = std::uint64_t{b.x};
    if (i == k && j == k) return;
    // Tile (i, j) through (i, k) and (k, j). Blocks (k, j) and (i, k) relax a tile of row or
    // column block k again, which phase 2 already closed under block k: no value changes, so
    // the order the GPU runs the blocks in does not matter.
    const BlockCalc calc = block_calc(d, n, origin(i, j), origin(i, k), origin(k, j));
    b.warps([&](Warp& w) {
      w.op(p3_c, kSkipTest + kTileIndex, [&](const Thread& t) { return at(i, j, t); });
      w.op(p3_a, kTileIndex, [&](const Thread& t) { return at(i, k, t); });
      w.op(p3_b, kTileIndex, [&](const Thread& t) { return at(k, j, t); });
      w.op(p3_w, 3 * kStage + kCalc + calc.stores[w.index()] + kAddress,
           [&](const Thread& t) { return at(i, j, t); });
    });
  });
  wl.cpu_write(graph);  // memcpy(device_graph, matrix, size)
  wl.loop(passes, {k1, k2, k3});
  wl.write();
}

void write_floyd_warshall(GenContext& ctx) {
  if (ctx.params.choice("variant", {"pass", "blocked"}) == "blocked") {
    return write_floyd_warshall_blocked(
        ctx, fit(ctx.footprint, kTile, [](std::uint64_t v) { return v * v * 4; }));
  }
  const std::uint64_t n = fit(ctx.footprint, kTile, [](std::uint64_t v) { return 2 * v * v * 4; });
  const std::uint64_t passes = iteration_limit(ctx, "passes", n);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  wl.metadata().params["passes"] = passes;
  const std::uint32_t dist = wl.alloc("pathDistanceBuffer", n * n * 4),
                      path = wl.alloc("pathBuffer", n * n * 4);
  const auto g = static_cast<std::uint32_t>(n / kTile);
  const std::uint32_t k = wl.kernel("floydWarshallPass", {g, g, 1}, {kTile, kTile, 1});
  const auto nn = static_cast<std::int64_t>(n);
  const std::int64_t pairs = nn * nn, tile = ((kTile - 1) * nn + kTile) * 4;
  const Ref r_yx = wl.ref(k, {dist, AccessKind::Read, pairs, tile});
  const Ref r_yk = wl.ref(
      k, Access(dist, AccessKind::Read, pairs, ((kTile - 1) * nn + 1) * 4, AccessPattern::Strided)
             .iterates({0, 4}, ((nn - 1) * nn + 1) * 4));  // column k
  const Ref r_kx =
      wl.ref(k, Access(dist, AccessKind::Read, pairs, kTile * 4, AccessPattern::Shared)
                    .iterates({0, nn * 4}, nn * 4));  // row k: a disjoint row per iteration
  const Ref w_yx = wl.ref(k, Access(dist, AccessKind::Write, pairs, tile).guarded());
  const Ref w_path = wl.ref(k, Access(path, AccessKind::Write, pairs, tile).guarded());

  // The input graph: random distances 0..200 as in the SDK sample, 0 on the diagonal.
  std::vector<std::uint32_t> d(n * n);
  std::mt19937_64 rng(ctx.seed);
  for (std::uint64_t i = 0; i < n * n; ++i) {
    d[i] = i / n == i % n ? 0 : static_cast<std::uint32_t>(uniform_below(rng, 201));
  }
  wl.body(k, [=, &d](Block& blk, std::int32_t it) {
    const auto kk = static_cast<std::uint64_t>(it);
    blk.warps([&](Warp& w) {
      auto yx = [&](const Thread& t) { return blk.gy(t) * n + blk.gx(t); };
      w.op(r_yx, kLoads, yx);
      w.op(r_yk, kNoWork, [&](const Thread& t) { return blk.gy(t) * n + kk; });
      w.op(r_kx, kNoWork, [&](const Thread& t) { return kk * n + blk.gx(t); });
      // if (tempWeight < oldWeight) { dist[y][x] = tempWeight; path[y][x] = k; }
      bool improved[32];
      for (std::uint32_t l = 0; l < w.size(); ++l) {
        const Thread& t = w.lane(l);
        const std::uint64_t y = blk.gy(t), x = blk.gx(t);
        const std::uint32_t via = d[y * n + kk] + d[kk * n + x];
        improved[l] = via < d[y * n + x];
        if (improved[l]) d[y * n + x] = via;
      }
      auto if_improved = [&](const Thread& t) {
        return improved[blk.local(t) % 32] ? yx(t) : kOff;
      };
      w.op(w_yx, kRelax, if_improved);
      w.op(w_path, kNoWork, if_improved);
    });
  });
  wl.cpu_write(dist);
  wl.cpu_write(path);
  wl.loop(passes, {k});
  wl.write();
}

const Registrar kFloydWarshall{Generator{
    "floyd-warshall",
    "one launch per intermediate vertex k over an N x N distance matrix (block 16x16, one pair "
    "per thread); N = largest multiple of 16 with 2*N*N*4 <= footprint. variant=blocked: SUV's "
    "blocked kernels, three per 16-vertex block k, one N x N matrix (N*N*4 <= footprint)",
    {{"passes", "8",
      "host-loop iterations (k = 0..passes-1) in the trace; 0 = all (N, or N/16 blocked)"},
     {"variant", "pass",
      "pass: one launch per vertex (HeCBench); blocked: three phase kernels per 16-vertex "
      "block, tiles relaxed in shared memory (SUV's eval/fw)"}},
    write_floyd_warshall,
    "iterative-disjoint",
    std::uint64_t{64} << 20,
    "HeCBench floydwarshall; SUV eval/fw (blocked)",
}};

}  // namespace
}  // namespace uvmsim::gen
