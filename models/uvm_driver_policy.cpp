// The driver as the policies' engine (ObservUVM §V-A, §V-C): program-structure hooks, actions
// requested by policies (whole-region prefetch, access-counter migration) and the mechanism of
// sampled observability (§IV-A): making a region observable moves its sample 64 KB pages to
// host memory and remote-maps them (a DtoH copy plus per-block and per-page driver work); the
// first GPU access to a sample over the link raises an access-counter notification, which the
// service thread handles like the driver's access-counter batches: the policies are told, the
// sample migrates back (an HtoD copy) and the region stops being observed. All of it runs on the
// driver's serial service thread and is charged with the existing cost knobs.
#include <algorithm>
#include <stdexcept>

#include "core/error.h"
#include "models/gpu.h"
#include "models/occupancy.h"
#include "models/uvm_driver.h"

namespace uvmsim {

namespace {

/// The sink a policy offers observation candidates to; accepts while the purpose's budget lasts.
template <typename Try>
class BudgetSink final : public ObservationSink {
 public:
  BudgetSink(const Observability& obs, ObservePurpose purpose, Try& attempt)
      : obs_(obs), purpose_(purpose), try_(attempt) {}
  Offer offer(std::uint32_t block, const PageMask* sample_from) override {
    if (obs_.budget(purpose_) == 0) return Offer::Full;
    if (!try_(block, purpose_, sample_from)) return Offer::Declined;
    accepted = true;
    return Offer::Accepted;
  }
  bool accepted = false;

