// Groups the addresses of one warp instruction's active lanes by 4 KiB page, as the workload
// generators write a warp instruction: one record per distinct page, in lane order of first
// occurrence, with the VA of its first lane and the bytes of all its lanes.
#pragma once

#include <cstdint>

#include "core/types.h"

namespace uvmsim::trace::import {

struct LanePages {
  Addr va[32];
  std::uint32_t lanes[32];
  unsigned count = 0;

  void clear() { count = 0; }
  /// At most 32 lanes, so a linear scan over a fixed array beats any allocation.
  void add(Addr lane_va) {
    const Addr page = lane_va >> kPageShift;
    for (unsigned p = 0; p < count; ++p) {
      if ((va[p] >> kPageShift) == page) {
        ++lanes[p];
        return;
      }
    }
    if (count == 32) return;  // callers pass at most 32 lanes
    va[count] = lane_va;
    lanes[count] = 1;
    ++count;
  }
};

}  // namespace uvmsim::trace::import
