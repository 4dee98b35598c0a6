// `backprop`: Rodinia's back-propagation training of a two-layer perceptron (Li & Chapman's
// backprop): per epoch bpnn_layerforward_CUDA computes the input layer's weighted partial sums
// (and writes the products back into the weights), the host finishes the forward and backward
// pass on the partial sums, and bpnn_adjust_weights_CUDA updates the weights and their momentum.
// Both kernels stream the (inputs + 1) x 17 weight matrices; the tiny vectors are reused.
//
// Rodinia launches both kernels with grid (1, inputs / 16), which CUDA rejects above 65535 rows
// of blocks (about 143 MB). Larger inputs tile the grid as (x, min(rows, 65535)) and each block
// works on row `by = blockIdx.y * gridDim.x + blockIdx.x` (blocks past the last row exit), so
// consecutive block ids still walk consecutive rows; below the limit the grid is Rodinia's.
#include "core/error.h"
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kH = 16, kHid = 16;  // HEIGHT = WIDTH = 16 threads, 16 hidden units
constexpr std::uint64_t kMaxGridY = 65535;   // CUDA's limit on gridDim.y

// ---- per-thread work (compute_cost.h) ----
// index = (hid+1)*HEIGHT*by + (hid+1)*ty + tx + 1 + (hid+1), index_in = HEIGHT*by + ty + 1: three
// special-register reads (and by's tile arithmetic), four multiply-adds, one add.
constexpr Work kIndices = int_ops(4) + imad(4);
// bpnn_layerforward_CUDA:
//   if (tx == 0) input_node[ty] = input_cuda[index_in];
constexpr Work kFwdInput = kIndices + kGuard + kAddress;
//   __syncthreads(); weight_matrix[ty][tx] = input_hidden_cuda[index];  (the STS waits for the
//   input load)
constexpr Work kFwdWeight = shared(1) + kBarrier + kAddress;
//   STS, barrier, weight_matrix[ty][tx] *= input_node[ty] (2 LDS, FMUL, STS), barrier, then
//   log2(16) = 4 reduction steps, each: power_two = __powf(2, i) (lg2, ex2, FMUL), ty % power_two,
//   the if, two LDS, FADD, STS, barrier, loop step; finally LDS and the store address.
constexpr Work kReduceStep =
    sfu(2) + fp32(1) + int_ops(2) + cmp(1) + kGuard + shared(3) + fp32(1) + kBarrier + kLoop;
constexpr Work kFwdWriteBack =
    shared(4) + 2 * kBarrier + fp32(1) + 4 * kReduceStep + shared(1) + kAddress;
//   __syncthreads(); if (tx == 0) hidden_partial_sum[by * hid + ty] = weight_matrix[tx][ty];
constexpr Work kFwdPartial = kBarrier + kGuard + shared(1) + kIndex2D + kAddress;
// bpnn_adjust_weights_cuda: ETA and MOMENTUM are double literals (#define ETA 0.3), so
//   w[index] += ETA * delta[index_x] * ly[index_y] + MOMENTUM * oldw[index]
// runs in double: four float->double conversions, DMUL, DMUL, DFMA, DADD, one conversion back;
// oldw[index] stores the common subexpression.
constexpr Work kAdjLoads = kIndices + 4 * kAddress;
constexpr Work kAdjUpdate = cvt64(5) + fp64(4);
//   __syncthreads(); if (ty == 0 && by == 0) the bias row, with three conversions to double and
//   one back, DMUL, DFMA, DADD.
constexpr Work kBiasLoads = kBarrier + cmp(2) + branch(1) + 3 * kAddress;
constexpr Work kBiasUpdate = cvt64(4) + fp64(3);

