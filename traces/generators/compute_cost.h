// The compute work the generated kernels do between memory instructions, and its cost.
//
// A trace record's `gap_cycles` is the number of warp-instruction issue slots of non-memory work
// the warp executes since its previous access (one slot = one issue cycle of an SM sub-partition
// scheduler; docs/trace-format.md). Generators do not hand-set those numbers: each states its
// kernel's per-thread work in source-level terms — so many FP32 operations, integer/address
// operations, compares and branches, SFU functions, conversions, shared-memory accesses — as a
// `Work` value, and the table below turns the per-class instruction counts into issue slots.
//
// The slot cost of a class is the number of issue cycles a warp-wide instruction of that class
// occupies one sub-partition for, 128 / (results per clock per multiprocessor), because an SM
// with four sub-partition schedulers issues 4 warp instructions = 128 thread operations per
// clock. The throughputs are those of the CUDA C++ Programming Guide, "Arithmetic Instructions",
// table "Throughput of Native Arithmetic Instructions (Number of Results per Clock Cycle per
// Multiprocessor)", for compute capability 6.1 (the GTX 1080 Ti the kernel times were measured on).
// Other architectures differ in some classes (docs/generators.md lists them); because every
// generator keeps its per-class counts, changing the reference table here re-costs every
// workload.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace uvmsim::gen {

/// Native instruction classes, as the Programming Guide's throughput table groups them.
enum class OpClass : std::uint8_t {
  Fp32,     ///< 32-bit floating-point add, multiply, multiply-add (FADD, FMUL, FFMA; an FMA is one)
  Fp64,     ///< 64-bit floating-point add, multiply, multiply-add (DADD, DMUL, DFMA)
  Int,      ///< 32-bit integer add/subtract, bitwise AND/OR/XOR, LEA, MOV, special-register reads
  IntMul,   ///< 32-bit integer multiply / multiply-add (IMAD, as in i * n + j)
  Cmp,      ///< compare, minimum, maximum, select, 32-bit shift (ISETP, FSETP, IMNMX, SHF, SEL)
  Branch,   ///< branch, loop back-edge, predicate-driven control flow, barrier (BRA, BAR)
  Sfu,      ///< reciprocal, reciprocal square root, base-2 log and exp, sine, cosine (MUFU)
  Cvt,      ///< 32-bit type conversion (I2F, F2I, F2F.F32)
  Cvt64,    ///< conversion from or to a 64-bit type (F2F.F64, I2F.F64)
  Shared,   ///< shared-memory load or store of 32 bits per lane, conflict-free (LDS, STS)
  Shuffle,  ///< warp shuffle (SHFL)
};
inline constexpr std::size_t kOpClasses = 11;

/// One row of the cost table.
struct OpClassCost {
  const char* name;
  /// Results per clock per multiprocessor at compute capability 6.1 (0: not in the throughput
  /// table; see `slots`).
  std::uint32_t per_clock_per_sm;
  /// Issue slots one warp-wide instruction of the class costs: 128 / per_clock_per_sm.
  std::uint32_t slots;
};

/// The reference cost table (compute capability 6.1), indexed by OpClass.
///  - IntMul: the Guide lists 32-bit integer multiply-add as "multiple instructions" on 6.x;
///    nvcc expands IMAD into three XMADs there, so it costs 3 slots.
///  - Branch: control instructions are not in the throughput table; each takes one issue slot.
///  - Shared: shared memory has 32 banks of 32 bits per clock (Guide, "Shared Memory", compute
///    capability 5.x/6.x), so the SM serves one conflict-free 32-bit warp access per clock: 4
///    slots.
inline constexpr std::array<OpClassCost, kOpClasses> kOpClassCost = {{
    {"fp32", 128, 1},
    {"fp64", 4, 32},
    {"int", 128, 1},
    {"int_mul", 0, 3},
    {"cmp", 64, 2},
    {"branch", 0, 1},
    {"sfu", 32, 4},
    {"cvt", 32, 4},
    {"cvt64", 4, 32},
    {"shared", 32, 4},
    {"shuffle", 32, 4},
}};

/// Per-thread work between two memory instructions of a warp: native instruction counts per
/// class. Values add and scale, so a kernel's work reads as its source: `kGlobalIndex + kGuard +
/// kAddress`, `taps * (fp32(1) + kLoop)`.
struct Work {
  std::array<std::uint32_t, kOpClasses> count{};

  constexpr std::uint32_t operator[](OpClass c) const { return count[static_cast<std::size_t>(c)]; }
  /// Issue slots of this work with the reference table.
  constexpr std::uint32_t slots() const {
    std::uint64_t s = 0;
    for (std::size_t i = 0; i < kOpClasses; ++i)
      s += std::uint64_t{count[i]} * kOpClassCost[i].slots;
    return s > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(s);
  }
  constexpr bool empty() const {
    for (std::uint32_t c : count) {
      if (c != 0) return false;
    }
    return true;
  }
  friend constexpr Work operator+(Work a, const Work& b) {
    for (std::size_t i = 0; i < kOpClasses; ++i) a.count[i] += b.count[i];
    return a;
  }
  friend constexpr Work operator*(std::uint32_t k, Work w) {
    for (std::uint32_t& c : w.count) c *= k;
    return w;
  }
  constexpr Work& operator+=(const Work& b) { return *this = *this + b; }
  friend constexpr bool operator==(const Work&, const Work&) = default;
};

