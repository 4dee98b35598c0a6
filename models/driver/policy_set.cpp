#include "models/driver/policy_set.h"

#include "policies/registry.h"

namespace uvmsim {

void PolicySet::create(const SimConfig& cfg, PolicyEngine& engine, unsigned gpu) {
  validate_policy_params(cfg);
  const PolicyContext base{
      cfg, engine.va_space(), cfg.engine.seed, nlohmann::json::object(), &engine, gpu};
  eviction_ = make_eviction_policy(cfg.engine.eviction, base.for_policy(cfg.engine.eviction));
  const std::string pf = cfg.driver.prefetch_enable ? cfg.engine.prefetch : "none";
  prefetch_ = make_prefetch_policy(pf, base.for_policy(pf));
  placement_ = make_placement_policy(cfg.engine.placement, base.for_policy(cfg.engine.placement));
  each([&](PolicyBase& p) {
    if (p.wants_access_notifications()) access_subscribers_.push_back(&p);
    observing_ |= p.uses_observability();
  });
  // ObservUVM's engine hosts eviction and prefetch policies; events reach it once, whichever of
  // the two (or both) live there.
  userspace_ = eviction_->runs_in_userspace() || prefetch_->runs_in_userspace();
  message_ps_ = static_cast<Tick>(cfg.cost.userspace_message_ns * kPsPerNs + 0.5);
}

}  // namespace uvmsim
