// Access-counter based migration (uvm_gpu_access_counters.c, uvm-driver.md §4): the service
// thread takes notification batches from the hardware (models/access_counters.h) and migrates the
// notified pages that are resident on the host, with the prefetcher's help. Which pages may
// migrate this way: all of them once ACBM is on (access_counters.migration, or a policy enabling
// it), else only ranges a placement policy chose (SUV's suvEnableAccessCounter), never
// no-migrate ones; evicted pages of those ranges are mapped remotely again
// (uvm_perf_map_remote_on_eviction) so the counters can bring them back.
#pragma once

#include <cstdint>

#include "models/access_counters.h"
#include "models/driver/driver_context.h"
#include "models/driver/observation_service.h"
#include "models/driver/policy_set.h"
#include "models/driver/root_chunk_pool.h"
#include "models/driver/thrashing_hints.h"
#include "models/thrashing.h"

namespace uvmsim {

class Residency;

class AccessCounterService {
 public:
  AccessCounterService(DriverContext& dc, AccessCounters& hw, RootChunkPool& pool,
                       PolicySet& policies, ThrashingDetector& thrashing,
                       ObservationService& observations);

  bool pending() const { return !hw_.pending().empty(); }
  /// One notification batch (at most access_counters.batch_count notifications, oldest first).
  void service(ServiceTimes& st, Residency& residency);

  /// ACBM for every page, with this counter granularity and threshold (a policy's action).
  void enable_everywhere(std::uint64_t granularity, std::uint32_t threshold);
  /// Turns the hardware counting on for range-scoped migration, if it is off.
  void enable_for_ranges();
  bool counting() const { return hw_.enabled(); }
  /// Pages of `b` that evicted `pages` remote-map again.
  PageMask remap_on_eviction(const VaBlock& b, const PageMask& pages) const;
  /// True if notifications may migrate `page` of `b`.
  bool migration_allowed(const VaBlock& b, unsigned page) const;

 private:
  /// A 2 MB-granularity notification, expanded as expand_notification_block does.
  void expand_2m(const AccessCounterNotification& n, ServiceTimes& st, Residency& residency);
  void service_pages(VaBlock& b, PageMask pages, ServiceTimes& st, Residency& residency);

  DriverContext& dc_;
  AccessCounters& hw_;
  RootChunkPool& pool_;
  PolicySet& policies_;
  ThrashingDetector& thrashing_;
  ObservationService& observations_;
  bool all_ = false;  ///< access-counter migration for every page (not range-scoped)
};

}  // namespace uvmsim
