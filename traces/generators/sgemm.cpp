// sgemm: the shape of cuBLAS's large-tile SGEMM kernels (the maxwell/volta "sgemm_128x128_nn"
// family) for C = alpha * A * B over column-major N x N matrices (cublasSgemm with CUBLAS_OP_N
// on both operands, beta = 0), the sgemm of Allen & Ge's IPDPS'21 and SC'21 measurements.
//
// Each threadblock of 256 threads (8 warps) computes one 128 x 128 tile of C; blockIdx.x walks
// the tile rows (so consecutive blocks share a column panel of B), blockIdx.y the tile columns.
// k advances in slices of 8. Per slice the block loads, with 16-byte (LDG.128) loads:
//  - the 128 x 8 tile of A: 8 columns of 128 contiguous floats; warp w loads column w, 512 B;
//  - the 8 x 128 tile of B: 128 columns of 8 contiguous floats (32 B); a lane pair loads the two
//    halves of one column, so a warp covers 16 columns, which lie a column (4N bytes) apart;
// stores both to shared memory and, after a barrier, runs the slice's 8 rank-1 updates of each
// thread's 8 x 8 accumulator (64 FFMA per k, operands from shared memory). The epilogue stores
// the tile of C: warp w writes columns 16w..16w+15 of it, 512 B each.
//
// What differs from the real kernel: cuBLAS double-buffers, loading slice s+1 into registers
// while it computes slice s; a trace record's compute gap waits for all of the warp's earlier
// loads (docs/trace-format.md), so here the loads of a slice follow the previous slice's compute.
// Per k the four 128-bit shared loads are counted as four conflict-free shared accesses (the
// lanes of a warp read a few broadcast addresses), so the FFMAs dominate as in the real kernel.
#include "traces/generators/dense_kernels.h"
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kTile = 128;     // C tile edge
constexpr std::uint32_t kSlice = 8;      // k per slice
constexpr std::uint32_t kThreads = 256;  // 8 warps
constexpr std::uint32_t kLaneBytes = 16;
/// Registers per thread of the 128 x 128 kernels (nvcc gives them ~120-128): two blocks per SM.
constexpr std::uint32_t kRegs = 128;

// ---- per-thread work (compute_cost.h) ----
// Block and thread indices, the tile origins and the first addresses of A, B and C.
constexpr Work kStart = kGlobalIndex2D + 2 * kIndex2D + 3 * kAddress;
// One slice: the loop step, the two advanced global addresses, the two 128-bit shared stores,
// the barrier after them, 8 k-steps of four 128-bit shared loads and 64 FFMA, the closing
// barrier.
constexpr Work kSliceWork =
    kLoop + 2 * kAddress + shared(2) + 2 * kBarrier + kSlice * (shared(4) + fp32(64));
// Epilogue per column stored: alpha * acc (FMUL) for 4 floats and the address.
constexpr Work kStoreWork = fp32(4) + kAddress;

