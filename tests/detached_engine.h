// The engine for policies created stand-alone in unit tests: no resident or observed regions, no
// observation budget, actions ignored. (tests/policy_test_engine.h is the scripted one.)
#pragma once

#include <filesystem>
#include <span>
#include <vector>

#include "policies/engine.h"

namespace uvmsim::test {

class DetachedEngine final : public PolicyEngine {
 public:
  explicit DetachedEngine(const VaSpace& va) : va_(&va) {}
  const VaSpace& va_space() const override { return *va_; }
  std::uint64_t capacity_chunks() const override { return 0; }
  std::span<const std::uint32_t> resident_regions() const override { return {}; }
  std::span<const ObservedRegion> observed_regions() const override { return {}; }
  const ObservedRegion* observation(std::uint32_t) const override { return nullptr; }
  std::uint32_t observation_budget(ObservePurpose) const override { return 0; }
  unsigned samples_per_region() const override { return 1; }
  const ProgramPosition& position() const override { return pos_; }
  std::uint64_t accesses_completed() const override { return 0; }
  void running_threadblocks(std::vector<ThreadblockProgress>& out) const override { out.clear(); }
  std::uint64_t fault_batch() const override { return 0; }
  const std::filesystem::path& trace_path() const override { return path_; }
  void prefetch_region(std::uint32_t) override {}
  void enable_access_counter_migration(std::uint64_t, std::uint32_t) override {}

 private:
  const VaSpace* va_;
  ProgramPosition pos_;
  std::filesystem::path path_;
};

}  // namespace uvmsim::test
