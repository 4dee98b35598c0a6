// Random eviction: a uniformly chosen GPU-resident region (a baseline any policy should beat on
// workloads with reuse). Deterministic: the seed is engine.seed, and the choice draws on the
// engine's list of resident regions, whose order depends only on the run's history.
#include <random>

#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class RandomEviction final : public EvictionPolicy {
 public:
  explicit RandomEviction(const PolicyContext& ctx)
      : engine_(ctx.engine()), rng_(ctx.seed ^ 0x72616e646f6d21ull) {}

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    const auto resident = engine_.resident_regions();
    if (resident.empty()) return kNoBlock;
    // Raw mt19937_64 output (its sequence is fixed by the standard; distributions are not).
    const std::size_t i = static_cast<std::size_t>(rng_() % resident.size());
    if (resident[i] != requester) return resident[i];
    if (resident.size() == 1) return kNoBlock;
    return resident[(i + 1) % resident.size()];
  }

 private:
  const PolicyEngine& engine_;
  std::mt19937_64 rng_;
};

}  // namespace

UVMSIM_REGISTER_EVICTION("random", "evict a uniformly random GPU-resident region (seeded)",
                         RandomEviction);

}  // namespace uvmsim
