// The managed virtual address space: allocations (VA ranges) split into 2 MB-aligned VA blocks,
// with per-4 KB-page residency state, as the UVM driver keeps it (uvm-driver.md §0, §6).
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/stats.h"
#include "core/types.h"
#include "state/page_mask.h"
#include "traces/trace.h"

namespace uvmsim {

/// cudaMemAdvise's preferred location in the Processor encoding: none, the CPU (-1), or GPU k
/// as k (`Gpu` is GPU 0).
enum class PreferredLocation : std::int8_t { None = -2, Cpu = -1, Gpu = 0 };
constexpr PreferredLocation preferred_on(Processor p) { return static_cast<PreferredLocation>(p); }
constexpr bool is_gpu(PreferredLocation l) { return static_cast<int>(l) >= 0; }

struct VaRange {
  std::uint32_t alloc_id = 0;
  std::string name;
  Addr base = 0;
  std::uint64_t size = 0;  ///< after the runtime's rounding
  bool managed = true;
  bool host_pinned = false;
  bool system = false;            ///< system-allocated (ATS platforms), docs/platforms.md
  bool freed = false;             ///< a MemFree host event (cudaFree) released it
  std::uint32_t first_block = 0;  ///< index into VaSpace::blocks()
  std::uint32_t num_blocks = 0;
};

/// One GPU's state of a VA block: its residency, its mappings and its chunk. The driver keeps
/// the same split: per-processor residency masks in uvm_va_block_t, the chunks and PTE state of
/// each GPU in uvm_va_block_gpu_state_t (uvm_va_block_types.h).
struct GpuBlockState {
  PageMask resident;       ///< valid copy in this GPU's memory
  PageMask remote_mapped;  ///< this GPU maps the host copy (preferred location CPU, pinned, ...)
  PageMask read_only;      ///< read-duplicated pages: a write from this GPU must fault
  PageMask dirty;          ///< written by this GPU since it arrived (what-if write-back)
  unsigned count = 0;      ///< resident.count(), kept incrementally
  /// Prefetched pages no access has touched yet, one mask per PrefetchCause, and their union
  /// (the one bit the access path tests); state/prefetch_use.h keeps them.
  PageMask prefetch_unused;
  std::array<PageMask, PrefetchUseStats::kCauses> prefetch_unused_by_cause;

  bool has_chunk = false;
  /// PTEs of the pages in `map_pending` become usable at this time. Only the pages the driver
  /// just made resident wait for it: PTEs already written stay valid while it copies more pages
  /// into the block (uvm_va_block_map writes the new pages' PTEs, it does not unmap the others).
  Tick map_ready_at = 0;
  PageMask map_pending;           ///< resident pages whose PTEs are written at `map_ready_at`
  std::uint32_t mapping_gen = 1;  ///< bumped on every PTE change: invalidates TLB entries

  /// Pages this GPU maps in another GPU's memory (system.peer): a peer mapping, torn down when
  /// the page leaves that GPU (Residency::clear_gpu_resident). Last: the one-GPU access path
  /// never reads it.
  PageMask peer_mapped;

  /// `pages` become resident at simulated time `now`; their PTEs are usable once the caller has
  /// moved `map_ready_at` past their copies. Pending pages of an earlier batch whose time has
  /// not come yet wait for the later time with them (one time per block).
  void add_map_pending(const PageMask& pages, Tick now) {
    if (now >= map_ready_at) map_pending.clear();
    map_pending |= pages;
  }
  /// Resident pages this GPU can use at `t`.
  PageMask usable(Tick t) const {
    return t >= map_ready_at ? resident : minus(resident, map_pending);
  }
};

struct VaBlock {
  std::uint32_t id = 0;
  std::uint32_t range = 0;
  Addr start = 0;           ///< 2 MB-aligned base of the block's VA window
  unsigned first_page = 0;  ///< valid pages are [first_page, end_page) of the window
  unsigned end_page = kPagesPerBlock;

  /// Its range is system-allocated (VaRange::system). With driver.ats the OS places its pages
  /// and UVM's chunk pool and policies never see it (models/driver/residency.cpp).
  bool system = false;

 private:
  friend class VaSpace;
  static const GpuBlockState kNoGpuState;
  GpuBlockState gpu0_;  ///< first after the header, as its fields were before it was split out
  GpuBlockState* peers_ = nullptr;  ///< GPUs 1..n-1, owned by the VaSpace; null until made

 public:
  PageMask cpu_resident;  ///< valid copy in host memory
  PageMask cpu_backed;    ///< host pages allocated (kept after the data moves to the GPU)
  /// The block's last copy into GPU memory completes at this time. Copies out of the block wait
  /// for it: the driver orders every push on a block after the block's tracker
  /// (uvm_va_block_t.tracker), so a chunk is never copied back before its data has arrived.
  Tick copies_in_done = 0;

  // Advice (cudaMemAdvise), applied per block.
  PreferredLocation preferred = PreferredLocation::None;
  ProcessorMask accessed_by = 0;  ///< SetAccessedBy processors (processor_bit)
  bool read_mostly = false;

  // Prefetcher gating: faulted pages migrated to the same processor in a row (min_faults).
  std::uint32_t fault_migrations_to_last_proc = 0;
  Processor last_migration_dest = Processor::Cpu;

