// Thrashing detection and mitigation, after uvm_perf_thrashing.c (uvm-driver.md §3), over the
// processors of a Topology (models/topology.h): the CPU and every GPU, which memory each can
// map and which pairs share a fast link. On x86 + PCIe the GPU can map host memory, the CPU
// cannot map GPU memory, and neither has a fast (NVLink + native atomics) path to the other.
//
// Detection (thrashing_event_cb): inputs are copies to a processor caused by a fault (GPU or
// CPU), the prefetcher or an access-counter notification. Evictions are ignored; any other
// migration (cudaMemPrefetchAsync, read duplication) resets the pages' tracking. Zero-filled
// pages are no input: the driver signals migrations per copy. A block gets per-page state only
// when two events for different processors come within `lapse`; from then on ANY two events on
// a page within `lapse` count, and a page reaching `threshold` events is thrashing. A thrashing
// page that sees a longer gap (and is not pinned) is reset.
//
// Mitigation (uvm_perf_thrashing_get_hint): a block whose last thrashing is older than `epoch`
// x lapse drops its per-page state (at most `max_resets` times). On a thrashing page, throttling
// periods of `nap` x lapse alternate the "do not throttle" processor; the other is THROTTLEd
// (a GPU fault is left unserviced until the replay, the CPU sleeps to the period's end). The
// privileged processor is PINned to itself once the page was throttled `pin_threshold` times;
// a processor that can access the pinned copy maps it (the GPU maps host memory), one that
// cannot (the CPU, for a GPU-pinned page) is throttled or, when privileged, moves the pin to
// where everybody can reach it. A preferred location every thrashing processor can access
// (the CPU) takes the pin. Pins end after `pin` x lapse (the driver's delayed work), removing
// the remote mappings. The lapse adapts (adjust_thrashing_lapse) when left at its default.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "core/config.h"
#include "core/types.h"
#include "models/topology.h"
#include "state/page_mask.h"

namespace uvmsim {

class ThrashingDetector {
 public:
  enum class Hint : std::uint8_t { None, Throttle, Pin };
  /// What made a page resident somewhere (the driver's uvm_make_resident_cause_t, reduced).
  enum class Cause : std::uint8_t {
    Fault,          ///< replayable GPU fault or CPU fault: an event
    Prefetch,       ///< the prefetcher's pages of a fault: an event
    AccessCounter,  ///< access-counter notification: an event
    Other,          ///< user migration, read duplication: resets the pages' tracking
  };
  /// A processor's bit in residency masks (bit 0 CPU, bit 1 + g GPU g).
  static constexpr ProcessorMask bit(Processor p) { return processor_bit(p); }

  struct Result {
    Hint type = Hint::None;
    Processor pin = Processor::Gpu;  ///< Pin: where the page stays
    Tick throttle_end = 0;           ///< Throttle: when the requester may try again
  };

  /// `topology` says which processor can map which memory (the pin and the fast path depend
  /// on it).
  void configure(const ThrashingConfig& cfg, std::size_t num_blocks, const Topology& topology);
  /// A page of block `block` was copied to `dest` at `now`. Returns true if it became thrashing.
  bool on_migration(std::uint32_t block, unsigned page, Processor dest, Tick now, Cause cause);
  /// The pages of `pages` were copied to `dest` at `now` (one migration event of the driver):
  /// the per-page calls above, in page order. Returns how many pages became thrashing.
  unsigned on_migration(std::uint32_t block, const PageMask& pages, Processor dest, Tick now,
                        Cause cause);
  /// Hint for a fault by `requester` on the page (uvm_perf_thrashing_get_hint). `resident` is
  /// the page's residency mask (bit()), `preferred` the block's preferred location or nullptr.
  Result get_hint(std::uint32_t block, unsigned page, Processor requester, ProcessorMask resident,
                  const Processor* preferred, Tick now);
  /// The block has per-page state (get_hint answers None for every page of a block without).
  bool tracks(std::uint32_t block) const { return cfg_.enable && blocks_[block].pages; }
  /// Thrashing pages of a block (excluded from prefetch and the 64 KB upgrade).
  const PageMask& thrashing_pages(std::uint32_t block) const;
  bool pinned(std::uint32_t block, unsigned page) const;
  /// Ends pins whose deadline passed (thrashing_unpin_pages): f(block, page) removes the remote
  /// mappings, then the page's tracking is reset.
  template <typename F>
  void expire_pins(Tick now, F&& f) {
    while (!pins_.empty() && pins_.front().deadline <= now) {
      const PinEntry e = pins_.front();
      pins_.pop_front();
      BlockState& b = blocks_[e.block];
      if (!b.pages || !b.pinned.test(e.page) || b.pages[e.page].pin_deadline != e.deadline)
        continue;  // unpinned since (reset, epoch)
      f(e.block, e.page);
      reset_page(b, e.page);
    }
  }
  /// The block's allocation was freed: its tracking goes (thrashing_block_destroy); pins queued
  /// for it are skipped when they expire.
  void forget_block(std::uint32_t block) { blocks_[block] = BlockState{}; }
  /// The current lapse (adaptive), in ps.
  Tick lapse() const { return lapse_; }
  std::uint64_t block_resets() const { return block_resets_; }

 private:
  static constexpr std::int8_t kNone = -1;  ///< no processor (ids are processor_id())
  struct PageState {
    Tick last_time = 0;
    Tick throttle_end = 0;
    Tick pin_deadline = 0;
    bool has_time = false;
    bool pinned = false;
    std::uint8_t events = 0;            ///< saturates at 7 (3 bits)
    std::uint8_t throttling_count = 0;  ///< saturates at 255
    ProcessorMask processors = 0;       ///< bit()
    ProcessorMask throttled = 0;        ///< bit()
    std::int8_t pinned_residency = kNone;
    std::int8_t do_not_throttle = kNone;
  };
  struct BlockState {
    std::unique_ptr<PageState[]> pages;  ///< allocated on a processor change within lapse
    PageMask thrashing, pinned;
    std::uint16_t num_pinned = 0;
    std::uint8_t resets = 0;
    bool has_last = false, has_last_thrashing = false;
    std::int8_t last_proc = kNone;
    Tick last_time = 0, last_thrashing = 0;
  };
  struct PinEntry {
    Tick deadline;
    std::uint32_t block;
    unsigned page;
  };

  void reset_page(BlockState& b, unsigned page);
  /// A migration event of a block without per-page state: records its processor and time and,
  /// if it follows another processor's within lapse, allocates the per-page state (true).
  bool block_event(BlockState& b, std::int8_t dest, Tick now);
  static void end_throttling(PageState& p);
  void throttle_update(PageState& p, std::int8_t req, Tick now);
  Result migration_hint(const PageState& p, std::int8_t req, ProcessorMask resident,
                        std::int8_t pref) const;
  void pin_page(std::uint32_t block, BlockState& b, unsigned page, std::int8_t residency,
                ProcessorMask resident, Tick now);
  void adjust_lapse(Tick gap);

  ThrashingConfig cfg_;
  Topology topo_;
  Tick lapse_ = 0, nap_ = 0, epoch_ = 0, pin_ = 0;
  bool adaptive_ = false;
  std::int8_t lapse_stat_ = 0;
  std::uint64_t block_resets_ = 0;
  std::vector<BlockState> blocks_;
  std::deque<PinEntry> pins_;  ///< by deadline (pin_ is constant, so FIFO order)
  PageMask empty_;
};

}  // namespace uvmsim
