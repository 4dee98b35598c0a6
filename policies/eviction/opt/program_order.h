// The trace's 2 MB-region uses in the idealised program order that OPT ranks by and that
// `uvmsim analyze --mrc` computes stack distances over (policies/eviction/opt/opt.cpp explains
// the schedule): launches one after the other; a launch's threadblocks dispatched in id order
// onto `slots` slots, each taking the slot that frees first; within a threadblock every warp
// issues one record per step, so record k of a warp of a threadblock started at step s happens
// at logical time s + k. Logical time is cut into buckets of `bucket_steps`.
//
// One streaming read of the trace produces, on disk (spill.h) so that memory does not grow with
// the trace's length:
//   * the (bucket, region) uses, externally sorted (use_key());
//   * optionally, per threadblock (global index over the launches) its idealised start and the
//     regions it uses, plus per region the number of threadblocks that use it.
// Memory: the trace reader's decoded chunks, the sort's run buffer, 20 bytes per region (84 with
// page counts) and 16 per launch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "policies/eviction/opt/spill.h"
#include "state/va_space.h"
#include "traces/trace.h"

namespace uvmsim::opt {

constexpr std::uint64_t kMaxAutoBuckets = std::uint64_t{1} << 20;
/// Buckets take 30 bits of a use's key.
constexpr std::uint64_t kMaxBuckets = std::uint64_t{1} << 30;

/// What a use key stands for. With `runs`, a region's uses in consecutive buckets (as they come
/// from one threadblock) are kept as a Start and an End key (a warp walking one region for a
/// whole launch is two keys, not one per bucket); a run of one bucket is a Single. Descending
/// order visits End before Start before Single within one (bucket, region).
enum class UseKind : std::uint8_t { Start = 0, Single = 1, End = 2 };
inline std::uint64_t use_key(std::uint64_t bucket, std::uint32_t region, UseKind kind) {
  return bucket << 34 | std::uint64_t{region} << 2 | static_cast<std::uint64_t>(kind);
}
inline std::uint64_t key_bucket(std::uint64_t key) { return key >> 34; }
inline std::uint32_t key_region(std::uint64_t key) { return static_cast<std::uint32_t>(key >> 2); }
inline UseKind key_kind(std::uint64_t key) { return static_cast<UseKind>(key & 3); }

struct ProgramOrderOptions {
  std::uint64_t bucket_steps = 0;  ///< 0 = the smallest giving at most kMaxAutoBuckets buckets
  bool threadblocks = true;        ///< also write the per-threadblock files
  std::filesystem::path tmpdir;    ///< where the spill files go
  std::string tmpdir_knob;         ///< the setting that chooses it (for errors)
  std::size_t run_keys = std::size_t{1} << 22;  ///< keys sorted in memory at a time
  std::string bucket_knob;  ///< the setting that chooses bucket_steps (for errors)
  /// Per region: 0 to leave its uses out (spatial sampling); empty = keep every region.
  std::vector<std::uint8_t> keep;
  bool pages = false;  ///< also count the 4 KB pages of each region the trace touches
  /// Keep runs of consecutive buckets as Start/End pairs (UseKind; duplicate Start and End keys
  /// are kept so that they pair up); else one Single per (bucket, region). Singles are
  /// distinct either way.
  bool runs = false;
};

/// Threadblocks of kernel `k` (nullptr if the trace does not describe it) the GPU runs at once.
using SlotsOf = std::function<std::uint64_t(const trace::KernelInfo* k)>;

class ProgramOrder {
 public:
  /// Reads `reader`'s whole trace once (its host-event cursor is consumed).
  ProgramOrder(trace::TraceReader& reader, const VaSpace& va, const SlotsOf& slots,
               const ProgramOrderOptions& o);

  std::uint64_t bucket_steps() const { return bucket_steps_; }
  std::uint64_t buckets() const { return buckets_; }
  /// The uses, as use_key()s (finished: visit them).
  spill::KeySorter& uses() { return uses_; }
  const spill::KeySorter& uses() const { return uses_; }

  // Threadblocks (when asked for): launch l's threadblocks have global indices
  // [launch_tb_base()[l], launch_tb_base()[l + 1]).
  const std::vector<std::uint64_t>& launch_tb_base() const { return launch_tb_base_; }
  const std::vector<std::uint64_t>& launch_ideal_end() const { return launch_ideal_end_; }
  const spill::RecordFile<std::uint64_t>& tb_starts() const { return tb_starts_; }
  /// Per threadblock: the number of regions it uses, then those regions.
  const spill::RecordFile<std::uint32_t>& tb_regions() const { return tb_regions_; }
  const std::vector<std::uint32_t>& tbs_using() const { return tbs_using_; }
  std::uint64_t threadblock_uses() const { return threadblock_uses_; }
  /// Per region: 4 KB pages touched (when asked for; sampled-out regions included).
  const std::vector<std::uint32_t>& pages_touched() const { return pages_touched_; }
  std::uint64_t records() const { return records_; }

 private:
  std::uint64_t bucket_steps_ = 0, buckets_ = 0;
  spill::KeySorter uses_;
  std::vector<std::uint64_t> launch_tb_base_, launch_ideal_end_;
  spill::RecordFile<std::uint64_t> tb_starts_;
  spill::RecordFile<std::uint32_t> tb_regions_;
  std::vector<std::uint32_t> tbs_using_, pages_touched_;
  std::uint64_t threadblock_uses_ = 0, records_ = 0;
};

}  // namespace uvmsim::opt
