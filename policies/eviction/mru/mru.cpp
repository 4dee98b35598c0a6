// The example policy of docs/writing-a-policy.md: MRU, "evict the most recently migrated-in
// region", which suits cyclic sweeps larger than GPU memory (LRU-like policies keep nothing
// across cycles there; MRU keeps the first regions of the cycle). It shows the parts every
// eviction policy has: state kept from notifications, a victim choice, and a declared knob.
#include "policies/eviction/region_list.h"

namespace uvmsim {
namespace {

class Mru final : public EvictionPolicy {
 public:
  explicit Mru(const PolicyContext& ctx)
      : nodes_(ctx.va_space.blocks().size()), skip_(ctx.params["skip"].get<unsigned>()) {}

  // A region enters the list when it gets a GPU chunk and leaves it when evicted.
  void on_chunk_allocated(const VaBlock& b, Tick) override { nodes_.move_to_tail(list_, b.id); }
  void on_eviction(const VaBlock& b, Tick) override { nodes_.unlink(b.id); }

  // The newest region, passing over the `skip` newest ones (if there are enough).
  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    std::uint32_t fallback = kNoBlock;
    unsigned passed = 0;
    for (auto it = list_.rbegin(); it != list_.rend(); ++it) {
      if (it->block == requester) continue;
      if (passed++ == skip_) return it->block;
      fallback = it->block;
    }
    return fallback;
  }

 private:
  RegionNodes nodes_;  // one preallocated list node per 2 MB region
  RegionList list_;    // head = oldest, tail = newest
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
