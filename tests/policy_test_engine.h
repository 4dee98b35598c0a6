// A scripted PolicyEngine for unit tests of single policies: the test sets the metadata
// (resident and observed regions, budgets, program position, fault batch) and reads back the
// actions the policy requested. ObservationSink implementations stand in for the driver's.
#pragma once

#include <algorithm>
#include <vector>

#include "policies/policy.h"
#include "traces/trace.h"

namespace uvmsim::test {

/// A VaSpace of `blocks` full 2 MB blocks in one managed allocation ("buf"), plus optional
/// further allocations of the given sizes.
inline VaSpace make_va(std::uint32_t blocks, std::vector<std::uint64_t> more = {}) {
  std::vector<trace::Allocation> allocs;
  Addr base = 0x7f0000000000;
  allocs.push_back({0, "buf", base, std::uint64_t{blocks} << 21, true, false});
  base += (std::uint64_t{blocks} + 1) << 21;
  for (std::size_t i = 0; i < more.size(); ++i) {
    trace::Allocation a;
    a.id = static_cast<std::uint32_t>(i + 1);
    a.name = "more";
    a.base = base;
    a.size = more[i];
    allocs.push_back(a);
    base += ((more[i] >> 21) + 2) << 21;
  }
  VaSpace va;
  va.build(allocs, true);
  return va;
}

/// A trace of one threadblock of one warp whose record k touches page 0 of 2 MB region order[k]
/// of the 8-region allocation make_va(8) describes: an oracle's future, written out by hand.
inline void write_one_warp_trace(const std::string& path, const std::vector<std::uint32_t>& order) {
  trace::Metadata meta;
  meta.workload = "crafted";
  meta.allocations.push_back({0, "buf", 0x7f0000000000, std::uint64_t{8} << 21, true, false});
  trace::KernelInfo k;
  k.name = "k";
  k.grid = {1, 1, 1};
  k.block = {32, 1, 1};
  meta.kernels.push_back(k);
  trace::TraceWriter w(path, meta);
  w.begin_launch(0);
  w.begin_block(1);
  for (const std::uint32_t blk : order) {
    trace::AccessRecord r;
    r.va = 0x7f0000000000 + (Addr{blk} << 21);
    r.gap_cycles = 10;
    w.access(0, r);
  }
  w.end_block();
  w.finish();
}

class TestEngine final : public PolicyEngine {
 public:
  explicit TestEngine(const VaSpace& va) : va_(va) {}

  const VaSpace& va_space() const override { return va_; }
  std::uint64_t capacity_chunks() const override { return capacity; }
  std::span<const std::uint32_t> resident_regions() const override { return resident; }
  std::span<const ObservedRegion> observed_regions() const override { return observed; }
  const ObservedRegion* observation(std::uint32_t block) const override {
    for (const auto& o : observed)
      if (o.block == block) return &o;
    return nullptr;
  }
  std::uint32_t observation_budget(ObservePurpose p) const override {
    return budget[static_cast<std::size_t>(p)];
  }
  unsigned samples_per_region() const override { return 1; }
  const ProgramPosition& position() const override { return pos; }
  std::uint64_t accesses_completed() const override { return accesses; }
  void running_threadblocks(std::vector<ThreadblockProgress>& out) const override { out = running; }
  std::uint64_t fault_batch() const override { return batch; }
  const std::filesystem::path& trace_path() const override { return trace; }
  void prefetch_region(std::uint32_t block) override { region_requests.push_back(block); }
  void prefetch_cross_block(std::uint32_t block) override { cross_block_requests.push_back(block); }
  unsigned pending_fault_pages(std::uint32_t block) const override {
    return block < pending.size() ? pending[block] : 0;
  }
  void enable_access_counter_migration(std::uint64_t granularity,
                                       std::uint32_t threshold) override {
    acbm_granularity = granularity;
    acbm_threshold = threshold;
  }

  /// Ends `block`'s observation (as the driver does after a notification or an eviction).
  void end_observation(std::uint32_t block) {
    observed.erase(std::remove_if(observed.begin(), observed.end(),
                                  [&](const ObservedRegion& o) { return o.block == block; }),
                   observed.end());
  }

  /// A sink that observes every offered region not observed yet, while `budget` lasts.
  class Sink final : public ObservationSink {
   public:
    Sink(TestEngine& e, ObservePurpose p) : e_(e), p_(p) {}
    Offer offer(std::uint32_t block, const PageMask* from) override {
      offered.push_back(block);
      auto& left = e_.budget[static_cast<std::size_t>(p_)];
      if (left == 0) return Offer::Full;
      if (e_.observation(block)) return Offer::Declined;
      ObservedRegion o;
      o.block = block;
      o.purpose = p_;
      if (from) o.samples = *from;
      e_.observed.push_back(o);
      --left;
      return Offer::Accepted;
    }
    std::vector<std::uint32_t> offered;

   private:
    TestEngine& e_;
    ObservePurpose p_;
  };

  PolicyContext ctx(const SimConfig& cfg, nlohmann::json params = nlohmann::json::object()) {
    return PolicyContext{cfg, va_, 1, std::move(params), this};
  }

  std::uint64_t capacity = 16;
  std::vector<std::uint32_t> resident;
  std::vector<ObservedRegion> observed;
  std::uint32_t budget[2] = {0, 0};
  ProgramPosition pos;
  std::uint64_t accesses = 0;
  std::vector<ThreadblockProgress> running;
  std::uint64_t batch = 0;
  std::filesystem::path trace;
  std::vector<std::uint32_t> region_requests;
  std::vector<std::uint32_t> cross_block_requests;  ///< the tree's cross-block what-if
  std::vector<unsigned> pending;                    ///< pending_fault_pages() per block
  std::uint64_t acbm_granularity = 0;
  std::uint32_t acbm_threshold = 0;

 private:
  const VaSpace& va_;
};

}  // namespace uvmsim::test