void write_backprop(GenContext& ctx) {
  const std::uint64_t epochs = ctx.params.integer("epochs", 1, 100000);
  // input_units + two weight matrices of (in+1) x (hid+1) floats + partial sums, per input
  const std::uint64_t in = fit(ctx.footprint, kH, [](std::uint64_t v) {
    return (v + 1) * 4 + 2 * (v + 1) * (kHid + 1) * 4 + v / kH * kHid * 4 + (kHid + 1) * 4;
  });
  const std::uint64_t blocks = in / kH, w1 = kHid + 1;
  Workload wl(ctx);
  wl.metadata().params["inputs"] = in;
  const std::uint32_t input = wl.alloc("input_cuda", (in + 1) * 4),
                      weights = wl.alloc("input_hidden_cuda", (in + 1) * w1 * 4),
                      partial = wl.alloc("hidden_partial_sum", blocks * kHid * 4),
                      delta = wl.alloc("hidden_delta_cuda", w1 * 4),
                      prev = wl.alloc("input_prev_weights_cuda", (in + 1) * w1 * 4);
  // Rodinia's grid (1, blocks) when CUDA allows it, else tiled (see the top of the file).
  const std::uint64_t gy = std::min(blocks, kMaxGridY), gx = ceil_div(blocks, gy);
  if (gx > 0x7fffffffu) throw UserError("--footprint: too large (grid exceeds CUDA's limits)");
  const Dim3 grid{static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy), 1},
      block{kH, kH, 1};
  // The row of 16 inputs a block works on, or kOff for the spare blocks of a tiled grid.
  auto row_of = [gx, blocks](const Block& blk) {
    const std::uint64_t by = std::uint64_t{blk.y} * gx + blk.x;
    return by < blocks ? by : kOff;
  };
  const auto threads = static_cast<std::int64_t>(blocks * kH * kH),
             b = static_cast<std::int64_t>(blocks);
  const std::int64_t wtile = ((kH - 1) * w1 + kH) * 4;  // 16 rows of 16 of the 17 columns
  // index = (hid+1)*HEIGHT*by + (hid+1)*ty + tx + 1 + (hid+1); index_in = HEIGHT*by + ty + 1
  auto widx = [](std::uint64_t by, const Thread& t) {
    return std::uint64_t{kHid + 1} * (kH * by + t.y + 1) + t.x + 1;
  };
  auto in_idx = [](std::uint64_t by, const Thread& t) { return std::uint64_t{kH} * by + t.y + 1; };

  const std::uint32_t kf = wl.kernel("bpnn_layerforward_CUDA", grid, block, (kH + kH * kH) * 4);
  const Ref f_in = wl.ref(kf, {input, AccessKind::Read, b * kH, kH * 4});  // tx == 0
  const Ref f_w = wl.ref(kf, {weights, AccessKind::Read, threads, wtile});
  const Ref f_ww = wl.ref(kf, {weights, AccessKind::Write, threads, wtile});
  const Ref f_ps = wl.ref(kf, {partial, AccessKind::Write, b * kH, kHid * 4});  // tx == 0
  wl.body(kf, [=](Block& blk, std::int32_t) {
    const std::uint64_t by = row_of(blk);
    if (by == kOff) return;
    blk.warps([&](Warp& w) {
      w.op(f_in, kFwdInput, [&](const Thread& t) { return t.x == 0 ? in_idx(by, t) : kOff; });
      w.op(f_w, kFwdWeight, [&](const Thread& t) { return widx(by, t); });
      w.op(f_ww, kFwdWriteBack, [&](const Thread& t) { return widx(by, t); });
      w.op(f_ps, kFwdPartial, [&](const Thread& t) { return t.x == 0 ? by * kHid + t.y : kOff; });
    });
  });

  const std::uint32_t ka = wl.kernel("bpnn_adjust_weights_cuda", grid, block);
  // w[index] += ETA*delta[tx+1]*ly[index_y] + MOMENTUM*oldw[index]; oldw[index] = that term
  const Ref a_d = wl.ref(ka, {delta, AccessKind::Read, threads, kH * 4, AccessPattern::Shared});
  const Ref a_ly = wl.ref(ka, {input, AccessKind::Read, threads, kH * 4});
  const Ref a_old = wl.ref(ka, {prev, AccessKind::Read, threads, wtile});
  const Ref a_w = wl.ref(ka, {weights, AccessKind::Read, threads, wtile});
  const Ref a_ww = wl.ref(ka, {weights, AccessKind::Write, threads, wtile});
  const Ref a_ow = wl.ref(ka, {prev, AccessKind::Write, threads, wtile});
  // if (ty == 0 && by == 0): the bias row w[index_x], oldw[index_x]
  const Ref b_d = wl.ref(ka, {delta, AccessKind::Read, kH, kH * 4, AccessPattern::Shared});
  const Ref b_old = wl.ref(ka, {prev, AccessKind::Read, kH, kH * 4});
  const Ref b_w = wl.ref(ka, {weights, AccessKind::Read, kH, kH * 4});
  const Ref b_ww = wl.ref(ka, {weights, AccessKind::Write, kH, kH * 4});
  const Ref b_ow = wl.ref(ka, {prev, AccessKind::Write, kH, kH * 4});
  wl.body(ka, [=](Block& blk, std::int32_t) {
    const std::uint64_t by = row_of(blk);
    if (by == kOff) return;
    blk.warps([&](Warp& w) {
      auto idx = [&](const Thread& t) { return widx(by, t); };
      w.op(a_d, kAdjLoads, [&](const Thread& t) { return std::uint64_t{t.x} + 1; });
      w.op(a_ly, kNoWork, [&](const Thread& t) { return in_idx(by, t); });
      w.op(a_old, kNoWork, idx);
      w.op(a_w, kNoWork, idx);
      w.op(a_ww, kAdjUpdate, idx);
      w.op(a_ow, kNoWork, idx);
      auto bias = [&](const Thread& t) {
        return t.y == 0 && by == 0 ? std::uint64_t{t.x} + 1 : kOff;
      };
      w.op(b_d, kBiasLoads, bias);
      w.op(b_old, kNoWork, bias);
      w.op(b_w, kNoWork, bias);
      w.op(b_ww, kBiasUpdate, bias);
      w.op(b_ow, kNoWork, bias);
    });
  });

  wl.cpu_write(input);
  wl.cpu_write(weights);
  for (std::uint64_t e = 0; e < epochs; ++e) {
    const auto it = static_cast<std::int32_t>(e);
    wl.launch(kf, it);
    wl.cpu_read(partial);  // the host sums the partial sums, computes output and errors
    wl.cpu_write(delta);   // and copies the hidden deltas back
    wl.launch(ka, it);
  }
  // bpnn_train_cuda ends by freeing its device buffers.
  for (const std::uint32_t a : {input, weights, partial, delta, prev}) wl.free(a);
  wl.write();
}

const Registrar kBackprop{Generator{
    "backprop",
    "two-layer perceptron training, per epoch a forward and a weight-adjust kernel over "
    "(inputs+1) x 17 weights; inputs = largest multiple of 16 that fits the footprint (above "
    "65535 rows of 16 inputs the grid is tiled over x, so every size generates)",
    {{"epochs", "2", "training epochs (host loop)"}},
    write_backprop,
    "streaming",
    std::uint64_t{128} << 20,
    "Rodinia backprop",
}};

}  // namespace
}  // namespace uvmsim::gen
