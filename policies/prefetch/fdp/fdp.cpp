// Feedback-Driven Prefetching (ObservUVM §VI-C, Algorithm 2): chooses the tree prefetcher's
// threshold between the driver's conservative 51 % (TBP) and 1 % (Aggressive Prefetching: the
// whole 2 MB region on its first fault) from observed feedback. Regions that just received a
// prefetch are offered as feedback candidates, their sample drawn from the prefetched pages
// only; an access-counter notification from one is positive feedback (the prefetch was used),
// its eviction before any access negative. Once more than `min_feedback` outcomes are counted,
// every outcome re-decides: aggressive if more than `switch_fraction` of all outcomes so far
// were accesses, conservative otherwise. Counts are cumulative, as in Algorithm 2.
#include "policies/prefetch/feedback_queue.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class Fdp final : public PrefetchPolicy {
 public:
  explicit Fdp(const PolicyContext& ctx)
      : PrefetchPolicy(ctx),
        min_feedback_(ctx.params["min_feedback"].get<std::uint64_t>()),
        fraction_(ctx.params["switch_fraction"].get<double>()),
        aggressive_(ctx.params["aggressive_threshold"].get<unsigned>()),
        conservative_(ctx.params["default_threshold"].is_null()
                          ? ctx.config.driver.prefetch_threshold
                          : ctx.params["default_threshold"].get<unsigned>()),
        queue_(ctx.va_space.blocks().size(), ctx.params["candidates"].get<std::size_t>()),
        threshold_(conservative_) {}

  unsigned prefetch_threshold() const override { return threshold_; }
  bool uses_observability() const override { return true; }
  bool runs_in_userspace() const override { return true; }  // ObservUVM §V-C

  void on_prefetch(const VaBlock& b, const PageMask& pages, Tick) override {
    queue_.push(b.id, pages);
  }
  void feedback_candidates(ObservationSink& sink, Tick) override { queue_.offer(sink); }
  void on_access_counter(const VaBlock& b, unsigned, ObservePurpose, Tick) override {
    if (!queue_.take(b.id)) return;
    ++accessed_;
    decide();
  }
  void on_eviction(const VaBlock& b, Tick) override {
    if (!queue_.take(b.id)) return;  // evicted while observed: never accessed
    ++evicted_;
    decide();
  }
  void report(nlohmann::json& out) const override {
    out["threshold"] = threshold_;
    out["feedback_accessed"] = accessed_;
    out["feedback_evicted"] = evicted_;
    out["switches"] = switches_;
  }

 private:
  void decide() {
    const std::uint64_t sum = accessed_ + evicted_;
    if (sum <= min_feedback_) return;
    const unsigned t = static_cast<double>(accessed_) / static_cast<double>(sum) > fraction_
                           ? aggressive_
                           : conservative_;
    if (t != threshold_) ++switches_;
    threshold_ = t;
  }

  std::uint64_t min_feedback_;
  double fraction_;
  unsigned aggressive_, conservative_;
  FeedbackQueue queue_;
  unsigned threshold_;
  std::uint64_t accessed_ = 0, evicted_ = 0, switches_ = 0;
};

}  // namespace

UVMSIM_REGISTER_PREFETCH(
    "fdp",
    "ObservUVM feedback-driven prefetching: tree threshold 51 -> 1 when > 80% of observed "
    "prefetched regions are accessed",
    Fdp, Knob::integer("min_feedback", 32, 0, 1000000000000, "outcomes needed before deciding (T)"),
    Knob::number("switch_fraction", 0.8, 0, 1, "accessed share above which to go aggressive"),
    Knob::integer("aggressive_threshold", 1, 0, 100, "tree threshold when aggressive (AP)"),
    Knob::integer("default_threshold", nullptr, 0, 100,
                  "conservative tree threshold; default driver.prefetch_threshold (51)"),
    Knob::integer("candidates", 64, 1, 1 << 20,
                  "recently prefetched regions kept as feedback candidates"));

}  // namespace uvmsim
