// The driver's placement actions: the "enhanced driver" of SUV (Pratheek et al., MICRO 2024,
// §V-D) — suvPinOnGPU, suvPinOnHost, on-demand migration into an HBM reservation, prefetch-and-pin
// and the release of expired ranges, suvEnableAccessCounter for chosen ranges,
// suvSetNoMigrateRegion — plus cudaMemAdvise(SetPreferredLocation) and cudaMemPrefetchAsync for
// the object-level schemes of Li & Chapman (SC 2019). docs/driver-model.md "Placement actions"
// documents each operation and its cost.
//
// Every action changes real state and pays real costs: pinning migrates data through the copy
// engines and allocates (evicting) chunks, host pinning copies GPU pages back and memsets
// untouched pages on the host, remote-mapped pages are then accessed over the link. An action
// requested from a program-structure hook runs on the host before the next launch (the launch
// waits for it, as a kernel waits for the stream's cudaMemPrefetchAsync); one requested during a
// kernel is queued to the driver's serial service thread.
//
// GPU memory is partitioned between pinned chunks, reservations and the general pool the
// eviction policy manages (state/placement_state.h). Chunks that are pinned or reserved are
// withheld from the eviction policy: it is told (on_chunk_withheld / on_chunk_returned) and hears
// nothing else about them, so it can never pick them.
#include <algorithm>

#include "models/driver/policy_facade.h"

