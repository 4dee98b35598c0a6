// Dense matrix multiplication C = alpha * A * B + beta * C over N x N float matrices:
//  - `gemm`: the simple one-thread-per-element kernel of PolyBench/GPU GEMM (SUV's GMM; the cuBLAS
//    SGEMM semantics of ObservUVM's GMM and Allen & Ge's sgemm);
//  - `mm-tiled`: the shared-memory tiled kernel of the CUDA samples' matrixMul (SUV's and
//    ObservUVM's MM).
//  - `hellinger`: HeCBench's Hellinger distance, the same shape as gemm with sqrt(a*b) terms;
//  - `syrk`, `syr2k`: symmetric rank-k / rank-2k updates with shared-memory tiles over the lower
//    triangle (cuBLAS-style; PolyBench SYRK/SYR2K semantics).
// In gemm and mm-tiled, the threadblocks in flight share one band of rows of A (SUV's 'Temporal'
// structure) while every threadblock walks all of B (dense, reused throughout), as in SUV Fig. 1a.
#include "traces/generators/dense_kernels.h"
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

const ParamSpec kKSampleSpec{
    "ksample", "1",
    "reduced fidelity: write runs of ~S steps of the k loop as their first step with repeat "
    "count S (1-32; 1 = every step): accesses, compute and the set of touched 4 KB pages stay "
    "the same, records drop ~S times (docs/generators.md#reduced-fidelity-k-sampling)"};

/// One thread per output element c[i][j] (j = blockIdx.x * bx + tx, i = blockIdx.y * by + ty),
/// accumulating over a row of A and a column of B in a register: gemm (PolyBench, block 32x8,
/// reads C for beta) and hellinger (HeCBench, block 16x16, sum of sqrt(a*b)). `term` is the
/// arithmetic of one k step once its two operands are loaded, `finish` what follows the last
/// step before the store of c[i][j].
void naive_product(GenContext& ctx, const char* kernel, trace::Dim3 block, bool read_c,
                   const Work& term, const Work& finish) {
  // i and j, if (i < NI && j < NJ), &c[i][j]; c[i][j] *= BETA (gemm); per k the loop step and the
  // strength-reduced addresses of a[i][k] and b[k][j] (the first k also their row-major
  // indices); the term, folded into the register accumulator, before the next step's loads.
  const Work start = kGlobalIndex2D + cmp(2) + branch(1);
  const Work read_c_work = start + kIndex2D + kAddress;
  const Work first_step = (read_c ? fp32(1) : start) + kLoop + 2 * (kIndex2D + kAddress);
  const Work next_step = term + kLoop + 2 * kAddress;
  const std::uint32_t sample = ksample_param(ctx);
  Workload wl(ctx);
  // Plain variables, not a structured binding: the lambdas below use `n`, and clang before 16
  // (Debian 12 has 14; the fuzz build uses it) cannot capture structured bindings.
  const SquareOperands ops = square_operands(ctx, wl, 32);
  const std::uint64_t n = ops.n;
  const std::uint32_t a = ops.a, b = ops.b, c = ops.c;
  const std::uint32_t k = wl.kernel(
      kernel, {static_cast<std::uint32_t>(n / block.x), static_cast<std::uint32_t>(n / block.y), 1},
      block);
  const auto nn = static_cast<std::int64_t>(n), bx = std::int64_t{block.x},
             by = std::int64_t{block.y};
  const Poly c_tile = ((by - 1) * nn + bx) * 4;  // by rows x bx columns of C
  std::optional<Ref> rc;
  if (read_c) rc = wl.ref(k, {c, AccessKind::Read, nn * nn, c_tile});
  const Ref ra = wl.ref(k, {a, AccessKind::Read, nn * nn * nn, by * nn * 4, AccessPattern::Tiled});
  const Ref rb = wl.ref(
      k, {b, AccessKind::Read, nn * nn * nn, ((nn - 1) * nn + bx) * 4, AccessPattern::Shared});
  const Ref wc = wl.ref(k, {c, AccessKind::Write, nn * nn, c_tile});
  const std::uint32_t rows_per_warp = 32 / block.x;
  wl.body(k, [=](Block& blk, std::int32_t) {
    blk.warps([&](Warp& w) {
      auto i = [&](const Thread& t) { return blk.gy(t); };
      auto j = [&](const Thread& t) { return blk.gx(t); };
      if (rc) w.op(*rc, read_c_work, [&](const Thread& t) { return i(t) * n + j(t); });
      // a[i][k] = A[i * n + k], b[k][j] = B[k * n + j]: the per-lane parts once per warp, so a
      // step costs an add per lane rather than the index functions (a third of the time).
      std::uint64_t a_row[32], b_col[32];
      for (std::uint32_t l = 0; l < w.size(); ++l) {
        a_row[l] = i(w.lane(l)) * n;
        b_col[l] = j(w.lane(l));
      }
      // Sampling: step 0 as it is (its work differs), then each run of steps from one with
      // (k + phase) % sample == 0 to the next is written as its first step with the run's length
      // as repeat count: the simulator charges every step's compute and load latency and the
      // accesses add up, but each warp touches only the first step's pages of B. The phase moves
      // by one per block column and warp row, so the warps of a wave of blocks that share a page
      // of B (32 block columns for gemm) start their runs at different steps and together touch
      // every page the full kernel touches at about the time it does (docs/generators.md).
      const std::uint64_t phase = (blk.x + blk.gy(w.lane(0)) / rows_per_warp) % sample;
      for (std::uint64_t kk = 0; kk < n;) {
        const std::uint64_t end = sampled_run_end(kk, n, phase, sample);
        const auto run = static_cast<std::uint32_t>(end - kk);
        w.op_lane_repeat(ra, kk == 0 ? first_step : next_step, run,
                         [&](std::uint32_t l) { return a_row[l] + kk; });
        w.op_lane_repeat(rb, kNoWork, run, [&](std::uint32_t l) { return kk * n + b_col[l]; });
        kk = end;
      }
      w.op(wc, term + finish, [&](const Thread& t) { return i(t) * n + j(t); });
    });
  });
  wl.cpu_write({a, b, c});
  wl.launch(k);
  wl.write();
}

