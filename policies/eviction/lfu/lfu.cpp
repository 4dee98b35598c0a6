// Approximate LFU with sampled observability (ObservUVM §VI-A, Figure 7b): GPU-resident regions
// are binned by estimated access frequency, each bin a list with the most recently promoted
// region at its tail. A region is inserted in the bin of its frequency; every fault batch that
// faults on it and every access-counter notification of its sample moves it one bin up (to the
// tail). Regions in the lowest bins, next in line for eviction, are made observable. The victim
// is the head of the lowest non-empty bin.
//
// Model choices the paper leaves open: the frequency grows once per fault *batch* touching the
// region (a wave of warps faulting one region is one event to the driver, not hundreds), it
// saturates at max_frequency, and (keep_history) it survives eviction, so a hot region that was
// evicted comes back in its old bin - otherwise the first fault would count for nothing.
#include <algorithm>

#include "policies/eviction/region_list.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class Lfu final : public EvictionPolicy {
 public:
  explicit Lfu(const PolicyContext& ctx)
      : engine_(ctx.engine()),
        nodes_(ctx.va_space.blocks().size()),
        bins_(ctx.params["max_frequency"].get<std::size_t>() + 1),
        freq_(ctx.va_space.blocks().size(), 0),
        last_batch_(ctx.va_space.blocks().size(), ~std::uint64_t{0}),
        inserted_batch_(ctx.va_space.blocks().size(), 0),
        keep_history_(ctx.params["keep_history"].get<bool>()),
        observe_(ctx.params["observe"].get<bool>()) {}

  void on_chunk_allocated(const VaBlock& b, Tick) override {
    if (!keep_history_) freq_[b.id] = 0;
    last_batch_[b.id] = inserted_batch_[b.id] = engine_.fault_batch();  // not a promotion
    place(b.id);
  }
  void on_page_fault(const VaBlock& b, unsigned, Tick) override {
    const std::uint64_t batch = engine_.fault_batch();
    if (!nodes_.linked(b.id) || last_batch_[b.id] == batch) return;
    last_batch_[b.id] = batch;
    promote(b.id);
  }
  void on_access_counter(const VaBlock& b, unsigned, ObservePurpose, Tick) override {
    if (nodes_.linked(b.id)) promote(b.id);
  }
  void on_eviction(const VaBlock& b, Tick) override { nodes_.unlink(b.id); }

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    // A region brought in by the fault batch being serviced has its faults still pending: it is
    // taken only if nothing else is left (else the batch would evict what it just migrated).
    std::uint32_t fallback = kNoBlock;
    for (const auto& bin : bins_) {
      const std::uint32_t v = first_settled(bin.begin(), bin.end(), requester, inserted_batch_,
                                            engine_.fault_batch(), fallback);
      if (v != kNoBlock) return v;
    }
    return fallback;
  }
  bool uses_observability() const override { return observe_; }
  bool runs_in_userspace() const override { return true; }  // ObservUVM §V-C
  /// The unobserved regions of the lowest bins, in eviction order.
  void observability_candidates(ObservationSink& sink, Tick) override {
    for (const auto& bin : bins_)
      if (!offer_from_head(bin, sink, engine_)) return;
  }
  void report(nlohmann::json& out) const override {
    nlohmann::json hist = nlohmann::json::array();
    for (const auto& bin : bins_) hist.push_back(std::distance(bin.begin(), bin.end()));
    out["resident_per_frequency"] = hist;
  }

 private:
  void place(std::uint32_t id) { nodes_.move_to_tail(bins_[freq_[id]], id); }
  void promote(std::uint32_t id) {
    freq_[id] =
        std::min<std::uint32_t>(freq_[id] + 1, static_cast<std::uint32_t>(bins_.size() - 1));
    place(id);
  }

  const PolicyEngine& engine_;
  RegionNodes nodes_;
  std::vector<RegionList> bins_;
  std::vector<std::uint32_t> freq_;
  std::vector<std::uint64_t> last_batch_, inserted_batch_;
  bool keep_history_, observe_;
};

}  // namespace

UVMSIM_REGISTER_EVICTION(
    "lfu",
    "ObservUVM LFU: regions binned by fault-batch + observed-access frequency; evict the head "
    "of the lowest bin (observes the lowest bins)",
    Lfu, Knob::integer("max_frequency", 64, 1, 65535, "highest frequency bin (saturates)"),
    Knob::boolean("keep_history", true, "frequencies survive eviction"),
    Knob::boolean("observe", true, "observe regions in the lowest bins"));

}  // namespace uvmsim
