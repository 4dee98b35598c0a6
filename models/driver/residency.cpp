#include "models/driver/residency.h"

#include <algorithm>

#include "state/prefetch_use.h"

namespace uvmsim {

void Residency::set_gpu_resident(VaBlock& b, const PageMask& pages, Tick now) {
  GpuBlockState& gs = dc_.gpu_state(b);
  const bool was_empty = gs.count == 0;
  // `now` is the driver's own clock (where its bottom half has got to in this batch), which runs
  // ahead of simulated time. Whether an earlier batch's pending PTEs are usable is a question
  // about the GPU's present, the event time: a GPU access at that time is what reads them.
  gs.add_map_pending(minus(pages, gs.resident), dc_.sim.queue.now());
  gs.resident |= pages;
  if (b.has_peer_states()) gs.peer_mapped.and_not(pages);  // a local copy replaces a peer's
  gs.count = gs.resident.count();
  if (was_empty && gs.count) policies_.each_for(b, [&](PolicyBase& p) { p.on_populated(b, now); });
}

void Residency::clear_gpu_resident(VaBlock& b, const PageMask& pages, Tick now) {
  GpuBlockState& gs = dc_.gpu_state(b);
  const bool was_empty = gs.count == 0;
  note_leaving_gpu(gs, pages, dc_.stats().prefetch_use);
  gs.resident.and_not(pages);
  gs.count = gs.resident.count();
  // The CPU's mappings of the copy go with it, as a peer's do.
  if (!dc_.shared.cpu_mapped.empty()) dc_.shared.cpu_mapped[b.id].and_not(pages);
  if (b.has_peer_states()) {
    // Other GPUs' mappings of these pages in this GPU's memory go with them (the driver unmaps
    // every processor from a page whose copy it moves or drops: block_unmap in
    // uvm_va_block_make_resident_copy, break_read_duplication_in_region).
    for (unsigned h = 0; h < dc_.gpus_of(b); ++h) {
      GpuBlockState& hs = b.gpu(h);
      if (h == dc_.gpu || !hs.peer_mapped.intersects(pages)) continue;
      hs.peer_mapped.and_not(pages);
      ++hs.mapping_gen;
    }
  }
  if (!was_empty && gs.count == 0 && gs.has_chunk)
    policies_.each_for(b, [&](PolicyBase& p) { p.on_emptied(b, now); });
}

unsigned Residency::make_resident_gpu(VaBlock& b, const PageMask& demand, const PageMask& prefetch,
                                      HtodCause demand_cause, ServiceTimes& st,
                                      const PageMask* writes, bool track_thrashing) {
  GpuBlockState& gs = dc_.gpu_state(b);
  if (ats_system(b)) return make_resident_system(b, demand, prefetch, demand_cause, st, writes);
  PageMask want = demand | prefetch;
  want &= b.valid_mask();
  want.and_not(gs.resident);
  if (want.none()) {
    made_resident(b, st.cpu);  // nothing to move: make_resident_finish still runs
    return 0;
  }
  Tick ready = st.cpu;
  if (!gs.has_chunk) ready = std::max(ready, allocate_chunk(b, st));
  // Pages other GPUs hold: with peer access they are copied straight from the holder (the
  // closest copy: block_copy_resident_pages copies from a processor it can copy from, closest
  // first); without it they move to host memory first (staged) and come in from there.
  PageMask from_peers;
  if (b.has_peer_states()) {
    if (dc_.sim.peers.enabled()) {
      for (unsigned h = 0; h < dc_.gpus_of(b); ++h)
        if (h != dc_.gpu) from_peers |= want & b.gpu(h).resident;
    } else {
      ready = std::max(ready, stage_from_peers(b, want, writes, st));
    }
  }

  const PageMask on_cpu = want & b.cpu_resident;
  const PageMask from_cpu = minus(on_cpu, from_peers);
  const PageMask zero = minus(minus(want, b.cpu_resident), from_peers);
  if (zero.any()) {
    dc_.stats().zero_filled_pages += zero.count();
    if (dc_.log().enabled())
      dc_.log().row(ready, "zero_fill", dc_.log_batch, b.page_va(zero.find_next(0)),
                    std::uint64_t{zero.count()} * kPageSize, "", "", zero.count(), 0);
  }
  // Per-page host work (CPU unmap, PTE set-up) precedes the copies it enables.
  st.cpu += ns_to_ps(dc_.cfg.cost.page_ns) * want.count();
  ready = std::max(ready, st.cpu);
  copy_in(b, from_cpu, demand, demand_cause, ready, st);
  const PageMask copied = from_cpu | from_peers;
  PageMask dup;  // read duplicates (COPY mode); the rest of the copied pages move (MOVE mode)
  if (b.read_mostly) {
    dup = copied;
    if (writes) dup.and_not(*writes);
  }
  if (from_peers.any()) pull_from_peers(b, from_peers, dup, demand_cause, ready, st);
  if (b.read_mostly) {
    // Read duplication: the CPU keeps its copy of pages that were only read.
    gs.read_only |= dup;
    b.cpu_resident.and_not(minus(on_cpu, dup));
  } else {
    b.cpu_resident.and_not(want);
  }
  if (b.has_peer_states()) {
    // The host copy of pages that moved is gone: other GPUs' mappings of it are torn down
    // (uvm_va_block_make_resident_copy unmaps every processor from pages leaving their copy).
    const PageMask left = minus(on_cpu, b.cpu_resident);
    for (unsigned h = 0; h < dc_.gpus_of(b); ++h) {
      GpuBlockState& hs = b.gpu(h);
      if (h == dc_.gpu || !hs.remote_mapped.intersects(left)) continue;
      hs.remote_mapped.and_not(left);
      ++hs.mapping_gen;
    }
  }
  if (writes) gs.dirty |= (*writes & want);
  set_gpu_resident(b, want, st.cpu);
  account_prefetch_use(b, want & demand, minus(want, demand), demand_cause);
  if (track_thrashing) {
    // Only copied pages are events; the copy's cause and transfer mode decide
    // (thrashing_event_cb): faults, the prefetcher and access counters count when they move
    // pages; user and policy migrations and read duplicates (COPY mode) reset the pages'
    // tracking. A write to a read-mostly block moves its page: an event like any other.
    using C = ThrashingDetector::Cause;
    C dc = C::Other;
    if (demand_cause == HtodCause::Demand) dc = C::Fault;
    if (demand_cause == HtodCause::AccessCounter) dc = C::AccessCounter;
    const PageMask moved = minus(copied, dup);
    note_migration(b, moved & demand, dc_.processor(), st.cpu, dc);
    note_migration(b, minus(moved, demand), dc_.processor(), st.cpu,
                   dc == C::Other ? C::Other : C::Prefetch);
    note_migration(b, dup, dc_.processor(), st.cpu, C::Other);
  }
  st.copy_done = std::max(st.copy_done, ready);
  made_resident(b, st.cpu);
  return want.count();
}

void Residency::make_resident_for(VaBlock& b, const PageMask& pages, const PageMask& writes,
                                  std::int64_t batch, ServiceTimes& st) {
  const LogBatchScope logged_as(dc_, batch);
  make_resident_gpu(b, pages, PageMask{}, HtodCause::Demand, st, &writes);
  GpuBlockState& gs = dc_.gpu_state(b);
  ++gs.mapping_gen;
  gs.map_ready_at = std::max(gs.map_ready_at, std::max(st.cpu, st.copy_done));
}

PageMask Residency::system_pages_of(const VaBlock& b, const PageMask& pages) const {
  const unsigned per = static_cast<unsigned>(dc_.cfg.driver.system_page_size >> kPageShift);
  PageMask out;
  for (unsigned p = pages.find_next(0); p < kPagesPerBlock; p = pages.find_next(p)) {
    const unsigned first = p / per * per;
    out.set_range(first, first + per);
    p = first + per;
  }
  return out & b.valid_mask();
}

unsigned Residency::make_resident_system(VaBlock& b, const PageMask& demand,
                                         const PageMask& prefetch, HtodCause demand_cause,
                                         ServiceTimes& st, const PageMask* writes) {
  // On Grace Hopper the kernel moves system memory (uvm_ats_service_faults and
  // uvm_ats_service_access_counters call uvm_migrate_pageable -> migrate_vma): GPU memory is a
  // NUMA node of the OS, pages move in whole OS pages, and UVM's root chunks and eviction are
  // not involved. A page the OS cannot place on the GPU (the node is full) stays where it is:
  // a first touch is then populated in host memory, and a migration does not happen.
  GpuBlockState& gs = dc_.gpu_state(b);
  const PageMask asked = system_pages_of(b, demand | prefetch);
  PageMask want = minus(asked, gs.resident);
  if (want.none()) return 0;
  const unsigned per = static_cast<unsigned>(dc_.cfg.driver.system_page_size >> kPageShift);
  PageMask placed;
  for (unsigned p = want.find_next(0); p < kPagesPerBlock; p = want.find_next(p)) {
    const unsigned first = p / per * per;
    PageMask one;
    one.set_range(first, first + per);
    one &= want;
    if (!pool_.system_room(one.count())) break;  // the GPU node is full: the rest stay put
    pool_.add_system_pages(one.count());
    auto& sm = dc_.stats().system;
    sm.max_gpu_pages = std::max(sm.max_gpu_pages, pool_.system_pages());
    placed |= one;
    p = first + per;
  }
  const PageMask fresh = minus(want, b.cpu_resident);  // first touch: populated, no copy
  populate_system_host(b, minus(fresh, placed), st);   // the GPU node was full
  if (placed.none()) return 0;
  const PageMask from_cpu = placed & b.cpu_resident;
  const PageMask zero = minus(placed, b.cpu_resident);
  const auto& cost = dc_.cfg.cost;
  Tick ready = st.cpu;
  if (zero.any()) {
    dc_.stats().zero_filled_pages += zero.count();
    dc_.stats().system.gpu_first_touch_pages += zero.count();
    st.cpu += ns_to_ps(cost.system_page_fault_ns) * ((zero.count() + per - 1) / per);
    const double gbps = cost.zero_fill_gbps > 0 ? cost.zero_fill_gbps : dc_.cfg.hbm.bandwidth_gbps;
    ready =
        st.cpu + static_cast<Tick>(static_cast<double>(zero.count()) * kPageSize * 1000.0 / gbps);
    if (dc_.log().enabled())
      dc_.log().row(st.cpu, "zero_fill", dc_.log_batch, b.page_va(zero.find_next(0)),
                    std::uint64_t{zero.count()} * kPageSize, "", "system", zero.count(), 0);
  }
  if (from_cpu.any()) {
    // migrate_vma: unmap on the CPU, copy, remap; the per-page host work precedes the copy.
    dc_.stats().system.migrated_pages += from_cpu.count();
    st.cpu += ns_to_ps(cost.page_ns) * from_cpu.count();
    copy_in(b, from_cpu, demand, demand_cause, st.cpu, st);
  }
  b.cpu_resident.and_not(placed);
  gs.remote_mapped.and_not(placed);
  if (writes) gs.dirty |= (*writes & placed);
  gs.add_map_pending(minus(placed, gs.resident), dc_.sim.queue.now());
  gs.resident |= placed;
  gs.count = gs.resident.count();
  account_prefetch_use(b, placed & demand, minus(placed, demand), demand_cause);
  st.copy_done = std::max(st.copy_done, ready);
  return placed.count();
}

unsigned Residency::populate_system_host(VaBlock& b, const PageMask& pages, ServiceTimes& st) {
  const PageMask fresh = minus(minus(pages, b.cpu_resident), dc_.gpu_state(b).resident);
  if (fresh.none()) return 0;
  const unsigned per = static_cast<unsigned>(dc_.cfg.driver.system_page_size >> kPageShift);
  b.cpu_resident |= fresh;
  b.cpu_backed |= fresh;
  dc_.gpu_state(b).remote_mapped |= fresh;
  dc_.stats().system.host_fallback_pages += fresh.count();
  dc_.stats().remote_maps += fresh.count();
  st.cpu += ns_to_ps(dc_.cfg.cost.system_page_fault_ns) * ((fresh.count() + per - 1) / per);
  if (dc_.log().enabled())
    dc_.log().row(st.cpu, "remote_map", dc_.log_batch, b.page_va(fresh.find_next(0)),
                  std::uint64_t{fresh.count()} * kPageSize, "", "system", fresh.count(), 0);
  return fresh.count();
}

void Residency::made_resident(const VaBlock& b, Tick now) {
  // uvm_va_block_make_resident_finish (and uvm_va_block_make_resident_read_duplicate) end with
  // block_mark_memory_used whenever the block is resident on the destination GPU, whether this
  // call moved pages into it or not: the root chunk goes to the tail of the USED list
  // (uvm_pmm_gpu_mark_root_chunk_used). Fault servicing with its prefetch pages, access-counter
  // servicing and cudaMemPrefetchAsync all end there (uvm-driver.md section 5).
  if (dc_.gpu_state(b).count)
    policies_.each_for(b, [&](PolicyBase& p) { p.on_made_resident(b, now); });
}

void Residency::account_prefetch_use(VaBlock& b, const PageMask& asked, const PageMask& prefetched,
                                     HtodCause cause) {
  GpuBlockState& gs = dc_.gpu_state(b);
  // Pages that arrive ahead of an access are marked (state/prefetch_use.h); pages a fault asked
  // for are the coverage denominator. Access-counter and observation migrations follow remote
  // accesses that already happened, so they are neither.
  auto& u = dc_.stats().prefetch_use;
  mark_prefetched(gs, prefetched, PrefetchCause::Prefetch, u);
  switch (cause) {
    case HtodCause::Demand:
      u.demand_pages += asked.count();
      break;
    case HtodCause::UserPrefetch:
      mark_prefetched(gs, asked, PrefetchCause::UserPrefetch, u);
      break;
    case HtodCause::RegionPrefetch:
      mark_prefetched(gs, asked, PrefetchCause::RegionPrefetch, u);
      break;
    case HtodCause::Placement:
      mark_prefetched(gs, asked, PrefetchCause::Placement, u);
      break;
    default:
      break;
  }
}

void Residency::copy_in(VaBlock& b, const PageMask& from_cpu, const PageMask& demand,
                        HtodCause demand_cause, Tick ready, ServiceTimes& st) {
  // Copy runs in address order; a run is split where the cause changes, as CUPTI reports a
  // faulted page and its prefetched neighbours as separate transfers (calibration-facts.md).
  const PageMask dem = from_cpu & demand, pre = minus(from_cpu, demand);
  for (unsigned i = from_cpu.find_next(0); i < kPagesPerBlock;) {
    const bool is_demand = dem.test(i);
    const PageMask& m = is_demand ? dem : pre;
    const unsigned j = m.find_next_clear(i);
    PageMask run;
    run.set_range(i, j);
    std::uint64_t bytes = 0;
    const HtodCause cause = is_demand ? demand_cause : HtodCause::Prefetch;
    copies_.copy_runs(b, run, true, to_string(cause), ready, st, bytes);
    dc_.stats().add_htod(cause, bytes);
    i = from_cpu.find_next(j);
  }
}

Tick Residency::allocate_chunk(VaBlock& b, ServiceTimes& st) {
  ++dc_.stats().chunk_allocations;
  Tick ready = st.cpu;
  // A free chunk, or the victim whose chunk `b` takes (the eviction policy's for the general
  // pool; the placement partition decides when chunks are pinned or reserved).
  const std::uint32_t victim = pool_.choose_victim(b, st.cpu);
  if (pool_.policy_decided()) {
    // The decision's cost: a setEvictionRegion message from ObservUVM's userspace engine, or
    // the host computation of a policy that ranks on the host (LEU).
    st.cpu += policies_.messages(1, dc_.stats()) + policies_.eviction_decision_time(dc_.stats());
  }
  if (victim == kNoBlock) {
    pool_.take_free_chunk(st);
    ready = st.cpu;
  } else {
    ServiceTimes ev{st.cpu + ns_to_ps(dc_.cfg.cost.eviction_ns), st.cpu};
    eviction_.evict(dc_.block(victim), ev);
    st.cpu = ev.cpu;
    st.copy_done = std::max(st.copy_done, ev.copy_done);
    // The refill of the recycled chunk is ordered after the copy-out (root chunk tracker).
    ready = std::max(ev.cpu, ev.copy_done);
  }
  pool_.assign(b);
  policies_.each_for(b, [&](PolicyBase& p) { p.on_chunk_allocated(b, st.cpu); });
  // block_zero_new_gpu_chunk: every page of the new chunk resident nowhere is zeroed on the GPU.
  const PageMask nowhere = minus(minus(b.valid_mask(), b.cpu_resident), dc_.resident_on_gpus(b));
  if (nowhere.any()) {
    const auto& c = dc_.cfg;
    const double gbps = c.cost.zero_fill_gbps > 0 ? c.cost.zero_fill_gbps : c.hbm.bandwidth_gbps;
    ready += static_cast<Tick>(static_cast<double>(nowhere.count()) * kPageSize * 1000.0 / gbps);
  }
  return ready;
}

void Residency::invalidate(VaBlock& b, const PageMask& pages_in, Tick now) {
  GpuBlockState& gs = dc_.gpu_state(b);
  const PageMask pages = pages_in & gs.resident;
  if (pages.none()) return;
  gs.read_only.and_not(pages);
  gs.dirty.and_not(pages);
  if (pool_.placement().active()) pool_.unpin_leaving(b, pages, now);
  clear_gpu_resident(b, pages, now);
  ++gs.mapping_gen;
}

void Residency::invalidate_peers(VaBlock& b, const PageMask& pages, Tick now) {
  for (unsigned h = 0; h < dc_.gpus_of(b); ++h)
    if (h != dc_.gpu && b.gpu(h).resident.intersects(pages))
      dc_.shared.residency[h]->invalidate(b, pages, now);
}

Tick Residency::stage_from_peers(VaBlock& b, const PageMask& want, const PageMask* writes,
                                 ServiceTimes& st) {
  ServiceTimes sh{st.cpu, st.cpu};
  for (unsigned h = 0; h < dc_.gpus_of(b); ++h) {
    if (h == dc_.gpu) continue;
    const PageMask held = want & b.gpu(h).resident;
    if (held.none()) continue;
    Residency& peer = *dc_.shared.residency[h];
    // A read of a read-mostly block duplicates (can_read_duplicate): the holder keeps its copy,
    // read-only; a write, or a block that is not read-mostly, takes the page for itself.
    PageMask keep;
    if (b.read_mostly) {
      keep = held;
      if (writes) keep.and_not(*writes);
    }
    const PageMask on_host = held & b.cpu_resident;  // duplicates: the host has the data
    // The holder's copies are this GPU's fault batch's work: event-log rows name its batch.
    const LogBatchScope logged_as(peer.dc_, dc_.log_batch);
    peer.invalidate(b, minus(on_host, keep), sh.cpu);
    peer.migrate_to_cpu(b, minus(held, on_host) & keep, DtohCause::PeerStaged, sh, true);
    peer.migrate_to_cpu(b, minus(minus(held, on_host), keep), DtohCause::PeerStaged, sh);
  }
  st.cpu = sh.cpu;
  st.copy_done = std::max(st.copy_done, sh.copy_done);
  return std::max(sh.cpu, sh.copy_done);
}

void Residency::pull_from_peers(VaBlock& b, const PageMask& pages, const PageMask& keep,
                                HtodCause cause, Tick ready, ServiceTimes& st) {
  PageMask left = pages;
  for (unsigned h = 0; h < dc_.gpus_of(b) && left.any(); ++h) {
    if (h == dc_.gpu) continue;
    const PageMask held = left & b.gpu(h).resident;
    if (held.none()) continue;
    left.and_not(held);
    Residency& peer = *dc_.shared.residency[h];
    // The copy is pushed on the holder's GPU-to-GPU channel and logged with this GPU's batch.
    const LogBatchScope logged_as(peer.dc_, dc_.log_batch);
    const std::uint64_t bytes =
        peer.copies_.copy_to_peer(b, held, dc_.gpu, to_string(cause), ready, st);
    dc_.stats().add_peer_copy(h, dc_.gpu, bytes);
    // A read duplicate leaves the holder its copy, read-only (block_prep_read_duplicate_mapping
    // revokes its write access); any other copy moves, and the holder's is dropped.
    const PageMask kept = held & keep;
    peer.invalidate(b, minus(held, kept), st.cpu);
    GpuBlockState& hs = b.gpu(h);
    if (minus(kept, hs.read_only).any()) {
      hs.read_only |= kept;
      ++hs.mapping_gen;
    }
  }
}

void Residency::note_migration(VaBlock& b, const PageMask& pages, Processor dest, Tick now,
                               ThrashingDetector::Cause cause) {
  dc_.stats().thrashing_pages += thrashing_.on_migration(b.id, pages, dest, now, cause);
}

void Residency::migrate_to_cpu(VaBlock& b, const PageMask& pages_in, DtohCause cause,
                               ServiceTimes& st, bool duplicate) {
  GpuBlockState& gs = dc_.gpu_state(b);
  const PageMask pages = pages_in & gs.resident;
  if (pages.none()) return;
  if (ats_system(b)) {
    // The OS moves system pages back whole and the GPU maps them remotely again.
    pool_.remove_system_pages(pages.count());
    gs.remote_mapped |= pages;
    duplicate = false;
  }
  const PageMask copy = minus(pages, b.cpu_resident);
  // Pages that never had host memory get it first (block_populate_pages_cpu).
  const unsigned unbacked = minus(pages, b.cpu_backed).count();
  st.cpu += ns_to_ps(dc_.cfg.cost.cpu_page_alloc_ns) * unbacked;
  dc_.stats().cpu_backing_pages += unbacked;
  copy.for_each_run([&](unsigned a, unsigned e) {
    PageMask run;
    run.set_range(a, e);
    std::uint64_t rb = 0;
    copies_.copy_runs(b, run, false, to_string(cause), st.cpu, st, rb);
    dc_.stats().add_dtoh(cause, rb);
    if (cause == DtohCause::PeerStaged) dc_.stats().per_gpu[dc_.gpu].peer_staged_bytes += rb;
  });
  b.cpu_resident |= pages;
  b.cpu_backed |= pages;
  gs.dirty.and_not(pages);
  ++gs.mapping_gen;
  using C = ThrashingDetector::Cause;
  if (duplicate) {
    // Read duplication (block_select_processor_residency, can_read_duplicate): the host gets a
    // copy and the GPU keeps its own, mapped read-only (a GPU write faults and collapses).
    gs.read_only |= pages;
    dc_.stats().cpu_read_duplicates += copy.count();
    note_migration(b, copy, Processor::Cpu, st.cpu, C::Other);  // COPY mode: a reset
    return;
  }
  gs.read_only.and_not(pages);
  if (pool_.placement().active()) pool_.unpin_leaving(b, pages, st.cpu);
  clear_gpu_resident(b, pages, st.cpu);
  // CPU faults (and their prefetched pages) are events; user prefetch and policy moves reset;
  // the observation service's sample moves are not the driver's and stay out.
  if (cause == DtohCause::CpuFault)
    note_migration(b, copy, Processor::Cpu, st.cpu, b.read_mostly ? C::Other : C::Fault);
  if (cause == DtohCause::UserPrefetch || cause == DtohCause::Placement)
    note_migration(b, copy, Processor::Cpu, st.cpu, C::Other);
}

}  // namespace uvmsim
