#include "traces/import/range_inference.h"

#include <algorithm>
#include <string>

namespace uvmsim::trace::import {

void RangeInference::add_slow(Addr va, Addr last) {
  // An access may straddle 2 MB blocks; record each block it touches.
  for (Addr b = va >> kBlockShift;; ++b) {
    const Addr lo = std::max(va, b << kBlockShift);
    const Addr hi = std::min(last, (b << kBlockShift) + (kBlockSize - 1));
    auto [it, inserted] = blocks_.try_emplace(b, Extent{lo, hi});
    if (!inserted) {
      it->second.lo = std::min(it->second.lo, lo);
      it->second.hi = std::max(it->second.hi, hi);
    }
    last_block_ = b;
    last_ = &it->second;  // unordered_map keeps element addresses stable across rehashing
    if (b == last >> kBlockShift) break;
  }
}

std::vector<Allocation> RangeInference::ranges(const std::string& prefix) const {
  std::vector<std::pair<Addr, Extent>> sorted(blocks_.begin(), blocks_.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Allocation> out;
  const Addr page_mask = kPageSize - 1;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1].second.lo - sorted[j].second.hi <= kSplitGap) {
      ++j;
    }
    const Addr base = sorted[i].second.lo & ~page_mask;
    const Addr hi = sorted[j].second.hi | page_mask;  // last byte of the highest touched page
    Allocation a;
    a.id = static_cast<std::uint32_t>(out.size());
    a.name = prefix + std::to_string(out.size());
    a.base = base;
    // Wraps to 0 only for a range reaching the top of the 64-bit space, which the metadata
    // validation then reports instead of writing it.
    a.size = hi - base + 1;
    a.managed = true;
    out.push_back(std::move(a));
    i = j + 1;
  }
  return out;
}

}  // namespace uvmsim::trace::import
