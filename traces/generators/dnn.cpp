// Batched CNN inference, layer by layer (Tango's AlexNet and SqueezeNet; SUV's and ObservUVM's
// AN and SN): one kernel per layer over its own weight allocation and NCHW activation buffers.
// Convolutions and fully connected layers run as implicit GEMMs (C[cout][b,y,x] = W[cout][cin,ky,
// kx] x im2col(in)) with 64 x 64 output tiles per block of 256 threads and k-steps of 16 staged in
// shared memory, as cuDNN-style kernels do; pooling layers use one thread per output. The host
// writes each batch of images and launches the layers in order (iteration = batch); weights are
// reused by every batch while activations stream through. SqueezeNet's fire modules write their
// two expand convolutions into the channel halves of one buffer (the concatenation).
#include <algorithm>

#include "core/error.h"
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kThreads = 256, kTileM = 64, kTileN = 64, kStepK = 16;

// ---- per-thread work (compute_cost.h) ----
// Implicit GEMM, per k-step: four weight loads (row-major index and address each) and four im2col
// loads (channel, ky, kx of the k index, the padding checks, the NCHW index) issue together; the
// loaded values go to shared memory (8 STS) between two barriers, and the 64 x 64 x 16 tile is
// multiplied: per k, each thread reads 4 + 4 operands from shared memory and does 4 x 4 FFMA.
constexpr Work kWeightAddress = kIndex2D + kAddress;
constexpr Work kIm2colAddress = int_ops(6) + imad(3) + cmp(4) + kAddress;
constexpr Work kStepLoads = 4 * kWeightAddress + 4 * kIm2colAddress;
constexpr Work kStepCompute = shared(8) + 2 * kBarrier + kStepK * (shared(8) + fp32(16)) + kLoop;
// The epilogue: the ReLU of the 4 x 4 outputs and their addresses.
constexpr Work kEpilogue = cmp(16) + 16 * (kIndex2D + kAddress);
// Pooling, per output: the index, the guard and its (batch, channel, y, x) by three divisions;
// per window element the bounds check, the NCHW index and the address (hoisted before the
// independent loads); the max of each element; the store address.
constexpr Work kPoolStart = kGlobalIndex + kGuard + 3 * kIntDivide;
constexpr Work kPoolTap = cmp(2) + 2 * kIndex2D + kAddress;

/// A view of an NCHW buffer: `c` channels starting at channel `c0` of a buffer with `cbuf`.
struct Tensor {
  std::uint32_t alloc = 0;
  std::uint64_t c = 0, h = 0, w = 0, c0 = 0, cbuf = 0;
  std::uint64_t index(std::uint64_t b, std::uint64_t ch, std::uint64_t y, std::uint64_t x) const {
    return ((b * cbuf + c0 + ch) * h + y) * w + x;
  }
};

/// Positions o in [0, out) with 0 <= o*stride - pad + k < in, summed over k in [0, ksize).
std::uint64_t inside(std::uint64_t out, std::uint64_t in, std::uint64_t ksize, std::uint64_t stride,
                     std::uint64_t pad) {
  std::uint64_t n = 0;
  for (std::uint64_t k = 0; k < ksize; ++k) {
    for (std::uint64_t o = 0; o < out; ++o) {
      const std::int64_t v =
          static_cast<std::int64_t>(o * stride + k) - static_cast<std::int64_t>(pad);
      n += v >= 0 && v < static_cast<std::int64_t>(in);
    }
  }
  return n;
}

class Net {
 public:
  Net(Workload& wl, std::uint64_t batch) : wl_(wl), batch_(batch) {}

