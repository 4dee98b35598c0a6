// PolyBench/GPU kernels with host loops or stencils (one thread per element, block 32x8 as in
// PolyBench/GPU's DIM_THREAD_BLOCK_X/Y, N x N float matrices):
//  - `lu`: LU decomposition, per pivot k a row-scaling kernel and a trailing-matrix update; the
//    pivot row and column move with k, the trailing matrix shrinks (triangular loop nest);
//  - `doitgen`: multiresolution analysis, per r a kernel computing sum[r] = A[r] * C4 and one
//    copying it back to A[r] (SUV's DTG: A and sum walked in disjoint slices, C4 reused);
//  - `2dconv`: 3x3 convolution, repeated `iters` times over the same arrays (SUV's and ObservUVM's
//    2DC: a stream that cycles through the arrays);
//  - `fdtd-2d`: 2-D finite-difference time domain, three stencil kernels per time step over ex,
//    ey, hz (SUV's FDT).
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBx = 32, kBy = 8;
constexpr trace::Dim3 kBlock2d{kBx, kBy, 1};

// ---- per-thread work (compute_cost.h); DATA_TYPE is float ----
// The 2-D index (j, i) and the kernel's guard over both (two compares, one branch).
constexpr Work kStart2D = kGlobalIndex2D + cmp(2) + branch(1);
// &X[i * N + j]: the row-major index and the address.
constexpr Work kElement = kIndex2D + kAddress;
// A neighbour one row away from an element already addressed: add or subtract the row pitch
// (64-bit). Column neighbours are immediate offsets of the load and cost nothing.
constexpr Work kRowNeighbour = int_ops(2);
// lu_kernel1: j, if (j > k && j < N), &A[k][j] and &A[k][k]; A[k][j] / A[k][k].
constexpr Work kLu1Loads = kGlobalIndex + cmp(2) + branch(1) + 2 * kElement;
constexpr Work kLu1Store = kDivide;
// lu_kernel2: (j, i), if (i > k && j > k && i < N && j < N), &A[i][j], &A[i][k], &A[k][j]; FFMA.
constexpr Work kLu2Loads = kGlobalIndex2D + cmp(4) + branch(1) + 3 * kElement;
constexpr Work kLu2Store = fp32(1);
// doitgen_kernel1: (p, q), if (p < NP && q < NQ), the slice offset; per s the loop step and the
// addresses of A[r][q][s] and C4[s][p] (the first s also their indices); the FFMA into the
// register sum; sum[r][q][p] and its address.
constexpr Work kDoitgenFirst = kStart2D + imad(1) + kLoop + 2 * kElement;
constexpr Work kDoitgenNext = fp32(1) + kLoop + 2 * kAddress;
constexpr Work kDoitgenStore = fp32(1) + kElement;
// doitgen_kernel2: the copy A[r][q][p] = sum[r][q][p]: the source, then the destination address.
constexpr Work kCopyLoad = kStart2D + imad(1) + kElement;
constexpr Work kCopyStore = kAddress;
// Convolution2D_kernel: (j, i), if (0 < i < NI-1 && 0 < j < NJ-1), &A[i][j] and the rows above
// and below; nine FMUL/FFMA with the float coefficients and &B[i][j].
constexpr Work kConvLoads = kGlobalIndex2D + cmp(4) + branch(1) + kElement + 2 * kRowNeighbour;
constexpr Work kConvStore = fp32(9) + kElement;
// fdtd_step1: (j, i), if (i < NX && j < NY), if (i == 0): &_fict_[t], &ey[i][j], &hz[i][j],
// &hz[i-1][j]; ey - 0.5f * (hz - hz_north) (FADD, FFMA).
constexpr Work kStep1Loads = kStart2D + kGuard + kAddress + 2 * kElement + kRowNeighbour;
// fdtd_step2: if (j > 0): &ex[i][j], &hz[i][j] (hz[i][j-1] is an immediate offset).
constexpr Work kStep2Loads = kStart2D + kGuard + 2 * kElement;
constexpr Work kStepUpdate = fp32(2);
// fdtd_step3: &hz[i][j], &ex[i][j] (and j+1), &ey[i][j], &ey[i+1][j]; hz - 0.7f * (ex_e - ex +
// ey_s - ey) (three FADD, FFMA).
constexpr Work kStep3Loads = kStart2D + 3 * kElement + kRowNeighbour;
constexpr Work kStep3Update = fp32(4);

