// Capacity curves in one pass (`uvmsim analyze --mrc`): chunk misses, evictions and migrated
// bytes against GPU memory size for LRU eviction at 2 MB chunk granularity, for every size at
// once, from LRU stack distances (Mattson et al., "Evaluation techniques for storage
// hierarchies", IBM Systems Journal 1970: a use hits an LRU memory of C chunks iff fewer than C
// other regions were used since the region's previous use) over the trace's 2 MB-region uses in
// the idealised program order OPT ranks by (policies/eviction/opt/program_order.h).
//
// Long traces can be sampled spatially as SHARDS does (Waldspurger et al., FAST'15, §3): a
// region is kept iff hash(region) mod 2^24 < R * 2^24; distances and counts among the kept
// regions are scaled by the fraction of the used regions actually kept (close to R). docs/mrc.md
// states the error and how far the curve is from the simulator's (fault-time eviction, prefetching,
// warp interleaving).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/config.h"
#include "traces/trace.h"

namespace uvmsim::mrc {

struct Options {
  double sample = 1.0;             ///< SHARDS rate R in (0, 1]; 1 = exact
  std::uint64_t bucket_steps = 0;  ///< logical time per bucket; 0 = auto (<= 1 M buckets)
  std::filesystem::path tmpdir;    ///< spill files (empty: $TMPDIR, else /tmp)
  std::size_t run_keys = std::size_t{1} << 22;
  /// Threadblocks one at a time instead of as many as the GPU holds: the order of a GPU that
  /// lets some threadblocks finish while the others wait on faults (docs/mrc.md).
  bool serial = false;
};

/// One GPU memory size.
struct Point {
  std::uint64_t chunks = 0;  ///< usable GPU memory in 2 MB chunks
  double oversub_pct = 0;    ///< managed footprint / memory - 1, in %
  double misses = 0;         ///< chunk allocations (a region's first use or a use after eviction)
  double evictions = 0;
  double htod_bytes = 0;  ///< each miss migrates the pages of its region the trace touches
  double dtoh_bytes = 0;  ///< each eviction copies the victim's migrated pages back
  bool suggested = false;
};

struct Curve {
  std::uint64_t managed_chunks = 0;  ///< what --oversub sizes memory against
  std::uint64_t regions_used = 0;    ///< distinct regions the trace uses (exact, sampled or not)
  std::uint64_t sampled_used = 0;    ///< of which the sampling kept (all if exact)
  std::uint64_t uses = 0;            ///< distinct (bucket, region) uses processed
  std::uint64_t records = 0;
  std::uint64_t bucket_steps = 0;
  std::uint64_t sampled_regions = 0;  ///< regions kept by the sampling (all if exact)
  double sample = 1.0;
  std::vector<Point> points;  ///< chunks = 1 .. managed_chunks

  static constexpr const char* kCsvHeader =
      "chunks,gpu_bytes,oversub_pct,misses,evictions,htod_bytes,dtoh_bytes,suggested";
  std::string csv() const;
  /// Marks up to `n` interesting sizes (Point::suggested) and returns them by decreasing GPU
  /// memory: the first size that evicts, both sides of the largest step of the miss curve,
  /// then the largest sizes at which misses reach 2x, 4x, 8x, ... those of a memory that
  /// holds everything.
  std::vector<Point> suggest(std::size_t n);
  /// The --oversub value that gives exactly `chunks` (Simulator::size_memory's rounding).
  std::string oversub_for(std::uint64_t chunks) const;
};

/// Reads the whole trace once. `cfg` gives the GPU's occupancy (threadblocks run at once) and
/// the VA layout.
Curve compute(trace::TraceReader& reader, const SimConfig& cfg, const Options& o);

}  // namespace uvmsim::mrc