  Tensor buffer(const std::string& name, std::uint64_t c, std::uint64_t h, std::uint64_t w) {
    return {wl_.alloc(name, batch_ * c * h * w * 4), c, h, w, 0, c};
  }
  /// Convolution (or a fully connected layer: h = w = k = 1) from `in` into `out`.
  void conv(const std::string& name, const Tensor& in, const Tensor& out, std::uint64_t k,
            std::uint64_t stride, std::uint64_t pad) {
    const std::uint64_t m = out.c, kd = in.c * k * k, n = batch_ * out.h * out.w;
    const std::uint32_t w = wl_.alloc(name + "_weights", m * kd * 4);
    weights_.push_back(w);
    const std::uint64_t nt = ceil_div(n, kTileN), mt = ceil_div(m, kTileM),
                        steps = ceil_div(kd, kStepK);
    const std::uint32_t kern =
        wl_.kernel(name, {static_cast<std::uint32_t>(nt), static_cast<std::uint32_t>(mt), 1},
                   {kThreads, 1, 1}, (kTileM + kTileN) * kStepK * 4);
    // Exact counts and per-block extents, evaluated as SUV-Host's injected code would.
    const std::uint64_t in_loads = mt * in.c * batch_ * inside(out.h, in.h, k, stride, pad) *
                                   inside(out.w, in.w, k, stride, pad);
    std::uint64_t in_ext = 0, out_ext = 0;
    for (std::uint64_t t = 0; t < nt; ++t) {
      const std::uint64_t n0 = t * kTileN, n1 = std::min(n, n0 + kTileN);
      std::uint64_t lo = ~std::uint64_t{0}, hi = 0;
      for (std::uint64_t p = n0; p < n1; ++p) {
        for (std::uint64_t ky = 0; ky < k; ++ky) {
          for (std::uint64_t kx = 0; kx < k; ++kx) {
            const std::uint64_t e = pixel(in, out, p, 0, ky, kx, stride, pad);
            if (e == kOff) continue;
            lo = std::min(lo, e);
            hi = std::max(hi, pixel(in, out, p, in.c - 1, ky, kx, stride, pad));
          }
        }
      }
      if (hi >= lo) in_ext = std::max(in_ext, (hi - lo + 1) * 4);
      const std::uint64_t b0 = n0 / (out.h * out.w), b1 = (n1 - 1) / (out.h * out.w);
      const std::uint64_t first = out.index(b0, 0, (n0 % (out.h * out.w)) / out.w, n0 % out.w);
      const std::uint64_t rest = (n1 - 1) % (out.h * out.w);
      const std::uint64_t last =
          out.index(b1, std::min<std::uint64_t>(m, kTileM) - 1, rest / out.w, rest % out.w);
      out_ext = std::max(out_ext, (last - first + 1) * 4);
    }
    const auto i64 = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
    const Ref rw =
        wl_.ref(kern, {w, AccessKind::Read, i64(nt * m * kd),
                       i64(std::min<std::uint64_t>(kTileM, m) * kd * 4), AccessPattern::Tiled});
    const Ref ri = wl_.ref(
        kern, {in.alloc, AccessKind::Read, i64(in_loads), i64(in_ext), AccessPattern::Shared});
    const Ref wo = wl_.ref(kern, {out.alloc, AccessKind::Write, i64(m * n), i64(out_ext)});
    const Tensor src = in, dst = out;
    const std::uint64_t bt = batch_;
    wl_.body(kern, [=](Block& b, std::int32_t) {
      const std::uint64_t n0 = std::uint64_t{b.x} * kTileN, co0 = std::uint64_t{b.y} * kTileM;
      b.warps([&](Warp& wp) {
        const std::uint64_t wi = wp.index();
        for (std::uint64_t s = 0; s < steps; ++s) {
          const std::uint64_t kk = s * kStepK;
          for (std::uint64_t q = 0; q < 4;
               ++q) {  // weights: rows co0 + 8 wi + 2 q (+1), 16 columns
            const Work work = q > 0    ? kNoWork
                              : s == 0 ? kGlobalIndex2D + kStepLoads
                                       : kStepCompute + kStepLoads;
            wp.op(rw, work, [&](const Thread& t) {
              const std::uint64_t co = co0 + 8 * wi + 2 * q + t.x % 32 / 16, kidx = kk + t.x % 16;
              return co < m && kidx < kd ? co * kd + kidx : kOff;
            });
          }
          for (std::uint64_t q = 0; q < 4; ++q) {  // im2col: k-row kk + 2 wi + q/2, 32 positions
            wp.op(ri, kNoWork, [&](const Thread& t) {
              const std::uint64_t kidx = kk + 2 * wi + q / 2, p = n0 + (q % 2) * 32 + t.x % 32;
              if (kidx >= kd || p >= bt * dst.h * dst.w) return kOff;
              return pixel(src, dst, p, kidx / (k * k), kidx / k % k, kidx % k, stride, pad);
            });
          }
        }
        for (std::uint64_t i = 0; i < 4; ++i) {  // epilogue: thread (ty, tx) holds 4 x 4 outputs
          for (std::uint64_t j = 0; j < 4; ++j) {
            wp.op(wo, i + j == 0 ? kStepCompute + kEpilogue : kNoWork, [&](const Thread& t) {
              const std::uint64_t ty = b.local(t) / 16, tx = b.local(t) % 16;
              const std::uint64_t co = co0 + ty * 4 + i, p = n0 + j * 16 + tx;
              if (co >= m || p >= bt * dst.h * dst.w) return kOff;
              const std::uint64_t hw = dst.h * dst.w, r = p % hw;
              return dst.index(p / hw, co, r / dst.w, r % dst.w);
            });
          }
        }
      });
    });
    kernels_.push_back(kern);
  }