 private:
  const Observability& obs_;
  ObservePurpose purpose_;
  Try& try_;
};

}  // namespace

std::uint64_t UvmDriver::concurrent_threadblocks(const trace::KernelInfo& k) const {
  return threadblocks_per_sm(cfg_.gpu, k) * cfg_.gpu.num_sms;
}

void UvmDriver::request_service(Tick now) {
  if (bh_running_ || wake_scheduled_) return;
  wake_scheduled_ = true;
  ctx_.queue.schedule(now, EventType::DriverWake);
}

bool UvmDriver::service_policy_work(ServiceTimes& st) {
  const Tick t0 = st.cpu;
  if (!obs_.pending().empty()) service_observations(st);
  if (!region_queue_.empty()) service_region_prefetches(st);
  if (!deferred_.empty()) service_deferred_actions(st);
  if (obs_refill_due_) refill_observations(st);
  return st.cpu != t0 || st.copy_done != t0;
}

// ---------------------------------------------------------------------------------------------
// Observability.

bool UvmDriver::try_observe(std::uint32_t id, ObservePurpose purpose, const PageMask* sample_from,
                            ServiceTimes& st) {
  if (id >= ctx_.va.blocks().size()) return false;
  VaBlock& b = ctx_.va.blocks()[id];
  if (!b.has_chunk || b.gpu_count == 0 || obs_.find(id) || b.preferred == PreferredLocation::Cpu ||
      place_.withheld(id))  // pinned / reserved chunks are not eviction candidates
    return false;
  const PageMask samples = obs_.choose_samples(b, b.gpu_resident, sample_from);
  if (samples.none()) return false;
  auto& os = ctx_.stats.observe;
  const Tick t0 = st.cpu;
  const unsigned n = samples.count();
  // Unmap from the GPU, copy to host memory, map the host copy into the GPU's page table.
  st.cpu += ns_to_ps(cfg_.cost.block_ns) + ns_to_ps(cfg_.cost.page_ns) * n;
  if (ctx_.log.enabled())
    ctx_.log.row(st.cpu, "observe", log_batch_, b.page_va(samples.find_next(0)),
                 std::uint64_t{n} * kPageSize, "", to_string(purpose), n, 0);
  migrate_to_cpu(b, samples, DtohCause::Observation, st);
  b.remote_mapped |= samples;
  obs_.start(b, purpose, samples, st.cpu);
  ++os.regions[static_cast<std::size_t>(purpose)];
  os.sample_pages += n;
  os.max_observed = std::max<std::uint64_t>(os.max_observed, obs_.regions().size());
  os.service_time += st.cpu - t0;
  return true;
}

void UvmDriver::observe_prefetch(VaBlock& b, PageMask& prefetch, ServiceTimes& st) {
  if (!obs_.active() || obs_.budget(ObservePurpose::Feedback) == 0) return;
  if (obs_.find(b.id) || b.preferred == PreferredLocation::Cpu) return;
  auto attempt = [&](std::uint32_t block, ObservePurpose purpose, const PageMask* from) {
    if (block != b.id || obs_.find(b.id)) return false;  // only the region being prefetched
    PageMask pool = prefetch;
    if (from) pool &= *from;
    const PageMask samples = obs_.choose_samples(b, b.gpu_resident | prefetch, &pool);
    if (samples.none()) return false;
    // The samples stay in host memory (populated there if they exist nowhere yet), mapped for
    // the GPU; the rest of the prefetch proceeds.
    prefetch.and_not(samples);
    b.cpu_resident |= samples;
    b.remote_mapped |= samples;
    const unsigned n = samples.count();
    st.cpu += ns_to_ps(cfg_.cost.page_ns) * n;
    if (ctx_.log.enabled())
      ctx_.log.row(st.cpu, "observe", log_batch_, b.page_va(samples.find_next(0)),
                   std::uint64_t{n} * kPageSize, "", to_string(purpose), n, 0);
    obs_.start(b, purpose, samples, st.cpu);
    auto& os = ctx_.stats.observe;
    ++os.regions[static_cast<std::size_t>(purpose)];
    os.sample_pages += n;
    os.max_observed = std::max<std::uint64_t>(os.max_observed, obs_.regions().size());
    os.service_time += ns_to_ps(cfg_.cost.page_ns) * n;
    return true;
  };
  BudgetSink sink(obs_, ObservePurpose::Feedback, attempt);
  prefetch_->feedback_candidates(sink, st.cpu);
}

bool UvmDriver::under_memory_pressure() const {
  // Eviction observability only informs eviction decisions. It runs while memory fills, so that
  // the first victims are already informed (on mm-tiled the reused matrix is at the head of the
  // list when memory fills), pauses while the GPU is full but nothing needs evicting (a run
  // that fits: observing would only cost remote accesses), and runs from the first eviction on.
  if (!cfg_.observe.only_under_pressure || ctx_.stats.evictions > 0) return true;
  if (allocated_chunks_ >= capacity_chunks_) return false;
  return static_cast<double>(allocated_chunks_) * 100.0 >=
         cfg_.observe.min_occupancy_pct * static_cast<double>(capacity_chunks_);
}

bool UvmDriver::refill_observations(ServiceTimes& st) {
  obs_refill_due_ = false;
  bool did = false;
  auto attempt = [&](std::uint32_t block, ObservePurpose p, const PageMask* from) {
    return try_observe(block, p, from, st);
  };
  if (obs_.budget(ObservePurpose::Eviction) > 0 && under_memory_pressure()) {
    BudgetSink sink(obs_, ObservePurpose::Eviction, attempt);
    eviction_->observability_candidates(sink, st.cpu);
    did |= sink.accepted;
  }
  if (obs_.budget(ObservePurpose::Feedback) > 0) {
    BudgetSink sink(obs_, ObservePurpose::Feedback, attempt);
    prefetch_->feedback_candidates(sink, st.cpu);
    did |= sink.accepted;
  }
  return did;
}

void UvmDriver::service_observations(ServiceTimes& st) {
  auto& os = ctx_.stats.observe;
  const Tick t0 = st.cpu;
  // One notification batch, fetched like the driver's access-counter notifications.
  st.cpu += ns_to_ps(cfg_.cost.batch_fixed_ns);
  // Callbacks never add notifications (no GPU access runs meanwhile).
  std::vector<std::uint32_t>& pend = obs_.pending();
  for (std::size_t k = 0; k < pend.size(); ++k) {
    const std::uint32_t id = pend[k];
    if (!obs_.find(id)) continue;  // ended meanwhile (evicted, cancelled)
    const ObservedRegion r = obs_.end(id);
    VaBlock& b = ctx_.va.blocks()[id];
    ++os.accessed[static_cast<std::size_t>(r.purpose)];
    st.cpu += ns_to_ps(cfg_.cost.block_ns);
    if (ctx_.log.enabled())
      ctx_.log.row(st.cpu, "observe_access", -1, b.page_va(r.samples.find_next(0)), 0, "",
                   to_string(r.purpose), r.samples.count(), 0);
    // The sample served its purpose: it migrates back to the GPU.
    b.remote_mapped.and_not(r.samples);
    PageMask back = r.samples & b.cpu_resident;
    back.and_not(b.gpu_resident);
    make_resident_gpu(b, back, PageMask{}, HtodCause::Observation, st, nullptr, false);
    ++b.mapping_gen;
    b.map_ready_at = std::max(b.map_ready_at, std::max(st.cpu, st.copy_done));
    const unsigned page = r.samples.find_next(0);
    each_policy_for(b, [&](PolicyBase& p) { p.on_access_counter(b, page, r.purpose, st.cpu); });
  }
  pend.clear();
  os.service_time += st.cpu - t0;
  obs_refill_due_ = true;
}

void UvmDriver::drop_observation(VaBlock& b, bool evicted) {
  const ObservedRegion r = obs_.end(b.id);
  auto& os = ctx_.stats.observe;
  ++(evicted ? os.evicted_unaccessed : os.cancelled)[static_cast<std::size_t>(r.purpose)];
  // With access-counter migration on, evicted pages stay remote-mapped like any evicted page.
  if (!(evicted && counters_.enabled())) b.remote_mapped.and_not(minus(r.samples, b.gpu_resident));
  ++b.mapping_gen;
  obs_refill_due_ = true;
}

void UvmDriver::on_sample_access(std::uint32_t n, Tick now) {
  ctx_.stats.observe.remote_accesses += n;
  if (!obs_.pending().empty() && !bh_running_ && !wake_scheduled_) {
    wake_scheduled_ = true;
    ctx_.queue.schedule(now + ns_to_ps(cfg_.gpu.interrupt_latency_ns), EventType::DriverWake);
  }
}

// ---------------------------------------------------------------------------------------------
// Actions.

void UvmDriver::prefetch_region(std::uint32_t block) {
  if (block >= ctx_.va.blocks().size())
    throw std::logic_error("prefetch_region: no block " + std::to_string(block));
  const VaBlock& b = ctx_.va.blocks()[block];
  if (region_queued_[block] || b.gpu_count == b.num_pages()) return;
  region_queued_[block] = 1;
  region_queue_.push_back(block);
  request_service(clock_);
}

void UvmDriver::service_region_prefetches(ServiceTimes& st) {
  // Requests made while these are serviced (a prefetch's callbacks) wait for the next round.
  // The two vectors trade places, so neither loses its capacity.
  region_servicing_.swap(region_queue_);
  region_queue_.clear();
  for (const std::uint32_t id : region_servicing_) {
    region_queued_[id] = 0;
    VaBlock& b = ctx_.va.blocks()[id];
    if (b.preferred == PreferredLocation::Cpu) continue;
    PageMask want = b.valid_mask();
    want.and_not(b.gpu_resident);
    want.and_not(b.remote_mapped);  // intentionally remote (advice, pins, observed samples)
    if (want.none() || (!b.has_chunk && !chunk_obtainable(b))) continue;
    st.cpu += ns_to_ps(cfg_.cost.block_ns);
    each_policy_for(b, [&](PolicyBase& p) { p.on_prefetch(b, want, st.cpu); });
    observe_prefetch(b, want, st);
    make_resident_gpu(b, want, PageMask{}, HtodCause::RegionPrefetch, st, nullptr);
    ++b.mapping_gen;
    b.map_ready_at = std::max(b.map_ready_at, std::max(st.cpu, st.copy_done));
    ++ctx_.stats.region_prefetches;
  }
  if (obs_.active()) obs_refill_due_ = true;
}

void UvmDriver::running_threadblocks(std::vector<ThreadblockProgress>& out) const {
  out.clear();
  if (gpu_) gpu_->running_threadblocks(out);
}

void UvmDriver::enable_access_counter_migration(std::uint64_t granularity,
                                                std::uint32_t threshold) {
  if (granularity != (64u << 10) && granularity != (2u << 20) && granularity != (16u << 20) &&
      granularity != (std::uint64_t{16} << 30))
    throw std::logic_error("enable_access_counter_migration: granularity must be 64K/2M/16M/16G");
  counters_.enable_migration(granularity, std::max<std::uint32_t>(1, threshold));
  acm_all_ = true;
}

// ---------------------------------------------------------------------------------------------
// Program structure and results.

void UvmDriver::on_kernel_start(const trace::KernelInfo& k, std::uint32_t launch,
                                std::int32_t iteration, Tick now) {
  clock_ = now;
  ProgramPosition& pos = ctx_.position;
  pos.launch = launch;
  pos.kernel_id = k.id;
  pos.iteration = iteration;
  pos.in_kernel = true;
  pos.tbs_total = k.threadblocks();
  pos.tbs_started = pos.tbs_done = 0;
  const KernelEvent ev{k, launch, iteration, now};
  host_context_ = true;  // placement actions run on the host before the launch
  each_policy([&](PolicyBase& p) { p.on_kernel_start(ev); });
  host_context_ = false;
}

void UvmDriver::on_kernel_end(const trace::KernelInfo& k, std::uint32_t launch,
                              std::int32_t iteration, Tick now) {
  clock_ = now;
  ctx_.position.in_kernel = false;
  const KernelEvent ev{k, launch, iteration, now};
  host_context_ = true;
  each_policy([&](PolicyBase& p) { p.on_kernel_end(ev); });
  host_context_ = false;
}

void UvmDriver::on_iteration(std::int32_t iteration, Tick now) {
  clock_ = now;
  host_context_ = true;
  each_policy([&](PolicyBase& p) { p.on_iteration(iteration, now); });
  host_context_ = false;
}

void UvmDriver::finish_stats() {
  ctx_.stats.observe.samples_per_region = obs_.active() ? obs_.samples() : 0;
  nlohmann::json out = nlohmann::json::object();
  auto one = [&](const char* family, const std::string& name, const PolicyBase& p) {
    nlohmann::json r = nlohmann::json::object();
    p.report(r);
    r["name"] = name;
    out[family] = std::move(r);
  };
  one("eviction", cfg_.engine.eviction, *eviction_);
  one("prefetch", cfg_.driver.prefetch_enable ? cfg_.engine.prefetch : "none", *prefetch_);
  one("placement", cfg_.engine.placement, *placement_);
  ctx_.stats.policy_report = std::move(out);
}

}  // namespace uvmsim
