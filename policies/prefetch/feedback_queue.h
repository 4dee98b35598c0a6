// Recently prefetched regions waiting to be observed for feedback (FDP's samples, RGP's
// triggers): a bounded queue offered freshest first, with samples drawn from the prefetched
// pages. A region stays queued until it is observed or pushed out, and is remembered as "ours"
// until its observation ends, since other policies' observations reach every policy too.
#pragma once

#include <deque>
#include <vector>

#include "policies/policy.h"

namespace uvmsim {

class FeedbackQueue {
 public:
  FeedbackQueue(std::size_t blocks, std::size_t capacity) : mine_(blocks, 0), cap_(capacity) {}

  /// `pages` of `block` are being prefetched: queue it (again, as the freshest).
  void push(std::uint32_t block, const PageMask& pages) {
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->block != block) continue;
      queue_.erase(it);
      break;
    }
    if (queue_.size() == cap_) queue_.pop_front();
    queue_.push_back({block, pages});
  }
  /// Offers the queued regions, freshest first, until the sink is full.
  void offer(ObservationSink& sink) {
    for (auto it = queue_.end(); it != queue_.begin();) {
      --it;
      const Offer r = sink.offer(it->block, &it->pages);
      if (r == Offer::Full) return;
      if (r == Offer::Accepted) {
        mine_[it->block] = 1;
        it = queue_.erase(it);
      }
    }
  }
  /// True if `block`'s observation, now ending, was one of ours.
  bool take(std::uint32_t block) {
    const bool ours = mine_[block];
    mine_[block] = 0;
    return ours;
  }

 private:
  struct Candidate {
    std::uint32_t block;
    PageMask pages;
  };
  std::deque<Candidate> queue_;
  std::vector<std::uint8_t> mine_;
  std::size_t cap_;
};

}  // namespace uvmsim
