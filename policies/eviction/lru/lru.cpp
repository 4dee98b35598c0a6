// Approximate LRU with sampled observability (ObservUVM §VI-A, Listing 1): a list of GPU-resident
// 2 MB regions, least recently used at the head. A region enters at the tail when it gets a
// chunk and moves to the tail on every fault into it (Insertion, Promotion). The driver cannot
// see accesses to HBM-resident regions, so the regions nearest the head (at imminent risk of
// eviction) are made observable; a region whose sample page is accessed (an access-counter
// notification) is moved to the tail, out of danger. The victim is the head.
#include "policies/eviction/region_list.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class Lru final : public EvictionPolicy {
 public:
  explicit Lru(const PolicyContext& ctx)
      : engine_(ctx.engine()),
        nodes_(ctx.va_space.blocks().size()),
        observe_(ctx.params["observe"].get<bool>()) {}

  void on_chunk_allocated(const VaBlock& b, Tick) override { nodes_.move_to_tail(list_, b.id); }
  void on_page_fault(const VaBlock& b, unsigned, Tick) override {
    if (nodes_.linked(b.id)) nodes_.move_to_tail(list_, b.id);
  }
  void on_access_counter(const VaBlock& b, unsigned, ObservePurpose, Tick) override {
    if (nodes_.linked(b.id)) {
      nodes_.move_to_tail(list_, b.id);
      ++promotions_;
    }
  }
  void on_eviction(const VaBlock& b, Tick) override { nodes_.unlink(b.id); }

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    return first_except(list_, requester);
  }
  bool uses_observability() const override { return observe_; }
  bool runs_in_userspace() const override { return true; }  // ObservUVM §V-C
  /// setObservabilityCandidate: the unobserved regions closest to the head.
  void observability_candidates(ObservationSink& sink, Tick) override {
    offer_from_head(list_, sink, engine_);
  }
  void report(nlohmann::json& out) const override { out["observed_promotions"] = promotions_; }

 private:
  const PolicyEngine& engine_;
  RegionNodes nodes_;
  RegionList list_;
  bool observe_;
  std::uint64_t promotions_ = 0;
};

}  // namespace

UVMSIM_REGISTER_EVICTION("lru",
                         "ObservUVM LRU: fault/insertion order plus observed accesses move a "
                         "region to the tail; evict the head (observes regions near the head)",
                         Lru,
                         Knob::boolean("observe", true,
                                       "observe regions near the head; false: promote on "
                                       "faults only (no observability)"));

}  // namespace uvmsim
