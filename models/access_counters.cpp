#include "models/access_counters.h"

namespace uvmsim {

void AccessCounters::configure(const AccessCounterConfig& cfg, std::size_t num_blocks) {
  enabled_ = cfg.migration;
  granularity_ = cfg.granularity;
  threshold_ = cfg.threshold;
  batch_count_ = cfg.batch_count;
  counters_.assign(cfg.count, Counter{});
  active_ = cfg.count;
  pending_.clear();
  pending_.reserve(cfg.batch_count);
  watching_ = false;
  watch_index_.assign(num_blocks, kNone);
  watches_.clear();
  free_watches_.clear();
  observed_.clear();
}

void AccessCounters::watch(std::uint32_t block, const PageMask& pages) {
  std::uint32_t& i = watch_index_[block];
  if (i == kNone) {
    if (!free_watches_.empty()) {
      i = free_watches_.back();
      free_watches_.pop_back();
    } else {
      i = static_cast<std::uint32_t>(watches_.size());
      watches_.emplace_back();
    }
  }
  watches_[i] = Watch{pages, false};
  watching_ = true;
}

void AccessCounters::unwatch(std::uint32_t block) {
  std::uint32_t& i = watch_index_[block];
  if (i == kNone) return;
  free_watches_.push_back(i);
  i = kNone;
}

bool AccessCounters::watched(std::uint32_t block, unsigned page) {
  const std::uint32_t i = watch_index_[block];
  if (i == kNone || !watches_[i].pages.test(page)) return false;
  if (!watches_[i].notified) {
    watches_[i].notified = true;
    observed_.push_back(block);
  }
  return true;
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
