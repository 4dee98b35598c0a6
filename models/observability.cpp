#include "models/observability.h"

#include <algorithm>
#include <cmath>

namespace uvmsim {

void Observability::configure(const ObservabilityConfig& cfg, std::uint32_t counters,
                              std::size_t nblocks, std::uint64_t capacity_chunks,
                              std::uint64_t seed) {
  cfg_ = cfg;
  const auto by_capacity = static_cast<std::uint64_t>(
      std::max(1.0, std::ceil(cfg.max_regions_pct / 100.0 * static_cast<double>(capacity_chunks))));
  cap_[0] = static_cast<std::uint32_t>(std::min<std::uint64_t>(cfg.max_regions, by_capacity));
  cap_[1] =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(cfg.max_feedback_regions, by_capacity));
  counters_ = counters;
  samples_ = cfg.samples_per_region;
  regions_.clear();
  index_.assign(nblocks, kNone);
  by_purpose_ = {};
  recent_.assign(cfg.adapt_window, Recent{});
  evicted_seq_.assign(nblocks, 0);
  evictions_ = 0;
  rng_.seed(seed ^ 0x6f62736572766521ull);  // "observe!": independent of other seeded streams
}

std::uint32_t Observability::budget(ObservePurpose p) const {
  const std::uint32_t cap = cap_[static_cast<std::size_t>(p)];
  const std::uint32_t used = by_purpose_[static_cast<std::size_t>(p)];
  const std::uint32_t free_counters =
      counters_ > regions_.size() ? counters_ - static_cast<std::uint32_t>(regions_.size()) : 0;
  return std::min(cap > used ? cap - used : 0, free_counters);
}

PageMask Observability::choose_samples(const VaBlock& b, const PageMask& present,
                                       const PageMask* sample_from) {
  std::uint32_t eligible[kPagesPerBlock / kPagesPerBigPage];
  unsigned n = 0;
  for (unsigned bp = b.first_page / kPagesPerBigPage; bp * kPagesPerBigPage < b.end_page; ++bp) {
    if (!present.big_page_any(bp)) continue;
    if (sample_from) {
      PageMask big;
      big.set_range(bp * kPagesPerBigPage, (bp + 1) * kPagesPerBigPage);
      if (minus(present & big, *sample_from).any()) continue;
    }
    eligible[n++] = bp;
  }
  PageMask samples;
  // Partial Fisher-Yates over the eligible big pages with the raw mt19937_64 output, whose
  // sequence the standard fixes (the distributions are implementation-defined).
  for (unsigned i = 0; i < n && i < samples_; ++i) {
    const unsigned j = i + static_cast<unsigned>(rng_() % (n - i));
    std::swap(eligible[i], eligible[j]);
    const unsigned p0 = eligible[i] * kPagesPerBigPage;
    PageMask big;
    big.set_range(p0, p0 + kPagesPerBigPage);
    big &= present;
    samples |= big;
  }
  return samples;
}

void Observability::start(const VaBlock& b, ObservePurpose purpose, const PageMask& samples,
                          Tick now) {
  index_[b.id] = static_cast<std::uint32_t>(regions_.size());
  regions_.push_back(ObservedRegion{b.id, purpose, now, samples});
  ++by_purpose_[static_cast<std::size_t>(purpose)];
}

ObservedRegion Observability::end(std::uint32_t block) {
  const std::uint32_t i = index_[block];
  ObservedRegion r = regions_[i];
  --by_purpose_[static_cast<std::size_t>(r.purpose)];
  index_[block] = kNone;
  if (i + 1 != regions_.size()) {
    regions_[i] = regions_.back();
    index_[regions_[i].block] = i;
  }
  regions_.pop_back();
  return r;
}

int Observability::on_evicted(std::uint32_t block) {
  if (!cfg_.adaptive_samples) return 0;
  const std::uint64_t seq = ++evictions_;
  const std::size_t w = recent_.size();
  recent_[(seq - 1) % w] = Recent{block, false};
  evicted_seq_[block] = seq;
  if (seq % w) return 0;
  std::size_t refaulted = 0;
  for (const auto& r : recent_) refaulted += r.refaulted;
  const double frac = static_cast<double>(refaulted) / static_cast<double>(w);
  if (frac > cfg_.adapt_grow_fraction &&
      samples_ * 2 <= std::max(cfg_.max_samples_per_region, cfg_.samples_per_region)) {
    samples_ *= 2;
    return 1;
  }
  if (1.0 - frac > cfg_.adapt_shrink_fraction && samples_ > 1) {
    samples_ /= 2;
    return -1;
  }
  return 0;
}

void Observability::on_fault(std::uint32_t block) {
  const std::uint64_t seq = evicted_seq_[block];
  if (seq == 0 || evictions_ - seq >= recent_.size()) return;
  Recent& r = recent_[(seq - 1) % recent_.size()];
  if (r.block == block) r.refaulted = true;
}

}  // namespace uvmsim
