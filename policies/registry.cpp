#include "policies/policy.h"
#include "sim/error.h"

namespace uvmsim {

template <typename Base>
static std::unique_ptr<Base> make(const char* family, const std::string& name,
                                  const PolicyContext& ctx) {
  if (const auto* e = PolicyRegistry<Base>::find(name)) return e->make(ctx);
  std::string known;
  for (const auto& e : PolicyRegistry<Base>::all()) known += (known.empty() ? "" : ", ") + e.name;
  throw UserError(std::string("--") + family + ": unknown " + family + " policy '" + name +
                  "' (known: " + known + ")");
}

std::unique_ptr<EvictionPolicy> make_eviction_policy(const std::string& n, const PolicyContext& c) {
  return make<EvictionPolicy>("eviction", n, c);
}
std::unique_ptr<PrefetchPolicy> make_prefetch_policy(const std::string& n, const PolicyContext& c) {
  return make<PrefetchPolicy>("prefetch", n, c);
}
std::unique_ptr<PlacementPolicy> make_placement_policy(const std::string& n,
                                                       const PolicyContext& c) {
  return make<PlacementPolicy>("placement", n, c);
}

}  // namespace uvmsim
