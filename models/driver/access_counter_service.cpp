#include "models/driver/access_counter_service.h"

#include <algorithm>
#include <stdexcept>

#include "models/driver/residency.h"

namespace uvmsim {

AccessCounterService::AccessCounterService(DriverContext& dc, AccessCounters& hw,
                                           RootChunkPool& pool, PolicySet& policies,
                                           ThrashingDetector& thrashing,
                                           ObservationService& observations)
    : dc_(dc),
      hw_(hw),
      pool_(pool),
      policies_(policies),
      thrashing_(thrashing),
      observations_(observations),
      all_(dc.cfg.access_counters.migration) {}

void AccessCounterService::enable_everywhere(std::uint64_t granularity, std::uint32_t threshold) {
  if (granularity != (64u << 10) && granularity != (2u << 20) && granularity != (16u << 20) &&
      granularity != (std::uint64_t{16} << 30))
    throw std::logic_error("enable_access_counter_migration: granularity must be 64K/2M/16M/16G");
  hw_.enable_migration(granularity, std::max<std::uint32_t>(1, threshold));
  all_ = true;
}

void AccessCounterService::enable_for_ranges() {
  if (hw_.enabled()) return;
  // suvEnableAccessCounter: the hardware counters start counting remote accesses.
  hw_.enable_migration(dc_.cfg.access_counters.granularity,
                       std::max<std::uint32_t>(1, dc_.cfg.access_counters.threshold));
}

PageMask AccessCounterService::remap_on_eviction(const VaBlock& b, const PageMask& pages) const {
  if (all_) return pages;
  return pages & pool_.placement().block(b.id).acm;
}

bool AccessCounterService::migration_allowed(const VaBlock& b, unsigned page) const {
  const BlockPlacement& bp = pool_.placement().block(b.id);
  if (bp.no_migrate.test(page)) return false;
  return all_ || bp.acm.test(page);
}

void AccessCounterService::service(ServiceTimes& st, Residency& residency) {
  ++dc_.stats().access_counter_batches;
  auto& pending = hw_.pending();
  const std::size_t take = std::min<std::size_t>(pending.size(), hw_.batch_count());
  for (std::size_t k = 0; k < take; ++k) {
    const AccessCounterNotification n = pending[k];
    if (n.region_bytes == kBlockSize) {
      expand_2m(n, st, residency);
      continue;
    }
    // Other granularities: the driver ignores them (expand_notification_block: "only enabled
    // by UVM tests"). Kept as a what-if: every notified sub-region migrates.
    const std::uint64_t sub = n.region_bytes / 32;
    for (unsigned i = 0; i < 32; ++i) {
      if (!(n.subregion_mask >> i & 1u)) continue;
      for_each_block_page(dc_.va(), n.region_base + i * sub, sub,
                          [&](VaBlock& b, unsigned p0, unsigned p1) {
                            PageMask pages;
                            pages.set_range(p0, p1);
                            service_pages(b, pages, st, residency);
                          });
    }
  }
  pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(take));
}

void AccessCounterService::expand_2m(const AccessCounterNotification& n, ServiceTimes& st,
                                     Residency& residency) {
  // expand_notification_block (uvm_gpu_access_counters.c): the notified sub-regions are taken
  // only when the host copy of the page at the notification address is one chunk of the
  // counter's 2 MB granularity (uvm_va_block_get_physical_size). The driver allocates a 2 MB
  // host chunk whenever a full 2 MB block is first populated on the CPU
  // (block_calculate_largest_alloc_size) and never splits it on migration; a partial block
  // gets 64 KB / 4 KB chunks, and then only the one page migrates. With several blocks in one
  // 2 MB window (small ranges), the first valid page in the window stands for the address.
  bool first = true;
  for_each_block_page(dc_.va(), n.region_base, n.region_bytes,
                      [&](VaBlock& b, unsigned p0, unsigned p1) {
                        if (!first) return;  // the driver services the block of the address
                        first = false;
                        PageMask pages;
                        if (b.full_block() && dc_.cfg.driver.cpu_chunk_2m) {
                          const unsigned per = kPagesPerBlock / 32;
                          for (unsigned i = 0; i < 32; ++i)
                            if (n.subregion_mask >> i & 1u) pages.set_range(i * per, (i + 1) * per);
                          PageMask window;
                          window.set_range(p0, p1);
                          pages &= window;
                        } else {
                          pages.set(p0);
                          ++dc_.stats().access_counter_single_page;
                        }
                        service_pages(b, pages, st, residency);
                      });
}

void AccessCounterService::service_pages(VaBlock& b, PageMask pages, ServiceTimes& st,
                                         Residency& residency) {
  auto& s = dc_.stats();
  const bool scoped = pool_.placement().active() || !all_;
  // Only pages resident on a remote owner: the host, or with peer access another GPU
  // (uvm_gpu_access_counters.c: notifications for peer memory migrate from the peer too).
  PageMask remote_owned = b.cpu_resident;
  if (dc_.sim.peers.enabled() && b.has_peer_states())
    remote_owned |= minus(dc_.resident_on_gpus(b), dc_.gpu_state(b).resident);
  pages &= remote_owned;
  pages.and_not(dc_.gpu_state(b).resident);
  if (const ObservedRegion* o = observations_.find(b.id)) pages.and_not(o->samples);
  if (scoped) {
    // Range-scoped access-counter migration and no-migrate ranges (SUV §V-D ⑤).
    for (unsigned p = pages.find_next(0); p < kPagesPerBlock; p = pages.find_next(p + 1)) {
      if (migration_allowed(b, p)) continue;
      pages.reset(p);
      ++s.placement.notifications_ignored;
    }
    if (pages.any() && !dc_.gpu_state(b).has_chunk && !pool_.chunk_obtainable(b)) return;
  }
  for (unsigned p = pages.find_next(0); p < kPagesPerBlock; p = pages.find_next(p + 1)) {
    // service_va_block_locked: a throttled page ignores the notification; a page pinned in
    // host memory stays there (the GPU keeps its remote mapping).
    const ThrashingDetector::Result h =
        thrashing_hint(thrashing_, b, p, dc_.processor(), dc_.va().gpus(), st.cpu);
    if (h.type == ThrashingDetector::Hint::Throttle ||
        (h.type == ThrashingDetector::Hint::Pin && h.pin == Processor::Cpu))
      pages.reset(p);
  }
  if (pages.none()) return;
  st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
  PageMask prefetch;
  policies_.prefetch().compute(
      PrefetchPolicy::Request{b, dc_.processor(), dc_.gpu_state(b).resident, pages,
                              thrashing_.thrashing_pages(b.id), st.cpu},
      prefetch);
  prefetch &= remote_owned;  // access-counter servicing never zero-fills untouched pages
  prefetch.and_not(pages);
  if (pool_.placement().active()) prefetch.and_not(pool_.placement().block(b.id).no_migrate);
  residency.make_resident_gpu(b, pages, prefetch, HtodCause::AccessCounter, st, nullptr);
  dc_.gpu_state(b).remote_mapped.and_not(dc_.gpu_state(b).resident);
  ++dc_.gpu_state(b).mapping_gen;
  dc_.gpu_state(b).map_ready_at =
      std::max(dc_.gpu_state(b).map_ready_at, std::max(st.cpu, st.copy_done));
}

}  // namespace uvmsim