void write_sgemm(GenContext& ctx) {
  const std::uint32_t sample = ksample_param(ctx);
  const std::string init = ctx.params.choice("init", {"ab", "abc"});
  Workload wl(ctx);
  // Plain variables, not a structured binding: the lambdas below use `n`, and clang before 16
  // (Debian 12 has 14; the fuzz build uses it) cannot capture structured bindings.
  const SquareOperands ops = square_operands(ctx, wl, kTile);
  const std::uint64_t n = ops.n;
  const std::uint32_t a = ops.a, b = ops.b, c = ops.c;
  const auto g = static_cast<std::uint32_t>(n / kTile);
  // Shared memory: both tiles, double-buffered as in cuBLAS (2 x 2 x 128 x 8 floats).
  const std::uint32_t k =
      wl.kernel("sgemm_128x128_nn", {g, g, 1}, {kThreads, 1, 1}, 2 * 2 * kTile * kSlice * 4);
  wl.metadata().kernels.at(k).regs_per_thread = kRegs;
  const auto nn = static_cast<std::int64_t>(n), tile = std::int64_t{kTile};
  const std::int64_t blocks = std::int64_t{g} * g, slices = nn / kSlice;
  // Thread-level executions per launch: per slice each thread loads 16 bytes of A and of B.
  const std::int64_t loads = blocks * kThreads * slices;
  // A block reads a panel of 128 rows of A across all columns and one of 128 columns of B;
  // every lane moves 16 bytes of 4-byte elements.
  const Ref ra =
      wl.ref(k, Access{a, AccessKind::Read, loads, ((nn - 1) * nn + tile) * 4, AccessPattern::Tiled}
                    .size(kLaneBytes)
                    .field(4, 0));
  const Ref rb = wl.ref(k, Access{b, AccessKind::Read, loads, tile * nn * 4, AccessPattern::Tiled}
                               .size(kLaneBytes)
                               .field(4, 0));
  const Ref wc = wl.ref(
      k, Access{c, AccessKind::Write, blocks * kTile * kTile / 4, ((tile - 1) * nn + tile) * 4}
             .size(kLaneBytes)
             .field(4, 0));
  wl.body(k, [=](Block& blk, std::int32_t) {
    const std::uint64_t i0 = std::uint64_t{blk.x} * kTile, j0 = std::uint64_t{blk.y} * kTile;
    // Sampling as in gemm: runs of slices written as their first with a repeat count; the phase
    // moves by one per block, so the blocks sharing a panel start their runs at different slices.
    const std::uint64_t phase = (std::uint64_t{blk.x} + blk.y) % sample;
    const std::uint64_t nslices = n / kSlice;
    blk.warps([&](Warp& w) {
      const std::uint64_t wi = w.index();
      for (std::uint64_t s = 0; s < nslices;) {
        const std::uint64_t end = sampled_run_end(s, nslices, phase, sample);
        const auto run = static_cast<std::uint32_t>(end - s);
        const std::uint64_t kk = s * kSlice;
        // A(i, k) = A[k * n + i]: column kk + w, rows i0 + 4 * lane ...
        w.op_lane_repeat(ra, s == 0 ? kStart : kSliceWork, run,
                         [&](std::uint32_t l) { return (kk + wi) * n + i0 + 4 * l; });
        // B(k, j) = B[j * n + k]: column j0 + 16 w + l / 2, rows kk + 4 (l % 2) ...
        w.op_lane_repeat(rb, kNoWork, run, [&](std::uint32_t l) {
          return (j0 + 16 * wi + l / 2) * n + kk + 4 * (l % 2);
        });
        s = end;
      }
      for (std::uint64_t col = 0; col < 16; ++col) {
        w.op_lane(wc, col == 0 ? kSliceWork + kStoreWork : kStoreWork,
                  [&](std::uint32_t l) { return (j0 + 16 * wi + col) * n + i0 + 4 * l; });
      }
    });
  });
  // The host fills A and B; C is only written (beta = 0: cuBLAS does not read it). With
  // init=abc the host also zeroes C first, as Allen & Ge's matrixMul2.cu does (their uvm-eval
  // repository, benchmarksv3/cublas: ConstantInit of A, B and C before cublasSgemm), so C's
  // pages are CPU-resident when the kernel writes them and migrate instead of being populated.
  wl.cpu_write({a, b});
  if (init == "abc") wl.cpu_write(c);
  wl.launch(k);
  wl.write();
}

const Registrar kSgemm{Generator{
    "sgemm",
    "cuBLAS-style SGEMM C = alpha*A*B, column-major: a 128x128 tile of C per 256-thread block, "
    "k in slices of 8 loaded with 16-byte loads (A: 8 columns of 512 B, B: 128 columns of 32 B) "
    "into shared memory; N = largest multiple of 128 with 3*N*N*4 <= footprint",
    {{"ksample", "1",
      "reduced fidelity: write runs of ~S k-slices as their first with repeat count S (1-32; "
      "1 = every slice), as gemm's ksample (docs/generators.md#reduced-fidelity-k-sampling)"},
     {"init", "ab",
      "ab: the host writes A and B before the launch; abc: also C (zeroed on the host, as "
      "Allen & Ge's matrixMul2.cu does)"}},
    write_sgemm,
    "tiled-reuse",
    std::uint64_t{48} << 20,
    "cuBLAS SGEMM (sgemm_128x128_nn), Allen & Ge's sgemm",
}};

}  // namespace
}  // namespace uvmsim::gen