namespace uvmsim {

namespace {
std::uint64_t pages_bytes(const PageMask& m) { return std::uint64_t{m.count()} * kPageSize; }
}  // namespace

Tick PolicyFacade::host_first_touch(VaBlock& b, const PageMask& pages) {
  const PageMask untouched = minus(minus(pages, b.cpu_resident), dc_.gpu_state(b).resident);
  if (untouched.none()) return 0;
  b.cpu_resident |= untouched;
  b.cpu_backed |= untouched;
  dc_.stats().placement.host_memset_pages += untouched.count();
  // SUV memsets uninitialised host-pinned data so the GPU never faults on it (§V-D ②).
  return static_cast<Tick>(static_cast<double>(pages_bytes(untouched)) * 1000.0 /
                           dc_.cfg.cost.host_memset_gbps);
}

// ---------------------------------------------------------------------------------------------
// Running actions.

void PolicyFacade::placement_action(const char* op, Addr va, std::uint64_t size,
                                    std::function<bool(ServiceTimes&)> f) {
  // Runs it, and logs one "placement" event row (cause = the operation) if it changed anything.
  auto run = [this, op, va, size, f = std::move(f)](ServiceTimes& st) {
    const Tick t0 = st.cpu;
    st.cpu += ns_to_ps(dc_.cfg.cost.placement_call_ns);
    if (!f(st)) return false;
    const Tick end = std::max(st.cpu, st.copy_done);
    ++dc_.stats().placement.actions;
    dc_.stats().placement.host_time += end - t0;
    if (dc_.log().enabled())
      dc_.log().row(t0, "placement", -1, va, size, "", op, (size + kPageSize - 1) / kPageSize,
                    end - t0);
    return true;
  };
  if (on_host()) {
    const Tick start = std::max(dc_.clock, host_ready_);
    ServiceTimes st{start, start};
    if (run(st)) host_ready_ = std::max({host_ready_, st.cpu, st.copy_done});
    return;
  }
  deferred_.push_back(std::move(run));
  request_service_(dc_.clock);
}

void PolicyFacade::service_deferred_actions(ServiceTimes& st) {
  if (deferred_.empty()) return;
  std::vector<std::function<bool(ServiceTimes&)>> queue;
  queue.swap(deferred_);
  for (auto& f : queue) {
    const ServiceTimes before = st;
    if (!f(st)) st = before;  // nothing changed: no call was made
  }
}

template <typename F>
void PolicyFacade::placement_on_range(const char* op, Addr va, std::uint64_t size, F f) {
  placement_action(op, va, size, [this, va, size, f](ServiceTimes& st) mutable {
    bool changed = false;
    for_each_block_page(dc_.va(), va, size, [&](VaBlock& b, unsigned p0, unsigned p1) {
      PageMask pages;
      pages.set_range(p0, p1);
      changed |= f(b, pages, st);
    });
    return changed;
  });
}

// ---------------------------------------------------------------------------------------------
// Actions.

std::uint64_t PolicyFacade::pin_on_gpu(Addr va, std::uint64_t size) {
  std::uint64_t pinned = 0;
  const bool now = on_host();
  std::uint64_t* out = now ? &pinned : nullptr;
  bool full = false;  // copied into the action: stops it at the first block without a chunk
  placement_on_range(
      "pin_on_gpu", va, size,
      [this, out, full](VaBlock& b, const PageMask& pages, ServiceTimes& st) mutable {
        PlacementState& place = p_.pool.placement();
        if (full || pages.none()) return false;
        BlockPlacement& bp = place.block(b.id);
        const PageMask add = minus(pages, bp.gpu_pinned);
        if (add.none()) {
          if (out) *out += pages_bytes(pages);
          return false;
        }
        p_.pool.activate_placement();
        const PageMask saved = bp.gpu_pinned;
        bp.gpu_pinned |= add;  // the block takes its chunk as a pinned one
        p_.pool.refresh(b, st.cpu);
        if (!dc_.gpu_state(b).has_chunk && !p_.pool.chunk_obtainable(b)) {
          bp.gpu_pinned = saved;  // out of unpinned, unreserved memory: stop here
          p_.pool.refresh(b, st.cpu);
          full = true;
          return false;
        }
        drop_observation(b);
        // A GPU pin overrides host pins, no-migrate and access-counter settings of its pages.
        const PageMask unmap = add & dc_.gpu_state(b).remote_mapped;
        bp.host_pinned.and_not(add);
        bp.no_migrate.and_not(add);
        bp.acm.and_not(add);
        dc_.gpu_state(b).remote_mapped.and_not(add);
        st.cpu += ns_to_ps(dc_.cfg.cost.block_ns) + ns_to_ps(dc_.cfg.cost.page_ns) * unmap.count();
        p_.residency.make_resident_gpu(b, add, PageMask{}, HtodCause::Placement, st, nullptr);
        ++dc_.gpu_state(b).mapping_gen;
        dc_.gpu_state(b).map_ready_at =
            std::max(dc_.gpu_state(b).map_ready_at, std::max(st.cpu, st.copy_done));
        p_.pool.refresh(b, st.cpu);
        dc_.stats().placement.gpu_pinned_pages += add.count();
        if (out) *out += pages_bytes(pages);
        return true;
      });
  return pinned;
}

void PolicyFacade::unpin_on_gpu(Addr va, std::uint64_t size) {
  placement_on_range("unpin_on_gpu", va, size,
                     [this](VaBlock& b, const PageMask& pages, ServiceTimes& st) {
                       PlacementState& place = p_.pool.placement();
                       BlockPlacement& bp = place.block(b.id);
                       if ((bp.gpu_pinned & pages).none()) return false;
                       bp.gpu_pinned.and_not(pages);
                       st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
                       p_.pool.refresh(b, st.cpu);
                       return true;
                     });
}

void PolicyFacade::pin_on_host(Addr va, std::uint64_t size) {
  placement_on_range(
      "pin_on_host", va, size, [this](VaBlock& b, const PageMask& pages, ServiceTimes& st) {
        PlacementState& place = p_.pool.placement();
        BlockPlacement& bp = place.block(b.id);
        const PageMask add = minus(pages, bp.host_pinned);
        if (add.none()) return false;
        p_.pool.activate_placement();
        drop_observation(b);
        st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
        // ① GPU copies come back to the host (a host pin overrides a GPU pin of
        // these pages).
        bp.gpu_pinned.and_not(add);
        const PageMask on_gpu = add & dc_.gpu_state(b).resident;
        if (on_gpu.any()) {
          p_.residency.migrate_to_cpu(b, on_gpu, DtohCause::Placement, st);
          st.cpu = std::max(st.cpu, st.copy_done);
        }
        // ② Uninitialised pages are first-touched (memset) on the host, so the GPU
        // never faults.
        st.cpu += host_first_touch(b, add);
        // ③ SetAccessedBy: the GPU maps the host copy (PTE writes for pages not
        // mapped yet); it never migrates.
        const PageMask map = minus(add, dc_.gpu_state(b).remote_mapped);
        dc_.gpu_state(b).remote_mapped |= add;
        bp.host_pinned |= add;
        bp.no_migrate |= add;
        if (map.any() || on_gpu.any()) {
          st.cpu += ns_to_ps(dc_.cfg.cost.page_ns) * map.count();
          ++dc_.gpu_state(b).mapping_gen;
          dc_.gpu_state(b).map_ready_at = std::max(dc_.gpu_state(b).map_ready_at, st.cpu);
        }
        p_.pool.refresh(b, st.cpu);
        dc_.stats().placement.host_pinned_pages += add.count();
        return true;
      });
}

void PolicyFacade::unpin_on_host(Addr va, std::uint64_t size) {
  placement_on_range(
      "unpin_on_host", va, size, [this](VaBlock& b, const PageMask& pages, ServiceTimes& st) {
        PlacementState& place = p_.pool.placement();
        BlockPlacement& bp = place.block(b.id);
        const PageMask drop = pages & bp.host_pinned;
        if (drop.none()) return false;
        bp.host_pinned.and_not(drop);
        bp.no_migrate.and_not(drop);
        // Pages still under access-counter migration or a preferred CPU location stay mapped.
        PageMask unmap = minus(drop, bp.acm);
        if (b.preferred == PreferredLocation::Cpu) unmap.clear();
        dc_.gpu_state(b).remote_mapped.and_not(unmap);
        st.cpu += ns_to_ps(dc_.cfg.cost.block_ns) + ns_to_ps(dc_.cfg.cost.page_ns) * unmap.count();
        ++dc_.gpu_state(b).mapping_gen;
        return true;
      });
}

std::uint32_t PolicyFacade::reserve_on_demand(Addr va, std::uint64_t size, std::uint64_t bytes) {
  std::uint32_t id = 0;
  const bool now = on_host();
  std::uint32_t* out = now ? &id : nullptr;
  placement_action("reserve_on_demand", va, size, [this, va, size, bytes, out](ServiceTimes& st) {
    PlacementState& place = p_.pool.placement();
    std::vector<VaBlock*> members;
    for_each_block_page(dc_.va(), va, size, [&](VaBlock& b, unsigned, unsigned) {
      if (members.empty() || members.back() != &b) members.push_back(&b);
    });
    if (members.empty()) return false;
    p_.pool.activate_placement();
    const std::uint32_t r = place.create_reservation((bytes + kBlockSize - 1) / kBlockSize);
    ++dc_.stats().placement.reservations;
    // ONDEMAND unsets the range's pins and no-migrate (§V-D ③): the pages migrate on faults
    // into the reservation. Access-counter migration is kept, so a reserved range may also
    // migrate by counters (SUV's Unknown structures, Algorithm 1 lines 4-5).
    for_each_block_page(dc_.va(), va, size, [&](VaBlock& b, unsigned p0, unsigned p1) {
      PageMask pages;
      pages.set_range(p0, p1);
      BlockPlacement& bp = place.block(b.id);
      drop_observation(b);
      PageMask unmap = minus(pages & bp.host_pinned & dc_.gpu_state(b).remote_mapped, bp.acm);
      if (b.preferred == PreferredLocation::Cpu) unmap.clear();
      bp.gpu_pinned.and_not(pages);
      bp.host_pinned.and_not(pages);
      bp.no_migrate.and_not(pages);
      dc_.gpu_state(b).remote_mapped.and_not(unmap);
      if (unmap.any()) ++dc_.gpu_state(b).mapping_gen;
      st.cpu += ns_to_ps(dc_.cfg.cost.block_ns) + ns_to_ps(dc_.cfg.cost.page_ns) * unmap.count();
    });
    for (VaBlock* b : members) {
      if (place.block(b->id).reservation != r) {
        place.leave_reservation(*b);
        p_.pool.refresh(*b, st.cpu);
        place.join_reservation(*b, r);
      }
      p_.pool.refresh(*b, st.cpu);
    }
    if (out) *out = r;
    return true;
  });
  return id;
}

void PolicyFacade::release_reservation(Addr va, std::uint64_t size) {
  placement_on_range("release_reservation", va, size,
                     [this](VaBlock& b, const PageMask&, ServiceTimes& st) {
                       PlacementState& place = p_.pool.placement();
                       if (!place.block(b.id).reservation) return false;
                       place.leave_reservation(b);
                       p_.pool.refresh(b, st.cpu);
                       return true;
                     });
}

void PolicyFacade::release_range(Addr va, std::uint64_t size) {
  placement_on_range("release_range", va, size,
                     [this](VaBlock& b, const PageMask& pages, ServiceTimes& st) {
                       PlacementState& place = p_.pool.placement();
                       BlockPlacement& bp = place.block(b.id);
                       const PageMask move = pages & dc_.gpu_state(b).resident;
                       if ((bp.gpu_pinned & pages).none() && move.none()) return false;
                       drop_observation(b);
                       st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
                       bp.gpu_pinned.and_not(pages);
                       p_.pool.refresh(b, st.cpu);
                       if (move.any()) {
                         p_.residency.migrate_to_cpu(b, move, DtohCause::Placement, st);
                         dc_.stats().placement.released_pages += move.count();
                       }
                       return true;
                     });
}

void PolicyFacade::prefetch_range(Addr va, std::uint64_t size, Processor dest) {
  placement_on_range(
      dest == dc_.processor() ? "prefetch_to_gpu" : "prefetch_to_cpu", va, size,
      [this, dest](VaBlock& b, const PageMask& pages, ServiceTimes& st) {
        PlacementState& place = p_.pool.placement();
        const BlockPlacement& bp = place.block(b.id);
        // To the GPU: what is not there yet, host pins excepted; to the host: GPU
        // pins excepted.
        const PageMask move = dest == dc_.processor()
                                  ? minus(minus(pages, dc_.gpu_state(b).resident), bp.host_pinned)
                                  : minus(pages & dc_.gpu_state(b).resident, bp.gpu_pinned);
        if (move.none()) return false;
        if (dest == dc_.processor() && !dc_.gpu_state(b).has_chunk && !p_.pool.chunk_obtainable(b))
          return false;
        drop_observation(b);
        st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
        if (dest == Processor::Cpu) {
          p_.residency.migrate_to_cpu(b, move, DtohCause::Placement, st);
          return true;
        }
        p_.residency.make_resident_gpu(b, move, PageMask{}, HtodCause::Placement, st, nullptr);
        dc_.gpu_state(b).remote_mapped.and_not(dc_.gpu_state(b).resident);
        ++dc_.gpu_state(b).mapping_gen;
        dc_.gpu_state(b).map_ready_at =
            std::max(dc_.gpu_state(b).map_ready_at, std::max(st.cpu, st.copy_done));
        return true;
      });
}

void PolicyFacade::set_access_counter_migration(Addr va, std::uint64_t size, bool on) {
  placement_on_range(
      on ? "access_counters_on" : "access_counters_off", va, size,
      [this, on](VaBlock& b, const PageMask& pages, ServiceTimes& st) {
        PlacementState& place = p_.pool.placement();
        BlockPlacement& bp = place.block(b.id);
        if (on) {
          const PageMask add = minus(pages, bp.acm);
          if (add.none()) return false;
          p_.pool.activate_placement();
          p_.counters.enable_for_ranges();
          drop_observation(b);
          bp.acm |= add;
          // Pages not on the GPU are mapped remotely so the counters see their accesses.
          const PageMask map =
              minus(minus(add, dc_.gpu_state(b).resident), dc_.gpu_state(b).remote_mapped);
          st.cpu += host_first_touch(b, map);
          dc_.gpu_state(b).remote_mapped |= map;
          st.cpu += ns_to_ps(dc_.cfg.cost.block_ns) + ns_to_ps(dc_.cfg.cost.page_ns) * map.count();
          if (map.any()) ++dc_.gpu_state(b).mapping_gen;
        } else {
          const PageMask drop = pages & bp.acm;
          if (drop.none()) return false;
          bp.acm.and_not(drop);
          PageMask unmap = minus(drop & dc_.gpu_state(b).remote_mapped, bp.host_pinned);
          if (b.preferred == PreferredLocation::Cpu) unmap.clear();
          dc_.gpu_state(b).remote_mapped.and_not(unmap);
          st.cpu +=
              ns_to_ps(dc_.cfg.cost.block_ns) + ns_to_ps(dc_.cfg.cost.page_ns) * unmap.count();
          ++dc_.gpu_state(b).mapping_gen;
        }
        return true;
      });
}

void PolicyFacade::set_no_migrate(Addr va, std::uint64_t size, bool on) {
  placement_on_range(on ? "no_migrate_on" : "no_migrate_off", va, size,
                     [this, on](VaBlock& b, const PageMask& pages, ServiceTimes& st) {
                       PlacementState& place = p_.pool.placement();
                       BlockPlacement& bp = place.block(b.id);
                       const PageMask diff =
                           on ? minus(pages, bp.no_migrate) : (pages & bp.no_migrate);
                       if (diff.none()) return false;
                       p_.pool.activate_placement();
                       if (on)
                         bp.no_migrate |= diff;
                       else
                         bp.no_migrate.and_not(diff);
                       st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
                       return true;
                     });
}

void PolicyFacade::set_preferred_location(Addr va, std::uint64_t size, PreferredLocation where) {
  placement_on_range(where == PreferredLocation::Cpu ? "prefer_cpu"
                     : is_gpu(where)                 ? "prefer_gpu"
                                                     : "prefer_none",
                     va, size, [this, where](VaBlock& b, const PageMask&, ServiceTimes& st) {
                       PlacementState& place = p_.pool.placement();
                       if (b.preferred == where) return false;
                       drop_observation(b);
                       const bool was_cpu = b.preferred == PreferredLocation::Cpu;
                       b.preferred = where;
                       st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
                       if (was_cpu) {
                         // Leaving a preferred CPU location drops the remote mappings it caused,
                         // except those of host pins and access-counter ranges: the next GPU access
                         // faults and migrates.
                         const BlockPlacement& bp = place.block(b.id);
                         const PageMask unmap =
                             minus(dc_.gpu_state(b).remote_mapped, bp.host_pinned | bp.acm);
                         dc_.gpu_state(b).remote_mapped.and_not(unmap);
                         st.cpu += ns_to_ps(dc_.cfg.cost.page_ns) * unmap.count();
                       }
                       ++dc_.gpu_state(b).mapping_gen;
                       return true;
                     });
}

}  // namespace uvmsim
