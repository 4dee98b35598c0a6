#include "models/driver/observation_service.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "models/driver/residency.h"

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
    ++offers;  // setObservabilityCandidate / setFeedbackCandidate: one message each
    if (!try_(block, purpose_, sample_from)) return Offer::Declined;
    accepted = true;
    return Offer::Accepted;
  }
  bool accepted = false;
  std::uint64_t offers = 0;

 private:
  const Observability& obs_;
  ObservePurpose purpose_;
  Try& try_;
};

}  // namespace

ObservationService::ObservationService(DriverContext& dc, AccessCounters& hw, PolicySet& policies,
                                       RootChunkPool& pool)
    : dc_(dc), hw_(hw), policies_(policies), pool_(pool) {
  const auto& cfg = dc.cfg;
  obs_.configure(cfg.observe, cfg.access_counters.count, dc.va().blocks().size(), pool.capacity(),
                 cfg.engine.seed);
}

void ObservationService::activate_if_used() {
  if (!policies_.observing()) return;
  const auto& cfg = dc_.cfg;
  // One hardware counter watches each observed region (2 MB granularity, threshold 1).
  const std::uint64_t want =
      std::uint64_t{cfg.observe.max_regions} + cfg.observe.max_feedback_regions;
  if (want > cfg.access_counters.count)
    throw UserError("observe.max_regions", "value",
                    "observe.max_regions + observe.max_feedback_regions = " + std::to_string(want) +
                        " exceeds the " + std::to_string(cfg.access_counters.count) +
                        " hardware access counters (access_counters.count)");
  obs_.set_active(true);
  dc_.stats().observe.active = true;
  hw_.reserve(static_cast<std::uint32_t>(want));
}

void ObservationService::start(const VaBlock& b, ObservePurpose purpose, const PageMask& samples,
                               Tick now) {
  obs_.start(b, purpose, samples, now);
  hw_.watch(b.id, samples);
}

ObservedRegion ObservationService::end(std::uint32_t block) {
  hw_.unwatch(block);
  return obs_.end(block);
}

bool ObservationService::try_observe(std::uint32_t id, ObservePurpose purpose,
                                     const PageMask* sample_from, ServiceTimes& st,
                                     Residency& residency) {
  if (id >= dc_.va().blocks().size()) return false;
  VaBlock& b = dc_.block(id);
  if (!dc_.gpu_state(b).has_chunk || dc_.gpu_state(b).count == 0 || obs_.find(id) ||
      b.preferred == PreferredLocation::Cpu ||
      pool_.placement().withheld(id))  // pinned / reserved chunks are not eviction candidates
    return false;
  const PageMask samples = obs_.choose_samples(b, dc_.gpu_state(b).resident, sample_from);
  if (samples.none()) return false;
  auto& os = dc_.stats().observe;
  const Tick t0 = st.cpu;
  const unsigned n = samples.count();
  // Unmap from the GPU, copy to host memory, map the host copy into the GPU's page table.
  st.cpu += ns_to_ps(dc_.cfg.cost.block_ns) + ns_to_ps(dc_.cfg.cost.page_ns) * n;
  if (dc_.log().enabled())
    dc_.log().row(st.cpu, "observe", dc_.log_batch, b.page_va(samples.find_next(0)),
                  std::uint64_t{n} * kPageSize, "", to_string(purpose), n, 0);
  residency.migrate_to_cpu(b, samples, DtohCause::Observation, st);
  dc_.gpu_state(b).remote_mapped |= samples;
  start(b, purpose, samples, st.cpu);
  ++os.regions[static_cast<std::size_t>(purpose)];
  os.sample_pages += n;
  os.max_observed = std::max<std::uint64_t>(os.max_observed, obs_.regions().size());
  os.service_time += st.cpu - t0;
  return true;
}

void ObservationService::observe_prefetch(VaBlock& b, PageMask& prefetch, ServiceTimes& st) {
  if (!obs_.active() || obs_.budget(ObservePurpose::Feedback) == 0) return;
  if (obs_.find(b.id) || b.preferred == PreferredLocation::Cpu) return;
  auto attempt = [&](std::uint32_t block, ObservePurpose purpose, const PageMask* from) {
    if (block != b.id || obs_.find(b.id)) return false;  // only the region being prefetched
    PageMask pool = prefetch;
    if (from) pool &= *from;
    const PageMask samples = obs_.choose_samples(b, dc_.gpu_state(b).resident | prefetch, &pool);
    if (samples.none()) return false;
    // The samples stay in host memory (populated there if they exist nowhere yet), mapped for
    // the GPU; the rest of the prefetch proceeds.
    prefetch.and_not(samples);
    b.cpu_resident |= samples;
    b.cpu_backed |= samples;
    dc_.gpu_state(b).remote_mapped |= samples;
    const unsigned n = samples.count();
    st.cpu += ns_to_ps(dc_.cfg.cost.page_ns) * n;
    if (dc_.log().enabled())
      dc_.log().row(st.cpu, "observe", dc_.log_batch, b.page_va(samples.find_next(0)),
                    std::uint64_t{n} * kPageSize, "", to_string(purpose), n, 0);
    start(b, purpose, samples, st.cpu);
    auto& os = dc_.stats().observe;
    ++os.regions[static_cast<std::size_t>(purpose)];
    os.sample_pages += n;
    os.max_observed = std::max<std::uint64_t>(os.max_observed, obs_.regions().size());
    os.service_time += ns_to_ps(dc_.cfg.cost.page_ns) * n;
    return true;
  };
  BudgetSink sink(obs_, ObservePurpose::Feedback, attempt);
  policies_.prefetch().feedback_candidates(sink, st.cpu);
  st.cpu += policies_.messages(sink.offers, dc_.stats());
}

