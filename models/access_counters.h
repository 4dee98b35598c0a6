// The GPU's hardware access counters (uvm-driver.md §4): `count` counters, each tracking one
// region of `granularity` bytes split into 32 sub-regions; GPU accesses to *remote* (sysmem)
// memory increment them, and a counter reaching `threshold` raises a notification carrying the
// sub-region mask, then restarts. The driver services notifications in batches of `batch_count`
// by migrating the notified pages (ACBM). Enabled only when migration is on, as in the driver.
// Which region a free counter goes to is not documented; when all are busy we recycle the
// least-counted one (lowest index on ties), which keeps the model deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config.h"
#include "core/types.h"

namespace uvmsim {

struct AccessCounterNotification {
  Addr region_base = 0;
  std::uint64_t region_bytes = 0;
  std::uint32_t subregion_mask = 0;  ///< bit i: sub-region i of 32 was accessed
};

class AccessCounters {
 public:
  void configure(const AccessCounterConfig& cfg);
  bool enabled() const { return enabled_; }
  /// Sets the migration mode (the acbm placement policy turns it on with its own settings).
  void enable_migration(std::uint64_t granularity, std::uint32_t threshold) {
    enabled_ = true;
    granularity_ = granularity;
    threshold_ = threshold;
  }
  /// Keeps `n` counters for observed regions (ObservUVM); migration uses the rest.
  void reserve(std::uint32_t n) {
    const auto total = static_cast<std::uint32_t>(counters_.size());
    active_ = total > n ? total - n : 0;
  }
  std::uint64_t granularity() const { return granularity_; }
  std::uint32_t threshold() const { return threshold_; }
  /// Records `n` remote accesses to `va`; returns true if a notification was queued.
  bool record(Addr va, std::uint32_t n);
  std::vector<AccessCounterNotification>& pending() { return pending_; }
  std::uint32_t batch_count() const { return batch_count_; }

 private:
  struct Counter {
    Addr region = ~Addr{0};
    std::uint32_t count = 0;
    std::uint32_t mask = 0;
  };
  bool enabled_ = false;
  std::uint64_t granularity_ = 2 << 20;
  std::uint32_t threshold_ = 256, batch_count_ = 256;
  std::uint32_t active_ = 0;  ///< counters usable for migration
  std::vector<Counter> counters_;
  std::vector<AccessCounterNotification> pending_;
};

}  // namespace uvmsim
