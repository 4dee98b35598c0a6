// `gramschmidt`: PolyBench/GPU GRAMSCHM, QR decomposition by modified Gram-Schmidt (SUV's GRM).
// For each column k the host launches three kernels: kernel1 (one thread) computes the norm of
// column k of A into R[k][k], kernel2 normalises column k into Q, kernel3 (threads j > k) computes
// row k of R and updates the columns right of k. Row k of R and column k of A and Q move with the
// host iteration: each iteration works on a new, disjoint part (SUV §III-B, Fig. 1b).
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 256;  // DIM_THREAD_BLOCK_X

// ---- per-thread work (compute_cost.h); DATA_TYPE is float ----
// kernel1: tid, if (tid == 0), then per row the loop step and the strength-reduced address of
// a[i][k]; nrm += a * a (FFMA) once the element is back. r[k][k] = sqrt(nrm).
constexpr Work k1First = kGlobalIndex + kGuard + kLoop + kAddress;
constexpr Work k1Next = fp32(1) + kLoop + kAddress;
constexpr Work k1Store = fp32(1) + kSqrt + kIndex2D + kAddress;
// kernel2: i, if (i < NI), &a[i][k] and &r[k][k]; q[i][k] = a / r (a division).
constexpr Work k2Loads = kGlobalIndex + kGuard + 2 * (kIndex2D + kAddress);
constexpr Work k2Store = kDivide + kAddress;
// kernel3: j, if (j > k && j < NJ); the first loop's step and the addresses of q[i][k] and
// a[i][j]; the FFMA into the register accumulator; r[k][j] = sum; the second loop's step and
// addresses; a[i][j] -= q[i][k] * r[k][j] (FFMA).
constexpr Work k3First = kGlobalIndex + cmp(2) + branch(1) + kLoop + 2 * kAddress;
constexpr Work k3Next = fp32(1) + kLoop + 2 * kAddress;
constexpr Work k3StoreR = fp32(1) + kIndex2D + kAddress;
constexpr Work k3Update = kLoop + 2 * kAddress;
constexpr Work k3StoreA = fp32(1);