  /// Max (or average) pooling, one thread per output element.
  void pool(const std::string& name, const Tensor& in, const Tensor& out, std::uint64_t k,
            std::uint64_t stride) {
    const std::uint64_t total = batch_ * out.c * out.h * out.w;
    const Dim3 grid = grid_1d(total, kThreads);
    const std::uint32_t kern = wl_.kernel(name, grid, {kThreads, 1, 1});
    const std::uint64_t reads =
        batch_ * out.c * inside(out.h, in.h, k, stride, 0) * inside(out.w, in.w, k, stride, 0);
    std::uint64_t in_ext = 0, out_ext = 0;
    for (std::uint64_t t0 = 0; t0 < total; t0 += kThreads) {
      const std::uint64_t t1 = std::min(total, t0 + kThreads) - 1;
      auto corner = [&](std::uint64_t e, bool last) {
        const std::uint64_t hw = out.h * out.w, r = e % (out.c * hw);
        const std::uint64_t y = std::min(in.h - 1, r % hw / out.w * stride + (last ? k - 1 : 0));
        const std::uint64_t x = std::min(in.w - 1, r % out.w * stride + (last ? k - 1 : 0));
        return in.index(e / (out.c * hw), r / hw, y, x);
      };
      in_ext = std::max(in_ext, (corner(t1, true) - corner(t0, false) + 1) * 4);
      out_ext = std::max(out_ext, (t1 - t0 + 1) * 4);
    }
    const auto i64 = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
    const Ref ri = wl_.ref(kern, {in.alloc, AccessKind::Read, i64(reads), i64(in_ext)});
    const Ref wo = wl_.ref(kern, {out.alloc, AccessKind::Write, i64(total), i64(out_ext)});
    const Tensor src = in, dst = out;
    wl_.body(kern, [=](Block& b, std::int32_t) {
      b.warps([&](Warp& wp) {
        auto coords = [&](const Thread& t, std::uint64_t& bb, std::uint64_t& c, std::uint64_t& y,
                          std::uint64_t& x) {
          const std::uint64_t e = b.gx(t), hw = dst.h * dst.w;
          if (e >= total) return false;
          bb = e / (dst.c * hw), c = e / hw % dst.c, y = e % hw / dst.w, x = e % dst.w;
          return true;
        };
        for (std::uint64_t ky = 0; ky < k; ++ky) {
          for (std::uint64_t kx = 0; kx < k; ++kx) {
            const Work work =
                ky + kx == 0 ? kPoolStart + static_cast<std::uint32_t>(k * k) * kPoolTap : kNoWork;
            wp.op(ri, work, [&](const Thread& t) {
              std::uint64_t bb, c, y, x;
              if (!coords(t, bb, c, y, x)) return kOff;
              const std::uint64_t iy = y * stride + ky, ix = x * stride + kx;
              return iy < src.h && ix < src.w ? src.index(bb, c, iy, ix) : kOff;
            });
          }
        }
        wp.op(wo, cmp(static_cast<std::uint32_t>(k * k)) + kAddress,
              [&](const Thread& t) { return b.gx(t) < total ? b.gx(t) : kOff; });
      });
    });
    kernels_.push_back(kern);
  }

