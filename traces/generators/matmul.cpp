// Dense matrix multiplication C = alpha * A * B + beta * C over N x N float matrices:
//  - `gemm`: the simple one-thread-per-element kernel of PolyBench/GPU GEMM (SUV's GMM; the cuBLAS
//    SGEMM semantics of ObservUVM's GMM and Allen & Ge's sgemm);
//  - `mm-tiled`: the shared-memory tiled kernel of the CUDA samples' matrixMul (SUV's and
//    ObservUVM's MM).
// In both, the threadblocks in flight share one band of rows of A (SUV's 'Temporal' structure)
// while every threadblock walks all of B (dense, reused throughout), as in SUV Fig. 1a.
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlockX = 32, kBlockY = 8;  // PolyBench/GPU DIM_THREAD_BLOCK_X/Y

void write_gemm(GenContext& ctx) {
  const std::uint64_t n = square_order(ctx.footprint, 3, 4, 32);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t a = wl.alloc("A", n * n * 4), b = wl.alloc("B", n * n * 4),
                      c = wl.alloc("C", n * n * 4);
  const std::uint32_t k = wl.kernel(
      "gemm_kernel",
      {static_cast<std::uint32_t>(n / kBlockX), static_cast<std::uint32_t>(n / kBlockY), 1},
      {kBlockX, kBlockY, 1});
  const auto nn = static_cast<std::int64_t>(n);
  const Affine c_tile = ((kBlockY - 1) * nn + kBlockX) * 4;  // 8 rows x 32 columns of C
  // c[i][j] is kept in a register across the k loop: read once (beta), written once.
  const Ref rc = wl.ref(k, {c, AccessKind::Read, nn * nn, c_tile});
  const Ref ra =
      wl.ref(k, {a, AccessKind::Read, nn * nn * nn, kBlockY * nn * 4, AccessPattern::Tiled});
  const Ref rb = wl.ref(
      k, {b, AccessKind::Read, nn * nn * nn, ((nn - 1) * nn + kBlockX) * 4, AccessPattern::Shared});
  const Ref wc = wl.ref(k, {c, AccessKind::Write, nn * nn, c_tile});
  wl.body(k, [=](Block& blk, std::int32_t) {
    blk.warps([&](Warp& w) {
      // j = blockIdx.x * 32 + threadIdx.x, i = blockIdx.y * 8 + threadIdx.y
      auto i = [&](const Thread& t) { return blk.gy(t); };
      auto j = [&](const Thread& t) { return blk.gx(t); };
      w.op(rc, kIndexGap, [&](const Thread& t) { return i(t) * n + j(t); });
      for (std::uint64_t kk = 0; kk < n; ++kk) {
        w.op(ra, kAluGap, [&](const Thread& t) { return i(t) * n + kk; });
        w.op(rb, 0, [&](const Thread& t) { return kk * n + j(t); });
      }
      w.op(wc, kAluGap, [&](const Thread& t) { return i(t) * n + j(t); });
    });
  });
  wl.cpu_write(a);
  wl.cpu_write(b);
  wl.cpu_write(c);
  wl.launch(k);
  wl.write();
}

void write_mm_tiled(GenContext& ctx) {
  const auto tile = static_cast<std::uint32_t>(ctx.params.integer("tile", 8, 32));
  if (tile != 8 && tile != 16 && tile != 32) ctx.params.fail("tile", "expected 8, 16 or 32");
  const std::uint64_t n = square_order(ctx.footprint, 3, 4, tile);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t a = wl.alloc("A", n * n * 4), b = wl.alloc("B", n * n * 4),
                      c = wl.alloc("C", n * n * 4);
  const auto g = static_cast<std::uint32_t>(n / tile);
  const std::uint32_t k =
      wl.kernel("matrixMul", {g, g, 1}, {tile, tile, 1}, 2 * tile * tile * 4);  // As, Bs
  const auto nn = static_cast<std::int64_t>(n), t = static_cast<std::int64_t>(tile);
  const std::int64_t loads = nn * nn * (nn / t);  // one element of each tile per thread per step
  const Ref ra = wl.ref(k, {a, AccessKind::Read, loads, t * nn * 4, AccessPattern::Tiled});
  const Ref rb =
      wl.ref(k, {b, AccessKind::Read, loads, ((nn - 1) * nn + t) * 4, AccessPattern::Shared});
  const Ref wc = wl.ref(k, {c, AccessKind::Write, nn * nn, ((t - 1) * nn + t) * 4});
  wl.body(k, [=](Block& blk, std::int32_t) {
    blk.warps([&](Warp& w) {
      const std::uint64_t a_begin = n * tile * blk.y, b_begin = std::uint64_t{tile} * blk.x;
      for (std::uint64_t step = 0; step < n / tile; ++step) {
        // As[ty][tx] = A[a + N*ty + tx]; Bs[ty][tx] = B[b + N*ty + tx]; __syncthreads()
        w.op(ra, step == 0 ? kIndexGap : 2 * tile * kAluGap,
             [&](const Thread& th) { return a_begin + step * tile + n * th.y + th.x; });
        w.op(rb, 0, [&](const Thread& th) { return b_begin + step * tile * n + n * th.y + th.x; });
      }
      w.op(wc, 2 * tile * kAluGap, [&](const Thread& th) {
        return n * tile * blk.y + std::uint64_t{tile} * blk.x + n * th.y + th.x;
      });
    });
  });
  wl.cpu_write(a);
  wl.cpu_write(b);
  wl.launch(k);
  wl.write();
}

const Registrar kGemm{Generator{
    "gemm",
    "C = alpha*A*B + beta*C, one thread per C element (block 32x8), k loop over a row of A "
    "and a column of B; N = largest multiple of 32 with 3*N*N*4 <= footprint",
    {},
    write_gemm,
    "tiled-reuse",
    std::uint64_t{12} << 20,
    "PolyBench/GPU GEMM (cuBLAS SGEMM semantics)",
}};

const Registrar kMmTiled{Generator{
    "mm-tiled",
    "shared-memory tiled C = A*B (block tile x tile), each step loads one tile of A and of B; "
    "N = largest multiple of tile with 3*N*N*4 <= footprint",
    {{"tile", "32", "tile edge = block edge (8, 16 or 32)"}},
    write_mm_tiled,
    "tiled-reuse",
    std::uint64_t{48} << 20,
    "CUDA samples matrixMul",
}};

}  // namespace
}  // namespace uvmsim::gen