  /// The block's lock (uvm_va_block_t.lock) as the GPUs' fault servicing takes it: the driver
  /// time its last holder's service of the block ended, and that holder's GPU. Another GPU's
  /// bottom half servicing the block waits for it (BlockService::service).
  Tick lock_free_at = 0;
  std::uint8_t lock_gpu = 0;

  /// GPU `g`'s state of the block. GPU 0's is inline, so the access path of a one-GPU machine
  /// reads it from the block itself; the other GPUs' states are made on first use
  /// (VaSpace::add_gpu_states), as the driver allocates a uvm_va_block_gpu_state_t only when a
  /// GPU first needs one. Writing to another GPU's state needs them made first.
  GpuBlockState& gpu(unsigned g) {
    if (g == 0) return gpu0_;
    assert(peers_ != nullptr);
    return peers_[g - 1];
  }
  /// A GPU whose state was never made holds nothing: an empty state is read.
  const GpuBlockState& gpu(unsigned g) const {
    if (g == 0) return gpu0_;
    return peers_ ? peers_[g - 1] : kNoGpuState;
  }
  /// The other GPUs' states were made (VaSpace::add_gpu_states).
  bool has_peer_states() const { return peers_ != nullptr; }

  unsigned num_pages() const { return end_page - first_page; }
  bool full_block() const { return first_page == 0 && end_page == kPagesPerBlock; }
  PageMask valid_mask() const {
    PageMask m;
    m.set_range(first_page, end_page);
    return m;
  }
  Addr page_va(unsigned page) const { return start + (Addr{page} << kPageShift); }
};

class VaSpace {
 public:
  /// Builds ranges and blocks from trace allocations. With `tail_pow2`, a managed range's last
  /// partial block is rounded up to a power-of-two size (>= 64 KB), which reproduces the
  /// 2 MB + 192 KB -> 2 MB + 256 KB observation in calibration-facts.md.
  void build(const std::vector<trace::Allocation>& allocs, bool tail_pow2);

  /// Range containing `va`, or nullptr. On the per-access path: a dense table indexed by the
  /// 2 MB window answers in one load when the address space is compact, with a binary search
  /// over the ranges for windows shared by several ranges or far outside the table.
  const VaRange* find_range(Addr va) const {
    const Addr w = (va >> kBlockShift) - window_base_;
    if (w < window_table_.size()) {
      const std::uint32_t e = window_table_[w];
      if (e == kNoRange) return nullptr;
      if (e != kSharedWindow) {
        const VaRange& r = ranges_[e];
        return va >= r.base && va < r.base + r.size ? &r : nullptr;
      }
    }
    return search_range(va);
  }
  /// Block containing `va` within `r`.
  std::uint32_t block_index(const VaRange& r, Addr va) const {
    return r.first_block +
           static_cast<std::uint32_t>((va >> kBlockShift) - (r.base >> kBlockShift));
  }
  static unsigned page_index(Addr va) {
    return static_cast<unsigned>((va & (kBlockSize - 1)) >> kPageShift);
  }

  std::vector<VaBlock>& blocks() { return blocks_; }
  const std::vector<VaBlock>& blocks() const { return blocks_; }
  const std::vector<VaRange>& ranges() const { return ranges_; }
  /// The range of allocation `alloc_id`, or nullptr (the driver marks it freed on cudaFree).
  VaRange* range_of_allocation(std::uint32_t alloc_id) {
    for (auto& r : ranges_)
      if (r.alloc_id == alloc_id) return &r;
    return nullptr;
  }
  std::uint64_t managed_footprint() const { return managed_footprint_; }

  /// The machine has `gpus` GPUs (1 until told otherwise; 1..kMaxGpus).
  void set_gpus(unsigned gpus);
  unsigned gpus() const { return gpus_; }
  /// Makes the states of GPUs 1..gpus()-1 of `b` if they are not made yet: memory for another
  /// GPU's view of a block is spent only on blocks a second GPU touches.
  void add_gpu_states(VaBlock& b);
  /// Blocks whose other GPUs' states were made.
  std::size_t blocks_with_gpu_states() const { return peer_states_.size(); }

 private:
  static constexpr std::uint32_t kNoRange = ~std::uint32_t{0};
  static constexpr std::uint32_t kSharedWindow = kNoRange - 1;
  static constexpr std::size_t kMaxWindowTable = std::size_t{1} << 22;  ///< 16 MB, 8 TB of VA
  /// Per-block state is 952 bytes (sizeof(VaBlock) on x86-64 Linux; other GPUs' states, 736
  /// bytes each, only for blocks they touch): 2^23 blocks (16 TiB of VA, more memory than any
  /// machine has to back it) bound it to ~8 GB, and keep block ids well inside 32 bits.
  static constexpr std::uint64_t kMaxBlocks = std::uint64_t{1} << 23;
  const VaRange* search_range(Addr va) const;
  void build_window_table();  ///< window_table_ and window_base_ from ranges_

  std::vector<VaRange> ranges_;              ///< sorted by base
  std::vector<std::uint32_t> window_table_;  ///< per 2 MB window: range index / none / shared
  Addr window_base_ = 0;
  std::vector<VaBlock> blocks_;
  std::uint64_t managed_footprint_ = 0;
  unsigned gpus_ = 1;
  std::vector<std::unique_ptr<GpuBlockState[]>> peer_states_;  ///< what VaBlock::peers_ point to
};

}  // namespace uvmsim
