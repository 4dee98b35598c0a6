// Prefetch policies combined with '+' ("fdp+rgp", the paper's TM++ prefetching): each receives
// every event, their intra-block masks are united, and their feedback candidates are offered in
// turn.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "policies/forwarding.h"
#include "policies/registry.h"

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

// The prefetch family's look-up: a name may combine registered prefetch policies with '+'.
std::unique_ptr<PrefetchPolicy> make_prefetch_policy(const std::string& n, const PolicyContext& c) {
  if (n.find('+') == std::string::npos) return make_registered<PrefetchPolicy>("prefetch", n, c);
  std::vector<std::unique_ptr<PrefetchPolicy>> parts;
  std::size_t start = 0;
  for (;;) {
    const auto plus = n.find('+', start);
    const std::string part = n.substr(start, plus == std::string::npos ? n.npos : plus - start);
    if (part.empty())
      throw UserError("--prefetch: empty name in combined prefetch policy '" + n + "'");
    parts.push_back(make_registered<PrefetchPolicy>("prefetch", part, c.for_policy(part)));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return std::make_unique<CombinedPrefetch>(n, std::move(parts), c);
}

}  // namespace uvmsim
