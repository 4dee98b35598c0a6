#include "models/thrashing.h"

namespace uvmsim {

void ThrashingDetector::configure(const ThrashingConfig& cfg, std::size_t num_blocks) {
  cfg_ = cfg;
  lapse_ = static_cast<Tick>(cfg.lapse_us * kPsPerUs);
  blocks_.clear();
  blocks_.resize(num_blocks);
}

bool ThrashingDetector::on_migration(std::uint32_t block, unsigned page, Processor dest, Tick now) {
  if (!cfg_.enable) return false;
  BlockState& b = blocks_[block];
  // Per-page tracking starts only when the block sees a different processor within lapse.
  if (!b.pages) {
    const bool other = b.seen && b.last_proc != dest && now - b.last_time < lapse_;
    b.seen = true;
    b.last_proc = dest;
    b.last_time = now;
    if (!other) return false;
    b.pages = std::make_unique<PageState[]>(kPagesPerBlock);
  }
  PageState& p = b.pages[page];
  bool became = false;
  if (p.seen && now - p.last_time < lapse_ && p.last_proc != dest) {
    if (p.events < 7) ++p.events;
    if (p.events >= cfg_.threshold && !b.thrashing.test(page)) {
      b.thrashing.set(page);
      became = true;
    }
  } else if (p.seen && now - p.last_time >= lapse_ && now >= p.pinned_until) {
    p.events = 0;
    p.throttles = 0;
    b.thrashing.reset(page);
  }
  p.seen = true;
  p.last_proc = dest;
  p.last_time = now;
  return became;
}

ThrashingDetector::Hint ThrashingDetector::get_hint(std::uint32_t block, unsigned page,
                                                    Processor requester, Tick now) {
  if (!cfg_.enable) return Hint::None;
  BlockState& b = blocks_[block];
  if (!b.pages || !b.thrashing.test(page)) return Hint::None;
  PageState& p = b.pages[page];
  if (now < p.pinned_until) return Hint::Pin;
  if (now < p.throttle_end && requester != p.last_proc) return Hint::Throttle;
  if (now - p.last_time > lapse_) return Hint::None;
  // A new throttling period: the processor that does not hold the page is throttled for `nap`
  // lapses; after pin_threshold periods the page is pinned where it is.
  if (p.throttles < 255) ++p.throttles;
  if (p.throttles >= cfg_.pin_threshold) {
    p.pinned_until = cfg_.pin ? now + lapse_ * cfg_.pin : ~Tick{0};
    return Hint::Pin;
  }
  if (requester != p.last_proc) {
    p.throttle_end = now + lapse_ * cfg_.nap;
    return Hint::Throttle;
  }
  return Hint::None;
}

const PageMask& ThrashingDetector::thrashing_pages(std::uint32_t block) const {
  return blocks_.empty() ? empty_ : blocks_[block].thrashing;
}

bool ThrashingDetector::pinned(std::uint32_t block, unsigned page, Tick now) const {
  const BlockState& b = blocks_[block];
  return b.pages && now < b.pages[page].pinned_until;
}

}  // namespace uvmsim