// gemm: c += ALPHA * a * b (FMUL, FFMA); c's address is already known for the store.
void write_gemm(GenContext& ctx) {
  naive_product(ctx, "gemm_kernel", {32, 8, 1}, true, fp32(2), kNoWork);
}

// hellinger: sum += sqrtf(a * b) (FMUL, sqrtf, FADD); c = sqrtf(1 - sum) and its address.
void write_hellinger(GenContext& ctx) {
  naive_product(ctx, "hellinger", {16, 16, 1}, false, fp32(2) + kSqrt,
                fp32(1) + kSqrt + kIndex2D + kAddress);
}

/// A shared-memory tile operand: each step every thread loads one element of a tile x tile tile.
/// A row band walks the columns of rows [band*tile, +tile) (A in C = A*B); a column band walks the
/// rows of columns [band*tile, +tile) (B). `band` is blockIdx.y (by_y) or blockIdx.x.
struct Operand {
  std::uint32_t alloc;
  bool row_band;
  bool by_y;
};

/// Tiled product of N x N matrices into `out` (block tile x tile, N / tile steps): mm-tiled,
/// syrk, syr2k. With `lower`, blocks above the diagonal (blockIdx.x > blockIdx.y) exit at once,
/// as the triangular cuBLAS kernels do.
void tiled_product(Workload& wl, const char* name, std::uint64_t n, std::uint32_t tile,
                   const std::vector<Operand>& ops, std::uint32_t out, bool read_out, bool lower,
                   std::uint32_t sample) {
  const auto g = static_cast<std::uint32_t>(n / tile);
  const std::uint32_t k = wl.kernel(name, {g, g, 1}, {tile, tile, 1},
                                    static_cast<std::uint32_t>(ops.size()) * tile * tile * 4);
  const auto nn = static_cast<std::int64_t>(n), t = static_cast<std::int64_t>(tile);
  const std::int64_t blocks = lower ? std::int64_t{g} * (g + 1) / 2 : std::int64_t{g} * g;
  const std::int64_t threads = blocks * t * t, loads = threads * (nn / t);
  std::vector<Ref> refs;
  for (const Operand& op : ops) {
    refs.push_back(op.row_band ? wl.ref(k, {op.alloc, AccessKind::Read, loads, t * nn * 4,
                                            AccessPattern::Tiled})
                               : wl.ref(k, {op.alloc, AccessKind::Read, loads,
                                            ((nn - 1) * nn + t) * 4, AccessPattern::Shared}));
  }
  const Poly out_tile = ((t - 1) * nn + t) * 4;
  // Per step every thread loads one element of each operand tile (the loop step and, per operand,
  // the advanced tile origin and the address; the first step also the 2-D index and, for the
  // triangular kernels, the block's early-exit test), stores them to shared memory, and after a
  // barrier multiplies the tiles: per k one shared load per operand and one FFMA per operand pair;
  // a second barrier ends the step. After the last step: the output's index and address.
  const auto nops = static_cast<std::uint32_t>(ops.size());
  const Work step_loads = kLoop + nops * (int_ops(1) + kAddress);
  const Work first_loads = kGlobalIndex2D + (lower ? kGuard : kNoWork) + step_loads;
  const Work multiply = shared(nops) + 2 * kBarrier + tile * (shared(nops) + fp32(nops / 2));
  const Work out_address = kIndex2D + kAddress;
  std::optional<Ref> rout;
  if (read_out) rout = wl.ref(k, {out, AccessKind::Read, threads, out_tile});
  const Ref wout = wl.ref(k, {out, AccessKind::Write, threads, out_tile});
  wl.body(k, [=](Block& blk, std::int32_t) {
    if (lower && blk.x > blk.y) return;
    // Sampling as in naive_product, with runs of steps for the whole block (its warps load one
    // tile together); the phase moves by one per block row and column, so the blocks sharing an
    // operand band start their runs at different steps.
    const std::uint64_t phase = (std::uint64_t{blk.x} + blk.y) % sample;
    const std::uint64_t steps = n / tile;
    blk.warps([&](Warp& w) {
      for (std::uint64_t step = 0; step < steps;) {
        const std::uint64_t end = sampled_run_end(step, steps, phase, sample);
        const auto run = static_cast<std::uint32_t>(end - step);
        for (std::size_t o = 0; o < ops.size(); ++o) {
          const std::uint64_t band = (ops[o].by_y ? blk.y : blk.x) * std::uint64_t{tile};
          const Work work = o > 0 ? kNoWork : step == 0 ? first_loads : multiply + step_loads;
          w.op_lane_repeat(refs[o], work, run, [&](std::uint32_t l) {
            const Thread& th = w.lane(l);
            return ops[o].row_band ? (band + th.y) * n + step * tile + th.x
                                   : (step * tile + th.y) * n + band + th.x;
          });
        }
        step = end;
      }
      auto c = [&](const Thread& th) {
        return (std::uint64_t{tile} * blk.y + th.y) * n + std::uint64_t{tile} * blk.x + th.x;
      };
      // C = alpha * sum + beta * C (FMUL, FFMA) when C is read.
      if (rout) w.op(*rout, multiply + out_address, c);
      w.op(wout, rout ? fp32(2) : multiply + out_address, c);
    });
  });
}

