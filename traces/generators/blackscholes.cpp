// `blackscholes`: the CUDA samples' BlackScholes option pricer (ObservUVM's BLK), launched
// `iters` times over the same five float arrays. Each thread prices two options (float2), so
// every launch streams all arrays once: with a footprint above device memory, the accesses cycle
// through more 2 MB blocks than fit, the cyclic pattern for which evicting the most recently used
// block beats LRU (ObservUVM §VI-A, Cyclic Protection).
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 128;  // BlackScholesGPU<<<DIV_UP(optN/2, 128), 128>>>

// ---- per-thread work (compute_cost.h), following the CUDA sample's source ----
// cndGPU(d): K = __fdividef(1, 1 + 0.2316419f * fabsf(d)) (FFMA, MUFU.RCP, FMUL);
// cnd = RSQRT2PI * __expf(-0.5f * d * d) * K * (five-term Horner polynomial in K) (two FMULs,
// __expf, five FFMAs, two FMULs); if (d > 0) cnd = 1 - cnd (compare, FADD, select).
constexpr Work kCnd = fp32(2) + sfu(1) + fp32(2) + kExp + fp32(7) + cmp(2) + fp32(1);
// BlackScholesBodyGPU: sqrtT = __fdividef(1, rsqrtf(T)) (two MUFU, FMUL);
// d1 = (__logf(S / X) + (R + 0.5f * V * V) * T) / (V * sqrtT) (a division, __logf, three FMUL/
// FFMA, FMUL, a division, FADD); d2 = d1 - V * sqrtT (FFMA); two cndGPU; expRT = __expf(-R * T);
// the call and put results (seven FMUL/FFMA/FADD).
constexpr Work kOption = sfu(2) + fp32(1) + kDivide + kLog + fp32(4) + kDivide + fp32(1) + fp32(1) +
                         2 * kCnd + fp32(1) + kExp + fp32(7);
// Before the loads: opt = blockDim.x * blockIdx.x + threadIdx.x, if (opt < optN / 2), and the
// three float2 addresses (the loads are independent and issue back to back). Before the stores:
// two options priced, and the two result addresses.
constexpr Work kLoads = kGlobalIndex + kGuard + 3 * kAddress;
constexpr Work kPricing = 2 * kOption + 2 * kAddress;

void write_blackscholes(GenContext& ctx) {
  const std::uint64_t iters = ctx.params.integer("iters", 1, 100000);
  const std::uint64_t opt_n = std::max<std::uint64_t>(2, ctx.footprint / 20 / 2 * 2);
  const std::uint64_t pairs = opt_n / 2;
  Workload wl(ctx);
  wl.metadata().params["options"] = opt_n;
  const char* names[] = {"d_CallResult", "d_PutResult", "d_StockPrice", "d_OptionStrike",
                         "d_OptionYears"};
  std::uint32_t arr[5];
  for (int i = 0; i < 5; ++i) arr[i] = wl.alloc(names[i], opt_n * 4);
  const std::uint32_t k = wl.kernel("BlackScholesGPU", grid_1d(pairs, kBlock), {kBlock, 1, 1});
  const auto p = static_cast<std::int64_t>(pairs);
  const std::int64_t tb = std::min<std::int64_t>(kBlock, p) * 8;
  Ref r[5];
  for (int i : {2, 3, 4}) r[i] = wl.ref(k, Access(arr[i], AccessKind::Read, p, tb).size(8));
  for (int i : {0, 1}) r[i] = wl.ref(k, Access(arr[i], AccessKind::Write, p, tb).size(8));
  wl.body(k, [=](Block& blk, std::int32_t) {
    blk.warps([&](Warp& w) {
      auto opt = [&](const Thread& t) { return blk.gx(t) < pairs ? blk.gx(t) : kOff; };
      w.op(r[2], kLoads, opt);  // S = d_StockPrice[opt], X = ..., T = ... (independent loads)
      w.op(r[3], kNoWork, opt);
      w.op(r[4], kNoWork, opt);
      w.op(r[0], kPricing, opt);  // d_CallResult[opt] = ...
      w.op(r[1], kNoWork, opt);   // d_PutResult[opt] = ...
    });
  });
  for (int i : {2, 3, 4}) wl.cpu_write(arr[i]);
  wl.loop(iters, {k});
  wl.write();
}

const Registrar kBlackscholes{Generator{
    "blackscholes",
    "iters launches pricing footprint/20 options (5 float arrays), two options per thread; "
    "every launch streams all arrays",
    {{"iters", "10", "number of launches of the pricing kernel (host loop)"}},
    write_blackscholes,
    "cyclic",
    std::uint64_t{128} << 20,
    "CUDA samples BlackScholes",
}};

}  // namespace
}  // namespace uvmsim::gen
