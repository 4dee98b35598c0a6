// Tournament (ObservUVM §VI-B, Algorithm 1): runs several eviction policies side by side, every
// one seeing every event, and takes each eviction victim from the active policies in round-robin
// order, remembering which policy caused which eviction. A fault on an evicted region blames the
// policy that evicted it (once per eviction). Every time more than `threshold` blames have
// accumulated, each active policy whose share of them exceeds margin / |active| (20 % above an
// even share) retires, and the count starts again; the last policy never retires.
// Our reading of "retires policies that accumulate blames faster than its contemporaries": the
// shares are taken over the blames since the last evaluation, a rate. Cumulative shares (the
// algorithm's listing) cannot separate policies on workloads where every evicted region is used
// again eventually (cyclic sweeps): every eviction is then blamed once, sooner or later.
// Observability candidates are shared out: each active policy offers regions within an even share
// of the budget, then any left over.
#include <algorithm>
#include <sstream>

#include "core/error.h"
#include "policies/forwarding.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

constexpr std::uint8_t kNoCause = 0xff;

class Tournament final : public ForwardingPolicy<EvictionPolicy> {
 public:
  explicit Tournament(const PolicyContext& ctx)
      : engine_(ctx.engine()),
        cause_(ctx.va_space.blocks().size(), kNoCause),
        threshold_(ctx.params["threshold"].get<std::uint64_t>()
                       ? ctx.params["threshold"].get<std::uint64_t>()
                       : std::max<std::uint64_t>(1, engine_.capacity_chunks())),
        margin_(ctx.params["margin"].get<double>()),
        windowed_(ctx.params["windowed"].get<bool>()) {
    std::stringstream list(ctx.params["policies"].get<std::string>());
    for (std::string name; std::getline(list, name, ',');) {
      if (name == "tournament" || name.empty())
        throw UserError("policy.tournament.policies", "value",
                        "'" + name + "' cannot be a constituent");
      names_.push_back(name);
      owned_.push_back(make_eviction_policy(name, ctx.for_policy(name)));
    }
    if (owned_.empty() || owned_.size() >= kNoCause)
      throw UserError("policy.tournament.policies", "value", "needs 1 to 254 policies");
    blame_.assign(owned_.size(), 0);
    window_.assign(owned_.size(), 0);
    evictions_.assign(owned_.size(), 0);
    retired_at_.assign(owned_.size(), -1);
    for (std::size_t i = 0; i < owned_.size(); ++i) {
      active_.push_back(static_cast<std::uint8_t>(i));
      parts_.push_back(owned_[i].get());
    }
  }

  std::uint32_t select_victim(std::uint32_t requester, Tick now) override {
    for (std::size_t tries = 0; tries < active_.size(); ++tries) {
      const std::uint8_t p = active_[rr_++ % active_.size()];
      const std::uint32_t v = owned_[p]->select_victim(requester, now);
      if (v == kNoBlock) continue;
      cause_[v] = p;
      ++evictions_[p];
      ++total_evictions_;
      return v;
    }
    return kNoBlock;
  }

  void on_page_fault(const VaBlock& b, unsigned page, Tick now) override {
    ForwardingPolicy::on_page_fault(b, page, now);
    const std::uint8_t p = cause_[b.id];
    if (p == kNoCause) return;
    cause_[b.id] = kNoCause;  // blame once per eviction
    ++blame_[p];
    ++window_[p];
    ++total_blame_;
    if (++window_total_ <= threshold_) return;
    // Evaluate the rate of blame over the last window of more than T blames: a policy whose
    // share exceeds margin / |active| (20 % above an even share) retires.
    const double w = margin_ / static_cast<double>(active_.size());
    for (std::size_t i = 0; i < active_.size() && active_.size() > 1;) {
      const std::uint8_t x = active_[i];
      if (static_cast<double>(window_[x]) / static_cast<double>(window_total_) > w) {
        retire(x);
      } else {
        ++i;
      }
    }
    if (windowed_) {
      std::fill(window_.begin(), window_.end(), 0);
      window_total_ = 0;
    }
  }

  void observability_candidates(ObservationSink& sink, Tick now) override {
    const std::size_t budget = engine_.observation_budget(ObservePurpose::Eviction);
    const std::size_t share = std::max<std::size_t>(1, budget / active_.size());
    // Each active policy gets an even share first; what is left goes in order.
    for (const std::uint8_t p : active_) {
      QuotaSink q(sink, share);
      owned_[p]->observability_candidates(q, now);
    }
    for (const std::uint8_t p : active_) owned_[p]->observability_candidates(sink, now);
  }

  void report(nlohmann::json& out) const override {
    nlohmann::json ps = nlohmann::json::array();
    for (std::size_t i = 0; i < owned_.size(); ++i) {
      nlohmann::json r = {{"name", names_[i]},
                          {"evictions", evictions_[i]},
                          {"blame", blame_[i]},
                          {"active", retired_at_[i] < 0}};
      if (retired_at_[i] >= 0) r["retired_after_evictions"] = retired_at_[i];
      nlohmann::json own = nlohmann::json::object();
      owned_[i]->report(own);
      if (!own.empty()) r["report"] = own;
      ps.push_back(r);
    }
    out["policies"] = ps;
    out["total_blame"] = total_blame_;
  }

 private:
  void retire(std::uint8_t p) {
    active_.erase(std::find(active_.begin(), active_.end(), p));
    // A retired policy is never asked again; it stops receiving events too.
    parts_.erase(std::find(parts_.begin(), parts_.end(), owned_[p].get()));
    retired_at_[p] = static_cast<std::int64_t>(total_evictions_);
  }

  const PolicyEngine& engine_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<EvictionPolicy>> owned_;
  std::vector<std::uint8_t> active_;
  std::vector<std::uint8_t> cause_;  ///< per block: the policy that evicted it last
  std::vector<std::uint64_t> blame_, window_, evictions_;
  std::vector<std::int64_t> retired_at_;
  std::uint64_t total_blame_ = 0, window_total_ = 0, total_evictions_ = 0, rr_ = 0;
  std::uint64_t threshold_;
  double margin_;
  bool windowed_;
};

}  // namespace

UVMSIM_REGISTER_EVICTION(
    "tournament",
    "ObservUVM Tournament meta-policy: round-robin victims from the active policies, blame on "
    "re-fault, retire policies above margin x average blame once total blame passes threshold",
    Tournament,
    PolicyKnob::text("policies", "lru,lfu,cp", "comma-separated constituent eviction policies"),
    PolicyKnob::integer("threshold", 0, 0, 1e12,
                        "total blame after which policies can retire (T); 0 = the number of "
                        "2 MB chunks of GPU memory"),
    PolicyKnob::number("margin", 1.2, 1, 100, "retire when blame share > margin / active policies"),
    PolicyKnob::boolean("windowed", true,
                        "shares over the blames since the last evaluation (false: over all "
                        "blames so far, re-evaluated at every blame past the threshold)"));

}  // namespace uvmsim
