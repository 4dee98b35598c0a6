// Access-Counter-Based Migration (ACBM; ObservUVM §II-B, Figure 1b), the traditional use of the
// access counters and the paper's baseline in §VII-B. A faulted page that has data in host
// memory (CPU-initialised, or evicted earlier) is mapped remotely instead of migrated: the GPU
// reads it over the link while the hardware counters count those accesses; when a counter
// (`granularity` bytes) reaches `threshold`, the notified 64 KB sub-regions migrate (with the
// tree prefetcher's choice). Evicted pages are mapped back remotely. Pages resident nowhere
// (first touch of uninitialised memory) are populated on the GPU as usual: there is nothing to
// read remotely. Only `access_counters.count` counters exist, so with many hot regions counters
// are recycled before they reach the threshold, one of the limits the paper describes (§III-D).
#include "core/units.h"
#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class Acbm final : public PlacementPolicy {
 public:
  explicit Acbm(const PolicyContext& ctx) {
    ctx.engine().enable_access_counter_migration(
        parse_size(ctx.params["granularity"].get<std::string>(), "policy.acbm.granularity"),
        ctx.params["threshold"].get<std::uint32_t>());
  }
  Decision place(const VaBlock& b, unsigned page, AccessKind, Tick) override {
    if (b.cpu_resident.test(page) || b.preferred == PreferredLocation::Cpu)
      return Decision::MapRemote;
    return Decision::MigrateToGpu;
  }
};

}  // namespace

UVMSIM_REGISTER_PLACEMENT(
    "acbm",
    "access-counter based migration: host data is accessed remotely until its access counter "
    "reaches the threshold, then migrates",
    Acbm,
    PolicyKnob::choice("granularity", "2M", {"64K", "2M", "16M", "16G"},
                       "region tracked by one access counter"),
    PolicyKnob::integer("threshold", 256, 1, 65535, "accesses that trigger a migration"));

}  // namespace uvmsim
