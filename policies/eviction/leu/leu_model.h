// LEU's statistics, independent of the driver: a clock, a trace sampler feeding the Ref RIT, and
// per-block TESLA state (Chen et al., MEMSYS'19, §3.2-§3.3). It works on a trace of
// (block, reference) ids, so the paper's worked examples run on it directly; the eviction policy
// (leu.cpp) maps GPU accesses onto it and ranks 2 MB chunks from its block priorities.
//
// Per access of a block (all O(1), no allocation):
//  * the block's last access time and reference are updated: TESLA = now - last access, and the
//    priority uses the RI distribution of the reference that accessed the block last (§3.2);
//  * if the block's previous access was sampled, the reuse is complete: its interval is added to
//    the distribution of the reference that made that access (forward reuse interval, §2);
//  * the sampler decides whether this access is sampled (Bernoulli with the sampling rate, from
//    a seeded generator): a sampled access counts as an execution of its reference in the Ref RIT
//    and arms the block to measure its next reuse.
// This is the RIMM device's trace sampler reporting (reference, RI) pairs to the RIMM host (§3.3),
// with a watch on every sampled block; TESLA is exact for every block.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/eviction/leu/priority.h"
#include "policies/eviction/leu/ref_rit.h"

namespace uvmsim::leu {

/// What LEU's clock counts (TESLA and reuse intervals are in this unit).
enum class TimeUnit : std::uint8_t {
  Access,   ///< every access (folded repeats count each): the paper's "program time"
  Sampled,  ///< sampled accesses only: the sampler's own clock (~ accesses x sampling rate)
  Fault,    ///< serviced GPU page faults: the clock the driver sees
};

struct ModelParams {
  TimeUnit time_unit = TimeUnit::Access;
  double sample_rate = 1.0;  ///< fraction of accesses the sampler reports, (0, 1]
  std::uint32_t rit_entries = 256;
  std::uint32_t history = 65536;  ///< intervals kept per reference before counts halve
  std::uint64_t seed = 1;
};

class LeuModel {
 public:
  LeuModel(std::size_t blocks, const ModelParams& p);

  /// `repeat` identical accesses in a row (a folded trace record) of `block` by `ref`. The
  /// reuses inside the group (interval 1) are not recorded: an interval of 1 never counts for a
  /// block with TESLA >= 1, which is every block an eviction looks at.
  void access(std::uint32_t block, std::uint32_t ref, std::uint32_t repeat = 1) {
    State& s = state_[block];
    const bool sampled = sample();
    std::uint64_t time = clock_;  // of this access (the first of the group)
    if (unit_ == TimeUnit::Access) {
      time = clock_ + 1;
      clock_ += repeat;
    } else if (unit_ == TimeUnit::Sampled && sampled) {
      time = ++clock_;
    }
    if (s.stamp & 1) rit_.record(s.ref, time - ((s.stamp >> 1) - 1));
    if (sampled) {
      rit_.count_execution(ref);
      ++sampled_;
    }
    // stamp = (time + 1) << 1 | armed; 0 = never accessed.
    s.stamp = ((clock_ + 1) << 1) | (sampled ? 1u : 0u);
    s.ref = ref;
  }
  /// A serviced GPU page fault: the clock of TimeUnit::Fault.
  void fault() {
    if (unit_ == TimeUnit::Fault) ++clock_;
  }

  std::uint64_t now() const { return clock_; }
  bool accessed(std::uint32_t block) const { return state_[block].stamp != 0; }
  std::uint64_t last_access(std::uint32_t block) const { return (state_[block].stamp >> 1) - 1; }
  std::uint64_t tesla(std::uint32_t block) const { return clock_ - last_access(block); }
  std::uint32_t last_ref(std::uint32_t block) const { return state_[block].ref; }
  /// The distribution that ranks `block`: its last reference's if the Ref RIT has statistics
  /// for it, else the table-wide one; nullptr if there are none at all (start of the run).
  const RiHistogram* distribution(std::uint32_t block) const {
    return distribution_of_ref(state_[block].ref);
  }
  /// The distribution for blocks last accessed by `ref` (see distribution()).
  const RiHistogram* distribution_of_ref(std::uint32_t ref) const;
  /// LEU priority of `block` now (0 if it was never accessed or no distribution exists).
  double priority(std::uint32_t block) const;
  /// The same at a given TESLA.
  double priority_at(std::uint32_t block, std::uint64_t tesla) const;

  const RefRit& rit() const { return rit_; }
  TimeUnit time_unit() const { return unit_; }
  std::uint64_t sampled_accesses() const { return sampled_; }
  std::size_t blocks() const { return state_.size(); }

 private:
  struct State {
    std::uint64_t stamp = 0;
    std::uint32_t ref = 0;
  };
  bool sample() {
    if (threshold_ == 0) return true;
    // splitmix64: cheap, and its output is fixed by the seed on every platform.
    std::uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) < threshold_;
  }

  TimeUnit unit_;
  std::uint64_t threshold_;  ///< sample if random < threshold; 0: sample everything
  std::uint64_t rng_;
  std::uint64_t clock_ = 0;
  std::uint64_t sampled_ = 0;
  std::vector<State> state_;
  RefRit rit_;
};

}  // namespace uvmsim::leu