std::uint32_t tile_param(GenContext& ctx) {
  const auto tile = static_cast<std::uint32_t>(ctx.params.integer("tile", 8, 32));
  if (tile != 8 && tile != 16 && tile != 32) ctx.params.fail("tile", "expected 8, 16 or 32");
  return tile;
}

void write_mm_tiled(GenContext& ctx) {
  const std::uint32_t tile = tile_param(ctx);
  const std::uint32_t sample = ksample_param(ctx);
  Workload wl(ctx);
  const auto [n, a, b, c] = square_operands(ctx, wl, tile);
  tiled_product(wl, "matrixMul", n, tile, {{a, true, true}, {b, false, false}}, c, false, false,
                sample);
  wl.cpu_write(a);
  wl.cpu_write(b);
  wl.launch(0);
  wl.write();
}

/// C = alpha * A * A^T + beta * C (syrk) or alpha * (A * B^T + B * A^T) + beta * C (syr2k), lower
/// triangle, N x N.
void write_syrk(GenContext& ctx, bool two) {
  const std::uint32_t tile = tile_param(ctx);
  const std::uint32_t sample = ksample_param(ctx);
  const std::uint64_t n = square_order(ctx.footprint, two ? 3 : 2, 4, tile);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t a = wl.alloc("A", n * n * 4);
  const std::uint32_t b = two ? wl.alloc("B", n * n * 4) : a;
  const std::uint32_t c = wl.alloc("C", n * n * 4);
  // C[i][j] += A[i][k] * A[j][k]: both operands are row bands, of block rows i and j.
  std::vector<Operand> ops = {{a, true, true}, {b, true, false}};
  if (two) ops.insert(ops.end(), {{b, true, true}, {a, true, false}});
  tiled_product(wl, two ? "syr2k_kernel" : "syrk_kernel", n, tile, ops, c, true, true, sample);
  for (std::uint32_t id : {a, b, c}) {
    if (id != b || two) wl.cpu_write(id);
  }
  wl.launch(0);
  wl.write();
}