  const std::vector<std::uint32_t>& kernels() const { return kernels_; }
  const std::vector<std::uint32_t>& weights() const { return weights_; }

 private:
  /// Input element of output position p (batch-major b, y, x), channel ci, tap (ky, kx); kOff in
  /// the zero padding.
  static std::uint64_t pixel(const Tensor& in, const Tensor& out, std::uint64_t p, std::uint64_t ci,
                             std::uint64_t ky, std::uint64_t kx, std::uint64_t stride,
                             std::uint64_t pad) {
    const std::uint64_t hw = out.h * out.w, r = p % hw;
    const std::int64_t iy =
        static_cast<std::int64_t>(r / out.w * stride + ky) - static_cast<std::int64_t>(pad);
    const std::int64_t ix =
        static_cast<std::int64_t>(r % out.w * stride + kx) - static_cast<std::int64_t>(pad);
    if (iy < 0 || ix < 0 || iy >= static_cast<std::int64_t>(in.h) ||
        ix >= static_cast<std::int64_t>(in.w))
      return kOff;
    return in.index(p / hw, ci, static_cast<std::uint64_t>(iy), static_cast<std::uint64_t>(ix));
  }

  Workload& wl_;
  std::uint64_t batch_;
  std::vector<std::uint32_t> kernels_, weights_;
};

struct Shape {
  std::uint64_t weights = 0, activations = 0;  // floats: all weights, activations per image
};

/// Builds the network into `net` (or only counts its sizes when `net` is null).
using Builder = std::function<Shape(Net* net, std::uint64_t div)>;

/// AlexNet (single tower, 227 x 227 input); channel counts divided by `div`.
Shape alexnet(Net* net, std::uint64_t div) {
  struct L {
    const char* name;
    bool pool;
    std::uint64_t c, k, s, p, h;  // output channels (conv) / window (pool), output edge
  };
  const L layers[] = {{"conv1", false, 96, 11, 4, 0, 55}, {"pool1", true, 0, 3, 2, 0, 27},
                      {"conv2", false, 256, 5, 1, 2, 27}, {"pool2", true, 0, 3, 2, 0, 13},
                      {"conv3", false, 384, 3, 1, 1, 13}, {"conv4", false, 384, 3, 1, 1, 13},
                      {"conv5", false, 256, 3, 1, 1, 13}, {"pool5", true, 0, 3, 2, 0, 6},
                      {"fc6", false, 4096, 6, 1, 0, 1},   {"fc7", false, 4096, 1, 1, 0, 1},
                      {"fc8", false, 1000, 1, 1, 0, 1}};
  Shape s{0, 3 * 227 * 227};
  std::uint64_t c = 3, h = 227;
  Tensor cur;
  if (net) cur = net->buffer("data", 3, 227, 227);
  for (const L& l : layers) {
    const std::uint64_t oc = l.pool ? c : std::max<std::uint64_t>(1, l.c / div);
    if (!l.pool) s.weights += oc * c * l.k * l.k;
    s.activations += oc * l.h * l.h;
    if (net) {
      const Tensor out = net->buffer(std::string(l.name) + "_out", oc, l.h, l.h);
      if (l.pool) {
        net->pool(l.name, cur, out, l.k, l.s);
      } else {
        net->conv(l.name, cur, out, l.k, l.s, l.p);
      }
      cur = out;
    }
    c = oc, h = l.h;
  }
  (void)h;
  return s;
}

