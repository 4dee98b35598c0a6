// Matrix-vector kernels of PolyBench/GPU (mvt, bicg, atax) and cuBLAS-style gemv. Every kernel is
// one of two shapes over a row-major rows x cols float matrix A, one thread per output element
// (block 256, PolyBench's DIM_THREAD_BLOCK_X), the dot product accumulated in a register:
//  - row:    thread r walks row r:    out[r] (+)= sum_c A[r*cols + c] * v[c]
//            (each warp instruction touches 32 rows: uncoalesced, one page per lane)
//  - column: thread c walks column c: out[c] (+)= sum_r A[r*cols + c] * v[r]
//            (each warp instruction reads 128 contiguous bytes; successive ones a row apart)
// so mvt, bicg and atax read the same matrix once row-wise and once column-wise (SUV §VI-A).
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 256;

struct Dot {
  const char* kernel;
  bool row;           // row-wise (thread per row) or column-wise (thread per column)
  std::uint32_t v;    // input vector allocation
  std::uint32_t out;  // output vector allocation
  bool accumulate;    // out is read first (x1 = x1 + A*y), otherwise only written
};

/// Declares a dot kernel over A (rows x cols) and its memops; returns the kernel id.
std::uint32_t dot_kernel(Workload& wl, std::uint32_t a, std::uint64_t rows, std::uint64_t cols,
                         const Dot& d) {
  const std::uint64_t threads = d.row ? rows : cols, len = d.row ? cols : rows;
  const std::uint32_t k = wl.kernel(d.kernel, grid_1d(threads, kBlock), {kBlock, 1, 1});
  const auto per_tb = static_cast<std::int64_t>(std::min<std::uint64_t>(kBlock, threads));
  const auto t = static_cast<std::int64_t>(threads), l = static_cast<std::int64_t>(len);
  const auto c = static_cast<std::int64_t>(cols);
  const Affine a_extent = d.row ? per_tb * c * 4 : ((l - 1) * c + per_tb) * 4;
  std::optional<Ref> rin;
  if (d.accumulate) rin = wl.ref(k, {d.out, AccessKind::Read, t, per_tb * 4});
  const Ref ra = wl.ref(k, {a, AccessKind::Read, t * l, a_extent,
                            d.row ? AccessPattern::Streaming : AccessPattern::Strided});
  const Ref rv = wl.ref(k, {d.v, AccessKind::Read, t * l, l * 4, AccessPattern::Shared});
  const Ref wout = wl.ref(k, {d.out, AccessKind::Write, t, per_tb * 4});
  wl.body(k, [=](Block& blk, std::int32_t) {
    blk.warps([&](Warp& w) {
      auto me = [&](const Thread& th) { return blk.gx(th) < threads ? blk.gx(th) : kOff; };
      if (rin) w.op(*rin, kIndexGap, me);
      for (std::uint64_t j = 0; j < len; ++j) {
        w.op(ra, j == 0 ? kIndexGap : kAluGap, [&](const Thread& th) {
          const std::uint64_t i = me(th);
          return i == kOff ? kOff : d.row ? i * cols + j : j * cols + i;
        });
        w.op(rv, 0, [&](const Thread& th) { return me(th) == kOff ? kOff : j; });
      }
      w.op(wout, kAluGap, me);
    });
  });
  return k;
}

/// Square N (multiple of 256) such that A plus `vectors` vectors of N floats fit the footprint.
std::uint64_t order(const GenContext& ctx, std::uint64_t vectors) {
  return fit(ctx.footprint, kBlock, [&](std::uint64_t n) { return (n * n + vectors * n) * 4; });
}

void write_mvt(GenContext& ctx) {
  const std::uint64_t n = order(ctx, 4);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t a = wl.alloc("a", n * n * 4), x1 = wl.alloc("x1", n * 4),
                      x2 = wl.alloc("x2", n * 4), y1 = wl.alloc("y_1", n * 4),
                      y2 = wl.alloc("y_2", n * 4);
  const std::uint32_t k1 = dot_kernel(wl, a, n, n, {"mvt_kernel1", true, y1, x1, true});
  const std::uint32_t k2 = dot_kernel(wl, a, n, n, {"mvt_kernel2", false, y2, x2, true});
  for (std::uint32_t id : {a, x1, x2, y1, y2}) wl.cpu_write(id);
  wl.launch(k1);
  wl.launch(k2);
  wl.write();
}

