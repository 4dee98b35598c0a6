// Prefetching disabled (uvm_perf_prefetch_enable=0): only the faulted 4 KB pages migrate, which
// is how Allen & Ge measure the raw fault cost (§III-C).
#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

class NoPrefetch final : public PrefetchPolicy {
 public:
  explicit NoPrefetch(const PolicyContext& ctx) : PrefetchPolicy(ctx) {}
  void compute(const Request&, PageMask&) override {}
};

}  // namespace

UVMSIM_REGISTER_PREFETCH("none", "no prefetching: migrate only the faulted 4 KB pages", NoPrefetch);

}  // namespace uvmsim
