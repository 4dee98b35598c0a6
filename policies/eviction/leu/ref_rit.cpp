#include "policies/eviction/leu/ref_rit.h"

#include <algorithm>

namespace uvmsim::leu {

RefRit::RefRit(std::uint32_t entries, std::uint32_t history)
    : entries_(std::max<std::uint32_t>(1, entries)),
      ways_(std::min<std::uint32_t>(kWays, capacity())),
      sets_(capacity() / ways_),
      history_(std::max<std::uint32_t>(2, history)),
      until_aging_(std::uint64_t{16} * capacity()),
      aging_period_(until_aging_) {
  // Entries beyond sets * ways (when entries is not a multiple of 8) are never used.
  entries_.resize(std::size_t{sets_} * ways_);
}

std::uint32_t RefRit::insert(std::uint32_t ref) {
  // A free way, else the least executed reference of the set (lowest way on ties).
  const std::uint32_t base = set_of(ref) * ways_;
  std::uint32_t i = base;
  for (std::uint32_t w = 0; w < ways_; ++w) {
    const Entry& e = entries_[base + w];
    if (!e.valid) {
      i = base + w;
      break;
    }
    if (e.executions < entries_[i].executions) i = base + w;
  }
  Entry& e = entries_[i];
  if (e.valid) {
    ++replacements_;
  } else {
    ++used_;
  }
  e.valid = true;
  e.ref = ref;
  e.executions = 0;
  e.hist.clear();
  last_ref_ = ref;
  last_index_ = i;
  return i;
}

void RefRit::age() {
  for (auto& e : entries_) e.executions >>= 1;
  until_aging_ = aging_period_;
}

const RiHistogram* RefRit::find(std::uint32_t ref) const {
  const std::uint32_t i = lookup(ref);
  return i == kMiss ? nullptr : &entries_[i].hist;
}

std::uint64_t RefRit::executions(std::uint32_t ref) const {
  const std::uint32_t i = lookup(ref);
  return i == kMiss ? 0 : entries_[i].executions;
}

}  // namespace uvmsim::leu
