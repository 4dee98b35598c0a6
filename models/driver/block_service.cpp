#include "models/driver/block_service.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "models/driver/residency_choice.h"

namespace uvmsim {

std::uint64_t BlockService::service(std::span<const BatchFault> faults, ServiceTimes& st,
                                    bool& throttled) {
  const VaRange* r = dc_.va().find_range(faults.front().page_va);
  if (!r || !r->managed) return 0;  // the GPU model never faults outside managed ranges
  if (r->freed) {
    // On the real GPU a fatal fault (the range is gone); here the trace is wrong.
    throw UserError(dc_.trace_name, "launch " + std::to_string(dc_.sim.position(dc_.gpu).launch),
                    "accesses allocation '" + r->name + "' after its MemFree (cudaFree)");
  }
  VaBlock& b = dc_.va().blocks()[dc_.va().block_index(*r, faults.front().page_va)];
  // service_fault_batch_block takes the block's lock for the block's whole service: another
  // GPU's bottom half still servicing it (its driver time past ours) holds us off. One GPU's
  // services of a block follow each other anyway.
  if (b.lock_gpu != dc_.gpu && b.lock_free_at > st.cpu) {
    GpuStats& g = dc_.stats().per_gpu[dc_.gpu];
    ++g.block_lock_waits;
    g.block_lock_wait += b.lock_free_at - st.cpu;
    st.cpu = b.lock_free_at;
  }
  const std::uint64_t dups = service_locked(b, faults, st, throttled);
  b.lock_free_at = st.cpu;
  b.lock_gpu = dc_.gpu;
  return dups;
}

std::uint64_t BlockService::service_locked(VaBlock& b, std::span<const BatchFault> faults,
                                           ServiceTimes& st, bool& throttled) {
  st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
  ++dc_.stats().va_blocks_serviced;
  if (residency_.ats_system(b)) return service_system(b, faults, st);

  const Classified c = classify(b, faults, st.cpu, throttled);
  if (c.remote.any()) map_remote(b, c.remote, st);
  if (c.peer.any()) map_peer(b, c, st);
  if (c.faulted.any()) {
    PageMask prefetch = choose_prefetch(b, c.faulted, c.remote | c.peer, st.cpu);
    if (prefetch.any()) {
      // onPrefetch, then the prefetch policy may keep feedback samples of it on the host.
      policies_.each_for(b, [&](PolicyBase& p) { p.on_prefetch(b, prefetch, st.cpu); });
      st.cpu += policies_.messages(1, dc_.stats());  // onPrefetch, relayed to userspace
      observations_.observe_prefetch(b, prefetch, st);
    }
    residency_.make_resident_gpu(b, c.faulted, prefetch, HtodCause::Demand, st, &c.writes);
    observations_.on_fault(b.id);
    for (unsigned p = c.faulted.find_next(0); p < kPagesPerBlock; p = c.faulted.find_next(p + 1))
      policies_.each_for(b, [&](PolicyBase& x) { x.on_page_fault(b, p, st.cpu); });
    st.cpu += policies_.messages(c.faulted.count(), dc_.stats());  // onPageFault per page
  } else if (c.collapsed) {
    residency_.made_resident(b, st.cpu);  // a GPU write ended read duplication in place
  }
  GpuBlockState& gs = dc_.gpu_state(b);
  if (c.faulted.any() || c.remote.any() || c.peer.any() || c.collapsed) {
    ++gs.mapping_gen;  // PTE writes + TLB invalidate
    gs.map_ready_at = std::max(gs.map_ready_at, std::max(st.cpu, st.copy_done));
  }
  // service_fault_batch_block adds the block's tracker to the batch's: the replay that follows
  // waits for the block's outstanding copies and PTE writes, even when this batch found nothing
  // to do in it (a re-fault while an earlier batch's copies still run, under BATCH/BLOCK/ONCE).
  st.copy_done = std::max(st.copy_done, gs.map_ready_at);
  return c.duplicates;
}

BlockService::Classified BlockService::classify(VaBlock& b, std::span<const BatchFault> faults,
                                                Tick now, bool& throttled) {
  GpuBlockState& gs = dc_.gpu_state(b);
  auto& s = dc_.stats();
  const PlacementState& place = pool_.placement();
  Classified c;
  const bool peers = dc_.sim.peers.enabled() && dc_.va().gpus() > 1;
  unsigned prev = ~0u;
  for (const BatchFault& f : faults) {
    const unsigned page = VaSpace::page_index(f.page_va);
    if (page == prev) {
      ++s.faults_duplicate;
      ++c.duplicates;
      continue;
    }
    prev = page;
    const bool write = f.kind >= AccessKind::Write;
    if (gs.remote_mapped.test(page) || (gs.peer_mapped.test(page) && !(write && b.read_mostly)) ||
        (gs.resident.test(page) && !(write && gs.read_only.test(page)))) {
      ++s.faults_already_resident;
      continue;
    }
    const ThrashingDetector::Result hint =
        thrashing_hint(thrashing_, b, page, dc_.processor(), dc_.va().gpus(), now);
    if (hint.type == ThrashingDetector::Hint::Throttle) {
      // Not serviced this time: the GPU re-faults after the replay (service_fault_batch_block).
      ++s.faults_throttled;
      ++s.throttle_hints;
      throttled = true;
      continue;
    }
    if (hint.type == ThrashingDetector::Hint::Pin) {
      ++s.pin_hints;
      // Pinned in host memory: the GPU maps it (a copy on another GPU moves there first,
      // map_remote). Pinned on the GPU: it migrates there as usual.
      if (hint.pin == Processor::Cpu && !gs.resident.test(page) &&
          (b.cpu_resident.test(page) ||
           (b.has_peer_states() && dc_.resident_on_gpus(b).test(page)))) {
        c.remote.set(page);
        continue;
      }
    }
    ++s.faults_serviced;
    if (write && gs.resident.test(page)) {
      // Write to a read-duplicated page: collapse to the GPU copy, invalidate the CPU's.
      b.cpu_resident.reset(page);
      gs.read_only.reset(page);
      gs.dirty.set(page);
      PageMask one;
      one.set(page);
      gs.add_map_pending(one, dc_.sim.queue.now());  // the writable PTE comes with the others
      if (b.has_peer_states()) residency_.invalidate_peers(b, one, now);  // other GPUs' too
      c.collapsed = true;
      continue;
    }
    if (peers) {
      if (const int t = peer_target(b, page, f.kind, hint); t >= 0) {
        c.peer.set(page);
        c.peer_gpu[page] = static_cast<std::uint8_t>(t);
        if (write) c.writes.set(page);
        continue;
      }
    }
    if (place.active() && place.block(b.id).no_migrate.test(page)) {
      // suvSetNoMigrateRegion / host pin: the driver never migrates it; the GPU maps it.
      ++s.placement.no_migrate_remote_maps;
      c.remote.set(page);
    } else if (policies_.placement().place(b, page, f.kind, now) ==
               PlacementPolicy::Decision::MapRemote) {
      c.remote.set(page);
    } else if (!gs.has_chunk && !pool_.chunk_obtainable(b)) {
      // Every chunk this block could take is pinned or reserved for others: serve it remotely.
      ++s.placement.no_chunk_remote_maps;
      c.remote.set(page);
    } else {
      c.faulted.set(page);
      if (write) c.writes.set(page);
    }
  }
  return c;
}

std::uint64_t BlockService::service_system(VaBlock& b, std::span<const BatchFault> faults,
                                           ServiceTimes& st) {
  GpuBlockState& gs = dc_.gpu_state(b);
  // A GPU fault on system memory under ATS is a first touch: pages the CPU populated are mapped
  // in the shared page table and never fault. uvm_ats_service_faults populates the faulted OS
  // pages on the GPU (migrate_vma, first_touch) with the tree prefetcher's choice among the
  // pages resident nowhere (ats_compute_prefetch); the thrashing module and the eviction,
  // placement and prefetch-feedback policies are UVM's and do not take part.
  auto& s = dc_.stats();
  PageMask faulted, writes;
  std::uint64_t duplicates = 0;
  unsigned prev = ~0u;
  for (const BatchFault& f : faults) {
    const unsigned page = VaSpace::page_index(f.page_va);
    if (page == prev) {
      ++s.faults_duplicate;
      ++duplicates;
      continue;
    }
    prev = page;
    if (gs.resident.test(page) || gs.remote_mapped.test(page)) {
      ++s.faults_already_resident;
      continue;
    }
    ++s.faults_serviced;
    faulted.set(page);
    if (f.kind >= AccessKind::Write) writes.set(page);
  }
  if (faulted.any()) {
    PageMask prefetch;
    if (dc_.cfg.driver.prefetch_enable) {
      policies_.prefetch().compute(
          PrefetchPolicy::Request{b, dc_.processor(), gs.resident, faulted, PageMask{}, st.cpu},
          prefetch);
    }
    prefetch = minus(minus(prefetch & b.valid_mask(), b.cpu_resident), gs.resident);
    residency_.make_resident_gpu(b, residency_.system_pages_of(b, faulted), prefetch,
                                 HtodCause::Demand, st, &writes);
    ++gs.mapping_gen;  // PTE writes + TLB invalidate
    gs.map_ready_at = std::max(gs.map_ready_at, std::max(st.cpu, st.copy_done));
  }
  st.copy_done = std::max(st.copy_done, gs.map_ready_at);
  return duplicates;
}

void BlockService::map_remote(VaBlock& b, const PageMask& remote, ServiceTimes& st) {
  // Without peer access a GPU maps only host memory: another GPU's copy moves there first, on
  // that GPU's copy engine (every copy: the mapping may be written through), and the mapping
  // waits for it.
  if (b.has_peer_states()) residency_.stage_from_peers(b, remote, &remote, st);
  // Pages resident nowhere are populated in host memory first (zero-filled, no copy).
  const PageMask fresh = minus(minus(remote, b.cpu_resident), dc_.gpu_state(b).resident);
  b.cpu_resident |= fresh;
  b.cpu_backed |= fresh;
  dc_.gpu_state(b).remote_mapped |= remote;
  const unsigned n = remote.count();
  dc_.stats().remote_maps += n;
  st.cpu += ns_to_ps(dc_.cfg.cost.page_ns) * n;
  if (dc_.log().enabled())
    dc_.log().row(st.cpu, "remote_map", dc_.log_batch, b.page_va(remote.find_next(0)),
                  std::uint64_t{n} * kPageSize, "", "demand", n, 0);
}

int BlockService::peer_target(const VaBlock& b, unsigned page, AccessKind kind,
                              const ThrashingDetector::Result& hint) const {
  const int self = processor_id(dc_.processor());
  const int t = select_residency(b, page, dc_.processor(), kind, hint, dc_.shared.topology,
                                 dc_.gpus_of(b), dc_.cfg.thrashing.map_remote_on_native_atomics);
  return t > 0 && t != self ? t - 1 : -1;
}

void BlockService::map_peer(VaBlock& b, const Classified& c, ServiceTimes& st) {
  GpuBlockState& gs = dc_.gpu_state(b);
  PageMask left = c.peer;
  while (left.any()) {
    const unsigned t = c.peer_gpu[left.find_next(0)];
    PageMask pages;
    for (unsigned p = left.find_next(0); p < kPagesPerBlock; p = left.find_next(p + 1))
      if (c.peer_gpu[p] == t) pages.set(p);
    left.and_not(pages);
    // The new residency is GPU t: pages not there yet migrate to it (from the host, another
    // peer or nowhere), on its memory, as this fault batch's work.
    const PageMask need = minus(pages, b.gpu(t).resident);
    if (need.any()) {
      const PageMask writes = c.writes & need;
      dc_.shared.residency[t]->make_resident_for(b, need, writes, dc_.log_batch, st);
    }
    gs.peer_mapped |= pages;
    const unsigned n = pages.count();
    dc_.stats().remote_maps += n;
    dc_.stats().per_gpu[dc_.gpu].peer_maps += n;
    st.cpu += ns_to_ps(dc_.cfg.cost.page_ns) * n;
    if (dc_.log().enabled())
      dc_.log().row(st.cpu, "remote_map", dc_.log_batch, b.page_va(pages.find_next(0)),
                    std::uint64_t{n} * kPageSize, "", "peer", n, 0);
  }
}

PageMask BlockService::choose_prefetch(VaBlock& b, const PageMask& faulted, const PageMask& remote,
                                       Tick now) {
  GpuBlockState& gs = dc_.gpu_state(b);
  PageMask prefetch;
  // Prefetch only if every faulted page of the block goes to one processor (the GPU here),
  // only towards the preferred location if there is one, and after min_faults faults.
  if (b.last_migration_dest != dc_.processor()) {
    b.fault_migrations_to_last_proc = 0;
    b.last_migration_dest = dc_.processor();
  }
  b.fault_migrations_to_last_proc += faulted.count();
  const PreferredLocation here = preferred_on(dc_.processor());
  const bool gated =
      remote.none() && (b.preferred == PreferredLocation::None || b.preferred == here);
  if (!gated || b.fault_migrations_to_last_proc < dc_.cfg.driver.prefetch_min_faults)
    return prefetch;
  if (b.preferred == here && gs.count == 0 && b.cpu_resident.none()) {
    prefetch = b.valid_mask();  // first touch at the preferred location: whole block
  } else {
    policies_.prefetch().compute(PrefetchPolicy::Request{b, dc_.processor(), gs.resident, faulted,
                                                         thrashing_.thrashing_pages(b.id), now},
                                 prefetch);
  }
  prefetch &= b.valid_mask();
  prefetch.and_not(faulted);
  prefetch.and_not(gs.resident);
  const PlacementState& place = pool_.placement();
  if (place.active()) prefetch.and_not(place.block(b.id).no_migrate);  // host pins stay
  // An observed region's sample pages stay on the host until the GPU touches them.
  if (const ObservedRegion* o = observations_.find(b.id)) prefetch.and_not(o->samples);
  return prefetch;
}

}  // namespace uvmsim
