// Thrashing detection and mitigation, after uvm_perf_thrashing.c (uvm-driver.md §3).
// Inputs are migrations caused by faults, prefetch and access counters (evictions are ignored,
// as in the driver). A page whose consecutive migrations between *different* processors are
// closer than `lapse` accumulates events; at `threshold` it is thrashing. Faults on a thrashing
// page get THROTTLE (the GPU fault is not serviced this batch and re-faults after the replay;
// the CPU sleeps for `nap`) alternating with NONE, and after `pin_threshold` throttling periods
// PIN: the page stays where it is and the other processor maps it remotely for `pin` x lapse.
// With one GPU and no CPU access to the data nothing is ever counted, so GPU-only
// oversubscription never engages it, exactly as the reference notes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/config.h"
#include "core/types.h"
#include "state/page_mask.h"

namespace uvmsim {

class ThrashingDetector {
 public:
  enum class Hint : std::uint8_t { None, Throttle, Pin };

  void configure(const ThrashingConfig& cfg, std::size_t num_blocks);
  /// A page of block `block` migrated to `dest` at `now`. Returns true if it became thrashing.
  bool on_migration(std::uint32_t block, unsigned page, Processor dest, Tick now);
  /// Hint for a fault by `requester` on the page (uvm_perf_thrashing_get_hint).
  Hint get_hint(std::uint32_t block, unsigned page, Processor requester, Tick now);
  /// Thrashing pages of a block (excluded from prefetch and the 64 KB upgrade).
  const PageMask& thrashing_pages(std::uint32_t block) const;
  bool pinned(std::uint32_t block, unsigned page, Tick now) const;

 private:
  struct PageState {
    Tick last_time = 0;
    Tick throttle_end = 0;
    Tick pinned_until = 0;
    Processor last_proc = Processor::Cpu;
    std::uint8_t events = 0;
    std::uint8_t throttles = 0;
    bool seen = false;
  };
  struct BlockState {
    Processor last_proc = Processor::Cpu;
    Tick last_time = 0;
    bool seen = false;
    std::unique_ptr<PageState[]> pages;  ///< allocated only when processors differ within lapse
    PageMask thrashing;
  };
  ThrashingConfig cfg_;
  Tick lapse_ = 0;
  std::vector<BlockState> blocks_;
  PageMask empty_;
};

}  // namespace uvmsim
