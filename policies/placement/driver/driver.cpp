// The driver's residency selection (uvm_va_block_select_residency) for a single GPU: a faulted
// page migrates to the faulting GPU unless its preferred location is the CPU, in which case the
// GPU maps the host copy remotely (the CPU is accessible over the link) and nothing migrates.
#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class DriverPlacement final : public PlacementPolicy {
 public:
  explicit DriverPlacement(const PolicyContext&) {}
  Decision place(const VaBlock& b, unsigned, AccessKind, Tick) override {
    return b.preferred == PreferredLocation::Cpu ? Decision::MapRemote : Decision::MigrateToGpu;
  }
};

}  // namespace

UVMSIM_REGISTER_PLACEMENT("driver",
                          "NVIDIA driver default: migrate to the faulting GPU; map remotely "
                          "when the preferred location is the CPU",
                          DriverPlacement);

}  // namespace uvmsim