trace::Dim3 grid_2d(std::uint64_t cols, std::uint64_t rows) {
  return {static_cast<std::uint32_t>(ceil_div(cols, kBx)),
          static_cast<std::uint32_t>(ceil_div(rows, kBy)), 1};
}

void write_lu(GenContext& ctx) {
  const std::uint64_t n = fit(ctx.footprint, 256, [](std::uint64_t v) { return v * v * 4; });
  const std::uint64_t iters = iteration_limit(ctx, "iters", n);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  wl.metadata().params["iters"] = iters;
  const std::uint32_t a = wl.alloc("A", n * n * 4);
  const auto nn = static_cast<std::int64_t>(n);
  const Poly rest(nn - 1, -1);  // n - 1 - k: columns / rows right of / below k
  const IterationWindow row_k{{4, (nn + 1) * 4}, rest * 4};  // A[k][k+1 .. n-1]
  const IterationWindow diag{{0, (nn + 1) * 4}, 4};          // A[k][k]
  // lu_kernel1: j > k: A[k][j] /= A[k][k]
  const std::uint32_t k1 = wl.kernel("lu_kernel1", grid_1d(n, 256), {256, 1, 1});
  const Ref k1_a =
      wl.ref(k1, Access(a, AccessKind::Read, rest, 256 * 4).iterates(row_k.start, row_k.span));
  const Ref k1_d = wl.ref(
      k1,
      Access(a, AccessKind::Read, rest, 4, AccessPattern::Shared).iterates(diag.start, diag.span));
  const Ref k1_w =
      wl.ref(k1, Access(a, AccessKind::Write, rest, 256 * 4).iterates(row_k.start, row_k.span));
  wl.body(k1, [=](Block& b, std::int32_t it) {
    const auto k = static_cast<std::uint64_t>(it);
    b.warps([&](Warp& w) {
      auto j = [&](const Thread& t) { return b.gx(t) > k && b.gx(t) < n ? k * n + b.gx(t) : kOff; };
      w.op(k1_a, kLu1Loads, j);
      w.op(k1_d, kNoWork, [&](const Thread& t) { return j(t) == kOff ? kOff : k * n + k; });
      w.op(k1_w, kLu1Store, j);
    });
  });
  // lu_kernel2: i > k, j > k: A[i][j] -= A[i][k] * A[k][j]
  const std::uint32_t k2 = wl.kernel("lu_kernel2", grid_2d(n, n), kBlock2d);
  const Poly trailing = rest * rest;
  const std::int64_t tile = ((kBy - 1) * nn + kBx) * 4;
  const Ref k2_ij = wl.ref(k2, {a, AccessKind::Read, trailing, tile});
  const Ref k2_ik = wl.ref(
      k2, Access(a, AccessKind::Read, trailing, ((kBy - 1) * nn + 1) * 4, AccessPattern::Strided)
              .iterates({nn * 4, (nn + 1) * 4}, Poly(((nn - 2) * nn + 1) * 4, -nn * 4)));
  const Ref k2_kj = wl.ref(k2, Access(a, AccessKind::Read, trailing, kBx * 4, AccessPattern::Shared)
                                   .iterates(row_k.start, row_k.span));
  const Ref k2_w = wl.ref(k2, {a, AccessKind::Write, trailing, tile});
  wl.body(k2, [=](Block& b, std::int32_t it) {
    const auto k = static_cast<std::uint64_t>(it);
    b.warps([&](Warp& w) {
      auto live = [&](const Thread& t) {
        return b.gy(t) > k && b.gx(t) > k && b.gy(t) < n && b.gx(t) < n;
      };
      auto at = [&](const Thread& t, std::uint64_t i, std::uint64_t j) {
        return live(t) ? i * n + j : kOff;
      };
      w.op(k2_ij, kLu2Loads, [&](const Thread& t) { return at(t, b.gy(t), b.gx(t)); });
      w.op(k2_ik, kNoWork, [&](const Thread& t) { return at(t, b.gy(t), k); });
      w.op(k2_kj, kNoWork, [&](const Thread& t) { return at(t, k, b.gx(t)); });
      w.op(k2_w, kLu2Store, [&](const Thread& t) { return at(t, b.gy(t), b.gx(t)); });
    });
  });
  wl.cpu_write(a);
  wl.loop(iters, {k1, k2});
  wl.write();
}

