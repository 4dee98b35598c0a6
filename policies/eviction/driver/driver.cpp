// The UVM driver's default eviction (uvm_pmm_gpu.c, uvm-driver.md §5): root chunks sit on an
// UNUSED list (chunk allocated, no page of the block resident on the GPU) or a USED list. A
// chunk moves to the tail of USED only when it is (re)allocated or its block goes from empty to
// resident, and to the tail of UNUSED when the block's last GPU page leaves. GPU accesses and
// later faults into an already-resident block do NOT move it, so this is "least recently
// allocated/migrated-in", not LRU. The victim is the head of UNUSED, else the head of USED.
// ObservUVM calls it LRM, Least Recently Migrated (§II-D); `lrm` is an alias.
#include "policies/eviction/region_list.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class DriverEviction final : public EvictionPolicy {
 public:
  explicit DriverEviction(const PolicyContext& ctx) : nodes_(ctx.va_space.blocks().size()) {}

  void on_chunk_allocated(const VaBlock& b, Tick) override { nodes_.move_to_tail(used_, b.id); }
  void on_eviction(const VaBlock& b, Tick) override { nodes_.unlink(b.id); }
  void on_populated(const VaBlock& b, Tick) override { nodes_.move_to_tail(used_, b.id); }
  void on_emptied(const VaBlock& b, Tick) override {
    // Partial (non-2 MB) blocks are never put on UNUSED by the driver (uvm-driver.md §0).
    if (b.full_block()) nodes_.move_to_tail(unused_, b.id);
  }

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    const std::uint32_t v = first_except(unused_, requester);
    return v != kNoBlock ? v : first_except(used_, requester);
  }

 private:
  RegionNodes nodes_;
  RegionList unused_, used_;
};

}  // namespace

UVMSIM_REGISTER_EVICTION("driver",
                         "NVIDIA driver default (LRM): oldest root chunk on UNUSED then USED list, "
                         "position changes only on (re)allocation / empty->resident",
                         DriverEviction);
UVMSIM_REGISTER_ALIAS(EvictionRegistry, "lrm", "driver");

}  // namespace uvmsim
