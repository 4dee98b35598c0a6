// Basic types and geometry constants shared by every module.
#pragma once

#include <cstdint>

namespace uvmsim {

/// Simulated time in picoseconds. 2^64 ps is ~213 days of simulated time, and picoseconds keep
/// sub-nanosecond GPU cycle times exact enough that compute gaps do not drift.
using Tick = std::uint64_t;
/// A time no event reaches (the simulation stops at 1e18 ps).
inline constexpr Tick kTickMax = ~Tick{0};
/// The longest duration a floating-point time computation yields (1e18 ps, where the
/// simulation stops anyway: core/config.h, kMaxSimTimeS).
inline constexpr Tick kMaxDuration = 1'000'000'000'000'000'000ull;
/// `ps` picoseconds as ticks, saturated at kMaxDuration. A trace record may claim 2^32 repeats
/// of 2^32 bytes, whose transfer time does not fit a Tick, and converting such a double to an
/// integer is undefined behaviour (found by the `uvt_run` fuzz target); saturating leaves room
/// below 2^64 for the time the duration is added to.
inline Tick duration_ticks(double ps) {
  return ps < static_cast<double>(kMaxDuration) ? static_cast<Tick>(ps) : kMaxDuration;
}
using Addr = std::uint64_t;

constexpr Tick kPsPerNs = 1000;
constexpr Tick kPsPerUs = 1000 * kPsPerNs;

/// Geometry of the UVM driver (uvm-driver.md §0): 4 KB fault granule, 64 KB big page, 2 MB VA
/// block / root chunk.
constexpr Addr kPageShift = 12;
constexpr Addr kPageSize = Addr{1} << kPageShift;
constexpr Addr kBigPageShift = 16;
constexpr Addr kBigPageSize = Addr{1} << kBigPageShift;
constexpr Addr kBlockShift = 21;
constexpr Addr kBlockSize = Addr{1} << kBlockShift;
constexpr unsigned kPagesPerBlock = kBlockSize / kPageSize;      // 512
constexpr unsigned kPagesPerBigPage = kBigPageSize / kPageSize;  // 16
/// Threads per warp on every NVIDIA GPU so far.
constexpr unsigned kThreadsPerWarp = 32;

/// Kind of a memory access, ordered by how "intrusive" the driver considers it
/// (uvm_gpu_replayable_faults.c: atomic > write > read > prefetch).
enum class AccessKind : std::uint8_t { Prefetch = 0, Read = 1, Write = 2, Atomic = 3 };

const char* to_string(AccessKind k);

/// Processor identifiers: the CPU, or GPU `i` (a CUDA device ordinal) as the value `i`.
/// `Processor::Gpu` is GPU 0, the GPU of a one-GPU run; the simulator models one GPU and rejects
/// traces that name another (issue 17 adds more), so the models below compare with it.
enum class Processor : std::int8_t { Cpu = -1, Gpu = 0 };

/// GPUs a trace may name: device ordinals 0 ... kMaxGpus-1 (the trace codes the CPU as 0xFF).
constexpr unsigned kMaxGpus = 16;
constexpr Processor gpu_processor(unsigned ordinal) { return static_cast<Processor>(ordinal); }
constexpr bool is_gpu(Processor p) { return static_cast<int>(p) >= 0; }
/// The device ordinal of a GPU processor.
constexpr unsigned gpu_ordinal(Processor p) { return static_cast<unsigned>(static_cast<int>(p)); }

/// Processor ids as the driver's uvm_processor_id_t (0 the CPU, 1 + g GPU g), and sets of them:
/// bit 0 the CPU, bit 1 + g GPU g.
using ProcessorMask = std::uint32_t;
static_assert(kMaxGpus + 1 <= 32, "a ProcessorMask holds the CPU and every GPU");
constexpr int processor_id(Processor p) { return is_gpu(p) ? 1 + static_cast<int>(p) : 0; }
constexpr Processor processor_of_id(int id) {
  return id == 0 ? Processor::Cpu : gpu_processor(static_cast<unsigned>(id - 1));
}
constexpr ProcessorMask processor_bit(Processor p) { return ProcessorMask{1} << processor_id(p); }

}  // namespace uvmsim
