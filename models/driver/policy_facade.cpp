#include "models/driver/policy_facade.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/occupancy.h"

namespace uvmsim {

PolicyFacade::PolicyFacade(DriverContext& dc, Parts parts, std::filesystem::path trace_path,
                           const trace::Hints* hints, std::function<void(Tick)> request_service)
    : dc_(dc),
      p_(parts),
      trace_path_(std::move(trace_path)),
      hints_(hints),
      request_service_(std::move(request_service)) {
  region_queued_.assign(dc.va().blocks().size(), 0);
  if (dc.cfg.driver.prefetch_cross_block) batch_pending_.assign(dc.va().blocks().size(), 0);
}

void PolicyFacade::note_batch_faults(std::uint32_t block, unsigned pages) {
  if (!batch_pending_.empty()) batch_pending_[block] = pages;
}

void PolicyFacade::running_threadblocks(std::vector<ThreadblockProgress>& out) const {
  out.clear();
  if (gpu_) gpu_->running_threadblocks(out);
}

std::uint64_t PolicyFacade::concurrent_threadblocks(const trace::KernelInfo& k) const {
  return threadblocks_per_sm(dc_.cfg.gpu, k) * dc_.cfg.gpu.num_sms;
}

void PolicyFacade::prefetch_region(std::uint32_t block) {
  if (block >= dc_.va().blocks().size())
    throw std::logic_error("prefetch_region: no block " + std::to_string(block));
  const VaBlock& b = dc_.block(block);
  if (region_queued_[block] || dc_.gpu_state(b).count == b.num_pages()) return;
  region_queued_[block] = 1;
  region_queue_.push_back(block);
  request_service_(dc_.clock);
}

void PolicyFacade::prefetch_cross_block(std::uint32_t block) {
  const bool queued_before = block < region_queued_.size() && region_queued_[block];
  prefetch_region(block);
  // Marked so that its migration is counted apart (driver.cross_block_prefetches); a region a
  // policy queued already keeps counting as the policy's.
  if (!queued_before && region_queued_[block]) region_queued_[block] = 2;
}

void PolicyFacade::service_region_prefetches(ServiceTimes& st) {
  if (region_queue_.empty()) return;
  // Requests made while these are serviced (a prefetch's callbacks) wait for the next round.
  // The two vectors trade places, so neither loses its capacity.
  region_servicing_.swap(region_queue_);
  region_queue_.clear();
  for (const std::uint32_t id : region_servicing_) {
    const bool cross_block = region_queued_[id] == 2;
    region_queued_[id] = 0;
    VaBlock& b = dc_.block(id);
    if (b.preferred == PreferredLocation::Cpu) continue;
    PageMask want = b.valid_mask();
    want.and_not(dc_.gpu_state(b).resident);
    want.and_not(
        dc_.gpu_state(b).remote_mapped);  // intentionally remote (advice, pins, observed samples)
    if (want.none() || (!dc_.gpu_state(b).has_chunk && !p_.pool.chunk_obtainable(b))) continue;
    st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
    p_.policies.each_for(b, [&](PolicyBase& p) { p.on_prefetch(b, want, st.cpu); });
    // setPrefetchRegion from userspace, then onPrefetch back to it.
    st.cpu += p_.policies.messages(2, dc_.stats());
    p_.observations.observe_prefetch(b, want, st);
    const std::uint64_t htod_before = dc_.stats().htod_bytes;
    p_.residency.make_resident_gpu(b, want, PageMask{}, HtodCause::RegionPrefetch, st, nullptr);
    ++dc_.gpu_state(b).mapping_gen;
    dc_.gpu_state(b).map_ready_at =
        std::max(dc_.gpu_state(b).map_ready_at, std::max(st.cpu, st.copy_done));
    ++dc_.stats().region_prefetches;
    if (cross_block) {
      ++dc_.stats().cross_block_prefetches;
      dc_.stats().cross_block_prefetch_bytes += dc_.stats().htod_bytes - htod_before;
    }
  }
  p_.observations.mark_refill_due();
}

void PolicyFacade::enable_access_counter_migration(std::uint64_t granularity,
                                                   std::uint32_t threshold) {
  p_.counters.enable_everywhere(granularity, threshold);
}

void PolicyFacade::on_kernel_start(const trace::KernelInfo& k, std::uint32_t launch,
                                   std::int32_t iteration, Tick now) {
  dc_.clock = now;
  ProgramPosition& pos = dc_.sim.position(dc_.gpu);
  pos.launch = launch;
  pos.kernel_id = k.id;
  pos.iteration = iteration;
  pos.in_kernel = true;
  pos.tbs_total = k.threadblocks();
  pos.tbs_started = pos.tbs_done = 0;
  const KernelEvent ev{k, launch, iteration, now};
  host_hook([&](PolicyBase& p) { p.on_kernel_start(ev); });
}

void PolicyFacade::on_kernel_end(const trace::KernelInfo& k, std::uint32_t launch,
                                 std::int32_t iteration, Tick now) {
  dc_.clock = now;
  dc_.sim.position(dc_.gpu).in_kernel = false;
  const KernelEvent ev{k, launch, iteration, now};
  host_hook([&](PolicyBase& p) { p.on_kernel_end(ev); });
}

void PolicyFacade::on_iteration(std::int32_t iteration, Tick now) {
  dc_.clock = now;
  host_hook([&](PolicyBase& p) { p.on_iteration(iteration, now); });
}

void PolicyFacade::finish_stats() {
  nlohmann::json out = nlohmann::json::object();
  auto one = [&](const char* family, const std::string& name, const PolicyBase& p) {
    nlohmann::json r = nlohmann::json::object();
    p.report(r);
    r["name"] = name;
    out[family] = std::move(r);
  };
  const auto& cfg = dc_.cfg;
  one("eviction", cfg.engine.eviction, p_.policies.eviction());
  one("prefetch", cfg.driver.prefetch_enable ? cfg.engine.prefetch : "none",
      p_.policies.prefetch());
  one("placement", cfg.engine.placement, p_.policies.placement());
  dc_.stats().policy_report = std::move(out);
}

}  // namespace uvmsim
