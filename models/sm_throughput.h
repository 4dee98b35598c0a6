// Per-SM issue and load/store throughput: what bounds how fast the resident warps of one SM can
// advance when nothing faults. A real SM issues at most `gpu.issue_slots_per_cycle` warp
// instructions per cycle (one per sub-partition scheduler), and its LSU/L1 data path moves a
// fixed number of 32-byte sectors per cycle, so a warp load whose 32 lanes touch 32 different
// sectors (uncoalesced) occupies it 8x longer than a coalesced 128-byte load (4 sectors). Every
// resident warp of the SM shares both, so the warps advance together instead of one warp racing
// through its rows while the others wait (docs/cost-model.md "SM throughput").
//
// Both limits are first-come-first-served servers per SM, in the order the event loop issues
// (which is time order). A limit of 0 turns that server off: the access or gap then costs what
// it cost before (latency only), bit for bit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/config.h"
#include "core/types.h"

namespace uvmsim {

class SmThroughput {
 public:
  static constexpr std::uint32_t kSectorBytes = 32;

  /// Sizes the per-SM servers from the preset (`gpu.issue_slots_per_cycle`,
  /// `gpu.l1_sectors_per_cycle`); `ps_per_cycle` is the SM clock period.
  void configure(const GpuConfig& g, double ps_per_cycle);

  bool lsu_bounded() const { return ps_per_sector_ > 0; }
  bool issue_bounded() const { return ps_per_slot_ > 0; }

  /// 32-byte sectors touched by `repeat` accesses of `bytes` contiguous bytes from `va`. The
  /// trace record gives the lanes of one warp instruction that fall in one page as lanes x size
  /// bytes from the first lane's address (docs/trace-format.md), so they are taken contiguous.
  static std::uint64_t sectors(Addr va, std::uint32_t bytes, std::uint32_t repeat) {
    const Addr first = va / kSectorBytes;
    const Addr last = (va + std::max<std::uint32_t>(bytes, 1) - 1) / kSectorBytes;
    return (last - first + 1) * std::uint64_t{repeat};
  }

  /// The LSU of `sm` takes a record's sectors at `t` (or once it is free); returns when it has
  /// passed them on to the memory system. Without an LSU limit, returns `t`.
  Tick lsu(std::uint32_t sm, Tick t, Addr va, std::uint32_t bytes, std::uint32_t repeat) {
    if (!lsu_bounded()) return t;
    const Tick start = std::max(t, lsu_free_[sm]);
    const std::uint64_t n = sectors(va, bytes, repeat);
    lsu_free_[sm] = start + (n < kSectorTimes ? sector_time_[n] : sector_time(n));
    return lsu_free_[sm];
  }

  /// A warp of `sm` ready at `t` issues `slots` non-memory instructions. One warp issues at most
  /// one per cycle; the SM's schedulers issue `issue_slots_per_cycle` for all its warps together.
  /// Returns when the last one has issued.
  Tick issue(std::uint32_t sm, Tick t, std::uint32_t slots) {
    const Tick alone = t + (slots < kSlotTimes ? alone_time_[slots] : alone_time(slots));
    if (!issue_bounded()) return alone;
    const Tick start = std::max(t, issue_free_[sm]);
    issue_free_[sm] = start + (slots < kSlotTimes ? slot_time_[slots] : slot_time(slots));
    return std::max(alone, issue_free_[sm]);
  }

 private:
  /// The LSU time of `n` sectors. Records of up to a page's worth of sectors take it from a
  /// table filled with this same expression: the same ticks without an int-to-double
  /// conversion, a multiply and a truncation per access.
  Tick sector_time(std::uint64_t n) const {
    return duration_ticks(static_cast<double>(n) * ps_per_sector_);
  }
  /// Compute gaps as one warp alone issues them, and as the SM's schedulers take them: the same
  /// expressions, and for gaps under kSlotTimes cycles from tables filled with them (two
  /// int-to-double conversions and multiplies per compute gap were ~1.5 % of a STREAM run).
  Tick alone_time(std::uint32_t slots) const { return static_cast<Tick>(slots * ps_per_cycle_); }
  Tick slot_time(std::uint32_t slots) const { return static_cast<Tick>(slots * ps_per_slot_); }
  static constexpr std::uint32_t kSlotTimes = 256;
  Tick alone_time_[kSlotTimes] = {};
  Tick slot_time_[kSlotTimes] = {};
  double ps_per_cycle_ = 0;
  static constexpr std::uint64_t kSectorTimes = 129;
  Tick sector_time_[kSectorTimes] = {};
  double ps_per_sector_ = 0;  ///< 0: no LSU limit
  double ps_per_slot_ = 0;    ///< 0: no issue limit
  std::vector<Tick> lsu_free_, issue_free_;
};

}  // namespace uvmsim
