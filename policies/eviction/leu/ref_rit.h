// The Reference Reuse Interval Table (Ref RIT) of LEU's RIMM host (Chen et al., MEMSYS'19, §3.3):
// a fixed-size table that maps a reference (static load/store instruction, the trace's ref_id)
// to its reuse-interval distribution. Like a branch predictor's table (§4.1) its size is fixed
// and it keeps the frequently executed references: it is set-associative (8 ways), and a
// reference that is not in the table replaces the least executed entry of its set. Execution
// counts halve every 16 x entries counted executions, so references that stop running (an
// earlier kernel's) lose their place to the current ones.
//
// Only the sampler feeds the table (LeuModel): a sampled execution counts towards its
// reference's frequency, and a sampled reuse adds its interval to the distribution of the
// reference that made the earlier access. A table-wide distribution of every recorded interval
// stands in for references without statistics of their own.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/eviction/leu/ri_histogram.h"

namespace uvmsim::leu {

class RefRit {
 public:
  static constexpr std::uint32_t kWays = 8;

  /// `entries` references, each keeping about `history` intervals (see RiHistogram).
  RefRit(std::uint32_t entries, std::uint32_t history);

  /// A sampled execution of `ref`: counts it, inserting `ref` if it is missing.
  void count_execution(std::uint32_t ref) {
    std::uint32_t i = lookup(ref);
    if (i == kMiss) i = insert(ref);
    ++entries_[i].executions;
    if (--until_aging_ == 0) age();
  }
  /// A sampled reuse interval of an access made by `ref`. Dropped if `ref` has left the table.
  void record(std::uint32_t ref, std::uint64_t ri) {
    const std::uint32_t i = lookup(ref);
    if (i == kMiss) {
      ++dropped_;
      return;
    }
    entries_[i].hist.add(ri, history_);
    global_.add(ri, history_);
    ++recorded_;
  }
  /// `ref`'s distribution, or nullptr if `ref` is not in the table.
  const RiHistogram* find(std::uint32_t ref) const;
  /// Every recorded interval (bounded history like the others).
  const RiHistogram& global() const { return global_; }

  std::uint32_t capacity() const { return static_cast<std::uint32_t>(entries_.size()); }
  std::uint32_t size() const { return used_; }
  std::uint64_t replacements() const { return replacements_; }
  std::uint64_t recorded() const { return recorded_; }
  std::uint64_t dropped() const { return dropped_; }
  /// Sampled executions counted so far for `ref` since it entered the table (halved by aging).
  std::uint64_t executions(std::uint32_t ref) const;

 private:
  struct Entry {
    std::uint32_t ref = 0;
    bool valid = false;
    std::uint64_t executions = 0;
    RiHistogram hist;
  };
  static constexpr std::uint32_t kMiss = ~std::uint32_t{0};
  std::uint32_t set_of(std::uint32_t ref) const {
    // Fibonacci hashing spreads consecutive ref ids over the sets.
    const std::uint64_t h = (std::uint64_t{ref} * 0x9E3779B97F4A7C15ull) >> 32;
    return static_cast<std::uint32_t>((h * sets_) >> 32);
  }
  /// Index of `ref`'s entry, or kMiss.
  std::uint32_t lookup(std::uint32_t ref) const {
    if (last_index_ != kMiss && last_ref_ == ref) return last_index_;
    const std::uint32_t base = set_of(ref) * ways_;
    for (std::uint32_t w = 0; w < ways_; ++w) {
      const Entry& e = entries_[base + w];
      if (e.valid && e.ref == ref) {
        last_ref_ = ref;
        last_index_ = base + w;
        return base + w;
      }
    }
    return kMiss;
  }
  /// Puts `ref` into its set (a free way, else the least executed one's). Returns its index.
  std::uint32_t insert(std::uint32_t ref);
  void age();

  std::vector<Entry> entries_;
  std::uint32_t ways_, sets_, history_;
  std::uint32_t used_ = 0;
  RiHistogram global_;
  std::uint64_t until_aging_, aging_period_;
  std::uint64_t replacements_ = 0, recorded_ = 0, dropped_ = 0;
  // Consecutive accesses mostly come from one instruction (a warp's loop body): remember the
  // last lookup (invalidated when its entry is replaced).
  mutable std::uint32_t last_ref_ = 0, last_index_ = kMiss;
};

}  // namespace uvmsim::leu
