// The UVM driver's default eviction (uvm_pmm_gpu.c, uvm-driver.md §5): root chunks sit on an
// UNUSED list (chunk allocated, no page of the block resident on the GPU) or a USED list. A
// chunk moves to the tail of USED only when it is (re)allocated or its block goes from empty to
// resident, and to the tail of UNUSED when the block's last GPU page leaves. GPU accesses and
// later faults into an already-resident block do NOT move it, so this is "least recently
// allocated/migrated-in", not LRU. The victim is the head of UNUSED, else the head of USED.
#include <boost/intrusive/list.hpp>
#include <vector>

#include "policies/policy.h"

namespace uvmsim {
namespace {

namespace bi = boost::intrusive;

struct ChunkNode : bi::list_base_hook<bi::link_mode<bi::auto_unlink>> {
  std::uint32_t block = 0;
};
using ChunkList = bi::list<ChunkNode, bi::constant_time_size<false>>;

class DriverEviction final : public EvictionPolicy {
 public:
  explicit DriverEviction(const PolicyContext& ctx) : nodes_(ctx.va_space.blocks().size()) {
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) nodes_[i].block = i;
  }

  void on_chunk_allocated(const VaBlock& b, Tick) override { move_to_tail(used_, b.id); }
  void on_eviction(const VaBlock& b, Tick) override { nodes_[b.id].unlink(); }
  void on_populated(const VaBlock& b, Tick) override { move_to_tail(used_, b.id); }
  void on_emptied(const VaBlock& b, Tick) override {
    // Partial (non-2 MB) blocks are never put on UNUSED by the driver (uvm-driver.md §0).
    if (b.full_block()) move_to_tail(unused_, b.id);
  }

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    for (ChunkList* list : {&unused_, &used_}) {
      for (const auto& n : *list) {
        if (n.block != requester) return n.block;
      }
    }
    return kNoBlock;
  }

 private:
  void move_to_tail(ChunkList& list, std::uint32_t id) {
    nodes_[id].unlink();
    list.push_back(nodes_[id]);
  }

  std::vector<ChunkNode> nodes_;
  ChunkList unused_, used_;
};

}  // namespace

UVMSIM_REGISTER_EVICTION("driver",
                         "NVIDIA driver default: oldest root chunk on UNUSED then USED list, "
                         "position changes only on (re)allocation / empty->resident",
                         DriverEviction);
// ObservUVM's name for it: Least Recently Migrated (§II-D).
UVMSIM_REGISTER_ALIAS(EvictionRegistry, "lrm", "driver");

}  // namespace uvmsim
