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

// ---- per-thread work (compute_cost.h) ----
// i = global index, if (i < n); out[i] (when accumulating); the loop over the row or column: its
// step and the strength-reduced addresses of A's element and v's; the FFMA into the register
// accumulator; finally (out[i] +) the sum and its store.
constexpr Work kStart = kGlobalIndex + kGuard;
constexpr Work kFirstStep = kLoop + kIndex2D + 2 * kAddress;
constexpr Work kNextStep = fp32(1) + kLoop + 2 * kAddress;

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
  const Poly a_extent = d.row ? per_tb * c * 4 : ((l - 1) * c + per_tb) * 4;
  std::optional<Ref> rin;
  if (d.accumulate) rin = wl.ref(k, {d.out, AccessKind::Read, t, per_tb * 4});
  const Ref ra = wl.ref(k, {a, AccessKind::Read, t * l, a_extent,
                            d.row ? AccessPattern::Streaming : AccessPattern::Strided});
  const Ref rv = wl.ref(k, {d.v, AccessKind::Read, t * l, l * 4, AccessPattern::Shared});
  const Ref wout = wl.ref(k, {d.out, AccessKind::Write, t, per_tb * 4});
  wl.body(k, [=](Block& blk, std::int32_t) {
    blk.warps([&](Warp& w) {
      auto me = [&](const Thread& th) { return blk.gx(th) < threads ? blk.gx(th) : kOff; };
      if (rin) w.op(*rin, kStart + kAddress, me);
      for (std::uint64_t j = 0; j < len; ++j) {
        const Work work = j > 0 ? kNextStep : rin ? kFirstStep : kStart + kFirstStep;
        w.op(ra, work, [&](const Thread& th) {
          const std::uint64_t i = me(th);
          return i == kOff ? kOff : d.row ? i * cols + j : j * cols + i;
        });
        w.op(rv, kNoWork, [&](const Thread& th) { return me(th) == kOff ? kOff : j; });
      }
      w.op(wout, rin ? fp32(2) : fp32(1) + kAddress, me);
    });
  });
  return k;
}

/// Square N (multiple of 256) such that A plus `vectors` vectors of N floats fit the footprint.
std::uint64_t order(const GenContext& ctx, std::uint64_t vectors) {
  return fit(ctx.footprint, kBlock, [&](std::uint64_t n) { return (n * n + vectors * n) * 4; });
}

/// A program of dot kernels over one N x N matrix: its name, its vectors (allocated after the
/// matrix, in order), its kernels in launch order (vector indices) and what the host initialises.
struct MatVec {
  const char* matrix;
  std::vector<const char*> vectors;
  struct K {
    const char* name;
    bool row;
    std::size_t in, out;
    bool accumulate;
  };
  std::vector<K> kernels;
  std::vector<std::size_t> host_init;  // vector indices; the matrix is always initialised
};

/// `iters` > 0: a host loop of that many iterations around the kernels; 0: launched once, no loop.
void write_matvec(GenContext& ctx, const MatVec& p, std::uint64_t iters = 0) {
  const std::uint64_t n = order(ctx, p.vectors.size());
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t a = wl.alloc(p.matrix, n * n * 4);
  std::vector<std::uint32_t> v;
  for (const char* name : p.vectors) v.push_back(wl.alloc(name, n * 4));
  std::vector<std::uint32_t> kernels;
  for (const MatVec::K& k : p.kernels) {
    kernels.push_back(dot_kernel(wl, a, n, n, {k.name, k.row, v[k.in], v[k.out], k.accumulate}));
  }
  wl.cpu_write(a);
  for (std::size_t i : p.host_init) wl.cpu_write(v[i]);
  for (std::uint64_t it = 0; it < std::max<std::uint64_t>(iters, 1); ++it) {
    for (std::uint32_t k : kernels) wl.launch(k, iters > 0 ? static_cast<std::int32_t>(it) : -1);
  }
  wl.write();
}

void write_mvt(GenContext& ctx) {
  write_matvec(ctx, {"a",
                     {"x1", "x2", "y_1", "y_2"},
                     {{"mvt_kernel1", true, 2, 0, true}, {"mvt_kernel2", false, 3, 1, true}},
                     {0, 1, 2, 3}});
}

void write_bicg(GenContext& ctx) {
  write_matvec(ctx, {"A",
                     {"r", "s", "p", "q"},
                     {{"bicg_kernel1", false, 0, 1, false}, {"bicg_kernel2", true, 2, 3, false}},
                     {0, 2}});
}

void write_atax(GenContext& ctx) {
  write_matvec(ctx, {"A",
                     {"x", "y", "tmp"},
                     {{"atax_kernel1", true, 0, 2, false}, {"atax_kernel2", false, 2, 1, false}},
                     {0}});
}

void write_gemv(GenContext& ctx) {
  // Column-major A (cuBLAS): thread i reads A[i + j*n], i.e. row j of the row-major view.
  const std::uint64_t iters = ctx.params.integer("iters", 1, 100000);
  write_matvec(ctx, {"A", {"x", "y"}, {{"gemv_kernel", false, 0, 1, true}}, {0, 1}}, iters);
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