void write_doitgen(GenContext& ctx) {
  // A and sum are NR x NQ x NP with NR = NQ = NP = N, C4 is NP x NP.
  const std::uint64_t n =
      fit(ctx.footprint, 32, [](std::uint64_t v) { return (2 * v * v * v + v * v) * 4; });
  const std::uint64_t iters = iteration_limit(ctx, "iters", n);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  wl.metadata().params["iters"] = iters;
  const std::uint32_t a = wl.alloc("A", n * n * n * 4), c4 = wl.alloc("C4", n * n * 4),
                      sum = wl.alloc("sum", n * n * n * 4);
  const auto nn = static_cast<std::int64_t>(n);
  const std::int64_t slice = nn * nn * 4, tile = ((kBy - 1) * nn + kBx) * 4;
  auto sliced = [&](std::uint32_t alloc, AccessKind kind, Poly count, Poly extent,
                    AccessPattern p = AccessPattern::Streaming) {
    return Access(alloc, kind, count, extent, p).iterates({0, slice}, slice);  // slice r
  };
  // kernel1: sum[r][q][p] = sum_s A[r][q][s] * C4[s][p]
  const std::uint32_t k1 = wl.kernel("doitgen_kernel1", grid_2d(n, n), kBlock2d);
  const Ref k1_a =
      wl.ref(k1, sliced(a, AccessKind::Read, nn * nn * nn, kBy * nn * 4, AccessPattern::Tiled));
  const Ref k1_c = wl.ref(
      k1, {c4, AccessKind::Read, nn * nn * nn, ((nn - 1) * nn + kBx) * 4, AccessPattern::Shared});
  const Ref k1_w = wl.ref(k1, sliced(sum, AccessKind::Write, nn * nn, tile));
  wl.body(k1, [=](Block& b, std::int32_t it) {
    const std::uint64_t r = static_cast<std::uint64_t>(it) * n * n;
    b.warps([&](Warp& w) {
      for (std::uint64_t s = 0; s < n; ++s) {
        w.op(k1_a, s == 0 ? kDoitgenFirst : kDoitgenNext,
             [&](const Thread& t) { return r + b.gy(t) * n + s; });
        w.op(k1_c, kNoWork, [&](const Thread& t) { return s * n + b.gx(t); });
      }
      w.op(k1_w, kDoitgenStore, [&](const Thread& t) { return r + b.gy(t) * n + b.gx(t); });
    });
  });
  // kernel2: A[r][q][p] = sum[r][q][p]
  const std::uint32_t k2 = wl.kernel("doitgen_kernel2", grid_2d(n, n), kBlock2d);
  const Ref k2_r = wl.ref(k2, sliced(sum, AccessKind::Read, nn * nn, tile));
  const Ref k2_w = wl.ref(k2, sliced(a, AccessKind::Write, nn * nn, tile));
  wl.body(k2, [=](Block& b, std::int32_t it) {
    const std::uint64_t r = static_cast<std::uint64_t>(it) * n * n;
    b.warps([&](Warp& w) {
      auto e = [&](const Thread& t) { return r + b.gy(t) * n + b.gx(t); };
      w.op(k2_r, kCopyLoad, e);
      w.op(k2_w, kCopyStore, e);
    });
  });
  wl.cpu_write(a);
  wl.cpu_write(c4);
  wl.loop(iters, {k1, k2});
  wl.write();
}

void write_2dconv(GenContext& ctx) {
  const std::uint64_t iters = ctx.params.integer("iters", 1, 100000);
  const bool init_b = ctx.params.choice("init", {"a", "ab"}) == "ab";
  const std::uint64_t n = fit(ctx.footprint, 32, [](std::uint64_t v) { return 2 * v * v * 4; });
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t a = wl.alloc("A", n * n * 4), bmat = wl.alloc("B", n * n * 4);
  const std::uint32_t k = wl.kernel("Convolution2D_kernel", grid_2d(n, n), kBlock2d);
  const auto nn = static_cast<std::int64_t>(n);
  const std::int64_t inner = (nn - 2) * (nn - 2), tile = ((kBy - 1) * nn + kBx) * 4;
  // B[i][j] = c11*A[i-1][j-1] + c12*A[i][j-1] + c13*A[i+1][j-1] + c21*A[i-1][j] + ... +
  // c33*A[i+1][j+1]
  std::vector<std::pair<int, int>> taps;
  std::vector<Ref> reads;
  for (int dj = -1; dj <= 1; ++dj) {
    for (int di = -1; di <= 1; ++di) {
      taps.emplace_back(di, dj);
      reads.push_back(wl.ref(k, {a, AccessKind::Read, inner, tile}));
    }
  }
  const Ref w_b = wl.ref(k, {bmat, AccessKind::Write, inner, tile});
  wl.body(k, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      auto inside = [&](const Thread& t) {
        return b.gy(t) > 0 && b.gx(t) > 0 && b.gy(t) < n - 1 && b.gx(t) < n - 1;
      };
      for (std::size_t r = 0; r < reads.size(); ++r) {
        w.op(reads[r], r == 0 ? kConvLoads : kNoWork, [&](const Thread& t) {
          return inside(t) ? (b.gy(t) + taps[r].first) * n + b.gx(t) + taps[r].second : kOff;
        });
      }
      w.op(w_b, kConvStore,
           [&](const Thread& t) { return inside(t) ? b.gy(t) * n + b.gx(t) : kOff; });
    });
  });
  wl.cpu_write(a);
  // SUV's artifact (eval/2dconv/main.cu, init()) also zeroes B on the host, so B migrates to
  // the GPU with A instead of being zero-filled there.
  if (init_b) wl.cpu_write(bmat);
  wl.loop(iters, {k});
  wl.write();
}

