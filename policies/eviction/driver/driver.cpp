// The UVM driver's default eviction (uvm_pmm_gpu.c, uvm-driver.md §5): root chunks sit on an
// UNUSED list (chunk allocated, no page of the block resident on the GPU) or a USED list; the
// victim is the head of UNUSED, else the head of USED. A chunk moves to the tail of USED when it
// is (re)allocated (uvm_pmm_gpu_unpin_allocated) and after every migration to the GPU that
// leaves its block resident there: uvm_va_block_make_resident_finish (and the read-duplication
// variant) end with block_mark_memory_used -> uvm_pmm_gpu_mark_root_chunk_used, so fault
// servicing (with its prefetch pages), access-counter servicing and cudaMemPrefetchAsync all move
// it, also into a block that already had resident pages (on_made_resident). It moves to the tail
// of UNUSED when the block's last GPU page leaves. GPU accesses that hit never move it: the
// order is "least recently migrated into", not LRU over accesses. ObservUVM calls it LRM, Least
// Recently Migrated (§II-D); `lrm` is an alias. Only full 2 MB blocks are on the lists the way
// block_mark_memory_used and block_clear_resident_processor handle them (a partial block's
// chunks are smaller); a partial block moves only on (re)allocation.
#include "policies/eviction/region_list.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class DriverEviction final : public EvictionPolicy {
 public:
  explicit DriverEviction(const PolicyContext& ctx) : nodes_(ctx.va_space.blocks().size()) {}

  void on_chunk_allocated(const VaBlock& b, Tick) override { nodes_.move_to_tail(used_, b.id); }
  void on_eviction(const VaBlock& b, Tick) override { nodes_.unlink(b.id); }
  void on_populated(const VaBlock& b, Tick) override { mark_used(b); }
  void on_made_resident(const VaBlock& b, Tick) override { mark_used(b); }
  void on_emptied(const VaBlock& b, Tick) override {
    // Partial (non-2 MB) blocks are never put on UNUSED by the driver (uvm-driver.md §0).
    if (b.full_block()) nodes_.move_to_tail(unused_, b.id);
  }

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    const std::uint32_t v = first_except(unused_, requester);
    return v != kNoBlock ? v : first_except(used_, requester);
  }

 private:
  /// block_mark_memory_used: only blocks of the root chunk's size.
  void mark_used(const VaBlock& b) {
    if (b.full_block()) nodes_.move_to_tail(used_, b.id);
  }

  RegionNodes nodes_;
  RegionList unused_, used_;
};

}  // namespace

UVMSIM_REGISTER_EVICTION("driver",
                         "NVIDIA driver default (LRM): oldest root chunk on UNUSED then USED list; "
                         "a chunk moves to the tail on (re)allocation and after every migration "
                         "into its block",
                         DriverEviction);
UVMSIM_REGISTER_ALIAS(EvictionRegistry, "lrm", "driver");

}  // namespace uvmsim
