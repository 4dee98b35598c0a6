#include "policies/eviction/leu/priority.h"

namespace uvmsim::leu {

namespace {
/// First bucket whose interval is longer than `tesla`.
unsigned first_after(std::uint64_t tesla) {
  const unsigned b = RiHistogram::bucket_of(tesla);
  return RiHistogram::upper(b) > tesla ? b : b + 1;
}
}  // namespace

double hit_ratio(const RiHistogram& h, std::uint64_t tesla, std::uint64_t lease) {
  if (lease <= tesla) return 0;
  std::uint64_t within = 0, after = 0;  // intervals in (tesla, lease], intervals > tesla
  h.for_each_from(first_after(tesla), [&](unsigned i, std::uint32_t n) {
    after += n;
    if (RiHistogram::upper(i) <= lease) within += n;
    return true;
  });
  return after ? static_cast<double>(within) / static_cast<double>(after) : 0.0;
}

double priority(const RiHistogram& h, std::uint64_t tesla) {
  const unsigned first = first_after(tesla);
  if (first >= h.top()) return 0.0;  // past every interval: not expected again
  // PPUC(l) = cum(l) / (after * (l - tesla)), cum(l) = intervals in (tesla, l]. `after` is the
  // same for every l, so maximise cum(l) / (l - tesla) and divide once at the end.
  std::uint64_t cum = 0;
  double best = 0;
  h.for_each_from(first, [&](unsigned i, std::uint32_t n) {
    cum += n;
    const double ppuc =
        static_cast<double>(cum) / static_cast<double>(RiHistogram::upper(i) - tesla);
    if (ppuc > best) best = ppuc;
    return true;
  });
  return cum ? best / static_cast<double>(cum) : 0.0;
}

}  // namespace uvmsim::leu