void write_fdtd2d(GenContext& ctx) {
  const std::uint64_t tmax = ctx.params.integer("tmax", 1, 100000);
  const std::uint64_t n =
      fit(ctx.footprint, 32, [&](std::uint64_t v) { return 3 * v * v * 4 + tmax * 4; });
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t fict = wl.alloc("_fict_", tmax * 4), ex = wl.alloc("ex", n * n * 4),
                      ey = wl.alloc("ey", n * n * 4), hz = wl.alloc("hz", n * n * 4);
  const auto nn = static_cast<std::int64_t>(n);
  const std::int64_t tile = ((kBy - 1) * nn + kBx) * 4;
  const Dim3 grid = grid_2d(n, n);
  auto el = [n](const Block& b, const Thread& t, std::int64_t di, std::int64_t dj) {
    return (b.gy(t) + di) * n + b.gx(t) + dj;
  };
  // step1: ey[i][j] = i == 0 ? _fict_[t] : ey[i][j] - 0.5*(hz[i][j] - hz[i-1][j])
  const std::uint32_t k1 = wl.kernel("fdtd_step1_kernel", grid, kBlock2d);
  const std::int64_t below = (nn - 1) * nn;  // threads with i > 0
  const Ref s1_f =
      wl.ref(k1, Access(fict, AccessKind::Read, nn, 4, AccessPattern::Shared).iterates({0, 4}, 4));
  const Ref s1_ey = wl.ref(k1, {ey, AccessKind::Read, below, tile});
  const Ref s1_hz = wl.ref(k1, {hz, AccessKind::Read, below, tile});
  const Ref s1_hzn = wl.ref(k1, {hz, AccessKind::Read, below, tile});
  const Ref s1_w = wl.ref(k1, {ey, AccessKind::Write, nn * nn, tile});
  wl.body(k1, [=](Block& b, std::int32_t it) {
    b.warps([&](Warp& w) {
      auto top = [&](const Thread& t) { return b.gy(t) == 0; };
      w.op(s1_f, kStep1Loads,
           [&](const Thread& t) { return top(t) ? static_cast<std::uint64_t>(it) : kOff; });
      w.op(s1_ey, kNoWork, [&](const Thread& t) { return top(t) ? kOff : el(b, t, 0, 0); });
      w.op(s1_hz, kNoWork, [&](const Thread& t) { return top(t) ? kOff : el(b, t, 0, 0); });
      w.op(s1_hzn, kNoWork, [&](const Thread& t) { return top(t) ? kOff : el(b, t, -1, 0); });
      w.op(s1_w, kStepUpdate, [&](const Thread& t) { return el(b, t, 0, 0); });
    });
  });
  // step2: j > 0: ex[i][j] = ex[i][j] - 0.5*(hz[i][j] - hz[i][j-1])
  const std::uint32_t k2 = wl.kernel("fdtd_step2_kernel", grid, kBlock2d);
  const std::int64_t right = nn * (nn - 1);
  const Ref s2_ex = wl.ref(k2, {ex, AccessKind::Read, right, tile});
  const Ref s2_hz = wl.ref(k2, {hz, AccessKind::Read, right, tile});
  const Ref s2_hzw = wl.ref(k2, {hz, AccessKind::Read, right, tile});
  const Ref s2_w = wl.ref(k2, {ex, AccessKind::Write, right, tile});
  wl.body(k2, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      auto on = [&](const Thread& t, std::int64_t dj) {
        return b.gx(t) > 0 ? el(b, t, 0, dj) : kOff;
      };
      w.op(s2_ex, kStep2Loads, [&](const Thread& t) { return on(t, 0); });
      w.op(s2_hz, kNoWork, [&](const Thread& t) { return on(t, 0); });
      w.op(s2_hzw, kNoWork, [&](const Thread& t) { return on(t, -1); });
      w.op(s2_w, kStepUpdate, [&](const Thread& t) { return on(t, 0); });
    });
  });
  // step3: i < n-1, j < n-1: hz[i][j] -= 0.7*(ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j])
  const std::uint32_t k3 = wl.kernel("fdtd_step3_kernel", grid, kBlock2d);
  const std::int64_t inner = (nn - 1) * (nn - 1);
  const Ref s3_hz = wl.ref(k3, {hz, AccessKind::Read, inner, tile});
  const Ref s3_exe = wl.ref(k3, {ex, AccessKind::Read, inner, tile});
  const Ref s3_ex = wl.ref(k3, {ex, AccessKind::Read, inner, tile});
  const Ref s3_eys = wl.ref(k3, {ey, AccessKind::Read, inner, tile});
  const Ref s3_ey = wl.ref(k3, {ey, AccessKind::Read, inner, tile});
  const Ref s3_w = wl.ref(k3, {hz, AccessKind::Write, inner, tile});
  wl.body(k3, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      auto on = [&](const Thread& t, std::int64_t di, std::int64_t dj) {
        return b.gy(t) < n - 1 && b.gx(t) < n - 1 ? el(b, t, di, dj) : kOff;
      };
      w.op(s3_hz, kStep3Loads, [&](const Thread& t) { return on(t, 0, 0); });
      w.op(s3_exe, kNoWork, [&](const Thread& t) { return on(t, 0, 1); });
      w.op(s3_ex, kNoWork, [&](const Thread& t) { return on(t, 0, 0); });
      w.op(s3_eys, kNoWork, [&](const Thread& t) { return on(t, 1, 0); });
      w.op(s3_ey, kNoWork, [&](const Thread& t) { return on(t, 0, 0); });
      w.op(s3_w, kStep3Update, [&](const Thread& t) { return on(t, 0, 0); });
    });
  });
  wl.cpu_write({fict, ex, ey, hz});
  wl.loop(tmax, {k1, k2, k3});
  wl.write();
}

