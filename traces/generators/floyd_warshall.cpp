// `floyd-warshall`: all-pairs shortest paths as in HeCBench's floydwarshall (from the AMD APP SDK;
// SUV's FW): the host launches one pass per intermediate vertex k, and pass k relaxes every pair
// (y, x) through k. Each pass reads the whole distance matrix, but the row k it reads for every
// pair moves to a new, disjoint part of the matrix each iteration, which is what SUV prefetches at
// iteration boundaries (§V-C, Algorithm 2). Writes happen only where a path improves; the
// generator runs the algorithm on a random dense graph to know where.
#include <random>

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

void write_floyd_warshall(GenContext& ctx) {
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
    "per thread); N = largest multiple of 16 with 2*N*N*4 <= footprint",
    {{"passes", "8", "host-loop iterations (k = 0..passes-1) in the trace; 0 = all N"}},
    write_floyd_warshall,
    "iterative-disjoint",
    std::uint64_t{64} << 20,
    "HeCBench floydwarshall",
}};

}  // namespace
}  // namespace uvmsim::gen