bool ObservationService::under_memory_pressure() const {
  // Eviction observability only informs eviction decisions. It runs while memory fills, so that
  // the first victims are already informed (on mm-tiled the reused matrix is at the head of the
  // list when memory fills), pauses while the GPU is full but nothing needs evicting (a run
  // that fits: observing would only cost remote accesses), and runs from the first eviction on.
  const auto& cfg = dc_.cfg.observe;
  if (!cfg.only_under_pressure || dc_.sim.stats.evictions > 0) return true;
  if (pool_.allocated() >= pool_.capacity()) return false;
  return static_cast<double>(pool_.allocated()) * 100.0 >=
         cfg.min_occupancy_pct * static_cast<double>(pool_.capacity());
}

bool ObservationService::refill(ServiceTimes& st, Residency& residency) {
  refill_due_ = false;
  bool did = false;
  auto attempt = [&](std::uint32_t block, ObservePurpose p, const PageMask* from) {
    return try_observe(block, p, from, st, residency);
  };
  if (obs_.budget(ObservePurpose::Eviction) > 0 && under_memory_pressure()) {
    BudgetSink sink(obs_, ObservePurpose::Eviction, attempt);
    policies_.eviction().observability_candidates(sink, st.cpu);
    did |= sink.accepted;
    st.cpu += policies_.messages(sink.offers, dc_.stats());
  }
  if (obs_.budget(ObservePurpose::Feedback) > 0) {
    BudgetSink sink(obs_, ObservePurpose::Feedback, attempt);
    policies_.prefetch().feedback_candidates(sink, st.cpu);
    did |= sink.accepted;
    st.cpu += policies_.messages(sink.offers, dc_.stats());
  }
  return did;
}

void ObservationService::service_notifications(ServiceTimes& st, Residency& residency) {
  auto& os = dc_.stats().observe;
  const Tick t0 = st.cpu;
  // One notification batch, fetched like the driver's access-counter notifications.
  st.cpu += ns_to_ps(dc_.cfg.cost.batch_fixed_ns);
  // Callbacks never add notifications (no GPU access runs meanwhile).
  std::vector<std::uint32_t>& pend = hw_.observed();
  for (std::size_t k = 0; k < pend.size(); ++k) {
    const std::uint32_t id = pend[k];
    if (!obs_.find(id)) continue;  // ended meanwhile (evicted, cancelled)
    const ObservedRegion r = end(id);
    VaBlock& b = dc_.block(id);
    ++os.accessed[static_cast<std::size_t>(r.purpose)];
    st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
    if (dc_.log().enabled())
      dc_.log().row(st.cpu, "observe_access", -1, b.page_va(r.samples.find_next(0)), 0, "",
                    to_string(r.purpose), r.samples.count(), 0);
    // The sample served its purpose: it migrates back to the GPU.
    dc_.gpu_state(b).remote_mapped.and_not(r.samples);
    PageMask back = r.samples & b.cpu_resident;
    back.and_not(dc_.gpu_state(b).resident);
    residency.make_resident_gpu(b, back, PageMask{}, HtodCause::Observation, st, nullptr, false);
    ++dc_.gpu_state(b).mapping_gen;
    dc_.gpu_state(b).map_ready_at =
        std::max(dc_.gpu_state(b).map_ready_at, std::max(st.cpu, st.copy_done));
    const unsigned page = r.samples.find_next(0);
    policies_.each_for(b, [&](PolicyBase& p) { p.on_access_counter(b, page, r.purpose, st.cpu); });
    st.cpu += policies_.messages(1, dc_.stats());  // onAccessCounter, relayed
  }
  pend.clear();
  os.service_time += st.cpu - t0;
  refill_due_ = true;
}

void ObservationService::drop(VaBlock& b, bool evicted) {
  const ObservedRegion r = end(b.id);
  auto& os = dc_.stats().observe;
  ++(evicted ? os.evicted_unaccessed : os.cancelled)[static_cast<std::size_t>(r.purpose)];
  // With access-counter migration on, evicted pages stay remote-mapped like any evicted page.
  if (!(evicted && hw_.enabled()))
    dc_.gpu_state(b).remote_mapped.and_not(minus(r.samples, dc_.gpu_state(b).resident));
  ++dc_.gpu_state(b).mapping_gen;
  refill_due_ = true;
}

void ObservationService::on_evicted(VaBlock& v) {
  if (!obs_.active()) return;
  if (obs_.find(v.id)) drop(v, true);
  if (const int d = obs_.on_evicted(v.id)) {
    auto& os = dc_.stats().observe;
    ++(d > 0 ? os.samples_doubled : os.samples_halved);
  }
}

void ObservationService::finish_stats() {
  dc_.stats().observe.samples_per_region = obs_.active() ? obs_.samples() : 0;
}

}  // namespace uvmsim