const Registrar kLu{Generator{
    "lu",
    "LU decomposition, per pivot k a row-scaling and a trailing-update kernel (host loop); N = "
    "largest multiple of 256 with N*N*4 <= footprint",
    {{"iters", "8", "host-loop iterations (pivots k = 0..iters-1) in the trace; 0 = all N"}},
    write_lu,
    "iterative-disjoint",
    std::uint64_t{64} << 20,
    "PolyBench/GPU LU (cuSOLVER getrf semantics)",
}};

const Registrar kDoitgen{Generator{
    "doitgen",
    "sum[r] = A[r] * C4, A[r] = sum[r] for r = 0..iters-1 (host loop, two kernels each); "
    "N x N x N A and sum, N x N C4, N = largest multiple of 32 that fits the footprint",
    {{"iters", "0", "host-loop iterations (slices r = 0..iters-1) in the trace; 0 = all N"}},
    write_doitgen,
    "iterative-disjoint",
    std::uint64_t{17} << 20,
    "PolyBench/GPU DOITGEN",
}};

const Registrar k2dconv{Generator{
    "2dconv",
    "3x3 convolution B = conv(A) over N x N floats, launched iters times; N = largest multiple "
    "of 32 with 2*N*N*4 <= footprint",
    {{"iters", "4", "number of launches (host loop)"},
     {"init", "a",
      "a: the host writes A before the launches (PolyBench/GPU); ab: also B (zeroed on the host, "
      "as SUV's artifact does)"}},
    write_2dconv,
    "cyclic",
    std::uint64_t{64} << 20,
    "PolyBench/GPU 2DCONV",
}};

const Registrar kFdtd2d{Generator{
    "fdtd-2d",
    "2-D FDTD, three stencil kernels per time step over ex, ey, hz (N x N floats); N = largest "
    "multiple of 32 with 3*N*N*4 <= footprint",
    {{"tmax", "8", "time steps (host loop)"}},
    write_fdtd2d,
    "cyclic",
    std::uint64_t{48} << 20,
    "PolyBench/GPU FDTD-2D",
}};

}  // namespace
}  // namespace uvmsim::gen
