// `backprop`: Rodinia's back-propagation training of a two-layer perceptron (Li & Chapman's
// backprop): per epoch bpnn_layerforward_CUDA computes the input layer's weighted partial sums
// (and writes the products back into the weights), the host finishes the forward and backward
// pass on the partial sums, and bpnn_adjust_weights_CUDA updates the weights and their momentum.
// Both kernels stream the (inputs + 1) x 17 weight matrices; the tiny vectors are reused.
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kH = 16, kHid = 16;  // HEIGHT = WIDTH = 16 threads, 16 hidden units

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
  const Dim3 grid{1, static_cast<std::uint32_t>(blocks), 1}, block{kH, kH, 1};
  const auto threads = static_cast<std::int64_t>(blocks * kH * kH),
             b = static_cast<std::int64_t>(blocks);
  const std::int64_t wtile = ((kH - 1) * w1 + kH) * 4;  // 16 rows of 16 of the 17 columns
  // index = (hid+1)*HEIGHT*by + (hid+1)*ty + tx + 1 + (hid+1); index_in = HEIGHT*by + ty + 1
  auto widx = [](const Block& blk, const Thread& t) {
    return std::uint64_t{kHid + 1} * (kH * blk.y + t.y + 1) + t.x + 1;
  };
  auto in_idx = [](const Block& blk, const Thread& t) {
    return std::uint64_t{kH} * blk.y + t.y + 1;
  };

  const std::uint32_t kf = wl.kernel("bpnn_layerforward_CUDA", grid, block, (kH + kH * kH) * 4);
  const Ref f_in = wl.ref(kf, {input, AccessKind::Read, b * kH, kH * 4});  // tx == 0
  const Ref f_w = wl.ref(kf, {weights, AccessKind::Read, threads, wtile});
  const Ref f_ww = wl.ref(kf, {weights, AccessKind::Write, threads, wtile});
  const Ref f_ps = wl.ref(kf, {partial, AccessKind::Write, b * kH, kHid * 4});  // tx == 0
  wl.body(kf, [=](Block& blk, std::int32_t) {
    blk.warps([&](Warp& w) {
      w.op(f_in, kIndexGap, [&](const Thread& t) { return t.x == 0 ? in_idx(blk, t) : kOff; });
      w.op(f_w, kIndexGap, [&](const Thread& t) { return widx(blk, t); });
      w.op(f_ww, 8 * kAluGap, [&](const Thread& t) { return widx(blk, t); });  // log2(16) reduction
      w.op(f_ps, kAluGap,
           [&](const Thread& t) { return t.x == 0 ? std::uint64_t{blk.y} * kHid + t.y : kOff; });
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
    blk.warps([&](Warp& w) {
      auto idx = [&](const Thread& t) { return widx(blk, t); };
      w.op(a_d, kIndexGap, [&](const Thread& t) { return std::uint64_t{t.x} + 1; });
      w.op(a_ly, 0, [&](const Thread& t) { return in_idx(blk, t); });
      w.op(a_old, 0, idx);
      w.op(a_w, 0, idx);
      w.op(a_ww, 3 * kAluGap, idx);
      w.op(a_ow, 0, idx);
      auto bias = [&](const Thread& t) {
        return t.y == 0 && blk.y == 0 ? std::uint64_t{t.x} + 1 : kOff;
      };
      w.op(b_d, kAluGap, bias);
      w.op(b_old, 0, bias);
      w.op(b_w, 0, bias);
      w.op(b_ww, 2 * kAluGap, bias);
      w.op(b_ow, 0, bias);
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
  wl.write();
}

const Registrar kBackprop{Generator{
    "backprop",
    "two-layer perceptron training, per epoch a forward and a weight-adjust kernel over "
    "(inputs+1) x 17 weights; inputs = largest multiple of 16 that fits the footprint",
    {{"epochs", "2", "training epochs (host loop)"}},
    write_backprop,
    "streaming",
    std::uint64_t{128} << 20,
    "Rodinia backprop",
}};

}  // namespace
}  // namespace uvmsim::gen
