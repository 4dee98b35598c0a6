// `nw`: Rodinia's Needleman-Wunsch global sequence alignment. The (N+1) x (N+1) score matrix is
// filled in 16 x 16 tiles along anti-diagonals: the host launches needle_cuda_shared_1 with
// i = 1 .. N/16 blocks (the upper-left triangle of tiles) and then needle_cuda_shared_2 with
// i = N/16 - 1 .. 1 blocks (the lower-right one). Each block of 16 threads loads its tile of the
// reference matrix, the row above and the column left of its tile, computes the tile in shared
// memory and writes it back, so each launch touches a new anti-diagonal band of both matrices.
// Every launch has its own grid, hence its own kernel entry (docs/hints.md); the entries of one
// kernel function share their instructions' ref ids.
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kB = 16;  // BLOCK_SIZE

// ---- per-thread work of needle_cuda_shared_1/2 (compute_cost.h) ----
// bx, tx, the tile's row and column and the four indices (index, index_n, index_w, index_nw);
// if (tx == 0) &matrix_cuda[index_nw]; the 16 reference rows' addresses (the unrolled loads
// issue back to back).
constexpr Work kCornerAndReference =
    int_ops(2) + imad(4) + int_ops(4) + kGuard + kAddress + kB * int_ops(1);
// The 16 + 1 STS of those values, __syncthreads(), &matrix_cuda[index_w + cols * tx].
constexpr Work kWest = shared(kB + 1) + kBarrier + kIndex2D + kAddress;
// STS, __syncthreads(), &matrix_cuda[index_n].
constexpr Work kNorth = shared(1) + kBarrier + kAddress;
// STS, __syncthreads(), then the 2 * 16 - 1 anti-diagonal steps: if (tx <= m), the cell's
// indices, four LDS, two "- penalty", the max of three, one STS, __syncthreads(), the loop step.
constexpr Work kSweep =
    shared(1) + kBarrier +
    (2 * kB - 1) * (kGuard + int_ops(4) + shared(4) + cmp(2) + shared(1) + kBarrier + kLoop);
// The 16 LDS of the tile's column and the store addresses (the stores issue back to back).
constexpr Work kWriteBack = shared(kB) + kB * int_ops(1) + kAddress;

