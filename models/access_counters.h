// The GPU's hardware access counters (uvm-driver.md §4): `count` counters, each tracking one
// region of `granularity` bytes split into 32 sub-regions; GPU accesses to *remote* (sysmem)
// memory increment them, and a counter reaching `threshold` writes a notification carrying the
// sub-region mask into the notification buffer, raises the interrupt, and restarts. The driver
// services notifications in batches of `batch_count` by migrating the notified pages (ACBM).
// Counting for migration is on only when the driver enables it, as in the driver.
// Which region a free counter goes to is not documented; when all are busy we recycle the
// least-counted one (lowest index on ties), which keeps the model deterministic.
//
// The driver may also program counters with threshold 1 on chosen 4 KB pages of a VA block
// (ObservUVM's sampled observability, §IV-A: one counter per observed region): the first remote
// access to a watched page queues the block in the observation notification buffer. Those
// counters are taken from the pool (reserve()).
#pragma once

#include <cstdint>
#include <vector>

#include "core/config.h"
#include "core/stats.h"
#include "core/types.h"
#include "models/interrupt.h"
#include "state/page_mask.h"

namespace uvmsim {

struct AccessCounterNotification {
  Addr region_base = 0;
  std::uint64_t region_bytes = 0;
  std::uint32_t subregion_mask = 0;  ///< bit i: sub-region i of 32 was accessed
};

class AccessCounters {
 public:
  /// Counters over a VA space of `num_blocks` 2 MB blocks.
  AccessCounters(Interrupt& irq, Stats& stats, const AccessCounterConfig& cfg,
                 std::size_t num_blocks)
      : irq_(irq), stats_(stats) {
    configure(cfg, num_blocks);
  }

  // ---- programmed by the driver ------------------------------------------------------------
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
  /// A threshold-1 counter on `pages` of VA block `block` (replaces an earlier watch).
  void watch(std::uint32_t block, const PageMask& pages);
  void unwatch(std::uint32_t block);
  std::uint64_t granularity() const { return granularity_; }
  std::uint32_t threshold() const { return threshold_; }
  std::uint32_t batch_count() const { return batch_count_; }

  // ---- driven by the GPU -------------------------------------------------------------------
  /// `n` GPU accesses over the link to `page` of managed block `block` (address `va`) at `t`.
  void on_remote_access(std::uint32_t block, unsigned page, Addr va, std::uint32_t n, Tick t) {
    if (watching_ && watched(block, page)) {
      stats_.observe.remote_accesses += n;
      if (!observed_.empty()) irq_.raise(t);
      return;
    }
    if (record(va, n)) {
      ++stats_.access_counter_notifications;
      irq_.raise(t);
    }
  }

  // ---- read by the driver ------------------------------------------------------------------
  /// Migration notifications, oldest first.
  std::vector<AccessCounterNotification>& pending() { return pending_; }
  /// Blocks whose watched pages were accessed, oldest first (may name blocks unwatched since).
  std::vector<std::uint32_t>& observed() { return observed_; }

 private:
  struct Counter {
    Addr region = ~Addr{0};
    std::uint32_t count = 0;
    std::uint32_t mask = 0;
  };
  struct Watch {
    PageMask pages;
    bool notified = false;
  };
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  void configure(const AccessCounterConfig& cfg, std::size_t num_blocks);
  /// True if `page` of `block` is watched; the first access queues a notification.
  bool watched(std::uint32_t block, unsigned page);
  /// Records `n` remote accesses to `va`; returns true if a notification was queued.
  bool record(Addr va, std::uint32_t n);

  Interrupt& irq_;
  Stats& stats_;
  bool enabled_ = false;
  std::uint64_t granularity_ = 2 << 20;
  std::uint32_t threshold_ = 256, batch_count_ = 256;
  std::uint32_t active_ = 0;  ///< counters usable for migration
  std::vector<Counter> counters_;
  std::vector<AccessCounterNotification> pending_;
  bool watching_ = false;
  std::vector<std::uint32_t> watch_index_;  ///< per block: index into watches_, or kNone
  std::vector<Watch> watches_;
  std::vector<std::uint32_t> free_watches_;
  std::vector<std::uint32_t> observed_;
};

}  // namespace uvmsim