void write_bicg(GenContext& ctx) {
  const std::uint64_t n = order(ctx, 4);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t a = wl.alloc("A", n * n * 4), r = wl.alloc("r", n * 4),
                      s = wl.alloc("s", n * 4), p = wl.alloc("p", n * 4), q = wl.alloc("q", n * 4);
  const std::uint32_t k1 = dot_kernel(wl, a, n, n, {"bicg_kernel1", false, r, s, false});
  const std::uint32_t k2 = dot_kernel(wl, a, n, n, {"bicg_kernel2", true, p, q, false});
  for (std::uint32_t id : {a, r, p}) wl.cpu_write(id);
  wl.launch(k1);
  wl.launch(k2);
  wl.write();
}

void write_atax(GenContext& ctx) {
  const std::uint64_t n = order(ctx, 3);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t a = wl.alloc("A", n * n * 4), x = wl.alloc("x", n * 4),
                      y = wl.alloc("y", n * 4), tmp = wl.alloc("tmp", n * 4);
  const std::uint32_t k1 = dot_kernel(wl, a, n, n, {"atax_kernel1", true, x, tmp, false});
  const std::uint32_t k2 = dot_kernel(wl, a, n, n, {"atax_kernel2", false, tmp, y, false});
  for (std::uint32_t id : {a, x}) wl.cpu_write(id);
  wl.launch(k1);
  wl.launch(k2);
  wl.write();
}

void write_gemv(GenContext& ctx) {
  const std::uint64_t iters = ctx.params.integer("iters", 1, 100000);
  const std::uint64_t n = order(ctx, 2);
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  // Column-major A (cuBLAS): thread i reads A[i + j*n], i.e. row j of the row-major view.
  const std::uint32_t a = wl.alloc("A", n * n * 4), x = wl.alloc("x", n * 4),
                      y = wl.alloc("y", n * 4);
  const std::uint32_t k = dot_kernel(wl, a, n, n, {"gemv_kernel", false, x, y, true});
  for (std::uint32_t id : {a, x, y}) wl.cpu_write(id);
  for (std::uint64_t it = 0; it < iters; ++it) wl.launch(k, static_cast<std::int32_t>(it));
  wl.write();
}

const char* const kSizing =
    "N = largest multiple of 256 with A (N*N floats) and the vectors <= footprint";

const Registrar kMvt{Generator{
    "mvt",
    std::string("x1 += A*y_1 (row-wise kernel), x2 += A^T*y_2 (column-wise kernel); ") + kSizing,
    {},
    write_mvt,
    "streaming",
    std::uint64_t{64} << 20,
    "PolyBench/GPU MVT"}};
const Registrar kBicg{
    Generator{"bicg",
              std::string("s = A^T*r (column-wise kernel), q = A*p (row-wise kernel); ") + kSizing,
              {},
              write_bicg,
              "streaming",
              std::uint64_t{64} << 20,
              "PolyBench/GPU BICG (BiCGStab kernel)"}};
const Registrar kAtax{Generator{
    "atax",
    std::string("tmp = A*x (row-wise kernel), y = A^T*tmp (column-wise kernel); ") + kSizing,
    {},
    write_atax,
    "streaming",
    std::uint64_t{64} << 20,
    "PolyBench/GPU ATAX"}};
const Registrar kGemv{Generator{
    "gemv",
    std::string("y = alpha*A*x + beta*y, column-major A, one thread per y element; ") + kSizing,
    {{"iters", "1", "number of gemv launches (host loop, iteration index recorded)"}},
    write_gemv,
    "streaming",
    std::uint64_t{256} << 20,
    "cuBLAS SGEMV"}};

}  // namespace
}  // namespace uvmsim::gen
