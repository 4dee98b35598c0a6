// The example policy of docs/writing-a-policy.md: MRU, "evict the most recently migrated-in
// region", which suits cyclic sweeps larger than GPU memory (LRU-like policies keep nothing
// across cycles there; MRU keeps the first regions of the cycle). It shows the parts every
// eviction policy has: state kept from notifications, a victim choice, and a declared knob.
#include "policies/eviction/region_list.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class Mru final : public EvictionPolicy {
 public:
  explicit Mru(const PolicyContext& ctx)
      : engine_(ctx.engine()),
        nodes_(ctx.va_space.blocks().size()),
        inserted_batch_(ctx.va_space.blocks().size(), 0),
        skip_(ctx.params["skip"].get<unsigned>()) {}

  // A region enters the list when it gets a GPU chunk and leaves it when evicted.
  void on_chunk_allocated(const VaBlock& b, Tick) override {
    nodes_.move_to_tail(list_, b.id);
    inserted_batch_[b.id] = engine_.fault_batch();  // engine metadata: the batch being serviced
  }
  void on_eviction(const VaBlock& b, Tick) override { nodes_.unlink(b.id); }

  // The newest region, passing over the `skip` newest ones. A region the current fault batch
  // brought in still has faults pending: evicting it would undo the batch's work, so it is
  // passed over too unless nothing else is left.
  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    std::uint32_t fallback = kNoBlock;
    auto it = list_.rbegin();
    for (unsigned passed = 0; it != list_.rend() && passed < skip_; ++it)
      if (it->block != requester) fallback = it->block, ++passed;
    const std::uint32_t v = first_settled(it, list_.rend(), requester, inserted_batch_,
                                          engine_.fault_batch(), fallback);
    return v != kNoBlock ? v : fallback;
  }

 private:
  const PolicyEngine& engine_;
  RegionNodes nodes_;  // one preallocated list node per 2 MB region
  RegionList list_;    // head = oldest, tail = newest
  std::vector<std::uint64_t> inserted_batch_;
  unsigned skip_;
};

}  // namespace

UVMSIM_REGISTER_EVICTION("mru",
                         "example policy: evict the most recently migrated-in region "
                         "(good for cyclic sweeps larger than GPU memory)",
                         Mru,
                         PolicyKnob::integer("skip", 0, 0, 1 << 20,
                                             "newest regions to pass over before choosing"));

}  // namespace uvmsim
