// Region-Grain Prefetching (ObservUVM §VI-D, Figure 8): a next-region (2 MB) prefetcher for
// streaming allocations, timed by observability.
//  * Streaming detection, per allocation (VA range): successive faulting regions that are
//    neighbours (the next or previous 2 MB region) raise a confidence score, jumps
//    lower it (by 2); the range is streaming while the score is at least `confidence`.
//  * In a streaming range a fault prefetches its whole 2 MB region (the tree prefetcher runs
//    elsewhere, at the threshold prefetch_threshold() returns).
//  * Every region prefetched in a streaming range gets a trigger: one random 64 KB page of the
//    prefetched pages made observable. When the GPU touches a trigger, the next region of the
//    range that is not yet fully resident (within `distance` regions) is prefetched whole, just
//    ahead of the stream: early enough to hide the migration, not so early that it evicts
//    regions still in use.
#include <algorithm>
#include "policies/prefetch/feedback_queue.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class Rgp final : public PrefetchPolicy {
 public:
  explicit Rgp(const PolicyContext& ctx)
      : PrefetchPolicy(ctx),
        engine_(ctx.engine()),
        va_(ctx.va_space),
        ranges_(ctx.va_space.ranges().size()),
        triggers_queue_(ctx.va_space.blocks().size(), 64),
        confidence_(ctx.params["confidence"].get<int>()),
        distance_(ctx.params["distance"].get<std::uint32_t>()),
        whole_(ctx.params["whole_region"].get<bool>()) {}

  bool uses_observability() const override { return true; }

  bool runs_in_userspace() const override { return true; }  // ObservUVM §V-C

  void on_page_fault(const VaBlock& b, unsigned, Tick) override {
    Range& r = ranges_[b.range];
    if (r.last == b.id) return;
    if (r.last != kNoBlock) {  // the range's first fault is neither
      const bool neighbour = b.id + 1 == r.last || r.last + 1 == b.id;
      r.score =
          neighbour ? std::min(r.score + 1, 2 * confidence_) : std::max(r.score - 2, -confidence_);
    }
    r.last = b.id;
  }
  void compute(const Request& req, PageMask& out) override {
    tree_prefetch(req, prefetch_threshold(), out);
    if (whole_ && streaming(req.block)) out |= req.block.valid_mask();
  }
  void on_prefetch(const VaBlock& b, const PageMask& pages, Tick) override {
    if (streaming(b)) triggers_queue_.push(b.id, pages);
  }
  void feedback_candidates(ObservationSink& sink, Tick) override { triggers_queue_.offer(sink); }
  void on_access_counter(const VaBlock& b, unsigned, ObservePurpose, Tick) override {
    if (!triggers_queue_.take(b.id)) return;
    ++triggers_;
    const VaRange& r = va_.ranges()[b.range];
    const std::uint32_t end = r.first_block + r.num_blocks;
    for (std::uint32_t n = b.id + 1; n < end && n <= b.id + distance_; ++n) {
      const VaBlock& next = va_.blocks()[n];
      if (next.gpu(gpu()).count == next.num_pages()) continue;  // already there: look further
      engine_.prefetch_region(n);
      ++requested_;
      return;
    }
  }
  void on_eviction(const VaBlock& b, Tick) override { triggers_queue_.take(b.id); }
  void report(nlohmann::json& out) const override {
    std::uint64_t streaming_ranges = 0;
    for (const auto& r : ranges_) streaming_ranges += r.score >= confidence_;
    out["streaming_ranges"] = streaming_ranges;
    out["triggers_hit"] = triggers_;
    out["regions_requested"] = requested_;
  }

 private:
  struct Range {
    std::uint32_t last = kNoBlock;
    int score = 0;
  };
  bool streaming(const VaBlock& b) const { return ranges_[b.range].score >= confidence_; }

  PolicyEngine& engine_;
  const VaSpace& va_;
  std::vector<Range> ranges_;
  FeedbackQueue triggers_queue_;  ///< regions to get a trigger page, and those holding one
  int confidence_;
  std::uint32_t distance_;
  bool whole_;
  std::uint64_t triggers_ = 0, requested_ = 0;
};

}  // namespace

UVMSIM_REGISTER_PREFETCH(
    "rgp",
    "ObservUVM region-grain prefetching: whole 2 MB regions in streaming allocations, the next "
    "region prefetched when an observed trigger page is touched",
    Rgp,
    Knob::integer("confidence", 4, 1, 1 << 20,
                  "neighbouring-fault score at which an allocation counts as streaming"),
    Knob::integer("distance", 4, 1, 1 << 20,
                  "regions ahead of a trigger searched for one not yet resident"),
    Knob::boolean("whole_region", true,
                  "a fault in a streaming allocation prefetches its whole 2 MB region"));

}  // namespace uvmsim
