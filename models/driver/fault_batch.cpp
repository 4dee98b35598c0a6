#include "models/driver/fault_batch.h"

#include <algorithm>

namespace uvmsim {

std::size_t FaultBatch::fetch(FaultBuffer& buffer, Tick now) {
  faults_.clear();
  utlb_last_.assign(utlb_last_.size(), ~0u);
  std::size_t fetched = 0;
  std::uint64_t coalesced = 0;
  ++fetches_;
  sources_ = 0;
  while (fetched < cfg_.fault_batch_count && !buffer.empty() && buffer.front().valid_at <= now) {
    const FaultEntry e = buffer.front();
    buffer.pop();
    ++fetched;
    if (e.utlb >= utlb_seen_.size()) utlb_seen_.resize(e.utlb + 1, 0);
    if (utlb_seen_[e.utlb] != fetches_) {
      utlb_seen_[e.utlb] = fetches_;
      ++sources_;
    }
    if (cfg_.fault_coalesce) {
      if (e.utlb >= utlb_last_.size()) utlb_last_.resize(e.utlb + 1, ~0u);
      const std::uint32_t li = utlb_last_[e.utlb];
      BatchFault* into = nullptr;
      if (li != ~0u && faults_[li].page_va == e.page_va) {
        into = &faults_[li];
      } else if (!faults_.empty() && faults_.back().page_va == e.page_va &&
                 e.kind <= faults_.back().kind) {
        into = &faults_.back();
      }
      if (into) {
        into->kind = std::max(into->kind, e.kind);
        ++into->instances;
        ++coalesced;
        continue;
      }
      utlb_last_[e.utlb] = static_cast<std::uint32_t>(faults_.size());
    }
    faults_.push_back({e.page_va, e.kind, e.utlb, 1});
  }
  raw_ = fetched;
  coalesced_ = duplicates_ = coalesced;
  if (fetched == 0) return 0;
  cached_put_unfetched_ = buffer.valid_count(now);
  // preprocess_fault_batch: sort by address, most intrusive access first.
  std::sort(faults_.begin(), faults_.end(), [](const BatchFault& a, const BatchFault& b) {
    return a.page_va != b.page_va ? a.page_va < b.page_va : a.kind > b.kind;
  });
  return fetched;
}

std::size_t FaultBatch::flush_count(const FaultBuffer& buffer, Tick now) const {
  std::size_t n = std::min(cached_put_unfetched_, buffer.size());
  if (duplicates_ * 100 > std::uint64_t{cfg_.replay_update_put_ratio} * raw_)
    n = std::max(n, buffer.valid_count(now));
  return n;
}

}  // namespace uvmsim
