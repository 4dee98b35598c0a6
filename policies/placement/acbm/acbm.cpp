// Access-Counter-Based Migration (ACBM; ObservUVM §II-B, Figure 1b), the traditional use of the
// access counters and the paper's baseline in §VII-B, as the driver does it:
//  * a GPU fault migrates the page, as without ACBM: block_select_processor_residency
//    (uvm_va_block.c) keeps a page where it is only for a preferred location, AccessedBy or
//    a thrashing pin, never because access counters are on;
//  * pages evicted from the GPU are mapped back remotely (block_add_eviction_mappings, when
//    uvm_va_space_map_remote_on_eviction(): access-counter migration on), so the GPU reads them
//    over the link while the hardware counters count those accesses;
//  * when a counter (`granularity` bytes) reaches `threshold`, the notification migrates what
//    expand_notification_block selects (models/driver/access_counter_service.cpp): the notified
//    64 KB sub-regions when the host copy is one 2 MB chunk, else one page.
// Only `access_counters.count` counters exist, so with many hot regions counters are recycled
// before they reach the threshold, one of the limits the paper describes (§III-D).
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
  Decision place(const VaBlock& b, unsigned, AccessKind, Tick) override {
    return b.preferred == PreferredLocation::Cpu ? Decision::MapRemote : Decision::MigrateToGpu;
  }
};

}  // namespace

UVMSIM_REGISTER_PLACEMENT(
    "acbm",
    "access-counter based migration: faults migrate, evicted pages are mapped back remotely "
    "and migrate again when their access counter reaches the threshold",
    Acbm,
    Knob::size_choice("granularity", "2M", {"64K", "2M", "16M", "16G"},
                      "region tracked by one access counter"),
    Knob::integer("threshold", 256, 1, 65535, "accesses that trigger a migration"));

}  // namespace uvmsim
