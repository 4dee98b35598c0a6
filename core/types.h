// Basic types and geometry constants shared by every module.
#pragma once

#include <cstdint>

namespace uvmsim {

/// Simulated time in picoseconds. 2^64 ps is ~213 days of simulated time, and picoseconds keep
/// sub-nanosecond GPU cycle times exact enough that compute gaps do not drift.
using Tick = std::uint64_t;
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

/// Processor identifiers. uvmsim models one GPU and the CPU.
enum class Processor : std::int8_t { Cpu = -1, Gpu = 0 };

}  // namespace uvmsim
