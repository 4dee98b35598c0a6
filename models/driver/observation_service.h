// Sampled observability on the driver's service thread (ObservUVM §IV-A, §V-A, §V-D): making a
// region observable moves its sample 64 KB pages to host memory and remote-maps them (a DtoH copy
// plus per-block and per-page driver work) and programs a threshold-1 hardware counter on them;
// the first GPU access to a sample writes a notification, which the service thread handles like
// the driver's access-counter batches: the policies are told, the sample migrates back (an HtoD
// copy) and the region stops being observed. Off (and free) unless a policy uses it.
#pragma once

#include <cstdint>
#include <span>

#include "models/access_counters.h"
#include "models/driver/driver_context.h"
#include "models/driver/policy_set.h"
#include "models/driver/root_chunk_pool.h"
#include "models/observability.h"

namespace uvmsim {

class Residency;

class ObservationService {
 public:
  ObservationService(DriverContext& dc, AccessCounters& hw, PolicySet& policies,
                     RootChunkPool& pool);
  /// After the policies exist: on if one of them observes (reserves the hardware counters).
  void activate_if_used();

  bool active() const { return obs_.active(); }
  const ObservedRegion* find(std::uint32_t block) const { return obs_.find(block); }
  std::span<const ObservedRegion> regions() const { return obs_.regions(); }
  std::uint32_t budget(ObservePurpose p) const { return obs_.active() ? obs_.budget(p) : 0; }
  unsigned samples() const { return obs_.samples(); }

  /// Notifications to service or observations to top up.
  bool work_pending() const { return !hw_.observed().empty() || refill_due_; }
  bool notifications_pending() const { return !hw_.observed().empty(); }
  bool refill_due() const { return refill_due_; }
  /// Faults and evictions changed the candidates: top up at the next service point.
  void mark_refill_due() {
    if (obs_.active()) refill_due_ = true;
  }

  /// One notification batch: every accessed region ends its observation.
  void service_notifications(ServiceTimes& st, Residency& residency);
  /// Offers the policies' candidates while budget is left. True if a region became observed.
  bool refill(ServiceTimes& st, Residency& residency);
  /// Prefetch feedback decided while `prefetch` pages of `b` are about to migrate: the prefetch
  /// policy may make `b` observable with samples from those pages, which then stay on the host
  /// (removed from `prefetch`) instead of migrating there and back (§IV-B).
  void observe_prefetch(VaBlock& b, PageMask& prefetch, ServiceTimes& st);
  /// Ends an observation the driver did not complete (eviction / prefetch / advice): the sample
  /// pages stay on the host and lose their remote mapping unless something else maps them.
  void drop(VaBlock& b, bool evicted);
  /// `v`'s chunk was evicted (after the policies heard it): its observation ends, and the
  /// adaptive sample count learns from it.
  void on_evicted(VaBlock& v);
  /// A GPU fault in `block` (the adaptive sample count's re-fault tracking).
  void on_fault(std::uint32_t block) {
    if (obs_.active()) obs_.on_fault(block);
  }
  void finish_stats();

 private:
  bool try_observe(std::uint32_t block, ObservePurpose purpose, const PageMask* sample_from,
                   ServiceTimes& st, Residency& residency);
  bool under_memory_pressure() const;
  void start(const VaBlock& b, ObservePurpose purpose, const PageMask& samples, Tick now);
  ObservedRegion end(std::uint32_t block);

  DriverContext& dc_;
  AccessCounters& hw_;
  PolicySet& policies_;
  RootChunkPool& pool_;
  Observability obs_;
  bool refill_due_ = false;
};

}  // namespace uvmsim
