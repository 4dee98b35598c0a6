// What the dense O(N^3) kernels (matmul.cpp, sgemm.cpp) share: their three N x N float operands,
// and k-sampling, their reduced-fidelity option: each run of about S consecutive steps of the k
// loop is written as its first step with the run's length as repeat count
// (docs/generators.md#reduced-fidelity-k-sampling).
#pragma once

#include <cstdint>

#include "traces/generators/emulation.h"

namespace uvmsim::gen {

/// Up to 32, the block columns that share a page of B in gemm (and of the B band in the tiled
/// kernels): each wave of blocks then still holds every sampling phase over each page.
inline constexpr std::uint64_t kMaxKSample = 32;

/// The `ksample` parameter: every how many-th step of the k loop is written (1: all of them).
inline std::uint32_t ksample_param(GenContext& ctx) {
  return static_cast<std::uint32_t>(ctx.params.integer("ksample", 1, kMaxKSample));
}

/// One past the last step of the run that starts at `step` of a `steps`-step loop: step 0 alone
/// (its work differs), then runs from step 1 and from every step k with (k + phase) % sample ==
/// 0. The phase differs between the warps or blocks that share pages, so that together they
/// still touch every step's pages.
inline std::uint64_t sampled_run_end(std::uint64_t step, std::uint64_t steps, std::uint64_t phase,
                                     std::uint64_t sample) {
  std::uint64_t end = step + 1;
  while (step > 0 && end < steps && (end + phase) % sample != 0) ++end;
  return end;
}

/// Three N x N float matrices A, B and C: N the largest multiple of `align` with 3 N^2 4 bytes
/// within the footprint, recorded in the metadata's params.
struct SquareOperands {
  std::uint64_t n = 0;
  std::uint32_t a = 0, b = 0, c = 0;
};
inline SquareOperands square_operands(GenContext& ctx, Workload& wl, std::uint64_t align) {
  SquareOperands m;
  m.n = square_order(ctx.footprint, 3, 4, align);
  wl.metadata().params["n"] = m.n;
  m.a = wl.alloc("A", m.n * m.n * 4);
  m.b = wl.alloc("B", m.n * m.n * 4);
  m.c = wl.alloc("C", m.n * m.n * 4);
  return m;
}

}  // namespace uvmsim::gen
