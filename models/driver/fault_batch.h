// Fault-batch formation (uvm_gpu_replayable_faults.c fetch_fault_buffer_entries and
// preprocess_fault_batch; uvm-driver.md §2): fetch up to fault_batch_count raw entries that are
// valid now, coalescing a fault into the same uTLB's last fault or the batch's last fault on the
// same page; sort by address (most intrusive access first), so that the faults of one VA block
// are adjacent; and keep what BATCH_FLUSH needs (the PUT pointer cached at fetch time, the
// duplicate ratio).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/config.h"
#include "models/fault_buffer.h"

namespace uvmsim {

struct BatchFault {
  Addr page_va;
  AccessKind kind;
  std::uint32_t utlb;
  std::uint32_t instances;
};

class FaultBatch {
 public:
  explicit FaultBatch(const DriverConfig& cfg) : cfg_(cfg) {
    faults_.reserve(cfg.fault_batch_count);
  }

  /// Fetches a batch from `buffer` at `now` and sorts it. Returns the raw entries fetched (0: the
  /// buffer had nothing valid).
  std::size_t fetch(FaultBuffer& buffer, Tick now);
  std::size_t raw() const { return raw_; }
  std::uint64_t coalesced() const { return coalesced_; }
  /// Distinct uTLBs with an entry in the batch.
  std::uint32_t sources() const { return sources_; }
  /// Duplicates found so far (coalesced at fetch, then per-page duplicates while servicing).
  std::uint64_t duplicates() const { return duplicates_; }
  void add_duplicates(std::uint64_t n) { duplicates_ += n; }

  /// Calls f(span) for each run of faults in one 2 MB VA block, in address order.
  template <typename F>
  void for_each_block(F&& f) const {
    for (std::size_t i = 0; i < faults_.size();) {
      const Addr block_base = faults_[i].page_va & ~(kBlockSize - 1);
      std::size_t j = i + 1;
      while (j < faults_.size() && (faults_[j].page_va & ~(kBlockSize - 1)) == block_base) ++j;
      f(std::span<const BatchFault>(faults_.data() + i, j - i));
      i = j;
    }
  }

  /// BATCH_FLUSH at the batch's end: the entries to discard from `buffer` at `now` — those that
  /// were valid but not fetched (up to the PUT cached at fetch time), or, with many duplicates,
  /// every entry valid now (PUT re-read).
  std::size_t flush_count(const FaultBuffer& buffer, Tick now) const;

 private:
  const DriverConfig& cfg_;
  std::vector<BatchFault> faults_;
  std::vector<std::uint32_t> utlb_last_;  ///< index in faults_ of each uTLB's last fault
  std::vector<std::uint32_t> utlb_seen_;  ///< per uTLB: the fetch number that last saw it
  std::uint32_t fetches_ = 0, sources_ = 0;
  std::size_t raw_ = 0;
  std::uint64_t coalesced_ = 0, duplicates_ = 0;
  std::size_t cached_put_unfetched_ = 0;  ///< valid entries left in the buffer at fetch time
};

}  // namespace uvmsim