void write_gramschmidt(GenContext& ctx) {
  const std::uint64_t n = fit(ctx.footprint, kBlock, [](std::uint64_t v) { return 3 * v * v * 4; });
  const std::uint64_t iters = iteration_limit(ctx, "iters", n);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  wl.metadata().params["iters"] = iters;
  const std::uint32_t a = wl.alloc("A", n * n * 4), r = wl.alloc("R", n * n * 4),
                      q = wl.alloc("Q", n * n * 4);
  const auto nn = static_cast<std::int64_t>(n);
  const std::int64_t column = ((nn - 1) * nn + 1) * 4;         // one element of every row
  const std::int64_t tb_column = ((kBlock - 1) * nn + 1) * 4;  // one element of 256 rows
  const IterationWindow col_k{{0, 4}, column};                 // column k
  const IterationWindow diag_k{{0, (nn + 1) * 4}, 4};          // R[k][k]
  const Dim3 grid = grid_1d(n, kBlock), block{kBlock, 1, 1};

  // kernel1: if (tid == 0) { for i: nrm += A[i][k]^2; R[k][k] = sqrt(nrm); }
  const std::uint32_t k1 = wl.kernel("gramschmidt_kernel1", {1, 1, 1}, block);
  const Ref k1_a = wl.ref(k1, Access(a, AccessKind::Read, nn, column, AccessPattern::Strided)
                                  .iterates(col_k.start, col_k.span));
  const Ref k1_r = wl.ref(k1, Access(r, AccessKind::Write, 1, 4).iterates(diag_k.start, 4));
  wl.body(k1, [=](Block& blk, std::int32_t it) {
    blk.warps([&](Warp& w) {
      if (w.index() != 0) return;
      auto tid0 = [&](const Thread& t, std::uint64_t e) { return blk.local(t) == 0 ? e : kOff; };
      for (std::uint64_t i = 0; i < n; ++i) {
        w.op(k1_a, i == 0 ? k1First : k1Next, [&](const Thread& t) { return tid0(t, i * n + it); });
      }
      w.op(k1_r, k1Store, [&](const Thread& t) { return tid0(t, (n + 1) * it); });
    });
  });

  // kernel2: i < NI: Q[i][k] = A[i][k] / R[k][k]
  const std::uint32_t k2 = wl.kernel("gramschmidt_kernel2", grid, block);
  const Ref k2_a = wl.ref(k2, Access(a, AccessKind::Read, nn, tb_column, AccessPattern::Strided)
                                  .iterates(col_k.start, col_k.span));
  const Ref k2_r = wl.ref(
      k2, Access(r, AccessKind::Read, nn, 4, AccessPattern::Shared).iterates(diag_k.start, 4));
  const Ref k2_q = wl.ref(k2, Access(q, AccessKind::Write, nn, tb_column, AccessPattern::Strided)
                                  .iterates(col_k.start, col_k.span));
  wl.body(k2, [=](Block& blk, std::int32_t it) {
    blk.warps([&](Warp& w) {
      auto i = [&](const Thread& t) { return blk.gx(t) < n ? blk.gx(t) : kOff; };
      w.op(k2_a, k2Loads, [&](const Thread& t) { return i(t) == kOff ? kOff : i(t) * n + it; });
      w.op(k2_r, kNoWork, [&](const Thread& t) { return i(t) == kOff ? kOff : (n + 1) * it; });
      w.op(k2_q, k2Store, [&](const Thread& t) { return i(t) == kOff ? kOff : i(t) * n + it; });
    });
  });

  // kernel3: j > k: R[k][j] = sum_i Q[i][k]*A[i][j]; then A[i][j] -= Q[i][k]*R[k][j] for all i.
  const std::uint32_t k3 = wl.kernel("gramschmidt_kernel3", grid, block);
  const Poly cols(nn - 1, -1);  // threads j = k+1 .. N-1
  const Poly cols_x_rows = cols * nn;
  const std::int64_t tb_cols = ((nn - 1) * nn + kBlock) * 4;  // 256 columns of every row
  auto q_col = [&] {
    return Access(q, AccessKind::Read, cols_x_rows, column, AccessPattern::Shared)
        .iterates(col_k.start, col_k.span);
  };
  const Ref k3_q1 = wl.ref(k3, q_col());
  const Ref k3_a1 = wl.ref(k3, {a, AccessKind::Read, cols_x_rows, tb_cols});
  const Ref k3_r = wl.ref(k3, Access(r, AccessKind::Write, cols, kBlock * 4)
                                  .iterates({4, (nn + 1) * 4}, Poly((nn - 1) * 4, -4)));
  const Ref k3_q2 = wl.ref(k3, q_col());
  const Ref k3_a2 = wl.ref(k3, {a, AccessKind::Read, cols_x_rows, tb_cols});
  const Ref k3_a3 = wl.ref(k3, {a, AccessKind::Write, cols_x_rows, tb_cols});
  wl.body(k3, [=](Block& blk, std::int32_t it) {
    const auto kk = static_cast<std::uint64_t>(it);
    blk.warps([&](Warp& w) {
      auto j = [&](const Thread& t) { return blk.gx(t) > kk && blk.gx(t) < n ? blk.gx(t) : kOff; };
      auto at = [&](std::uint64_t i, std::uint64_t col, const Thread& t) {
        return j(t) == kOff ? kOff : i * n + col;
      };
      for (std::uint64_t i = 0; i < n; ++i) {
        w.op(k3_q1, i == 0 ? k3First : k3Next, [&](const Thread& t) { return at(i, kk, t); });
        w.op(k3_a1, kNoWork, [&](const Thread& t) { return at(i, j(t), t); });
      }
      w.op(k3_r, k3StoreR, [&](const Thread& t) { return at(kk, j(t), t); });
      for (std::uint64_t i = 0; i < n; ++i) {
        w.op(k3_q2, k3Update, [&](const Thread& t) { return at(i, kk, t); });
        w.op(k3_a2, kNoWork, [&](const Thread& t) { return at(i, j(t), t); });
        w.op(k3_a3, k3StoreA, [&](const Thread& t) { return at(i, j(t), t); });
      }
    });
  });

  wl.cpu_write(a);
  wl.loop(iters, {k1, k2, k3});
  wl.write();
}

const Registrar kGramschmidt{Generator{
    "gramschmidt",
    "QR by Gram-Schmidt, three kernels per column k (host loop); N x N matrices A, R, Q with N = "
    "largest multiple of 256 with 3*N*N*4 <= footprint",
    {{"iters", "16", "host-loop iterations (columns k = 0..iters-1) in the trace; 0 = all N"}},
    write_gramschmidt,
    "iterative-disjoint",
    std::uint64_t{48} << 20,
    "PolyBench/GPU GRAMSCHM",
}};

}  // namespace
}  // namespace uvmsim::gen
