// Cyclic Protection (ObservUVM §VI-A, Figure 7c), for cyclic access patterns that sweep more
// regions than fit in HBM, where LRU keeps nothing across cycles. The list of GPU-resident
// regions is split into a protected area at the head and an unprotected area at the tail. A
// region that gets a chunk enters at the tail (unprotected). The victim is the head of the
// unprotected area, at the split S: the oldest unprotected region, so a newly migrated region
// stays for `unprotected` evictions, and the protected regions stay across cycles.
//
// The unprotected area must be just long enough for a region's use to expire before it reaches
// S; observability sizes it at run time. The regions nearest S are observed. The area is too
// small when one of them is accessed (an access-counter notification: the region moves to the
// tail) or when a region evicted at S faults again within the next `refault_window` evictions
// (its use had not expired; the fault stream shows it without observability). It can shrink
// when an observed region is evicted without having been accessed and does not fault again
// within that window. Each outcome moves the target by `step` regions; resizing moves S:
// growing unprotects the youngest protected regions, shrinking protects the oldest unprotected.
//
// Readings of the paper (§VI-A leaves them open): "evicted from the tail of the unprotected area
// (S)" names the split S, because evicting the newest region would make the area's size
// irrelevant; a quick re-fault after eviction counts as an access, and a shrink waits for the
// re-fault window, because in a streaming region the sampled page has often been consumed
// already when the region reaches S.
#include <algorithm>

#include "policies/eviction/region_list.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

constexpr std::uint32_t kProtected = 0, kUnprotected = 1;

class CyclicProtection final : public EvictionPolicy {
 public:
  explicit CyclicProtection(const PolicyContext& ctx)
      : engine_(ctx.engine()),
        nodes_(ctx.va_space.blocks().size()),
        step_(ctx.params["step"].get<std::uint32_t>()),
        depth_(ctx.params["observe_depth"].get<std::uint32_t>()),
        observe_(ctx.params["adaptive"].get<bool>()),
        recent_(ctx.params["refault_window"].get<std::size_t>()),
        evicted_seq_(ctx.va_space.blocks().size(), 0),
        inserted_batch_(ctx.va_space.blocks().size(), 0) {
    const auto u = ctx.params["unprotected"].get<std::uint32_t>();
    target_ =
        u ? u
          : std::max<std::uint32_t>(1, static_cast<std::uint32_t>(engine_.capacity_chunks() / 10));
  }

