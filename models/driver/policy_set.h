// The driver's three policies (eviction, prefetch, placement) and how events reach them: every
// policy hears every event, except that the eviction policy hears nothing about a chunk withheld
// from it (GPU-pinned or reserved, state/placement_state.h).
#pragma once

#include <memory>
#include <vector>

#include "core/stats.h"
#include "policies/policy.h"
#include "state/placement_state.h"

namespace uvmsim {

class PolicySet {
 public:
  explicit PolicySet(const PlacementState& place) : place_(place) {}

  /// Creates the configured policies of GPU `gpu`'s driver, talking to `engine`. Called once the
  /// engine can answer.
  void create(const SimConfig& cfg, PolicyEngine& engine, unsigned gpu);

  EvictionPolicy& eviction() { return *eviction_; }
  PrefetchPolicy& prefetch() { return *prefetch_; }
  PlacementPolicy& placement() { return *placement_; }
  const std::vector<PolicyBase*>& access_subscribers() const { return access_subscribers_; }
  /// True if some policy offers observability or feedback candidates.
  bool observing() const { return observing_; }
  /// Driver time for `n` messages to or from ObservUVM's userspace engine (an upstream event
  /// relayed, a decision taken; §V-B): 0 unless the eviction or prefetch policy runs there.
  /// Counted in the statistics; the caller adds it to its clock.
  Tick messages(std::uint64_t n, Stats& s) const {
    if (!userspace_ || n == 0) return 0;
    s.policy_messages += n;
    const Tick t = message_ps_ * n;
    s.policy_time += t;
    return t;
  }
  /// The eviction policy's host compute time since the last call (take_decision_time()).
  Tick eviction_decision_time(Stats& s) {
    const Tick t = eviction_->take_decision_time();
    s.policy_time += t;
    return t;
  }

  template <typename F>
  void each(F&& f) {
    f(static_cast<PolicyBase&>(*eviction_));
    f(static_cast<PolicyBase&>(*prefetch_));
    f(static_cast<PolicyBase&>(*placement_));
  }
  /// each(), but the eviction policy is skipped for a block withheld from it.
  template <typename F>
  void each_for(const VaBlock& b, F&& f) {
    if (!place_.withheld(b.id)) f(static_cast<PolicyBase&>(*eviction_));
    f(static_cast<PolicyBase&>(*prefetch_));
    f(static_cast<PolicyBase&>(*placement_));
  }
  /// A completed GPU access, to the policies that asked for them.
  void on_access(const AccessEvent& a) {
    for (auto* p : access_subscribers_) {
      if (p == eviction_.get() && place_.withheld(a.block.id)) continue;
      p->on_access(a);
    }
  }

 private:
  const PlacementState& place_;
  std::unique_ptr<EvictionPolicy> eviction_;
  std::unique_ptr<PrefetchPolicy> prefetch_;
  std::unique_ptr<PlacementPolicy> placement_;
  std::vector<PolicyBase*> access_subscribers_;
  bool observing_ = false;
  bool userspace_ = false;
  Tick message_ps_ = 0;
};

}  // namespace uvmsim
