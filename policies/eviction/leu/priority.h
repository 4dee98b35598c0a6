// LEU's priority of a block (Chen et al., MEMSYS'19, §3.1, Eq. 1-2): the largest profit per unit
// of cost (PPUC) over all leases longer than the block's time elapsed since last access (TESLA).
//
//   hr(b, tesla, l)   = (P(ri <= l | b) - P(ri <= tesla | b)) / (1 - P(ri <= tesla | b))  (Eq. 1)
//   PPUC(b, tesla, l) = hr(b, tesla, l) / (l - tesla)                                    (Eq. 2)
//   priority(b, tesla) = max over l > tesla of PPUC(b, tesla, l)
//
// P(ri | b) is the RI distribution of the reference that accessed b last (§3.2). Intervals are
// those of the histogram's buckets (exact below 16, the bucket's upper bound above).
#pragma once

#include <cstdint>

#include "policies/eviction/leu/ri_histogram.h"

namespace uvmsim::leu {

/// Eq. 1. 0 if no interval of `h` is longer than `tesla` (the block is not expected again) or
/// `lease` <= `tesla`.
double hit_ratio(const RiHistogram& h, std::uint64_t tesla, std::uint64_t lease);

/// max_{l > tesla} hr(tesla, l) / (l - tesla); 0 if no interval of `h` is longer than `tesla`.
/// The maximum is reached at one of the distribution's intervals (hr only grows there), so one
/// pass over the non-empty buckets above `tesla` finds it.
double priority(const RiHistogram& h, std::uint64_t tesla);

}  // namespace uvmsim::leu
