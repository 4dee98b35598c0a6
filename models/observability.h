// Sampled observability (ObservUVM, §IV-A, §V-A, §V-D): the bookkeeping half of the mechanism.
// A policy marks a GPU-resident 2 MB region observable; `samples_per_region` random 64 KB pages
// of it are moved to host memory, pinned and remote-mapped, and one hardware access counter
// (2 MB granularity, threshold 1) watches the region, so the region's first GPU access to a
// sample raises a notification. The driver model (models/driver/observation_service.cpp) does the
// migrations and charges their cost, and programs the hardware counters (models/access_counters.h)
// that watch the samples; this class keeps which regions are observed and the adaptive number of
// samples per region:
//   track the last `adapt_window` evicted regions; every `adapt_window` evictions, if more
//   than `adapt_grow_fraction` of them faulted again while tracked, double the samples; if more
//   than `adapt_shrink_fraction` did not, halve them (1 .. 32 big pages per region).
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/config.h"
#include "policies/engine.h"
#include "state/va_space.h"

namespace uvmsim {

class Observability {
 public:
  /// `counters`: hardware access counters (one per observed region).
  /// `capacity_chunks`: usable GPU memory, for observe.max_regions_pct.
  void configure(const ObservabilityConfig& cfg, std::uint32_t counters, std::size_t nblocks,
                 std::uint64_t capacity_chunks, std::uint64_t seed);
  bool active() const { return active_; }
  void set_active(bool a) { active_ = a; }

  std::span<const ObservedRegion> regions() const { return regions_; }
  const ObservedRegion* find(std::uint32_t block) const {
    const std::uint32_t i = block < index_.size() ? index_[block] : kNone;
    return i == kNone ? nullptr : &regions_[i];
  }
  std::uint32_t budget(ObservePurpose p) const;
  unsigned samples() const { return samples_; }

  /// Picks the sample pages of `b` among its 64 KB pages that have `present` pages (the pages of
  /// the region's GPU copy), all of them in `sample_from` if given: `samples_per_region` big
  /// pages at random, their `present` pages. Empty if none qualify. A small region may move to
  /// the host entirely; it keeps its chunk.
  PageMask choose_samples(const VaBlock& b, const PageMask& present, const PageMask* sample_from);
  void start(const VaBlock& b, ObservePurpose purpose, const PageMask& samples, Tick now);
  /// Ends `block`'s observation and returns it. (The driver programs the hardware counter that
  /// watches the samples: AccessCounters::watch / unwatch.)
  ObservedRegion end(std::uint32_t block);

  /// Adaptive samples (§V-D). Return +1 / -1 when the samples per region doubled / halved.
  int on_evicted(std::uint32_t block);
  void on_fault(std::uint32_t block);

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Recent {
    std::uint32_t block = kNone;
    bool refaulted = false;
  };
  bool active_ = false;
  ObservabilityConfig cfg_;
  std::uint32_t counters_ = 256;
  std::array<std::uint32_t, 2> cap_{};  ///< per purpose, after the capacity cap
  unsigned samples_ = 1;
  std::vector<ObservedRegion> regions_;
  std::vector<std::uint32_t> index_;  ///< per block: index into regions_, or kNone
  std::array<std::uint32_t, 2> by_purpose_{};
  std::vector<Recent> recent_;              ///< ring of the last adapt_window evictions
  std::vector<std::uint64_t> evicted_seq_;  ///< per block: eviction number (1-based), 0 = never
  std::uint64_t evictions_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace uvmsim
