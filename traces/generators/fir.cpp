// `fir`: Hetero-Mark's FIR filter: the input signal is processed in `chunks` consecutive blocks,
// one launch each (host loop); thread t of a launch computes output[t] = sum_i coeff[i] *
// input[t - i], reading the previous block's tail from a history buffer for t < i, and a small
// kernel then saves this block's tail as the next history. Each launch streams a new, disjoint
// part of the input and output while the coefficients and history are reused throughout.
//
// Host events follow UVM-Discard's fir (Zhu et al., IISWC 2022), which prefetches everything the
// kernels touch, so the real run takes no GPU fault: the input is populated on the host
// (cudaMemPrefetchAsync to the CPU, then written), the coefficients and history — device
// buffers filled by cudaMemcpy in the app — are prefetched to the GPU after the host writes them,
// and before the first launch of every window of `window` chunks the input and output of that
// window are prefetched to the GPU. `prefetch=off` leaves every migration to demand faults.
#include "core/error.h"
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 256;

// ---- per-thread work (compute_cost.h) ----
// tid = blockIdx.x * blockDim.x + threadIdx.x; if (tid > num_data) return; then per tap i the
// loop step, if (tid >= i), &coeff[i] and &input[tid - i] (or &history[...]), and the FFMA
// sum += coeff[i] * x once both loads are back (it precedes the next tap's loads).
constexpr Work kTapLoads = kLoop + kGuard + kAddress + int_ops(1) + kAddress;
constexpr Work kFirstTap = kGlobalIndex + kGuard + kTapLoads;
constexpr Work kNextTap = fp32(1) + kTapLoads;
constexpr Work kStoreOutput = fp32(1) + kAddress;
// fir_save_history: j = global index, if (j < taps), &input[end - taps + j]; &history[j].
constexpr Work kHistoryLoad = kGlobalIndex + kGuard + int_ops(1) + kAddress;
constexpr Work kHistoryStore = kAddress;

void write_fir(GenContext& ctx) {
  const std::uint64_t chunks = ctx.params.integer("chunks", 1, 100000);
  const std::uint64_t taps = ctx.params.integer("taps", 1, 256);
  const bool prefetch = ctx.params.choice("prefetch", {"on", "off"}) == "on";
  const std::uint64_t window = std::min(ctx.params.integer("window", 1, 100000), chunks);
  const std::uint64_t len = ctx.footprint / 8 / chunks / kBlock * kBlock;  // samples per launch
  if (len < taps)
    throw UserError("--footprint: too small for " + std::to_string(chunks) + " chunks");
  const std::uint64_t total = len * chunks;
  Workload wl(ctx);
  wl.metadata().params["samples"] = total;
  wl.metadata().params["samples_per_chunk"] = len;
  const std::uint32_t input = wl.alloc("input", total * 4), output = wl.alloc("output", total * 4),
                      coeff = wl.alloc("coeff", taps * 4), history = wl.alloc("history", taps * 4);
  const auto l = static_cast<std::int64_t>(len), t = static_cast<std::int64_t>(taps);
  const std::int64_t from_history = t * (t - 1) / 2;  // (tid, i) pairs with tid < i
  const Poly chunk_start(0, l * 4);
  const std::uint32_t k = wl.kernel("fir_cuda", grid_1d(len, kBlock), {kBlock, 1, 1});
  const Ref r_c = wl.ref(k, {coeff, AccessKind::Read, l * t, t * 4, AccessPattern::Shared});
  const Ref r_in =
      wl.ref(k, Access(input, AccessKind::Read, l * t - from_history, (kBlock + t - 1) * 4)
                    .iterates(chunk_start, l * 4));
  const Ref r_h = wl.ref(
      k, Access(history, AccessKind::Read, from_history, (t - 1) * 4, AccessPattern::Shared));
  const Ref w_out =
      wl.ref(k, Access(output, AccessKind::Write, l, kBlock * 4).iterates(chunk_start, l * 4));
  wl.body(k, [=](Block& b, std::int32_t it) {
    const std::uint64_t base = static_cast<std::uint64_t>(it) * len;
    b.warps([&](Warp& w) {
      for (std::uint64_t i = 0; i < taps; ++i) {
        w.op(r_c, i == 0 ? kFirstTap : kNextTap, [&](const Thread&) { return i; });
        w.op(r_in, kNoWork,
             [&](const Thread& th) { return b.gx(th) >= i ? base + b.gx(th) - i : kOff; });
        w.op(r_h, kNoWork,
             [&](const Thread& th) { return b.gx(th) < i ? taps - (i - b.gx(th)) : kOff; });
      }
      w.op(w_out, kStoreOutput, [&](const Thread& th) { return base + b.gx(th); });
    });
  });
  // history[j] = input[chunk end - taps + j]
  const std::uint32_t kh =
      wl.kernel("fir_save_history", grid_1d(taps, kBlock),
                {static_cast<std::uint32_t>(std::min<std::uint64_t>(taps, kBlock)), 1, 1});
  const Ref h_in =
      wl.ref(kh, Access(input, AccessKind::Read, t, t * 4).iterates({(l - t) * 4, l * 4}, t * 4));
  const Ref h_w = wl.ref(kh, {history, AccessKind::Write, t, t * 4, AccessPattern::Shared});
  wl.body(kh, [=](Block& b, std::int32_t it) {
    const std::uint64_t end = (static_cast<std::uint64_t>(it) + 1) * len;
    b.warps([&](Warp& w) {
      auto j = [&](const Thread& th) { return b.gx(th) < taps ? b.gx(th) : kOff; };
      w.op(h_in, kHistoryLoad,
           [&](const Thread& th) { return j(th) == kOff ? kOff : end - taps + j(th); });
      w.op(h_w, kHistoryStore, j);
    });
  });
  if (prefetch) wl.prefetch(input, Processor::Cpu);  // populate the input on the host
  wl.cpu_write(input);
  wl.cpu_write(coeff);
  wl.cpu_write(history);
  if (prefetch) {
    wl.prefetch(coeff, Processor::Gpu);
    wl.prefetch(history, Processor::Gpu);
  }
  for (std::uint64_t c = 0; c < chunks; ++c) {
    if (prefetch && c % window == 0) {  // the next window of chunks, before its first launch
      const std::uint64_t bytes = std::min(window, chunks - c) * len * 4;
      wl.prefetch(input, Processor::Gpu, c * len * 4, bytes);
      wl.prefetch(output, Processor::Gpu, c * len * 4, bytes);
    }
    wl.launch(k, static_cast<std::int32_t>(c));
    wl.launch(kh, static_cast<std::int32_t>(c));
  }
  wl.write();
}

const Registrar kFir{Generator{
    "fir",
    "FIR filter over footprint/8 samples (input + output), processed in `chunks` launches of "
    "one thread per output sample",
    {{"chunks", "16", "signal blocks, one launch each (host loop)"},
     {"taps", "16", "filter taps"},
     {"prefetch", "on",
      "on: cudaMemPrefetchAsync as UVM-Discard's fir (no GPU fault); off: demand paging only"},
     {"window", "4", "chunks whose input and output one prefetch moves to the GPU"}},
    write_fir,
    "iterative-disjoint",
    std::uint64_t{64} << 20,
    "Hetero-Mark FIR",
}};

}  // namespace
}  // namespace uvmsim::gen