  void on_chunk_allocated(const VaBlock& b, Tick) override {
    inserted_batch_[b.id] = engine_.fault_batch();
    insert_tail(b.id);
    protect_excess();
  }
  void on_page_fault(const VaBlock& b, unsigned, Tick) override {
    // Still in use while unprotected: keep it away from S. Protected regions stay put.
    if (nodes_.linked(b.id) && nodes_[b.id].tag == kUnprotected) {
      nodes_.move_to_tail(unprotected_, b.id);
    }
    // Evicted at S moments ago and needed again: the area is too small.
    const std::uint64_t seq = evicted_seq_[b.id];
    if (seq && evictions_ - seq < recent_.size()) {
      Recent& r = recent_[seq % recent_.size()];
      if (r.block == b.id && !r.refaulted) {
        r.refaulted = true;
        grow();
      }
    }
  }
  void on_access_counter(const VaBlock& b, unsigned, ObservePurpose why, Tick) override {
    if (!nodes_.linked(b.id) || nodes_[b.id].tag != kUnprotected) return;
    nodes_.move_to_tail(unprotected_, b.id);
    // An observed region near S was still in use: the unprotected area is too small.
    if (why == ObservePurpose::Eviction) grow();
  }
  void on_eviction(const VaBlock& b, Tick) override {
    if (!nodes_.linked(b.id)) return;
    const ObservedRegion* o = engine_.observation(b.id);
    const bool probe =
        o && o->purpose == ObservePurpose::Eviction && nodes_[b.id].tag == kUnprotected;
    const std::uint64_t seq = ++evictions_;
    Recent& r = recent_[seq % recent_.size()];
    if (r.probe && !r.refaulted) shrink();  // its window passed: it was not needed after all
    r = Recent{b.id, probe, false};
    evicted_seq_[b.id] = seq;
    (nodes_[b.id].tag == kUnprotected ? unprotected_n_ : protected_n_)--;
    nodes_.unlink(b.id);
    protect_excess();  // the refill that follows an eviction takes the freed place
  }

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    // The oldest unprotected region that this fault batch did not bring in; else the youngest
    // protected one; else one the batch brought in.
    std::uint32_t fallback = kNoBlock;
    const std::uint64_t batch = engine_.fault_batch();
    std::uint32_t v = first_settled(unprotected_.begin(), unprotected_.end(), requester,
                                    inserted_batch_, batch, fallback);
    if (v == kNoBlock)
      v = first_settled(protected_.rbegin(), protected_.rend(), requester, inserted_batch_, batch,
                        fallback);
    return v != kNoBlock ? v : fallback;
  }
  bool uses_observability() const override { return observe_; }
  bool runs_in_userspace() const override { return true; }  // ObservUVM §V-C
  /// The unobserved regions nearest S, at most observe_depth of them.
  void observability_candidates(ObservationSink& sink, Tick) override {
    offer_from_head(unprotected_, sink, engine_, depth_);
  }
  void report(nlohmann::json& out) const override {
    out["unprotected_target"] = target_;
    out["unprotected"] = unprotected_n_;
    out["protected"] = protected_n_;
    out["grows"] = grows_;
    out["shrinks"] = shrinks_;
  }

 private:
  struct Recent {
    std::uint32_t block = kNoBlock;
    bool probe = false;      ///< an observed region evicted without an access
    bool refaulted = false;  ///< faulted again within the window
  };
  std::uint64_t size() const { return protected_n_ + unprotected_n_; }
  void grow() {
    if (!observe_) return;
    target_ = std::min<std::uint64_t>(target_ + step_, std::max<std::uint64_t>(1, size()));
    ++grows_;
    unprotect_to_target();
  }
  void shrink() {
    if (!observe_) return;
    target_ = target_ > step_ ? target_ - step_ : 1;
    ++shrinks_;
    protect_excess();
  }
  void insert_tail(std::uint32_t id) {
    nodes_.move_to_tail(unprotected_, id);
    nodes_[id].tag = kUnprotected;
    ++unprotected_n_;
  }
  /// Moves S towards the tail while the unprotected area is above target (its oldest regions
  /// become protected).
  void protect_excess() {
    while (unprotected_n_ > target_ && unprotected_n_ > 1) {
      RegionNode& n = unprotected_.front();
      nodes_.move_to_tail(protected_, n.block);
      n.tag = kProtected;
      --unprotected_n_;
      ++protected_n_;
    }
  }
  /// Moves S towards the head until the unprotected area reaches its target (the youngest
  /// protected regions lose protection).
  void unprotect_to_target() {
    while (unprotected_n_ < target_ && protected_n_ > 0) {
      RegionNode& n = protected_.back();
      nodes_.move_to_head(unprotected_, n.block);
      n.tag = kUnprotected;
      ++unprotected_n_;
      --protected_n_;
    }
  }

  const PolicyEngine& engine_;
  RegionNodes nodes_;
  RegionList protected_, unprotected_;  ///< head .. S, S .. tail
  std::uint64_t protected_n_ = 0, unprotected_n_ = 0;
  std::uint64_t target_;
  std::uint32_t step_, depth_;
  bool observe_;
  std::vector<Recent> recent_;  ///< the last refault_window evictions, by eviction number
  std::vector<std::uint64_t> evicted_seq_;     ///< per block: its last eviction number (0 = never)
  std::vector<std::uint64_t> inserted_batch_;  ///< per block: fault batch that allocated it
  std::uint64_t evictions_ = 0;
  std::uint64_t grows_ = 0, shrinks_ = 0;
};

}  // namespace

UVMSIM_REGISTER_EVICTION(
    "cp",
    "ObservUVM Cyclic Protection: protected head + unprotected tail sized by observability; "
    "evict the oldest unprotected region",
    CyclicProtection,
    Knob::integer("unprotected", 0, 0, 1000000000,
                  "initial unprotected regions; 0 = 10% of GPU memory (at least 1)"),
    Knob::integer("step", 1, 1, 1000000000, "regions added / removed per observation outcome"),
    Knob::integer("refault_window", 8, 1, 1 << 20,
                  "evictions within which a re-fault means the area is too small"),
    Knob::integer("observe_depth", 16, 0, 1000000000,
                  "unprotected regions nearest the split to observe"),
    Knob::boolean("adaptive", true,
                  "resize the unprotected area from observations and re-faults (false: "
                  "fixed at `unprotected`, no observability)"));

}  // namespace uvmsim
