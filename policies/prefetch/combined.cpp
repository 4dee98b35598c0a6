#include "policies/prefetch/combined.h"

#include <algorithm>

#include "policies/forwarding.h"

namespace uvmsim {
namespace {

class CombinedPrefetch final : public ForwardingPolicy<PrefetchPolicy> {
 public:
  CombinedPrefetch(std::string name, std::vector<std::unique_ptr<PrefetchPolicy>> parts,
                   const PolicyContext& ctx)
      : ForwardingPolicy<PrefetchPolicy>(ctx),
        engine_(ctx.engine()),
        name_(std::move(name)),
        owned_(std::move(parts)) {
    for (auto& p : owned_) parts_.push_back(p.get());
    std::size_t start = 0;
    for (std::size_t i = 0; i < owned_.size(); ++i) {
      const auto plus = name_.find('+', start);
      names_.push_back(name_.substr(start, plus - start));
      start = plus + 1;
    }
  }
  unsigned prefetch_threshold() const override {
    // The most aggressive constituent's threshold (the masks are united anyway).
    unsigned t = 100;
    for (const auto& p : owned_) t = std::min(t, p->prefetch_threshold());
    return t;
  }
  void compute(const Request& req, PageMask& out) override {
    PageMask one;
    for (auto& p : owned_) {
      one.clear();
      p->compute(req, one);
      out |= one;
    }
  }
  void feedback_candidates(ObservationSink& sink, Tick now) override {
    // Each constituent gets an even share of the feedback budget first, then what is left.
    const std::size_t share = std::max<std::size_t>(
        1, engine_.observation_budget(ObservePurpose::Feedback) / owned_.size());
    for (auto& p : owned_) {
      QuotaSink q(sink, share);
      p->feedback_candidates(q, now);
    }
    for (auto& p : owned_) p->feedback_candidates(sink, now);
  }
  void report(nlohmann::json& out) const override {
    for (std::size_t i = 0; i < owned_.size(); ++i) {
      nlohmann::json r = nlohmann::json::object();
      owned_[i]->report(r);
      if (!r.empty()) out[names_[i]] = std::move(r);
    }
  }

 private:
  const PolicyEngine& engine_;
  std::string name_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<PrefetchPolicy>> owned_;
};

}  // namespace

std::unique_ptr<PrefetchPolicy> combine_prefetch(std::string name,
                                                 std::vector<std::unique_ptr<PrefetchPolicy>> parts,
                                                 const PolicyContext& ctx) {
  return std::make_unique<CombinedPrefetch>(std::move(name), std::move(parts), ctx);
}

}  // namespace uvmsim
