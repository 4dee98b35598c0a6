// Prefetch policies combined with '+' ("fdp+rgp", the paper's TM++ prefetching): each receives
// every event, their intra-block masks are united, and their feedback candidates are offered in
// turn.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "policies/policy.h"

namespace uvmsim {

std::unique_ptr<PrefetchPolicy> combine_prefetch(std::string name,
                                                 std::vector<std::unique_ptr<PrefetchPolicy>> parts,
                                                 const PolicyContext& ctx);

}  // namespace uvmsim