const Registrar kGemm{Generator{
    "gemm",
    "C = alpha*A*B + beta*C, one thread per C element (block 32x8), k loop over a row of A "
    "and a column of B; N = largest multiple of 32 with 3*N*N*4 <= footprint",
    {kKSampleSpec},
    write_gemm,
    "tiled-reuse",
    std::uint64_t{12} << 20,
    "PolyBench/GPU GEMM (cuBLAS SGEMM semantics)",
}};

const Registrar kMmTiled{Generator{
    "mm-tiled",
    "shared-memory tiled C = A*B (block tile x tile), each step loads one tile of A and of B; "
    "N = largest multiple of tile with 3*N*N*4 <= footprint",
    {{"tile", "32", "tile edge = block edge (8, 16 or 32)"}, kKSampleSpec},
    write_mm_tiled,
    "tiled-reuse",
    std::uint64_t{48} << 20,
    "CUDA samples matrixMul",
}};

const Registrar kHellinger{Generator{
    "hellinger",
    "Hellinger distance c[i][j] = sqrt(1 - sum_k sqrt(a[i][k]*b[k][j])), one thread per element "
    "(block 16x16); N = largest multiple of 32 with 3*N*N*4 <= footprint",
    {kKSampleSpec},
    write_hellinger,
    "tiled-reuse",
    std::uint64_t{8} << 20,
    "HeCBench hellinger",
}};

const Registrar kSyrk{Generator{
    "syrk",
    "symmetric rank-k update C = a*A*A^T + b*C, lower triangle, shared-memory tiles; N = largest "
    "multiple of tile with 2*N*N*4 <= footprint",
    {{"tile", "32", "tile edge = block edge (8, 16 or 32)"}, kKSampleSpec},
    [](GenContext& ctx) { write_syrk(ctx, false); },
    "tiled-reuse",
    std::uint64_t{32} << 20,
    "cuBLAS SSYRK / PolyBench SYRK",
}};

const Registrar kSyr2k{Generator{
    "syr2k",
    "symmetric rank-2k update C = a*(A*B^T + B*A^T) + b*C, lower triangle, shared-memory tiles; "
    "N = largest multiple of tile with 3*N*N*4 <= footprint",
    {{"tile", "32", "tile edge = block edge (8, 16 or 32)"}, kKSampleSpec},
    [](GenContext& ctx) { write_syrk(ctx, true); },
    "tiled-reuse",
    std::uint64_t{24} << 20,
    "cuBLAS SSYR2K / PolyBench SYR2K",
}};

}  // namespace
}  // namespace uvmsim::gen