/// SqueezeNet v1.0 (227 x 227 input); channel counts divided by `div`.
Shape squeezenet(Net* net, std::uint64_t div) {
  auto ch = [div](std::uint64_t c) { return std::max<std::uint64_t>(1, c / div); };
  Shape s{0, 3 * 227 * 227};
  Tensor cur;
  std::uint64_t c = 3, h = 227;
  if (net) cur = net->buffer("data", 3, 227, 227);
  auto conv = [&](const std::string& name, std::uint64_t oc, std::uint64_t k, std::uint64_t st,
                  std::uint64_t p, std::uint64_t oh) {
    s.weights += oc * c * k * k;
    s.activations += oc * oh * oh;
    if (net) {
      const Tensor out = net->buffer(name + "_out", oc, oh, oh);
      net->conv(name, cur, out, k, st, p);
      cur = out;
    }
    c = oc, h = oh;
  };
  auto pool = [&](const std::string& name, std::uint64_t k, std::uint64_t st, std::uint64_t oh) {
    s.activations += c * oh * oh;
    if (net) {
      const Tensor out = net->buffer(name + "_out", c, oh, oh);
      net->pool(name, cur, out, k, st);
      cur = out;
    }
    h = oh;
  };
  auto fire = [&](const std::string& name, std::uint64_t sq, std::uint64_t e1, std::uint64_t e3) {
    conv(name + "_squeeze1x1", ch(sq), 1, 1, 0, h);
    const std::uint64_t a = ch(e1), b = ch(e3);
    s.weights += a * c + b * c * 9;
    s.activations += (a + b) * h * h;
    if (net) {
      const Tensor cat = net->buffer(name + "_concat", a + b, h, h);
      Tensor left = cat, right = cat;
      left.c = a;
      right.c = b, right.c0 = a;
      net->conv(name + "_expand1x1", cur, left, 1, 1, 0);
      net->conv(name + "_expand3x3", cur, right, 3, 1, 1);
      cur = cat;
    }
    c = a + b;
  };
  conv("conv1", ch(96), 7, 2, 0, 111);
  pool("pool1", 3, 2, 55);
  fire("fire2", 16, 64, 64);
  fire("fire3", 16, 64, 64);
  fire("fire4", 32, 128, 128);
  pool("pool4", 3, 2, 27);
  fire("fire5", 32, 128, 128);
  fire("fire6", 48, 192, 192);
  fire("fire7", 48, 192, 192);
  fire("fire8", 64, 256, 256);
  pool("pool8", 3, 2, 13);
  fire("fire9", 64, 256, 256);
  conv("conv10", ch(1000), 1, 1, 0, 13);
  pool("pool10", 13, 1, 1);  // global average pooling
  return s;
}

void write_dnn(GenContext& ctx, const Builder& build) {
  const std::uint64_t div = ctx.params.integer("channel_div", 1, 64);
  const std::uint64_t batches = ctx.params.integer("batches", 1, 10000);
  const Shape shape = build(nullptr, div);
  const std::uint64_t fixed = shape.weights * 4, per_image = shape.activations * 4;
  if (ctx.footprint < fixed + per_image) {
    throw UserError("--footprint: must be at least " + std::to_string(fixed + per_image) +
                    " bytes (the weights and one image's activations) for this network");
  }
  const std::uint64_t batch = (ctx.footprint - fixed) / per_image;
  Workload wl(ctx);
  wl.metadata().params["batch"] = batch;
  Net net(wl, batch);
  build(&net, div);
  for (std::uint32_t w : net.weights()) wl.cpu_write(w);
  for (std::uint64_t i = 0; i < batches; ++i) {
    wl.cpu_write(0);  // this batch's images ("data" is the first allocation)
    for (std::uint32_t k : net.kernels()) wl.launch(k, static_cast<std::int32_t>(i));
  }
  wl.write();
}

const std::vector<ParamSpec> kDnnParams = {
    {"batches", "2", "input batches (host loop), each through all layers"},
    {"channel_div", "1", "divide every layer's channel count by this (smaller models for tests)"}};

const Registrar kAlexnet{Generator{
    "alexnet",
    "AlexNet inference: 5 convolutions, 3 poolings, 3 fully connected layers, one kernel each; "
    "batch = (footprint - 250 MB of weights) / 3.7 MB per image",
    kDnnParams,
    [](GenContext& ctx) { write_dnn(ctx, alexnet); },
    "tiled-reuse",
    std::uint64_t{258} << 20,
    "Tango AlexNet",
}};

const Registrar kSqueezenet{Generator{
    "squeezenet",
    "SqueezeNet v1.0 inference: conv1, 8 fire modules (squeeze + two expand convolutions), "
    "conv10, 4 poolings; batch = (footprint - 5 MB of weights) / 20 MB per image",
    kDnnParams,
    [](GenContext& ctx) { write_dnn(ctx, squeezenet); },
    "tiled-reuse",
    std::uint64_t{96} << 20,
    "Tango SqueezeNet",
}};

}  // namespace
}  // namespace uvmsim::gen
