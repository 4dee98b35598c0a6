// Infers managed allocations from the addresses a trace touches, for inputs that do not record
// their cudaMallocManaged calls (NVBit mem_trace, Accel-Sim). The lowest and highest touched
// byte of every 2 MB VA block are kept; consecutive extents less than kSplitGap apart form one
// range, from its lowest to its highest touched page. So allocations that share a 2 MB block or
// lie closer than 1 MB become one range, and untouched heads and tails of an allocation are
// lost. Memory grows with the touched footprint (one entry per 2 MB), never with trace length.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "traces/trace.h"

namespace uvmsim::trace::import {

class RangeInference {
 public:
  /// An untouched stretch at least this long separates two inferred ranges. cudaMallocManaged
  /// places allocations on 2 MB boundaries, so a small allocation is followed by nearly 2 MB of
  /// unused VA space, while the touched pages of one array are rarely 1 MB apart.
  static constexpr Addr kSplitGap = Addr{1} << 20;

  void add(Addr va, std::uint64_t bytes) {
    if (bytes == 0) return;
    const Addr last = va + (bytes - 1) < va ? ~Addr{0} : va + (bytes - 1);
    if ((va >> kBlockShift) == last_block_ && (last >> kBlockShift) == last_block_) {
      last_->lo = std::min(last_->lo, va);
      last_->hi = std::max(last_->hi, last);
      return;
    }
    add_slow(va, last);
  }
  bool empty() const { return blocks_.empty(); }
  /// Managed allocations named "<prefix>0", "<prefix>1", ... in address order, ids from 0.
  std::vector<Allocation> ranges(const std::string& prefix = "inferred") const;

 private:
  struct Extent {
    Addr lo, hi;  // lowest and highest touched byte in the block
  };
  void add_slow(Addr va, Addr last);

  std::unordered_map<Addr, Extent> blocks_;
  Addr last_block_ = ~Addr{0};
  Extent* last_ = nullptr;
};

}  // namespace uvmsim::trace::import
