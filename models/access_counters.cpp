#include "models/access_counters.h"

namespace uvmsim {

void AccessCounters::configure(const AccessCounterConfig& cfg) {
  enabled_ = cfg.migration;
  granularity_ = cfg.granularity;
  threshold_ = cfg.threshold;
  batch_count_ = cfg.batch_count;
  counters_.assign(cfg.count, Counter{});
  active_ = cfg.count;
  pending_.clear();
  pending_.reserve(cfg.batch_count);
}

bool AccessCounters::record(Addr va, std::uint32_t n) {
  if (!enabled_ || active_ == 0) return false;
  const Addr region = va / granularity_;
  const auto sub = static_cast<unsigned>((va % granularity_) / (granularity_ / 32));
  Counter* slot = nullptr;
  Counter* least = &counters_[0];
  for (std::uint32_t k = 0; k < active_; ++k) {
    Counter& c = counters_[k];
    if (c.region == region) {
      slot = &c;
      break;
    }
    if (c.count < least->count) least = &c;
  }
  if (!slot) {
    slot = least;
    *slot = Counter{region, 0, 0};
  }
  slot->count += n;
  slot->mask |= 1u << sub;
  if (slot->count < threshold_) return false;
  pending_.push_back({region * granularity_, granularity_, slot->mask});
  *slot = Counter{};
  return true;
}

}  // namespace uvmsim