constexpr Work ops(OpClass c, std::uint32_t n) {
  Work w;
  w.count[static_cast<std::size_t>(c)] = n;
  return w;
}
constexpr Work fp32(std::uint32_t n) { return ops(OpClass::Fp32, n); }
constexpr Work fp64(std::uint32_t n) { return ops(OpClass::Fp64, n); }
constexpr Work int_ops(std::uint32_t n) { return ops(OpClass::Int, n); }
constexpr Work imad(std::uint32_t n) { return ops(OpClass::IntMul, n); }
constexpr Work cmp(std::uint32_t n) { return ops(OpClass::Cmp, n); }
constexpr Work branch(std::uint32_t n) { return ops(OpClass::Branch, n); }
constexpr Work sfu(std::uint32_t n) { return ops(OpClass::Sfu, n); }
constexpr Work cvt(std::uint32_t n) { return ops(OpClass::Cvt, n); }
constexpr Work cvt64(std::uint32_t n) { return ops(OpClass::Cvt64, n); }
constexpr Work shared(std::uint32_t n) { return ops(OpClass::Shared, n); }
constexpr Work shuffle(std::uint32_t n) { return ops(OpClass::Shuffle, n); }

// ---- idioms of the kernels' source, as the native instructions nvcc emits for them -------------

/// No work: the next access is independent of the previous one and issues right after it.
inline constexpr Work kNoWork{};
/// blockIdx.x * blockDim.x + threadIdx.x: two special-register reads and an IMAD.
inline constexpr Work kGlobalIndex = int_ops(2) + imad(1);
/// A 2-D thread index (x and y): four special-register reads and two IMADs.
inline constexpr Work kGlobalIndex2D = int_ops(4) + imad(2);
/// if (i < n): a compare and the predicated branch.
inline constexpr Work kGuard = cmp(1) + branch(1);
/// &p[i] of a 64-bit pointer: scale and add, low and high halves (LEA, LEA.HI.X).
inline constexpr Work kAddress = int_ops(2);
/// A row-major element index i * n + j: one IMAD.
inline constexpr Work kIndex2D = imad(1);
/// One step of a counted loop: increment, compare, back-edge branch.
inline constexpr Work kLoop = int_ops(1) + cmp(1) + branch(1);
/// __syncthreads(): one barrier instruction.
inline constexpr Work kBarrier = branch(1);

// Math-library functions as their native sequences (approximations of what nvcc's libdevice
// emits with the default -prec-div=true -prec-sqrt=true -ftz=false):
/// x / y: MUFU.RCP, two Newton-Raphson FMA pairs and the special-case check.
inline constexpr Work kDivide = sfu(1) + fp32(4) + cmp(1);
/// sqrtf(x): reciprocal square root followed by a reciprocal (the Guide, "Single-Precision
/// Floating-Point Square Root"), and the correction FMA.
inline constexpr Work kSqrt = sfu(2) + fp32(1);
/// expf(x) / __expf(x): scale by log2(e), MUFU.EX2, the range fix-up.
inline constexpr Work kExp = sfu(1) + fp32(2);
/// logf(x) / __logf(x): MUFU.LG2 and the scale by ln(2).
inline constexpr Work kLog = sfu(1) + fp32(2);
/// A float <-> int conversion.
inline constexpr Work kConvert = cvt(1);
/// An unsigned 32-bit division or remainder by a run-time value: I2F, MUFU.RCP, F2I, the
/// multiply-high estimate and its correction.
inline constexpr Work kIntDivide = cvt(2) + sfu(1) + imad(3) + int_ops(3) + cmp(2);

// ---- shared-memory bank conflicts ----------------------------------------------------------

/// Shared memory has 32 banks, each 32 bits wide (word w is in bank w % 32); a warp's access is
/// served in as many passes as the largest number of *distinct* words any one bank holds among
/// the active lanes' addresses, lanes reading the same word sharing one (CUDA C++ Programming
/// Guide, "Shared Memory", compute capability 5.x and later: "if two addresses of a memory
/// request fall in the same memory bank, there is a bank conflict and the access has to be
/// serialized"). `words` are the active lanes' 32-bit word indices (any order, repeats allowed);
/// the result is 0 for no active lane, else 1 (conflict-free) to 32.
template <class Words>
constexpr std::uint32_t shared_wavefronts(const Words& words) {
  std::uint32_t per_bank[32] = {}, ways = 0;
  for (std::size_t i = 0; i < std::size(words); ++i) {
    bool first = true;  // a word's repeats share its pass
    for (std::size_t j = 0; j < i && first; ++j) first = words[j] != words[i];
    if (first) ways = std::max(ways, ++per_bank[words[i] % 32]);
  }
  return ways;
}
/// A warp-wide shared-memory access served in `wavefronts` passes (shared_wavefronts()): each pass
/// costs what a conflict-free access does.
constexpr Work shared_conflicted(std::uint32_t wavefronts) { return shared(wavefronts); }

}  // namespace uvmsim::gen