void write_nw(GenContext& ctx) {
  const std::uint64_t n =
      fit(ctx.footprint, kB, [](std::uint64_t v) { return 2 * (v + 1) * (v + 1) * 4; });
  const std::uint64_t bw = n / kB, cols = n + 1;
  Workload wl(ctx);
  wl.metadata().params["n"] = n;
  const std::uint32_t ref = wl.alloc("referrence_cuda", cols * cols * 4),
                      mat = wl.alloc("matrix_cuda", cols * cols * 4);
  const auto c = static_cast<std::int64_t>(cols);
  // Element offsets within a tile whose corner (north-west cell) is at row 16*ty_, col 16*tx_:
  // index_nw = corner, index_n = corner + 1 + tx, index_w = corner + cols + cols*tx,
  // index = corner + cols + 1 + tx (+ cols*row for the tile rows).
  struct Op {
    std::uint32_t alloc;
    AccessKind kind;
    std::int64_t r0, r1, c0, c1;  // rows / columns of the tile's corner the op touches
    std::int64_t per_block;       // threads x iterations
  };
  const std::vector<Op> ops = {
      {mat, AccessKind::Read, 0, 0, 0, 0, 1},          // temp[0][0] = matrix[index_nw] (tx 0)
      {ref, AccessKind::Read, 1, kB, 1, kB, kB * kB},  // ref[ty][tx] = referrence[index + cols*ty]
      {mat, AccessKind::Read, 1, kB, 0, 0, kB},        // temp[tx+1][0] = matrix[index_w + cols*tx]
      {mat, AccessKind::Read, 0, 0, 1, kB, kB},        // temp[0][tx+1] = matrix[index_n]
      {mat, AccessKind::Write, 1, kB, 1, kB, kB * kB}};  // matrix[index + ty*cols] = temp[..]
  std::vector<Ref> first;
  std::vector<std::uint32_t> k1, k2;
  // Tiles on anti-diagonal d: (x, y) with x + y = d; kernel 1 covers d = 0 .. bw-1 (x = 0..d),
  // kernel 2 d = bw .. 2bw-2 (x = d-bw+1 .. bw-1).
  auto entry = [&](const char* name, std::uint64_t d, std::uint64_t blocks, std::uint64_t x0) {
    const std::uint32_t k = wl.kernel(name, {static_cast<std::uint32_t>(blocks), 1, 1}, {kB, 1, 1},
                                      (kB + 1) * (kB + 1) * 4 + kB * kB * 4);
    const auto x_lo = static_cast<std::int64_t>(x0),
               x_hi = static_cast<std::int64_t>(x0 + blocks - 1);
    const auto dd = static_cast<std::int64_t>(d);
    for (std::size_t o = 0; o < ops.size(); ++o) {
      const Op& op = ops[o];
      // Lowest address: the tile with the smallest row (largest x); highest: the largest row.
      const std::int64_t lo = (kB * (dd - x_hi) + op.r0) * c + kB * x_hi + op.c0;
      const std::int64_t hi = (kB * (dd - x_lo) + op.r1) * c + kB * x_lo + op.c1;
      const std::int64_t tb = ((op.r1 - op.r0) * c + op.c1 - op.c0 + 1) * 4;
      Access a(op.alloc, op.kind, op.per_block * static_cast<std::int64_t>(blocks), tb,
               op.r1 > op.r0 && op.c1 == op.c0 ? AccessPattern::Strided : AccessPattern::Streaming);
      a.iterates(lo * 4, (hi - lo + 1) * 4);
      const Ref r = wl.ref(k, a, first.size() > o ? &first[o] : nullptr);
      if (first.size() <= o) first.push_back(r);
    }
    const std::vector<Ref> refs(first.end() - static_cast<std::ptrdiff_t>(ops.size()), first.end());
    wl.body(k, [=](Block& b, std::int32_t) {
      const std::uint64_t x = x0 + b.x, y = d - x;  // tile column / row
      const std::uint64_t corner = kB * y * cols + kB * x;
      b.warps([&](Warp& w) {
        w.op(refs[0], kCornerAndReference,
             [&](const Thread& t) { return t.x == 0 ? corner : kOff; });
        for (std::uint64_t ty = 0; ty < kB; ++ty) {
          w.op(refs[1], kNoWork,
               [&](const Thread& t) { return corner + cols + 1 + t.x + cols * ty; });
        }
        w.op(refs[2], kWest, [&](const Thread& t) { return corner + cols + cols * t.x; });
        w.op(refs[3], kNorth, [&](const Thread& t) { return corner + 1 + t.x; });
        w.compute(kSweep);  // the tile's anti-diagonal sweep in shared memory
        for (std::uint64_t ty = 0; ty < kB; ++ty) {
          w.op(refs[4], ty == 0 ? kWriteBack : kNoWork,
               [&](const Thread& t) { return corner + cols + 1 + t.x + cols * ty; });
        }
      });
    });
    return k;
  };
  // Kernel 2 must reuse kernel 1's refs: `first` holds them after the first entry.
  for (std::uint64_t i = 1; i <= bw; ++i) k1.push_back(entry("needle_cuda_shared_1", i - 1, i, 0));
  first.clear();
  for (std::uint64_t i = bw - 1; i >= 1; --i) {
    k2.push_back(entry("needle_cuda_shared_2", 2 * bw - 1 - i, i, bw - i));
  }
  wl.cpu_write(ref);
  wl.cpu_write(mat);
  for (std::size_t i = 0; i < k1.size(); ++i) wl.launch(k1[i], static_cast<std::int32_t>(i));
  for (std::size_t i = 0; i < k2.size(); ++i) wl.launch(k2[i], static_cast<std::int32_t>(i));
  wl.write();
}

const Registrar kNw{Generator{
    "nw",
    "Needleman-Wunsch over (N+1)^2 score and reference matrices in 16x16 tiles along "
    "anti-diagonals, 2*N/16-1 launches of 1..N/16 blocks; N = largest multiple of 16 that fits",
    {},
    write_nw,
    "iterative-disjoint",
    std::uint64_t{128} << 20,
    "Rodinia nw",
}};

}  // namespace
}  // namespace uvmsim::gen
