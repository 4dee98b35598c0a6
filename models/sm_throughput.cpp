#include "models/sm_throughput.h"

namespace uvmsim {

void SmThroughput::configure(const GpuConfig& g, double ps_per_cycle) {
  ps_per_sector_ = g.l1_sectors_per_cycle > 0 ? ps_per_cycle / g.l1_sectors_per_cycle : 0;
  ps_per_slot_ = g.issue_slots_per_cycle > 0 ? ps_per_cycle / g.issue_slots_per_cycle : 0;
  ps_per_cycle_ = ps_per_cycle;
  for (std::uint64_t n = 0; n < kSectorTimes; ++n) sector_time_[n] = sector_time(n);
  for (std::uint32_t n = 0; n < kSlotTimes; ++n) {
    alone_time_[n] = alone_time(n);
    slot_time_[n] = slot_time(n);
  }
  lsu_free_.assign(lsu_bounded() ? g.num_sms : 0, 0);
  issue_free_.assign(issue_bounded() ? g.num_sms : 0, 0);
}

}  // namespace uvmsim
