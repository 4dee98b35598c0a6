// `spmm`: sparse x dense matrix product C = A * B as in cuSPARSE csrmm (ObservUVM's SPM), A a
// seeded R-MAT matrix in CSR form (K x K), B and C dense K x N row-major. One thread per element
// of C (block 32x8: 32 consecutive columns of one row per warp) walks the row's non-zeros: the
// column indices and values are read in order, the rows of B they select are data-dependent.
#include "traces/generators/emulation.h"
#include "traces/generators/graph.h"

namespace uvmsim::gen {
namespace {

// ---- per-thread work (compute_cost.h) ----
// Row and column from the 2-D index, &csrRowPtrA[row] (both bounds; independent loads).
constexpr Work kRowLoads = kGlobalIndex2D + kAddress;
// Per non-zero: the loop step (first: its bounds test) and &csrColIndA[e], &csrValA[e]; then the
// B row's index col * N + j and its address; the FFMA into the register sum before the next
// non-zero's loads; finally &C[row][col].
constexpr Work kNonZero = kLoop + 2 * kAddress;
constexpr Work kBElement = kIndex2D + kAddress;
constexpr Work kNextNonZero = fp32(1) + kNonZero;
constexpr Work kStoreC = fp32(1) + kIndex2D + kAddress;

void write_spmm(GenContext& ctx) {
  const std::uint64_t cols = ctx.params.integer("cols", 32, 4096) / 32 * 32;  // N
  const auto ef = static_cast<unsigned>(ctx.params.integer("edge_factor", 1, 64));
  const auto bytes = [&](std::uint64_t k) { return k * 4 + 2 * ef * k * 8 + 2 * k * cols * 4 + 4; };
  unsigned scale = 4;
  while (scale < 28 && bytes(std::uint64_t{2} << scale) <= ctx.footprint) ++scale;
  const Csr a = rmat_graph(scale, ef, ctx.seed);
  const std::uint64_t k = a.vertices, nnz = a.arcs();
  Workload wl(ctx);
  wl.metadata().params["scale"] = scale;
  wl.metadata().params["rows"] = k;
  wl.metadata().params["nnz"] = nnz;
  const std::uint32_t row_ptr = wl.alloc("csrRowPtrA", (k + 1) * 4),
                      col_ind = wl.alloc("csrColIndA", std::max<std::uint64_t>(1, nnz) * 4),
                      val = wl.alloc("csrValA", std::max<std::uint64_t>(1, nnz) * 4),
                      b = wl.alloc("B", k * cols * 4), c = wl.alloc("C", k * cols * 4);
  const std::uint32_t kern = wl.kernel(
      "csrmm_kernel", {static_cast<std::uint32_t>(k / 8), static_cast<std::uint32_t>(cols / 32), 1},
      {32, 8, 1});
  const auto kk = static_cast<std::int64_t>(k), n = static_cast<std::int64_t>(cols),
             z = static_cast<std::int64_t>(nnz);
  const std::int64_t tile = (7 * n + 32) * 4;
  const Ref r_lo = wl.ref(kern, {row_ptr, AccessKind::Read, kk * n, 8 * 4});
  const Ref r_hi = wl.ref(kern, {row_ptr, AccessKind::Read, kk * n, 8 * 4});
  // The non-zero loop's bounds are loaded: its memops are conditional; B's row is indirect.
  const Ref r_col = wl.ref(
      kern, Access(col_ind, AccessKind::Read, z * n, static_cast<std::int64_t>(wl.size(col_ind)))
                .guarded());
  const Ref r_val = wl.ref(
      kern,
      Access(val, AccessKind::Read, z * n, static_cast<std::int64_t>(wl.size(val))).guarded());
  const Ref r_b =
      wl.ref(kern, Access(b, AccessKind::Read, z * n, static_cast<std::int64_t>(wl.size(b)),
                          AccessPattern::Irregular)
                       .indirect()
                       .guarded());
  const Ref w_c = wl.ref(kern, {c, AccessKind::Write, kk * n, tile});
  // Rows along blockIdx.x (there may be more than 65535 blocks of them), columns along y.
  wl.body(kern, [=, &a](Block& blk, std::int32_t) {
    auto rw = [&](const Thread& t) { return std::uint64_t{blk.x} * 8 + t.y; };
    auto cl = [&](const Thread& t) { return std::uint64_t{blk.y} * 32 + t.x; };
    blk.warps([&](Warp& w) {
      const std::uint64_t row = rw(w.lane(0));  // one row per warp (32 columns)
      w.op(r_lo, kRowLoads, rw);
      w.op(r_hi, kNoWork, [&](const Thread& t) { return rw(t) + 1; });
      for (std::uint64_t e = a.offsets[row]; e < a.offsets[row + 1]; ++e) {
        w.op(r_col, e == a.offsets[row] ? kNonZero : kNextNonZero,
             [&](const Thread&) { return e; });
        w.op(r_val, kNoWork, [&](const Thread&) { return e; });
        w.op(r_b, kBElement,
             [&](const Thread& t) { return std::uint64_t{a.targets[e]} * cols + cl(t); });
      }
      w.op(w_c, kStoreC, [&](const Thread& t) { return rw(t) * cols + cl(t); });
    });
  });
  wl.cpu_write({row_ptr, col_ind, val, b});
  wl.launch(kern);
  wl.write();
}

const Registrar kSpmm{Generator{
    "spmm",
    "C = A*B with A a 2^scale x 2^scale R-MAT matrix in CSR (edge_factor*2 non-zeros per row on "
    "average) and B, C dense with `cols` columns; scale = largest that fits the footprint",
    {{"cols", "64", "columns of B and C (multiple of 32)"},
     {"edge_factor", "8", "R-MAT edges per row (each stored in both directions)"}},
    write_spmm,
    "irregular",
    std::uint64_t{64} << 20,
    "cuSPARSE csrmm",
}};

}  // namespace
}  // namespace uvmsim::gen
