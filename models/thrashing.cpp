#include "models/thrashing.h"

#include <algorithm>
#include <bit>

namespace uvmsim {

namespace {
constexpr double kDefaultLapseUs = 500;  // UVM_PERF_THRASHING_LAPSE_USEC_DEFAULT
constexpr Tick kLapseMax = static_cast<Tick>(kDefaultLapseUs * 1000 * kPsPerUs);
constexpr Tick kLapseMin = static_cast<Tick>(kDefaultLapseUs / 100 * kPsPerUs);
constexpr Tick kLapseStepMax = kLapseMax / 10;

std::int8_t id(Processor p) { return static_cast<std::int8_t>(processor_id(p)); }
ProcessorMask bit_of(std::int8_t i) { return i < 0 ? 0 : ProcessorMask{1} << i; }
}  // namespace

void ThrashingDetector::configure(const ThrashingConfig& cfg, std::size_t num_blocks,
                                  const Topology& topology) {
  cfg_ = cfg;
  topo_ = topology;
  // va_space_thrashing_info_init_params: nap, epoch and pin are fixed multiples of the initial
  // lapse; only the detection lapse adapts later.
  lapse_ = static_cast<Tick>(cfg.lapse_us * kPsPerUs);
  nap_ = lapse_ * cfg.nap;
  epoch_ = lapse_ * cfg.epoch;
  pin_ = lapse_ * cfg.pin;
  adaptive_ = cfg.lapse_us == kDefaultLapseUs;
  lapse_stat_ = 0;
  block_resets_ = 0;
  blocks_.clear();
  blocks_.resize(num_blocks);
  pins_.clear();
}

void ThrashingDetector::end_throttling(PageState& p) {
  // thrashing_throttling_reset_page: the period's end is cleared only when the last throttled
  // processor is released (thrashing_throttle_end_processor); a period nobody is throttled in
  // keeps running.
  if (!p.throttled) return;
  p.throttled = 0;
  p.throttle_end = 0;
}

void ThrashingDetector::reset_page(BlockState& b, unsigned page) {
  // thrashing_reset_page: throttling ends, the pin goes, events and processors are forgotten.
  // The throttling count and the do-not-throttle processor survive, as in the driver.
  PageState& p = b.pages[page];
  end_throttling(p);
  if (p.pinned) {
    p.pinned = false;
    p.pinned_residency = kNone;
    b.pinned.reset(page);
    --b.num_pinned;
  }
  p.has_time = false;
  p.events = 0;
  p.processors = 0;
  b.thrashing.reset(page);
}

bool ThrashingDetector::block_event(BlockState& b, std::int8_t dest, Tick now) {
  // Per-page state only once the block sees two processors within lapse.
  const bool other = b.has_last && b.last_proc != dest && now - b.last_time <= lapse_;
  b.has_last = true;
  b.last_proc = dest;
  b.last_time = now;
  if (other) b.pages = std::make_unique<PageState[]>(kPagesPerBlock);
  return other;
}

bool ThrashingDetector::on_migration(std::uint32_t block, unsigned page, Processor dest, Tick now,
                                     Cause cause) {
  if (!cfg_.enable) return false;
  BlockState& b = blocks_[block];
  if (cause == Cause::Other) {
    // thrashing_reset_pages_in_region: user commands take precedence over the heuristics.
    if (b.pages && b.thrashing.test(page)) reset_page(b, page);
    return false;
  }
  // is_migration_pinned_pages_update: moving a pinned page to its pin is no event.
  if (b.pages && b.pinned.test(page)) return false;
  const std::int8_t d = id(dest);
  if (!b.pages && !block_event(b, d, now)) return false;
  PageState& p = b.pages[page];
  bool became = false;
  p.processors |= bit_of(d);
  const bool had = p.has_time;
  const Tick last = p.last_time;
  p.has_time = true;
  p.last_time = now;
  if (had) {
    if (now - last <= lapse_) {  // any two events within lapse, whichever processors
      if (p.events < 7) ++p.events;
      if (p.events == cfg_.threshold && !b.thrashing.test(page)) {
        b.thrashing.set(page);
        became = true;
      }
      if (p.events >= cfg_.threshold) {
        b.last_thrashing = now;
        b.has_last_thrashing = true;
      }
    } else if (p.events >= cfg_.threshold && !p.pinned) {
      reset_page(b, page);
    }
  }
  b.has_last = true;
  b.last_proc = d;
  b.last_time = now;
  return became;
}

unsigned ThrashingDetector::on_migration(std::uint32_t block, const PageMask& pages, Processor dest,
                                         Tick now, Cause cause) {
  if (!cfg_.enable) return 0;
  unsigned p = pages.find_next(0);
  if (p >= kPagesPerBlock) return 0;
  BlockState& b = blocks_[block];
  // Without per-page state the event is the block's alone, as thrashing_event_cb takes it once
  // per migrated region: every per-page call after the first would find the processor the first
  // stored. So one block_event stands for them all, unless it allocates the state; then every
  // page is counted. (A single-GPU run never gets past here: the per-page calls were ~600
  // instructions per serviced block of `random` 4 GB at 50 %.)
  if (!b.pages && (cause == Cause::Other || !block_event(b, id(dest), now))) return 0;
  unsigned became = 0;
  for (; p < kPagesPerBlock; p = pages.find_next(p + 1))
    became += on_migration(block, p, dest, now, cause) ? 1 : 0;
  return became;
}

void ThrashingDetector::adjust_lapse(Tick gap) {
  // adjust_thrashing_lapse: a signed 8-bit vote, +1 for a gap >= lapse, -1 otherwise. As
  // written in the driver, both branches test "vote >= threshold": the lapse grows by lapse/8
  // (at most 50 ms a step, up to 500 ms) and shrinks only once it is at the maximum.
  if (!adaptive_) return;
  lapse_stat_ = static_cast<std::int8_t>(lapse_stat_ + (gap < lapse_ ? -1 : 1));
  const int vote = lapse_stat_, thr = static_cast<int>(cfg_.lapse_vote_threshold);
  if (vote >= thr && lapse_ < kLapseMax)
    lapse_ += std::min(lapse_ / 8, kLapseStepMax);
  else if (-vote <= -thr && lapse_ > kLapseMin)
    lapse_ -= std::max(lapse_ / 8, kLapseMin);
  else
    return;
  lapse_stat_ = static_cast<std::int8_t>(lapse_stat_ / 2);
}

void ThrashingDetector::throttle_update(PageState& p, std::int8_t req, Tick now) {
  // thrashing_throttle_update: a new throttling period alternates the privileged processor.
  if (now > p.throttle_end) {
    p.throttle_end = now + nap_;
    p.do_not_throttle = p.do_not_throttle == req ? kNone : req;
  } else if (p.do_not_throttle == kNone) {
    p.do_not_throttle = req;
  }
}

ThrashingDetector::Result ThrashingDetector::migration_hint(const PageState& p, std::int8_t req,
                                                            ProcessorMask resident,
                                                            std::int8_t pref) const {
  // get_hint_for_migration_thrashing, over the topology's access masks.
  Result h;
  const ProcessorMask P = p.processors;
  // thrashing_processors_can_access
  auto all_can_access = [&](std::int8_t to) {
    return to != kNone && (P & ~topo_.accessible_from(to)) == 0;
  };
  // uvm_va_block_page_get_closest_resident: the requester's own copy, else the closest one.
  const auto closest = static_cast<std::int8_t>(topo_.find_closest(resident, req));
  // thrashing_processors_have_fast_access_to: a fast link with native atomics, or the
  // residency itself (with no SMC partitions, a GPU's only "SMC peer" is itself).
  auto all_have_fast_access = [&](std::int8_t to) {
    return to != kNone && (P & ~(topo_.fast_atomic_link(to) | bit_of(to))) == 0;
  };
  auto pin = [&](std::int8_t where) {
    h.type = Hint::Pin;
    h.pin = processor_of_id(where);
  };
  if (all_can_access(pref)) {
    pin(pref);
  } else if (!(pref != kNone && (P & bit_of(pref))) && all_have_fast_access(closest)) {
    // Fast path: every thrashing processor reaches the residency quickly (without NVLink, only
    // when the residency is the sole thrashing processor). A host copy stays where it is when
    // everybody can reach the requester: a GPU requester takes the pin.
    if (closest == 0 && all_can_access(req)) {
      if (req != 0) pin(req);
    } else {
      pin(closest);
    }
  } else if (req == pref) {
    if (p.pinned) {
      if (pref == p.pinned_residency || pref == p.do_not_throttle)
        pin(pref);
      else
        h.type = Hint::Throttle;
    } else if (pref != p.do_not_throttle) {
      h.type = Hint::Throttle;
    } else if (p.throttling_count >= cfg_.pin_threshold) {
      pin(pref);
    }
  } else if (p.pinned) {
    if (req == p.do_not_throttle) {
      if (all_can_access(req)) {
        pin(req);
      } else {
        // thrashing_processors_common_locations: what every thrashing processor can map (the
        // host, when a GPU is one), the closest of them to the requester.
        ProcessorMask common = ~ProcessorMask{0};
        for (ProcessorMask m = P; m; m &= m - 1) common &= topo_.can_access(std::countr_zero(m));
        pin(common == 0 ? req : static_cast<std::int8_t>(topo_.find_closest(common, req)));
      }
    } else if (p.pinned_residency != kNone &&
               (topo_.accessible_from(p.pinned_residency) & bit_of(req))) {
      pin(p.pinned_residency);
    } else {
      h.type = Hint::Throttle;
    }
  } else if (req != p.do_not_throttle) {
    h.type = Hint::Throttle;
  } else if (p.throttling_count >= cfg_.pin_threshold) {
    pin(req);  // pinned to the requester
  }
  return h;
}

void ThrashingDetector::pin_page(std::uint32_t block, BlockState& b, unsigned page,
                                 std::int8_t residency, ProcessorMask resident, Tick now) {
  // thrashing_pin_page
  PageState& p = b.pages[page];
  if (!p.pinned || !(resident & bit_of(residency))) end_throttling(p);
  if (!p.pinned) {
    if (pin_ > 0) {
      p.pin_deadline = now + pin_;
      pins_.push_back({p.pin_deadline, block, page});
    }
    p.throttling_count = 0;
    p.pinned = true;
    ++b.num_pinned;
    b.pinned.set(page);
  }
  p.pinned_residency = residency;
}

ThrashingDetector::Result ThrashingDetector::get_hint(std::uint32_t block, unsigned page,
                                                      Processor requester, ProcessorMask resident,
                                                      const Processor* preferred, Tick now) {
  Result h;
  if (!cfg_.enable) return h;
  BlockState& b = blocks_[block];
  if (!b.pages) return h;
  if (b.has_last_thrashing && now - b.last_thrashing > epoch_ && b.num_pinned == 0 &&
      b.resets < cfg_.max_resets) {
    // No thrashing for an epoch: the block's per-page state is dropped.
    ++b.resets;
    ++block_resets_;
    b.pages.reset();
    b.thrashing.clear();
    b.has_last = b.has_last_thrashing = false;
    b.last_proc = kNone;
    return h;
  }
  PageState& p = b.pages[page];
  if (p.events < cfg_.threshold) return h;
  const std::int8_t req = id(requester);
  bool decided = false;
  if (p.throttled & bit_of(req)) {
    if (now < p.throttle_end && req != p.do_not_throttle) {
      h.type = Hint::Throttle;
      decided = true;
    } else {
      p.throttled &= ~bit_of(req);
      if (!p.throttled) p.throttle_end = 0;
    }
  }
  if (!decided) {
    adjust_lapse(now - p.last_time);
    if (now - p.last_time > lapse_ && !p.pinned) return h;  // no longer thrashing
    p.processors |= bit_of(req);
    throttle_update(p, req, now);
    const std::int8_t pref = preferred ? id(*preferred) : kNone;
    h = migration_hint(p, req, resident, pref);
  }
  if (h.type == Hint::Pin) {
    pin_page(block, b, page, id(h.pin), resident, now);
  } else if (h.type == Hint::Throttle) {
    // thrashing_throttle_processor: the first throttle of a period counts towards pinning.
    if (!(p.throttled & bit_of(req))) {
      p.throttled |= bit_of(req);
      if (!p.pinned && p.throttling_count < 255) ++p.throttling_count;
    }
    h.throttle_end = p.throttle_end;
  }
  return h;
}

const PageMask& ThrashingDetector::thrashing_pages(std::uint32_t block) const {
  return blocks_.empty() ? empty_ : blocks_[block].thrashing;
}

bool ThrashingDetector::pinned(std::uint32_t block, unsigned page) const {
  const BlockState& b = blocks_[block];
  return b.pages && b.pinned.test(page);
}

}  // namespace uvmsim
