#include "policies/eviction/leu/leu_model.h"

#include <cmath>

namespace uvmsim::leu {

LeuModel::LeuModel(std::size_t blocks, const ModelParams& p)
    : unit_(p.time_unit),
      threshold_(p.sample_rate >= 1.0 ? 0
                                      : static_cast<std::uint64_t>(std::ldexp(p.sample_rate, 64))),
      rng_(p.seed),
      state_(blocks),
      rit_(p.rit_entries, p.history) {
  // A rate so small that the threshold rounds to 0 would mean "sample everything".
  if (p.sample_rate < 1.0 && threshold_ == 0) threshold_ = 1;
}

const RiHistogram* LeuModel::distribution_of_ref(std::uint32_t ref) const {
  if (const RiHistogram* h = rit_.find(ref); h && !h->empty()) return h;
  return rit_.global().empty() ? nullptr : &rit_.global();
}

double LeuModel::priority_at(std::uint32_t block, std::uint64_t tesla) const {
  const RiHistogram* h = distribution(block);
  return h ? leu::priority(*h, tesla) : 0.0;
}

double LeuModel::priority(std::uint32_t block) const {
  return accessed(block) ? priority_at(block, tesla(block)) : 0.0;
}

}  // namespace uvmsim::leu
