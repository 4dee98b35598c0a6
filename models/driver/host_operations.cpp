#include "models/driver/host_operations.h"

#include <algorithm>

#include "models/driver/residency_choice.h"
#include "state/prefetch_use.h"

namespace uvmsim {

Tick HostOperations::cpu_access(Addr va, std::uint64_t size, AccessKind kind, Tick t) {
  auto& s = dc_.stats();
  expire_thrashing_pins(thrashing_, dc_, t);
  ServiceTimes st{t, t};
  const bool write = kind >= AccessKind::Write;
  for_each_block_page(dc_.va(), va, size, [&](VaBlock& b, unsigned p0, unsigned p1) {
    if (residency_.ats_system(b)) {
      // Grace reads and writes GPU memory coherently over NVLink-C2C: nothing moves. A first
      // touch populates whole OS pages in host memory, where the GPU maps them through the
      // shared page table (no GPU fault will follow).
      PageMask touched;
      touched.set_range(p0, p1);
      const PageMask fresh = minus(minus(residency_.system_pages_of(b, touched), b.cpu_resident),
                                   dc_.gpu_state(b).resident);
      if (fresh.any()) {
        b.cpu_resident |= fresh;
        b.cpu_backed |= fresh;
        dc_.gpu_state(b).remote_mapped |= fresh;
        ++dc_.gpu_state(b).mapping_gen;
        s.system.cpu_first_touch_pages += fresh.count();
      }
      return;
    }
    // With a coherent host link the CPU may map GPU memory, and a first touch of a page whose
    // preferred location is a GPU populates it there (block_select_processor_residency: a page
    // resident nowhere goes to the preferred location when the requester can map it).
    const Topology& topo = dc_.shared.topology;
    const bool cpu_maps_gpus = topo.can_access(0) != processor_bit(Processor::Cpu);
    const int pref_gpu = is_gpu(b.preferred) ? static_cast<int>(b.preferred) : -1;
    const bool populate_on_pref =
        pref_gpu >= 0 && (topo.accessible_from(1 + pref_gpu) & processor_bit(Processor::Cpu));
    PageMask on_pref;
    // (The table is sized with the topology, DriverShared::cpu_mapped.)
    PageMask* const cpu_mapped = cpu_maps_gpus && b.id < dc_.shared.cpu_mapped.size()
                                     ? &dc_.shared.cpu_mapped[b.id]
                                     : nullptr;
    for (unsigned p = p0; p < p1; ++p) {
      // The GPUs holding the page: one, or several read duplicates of a read-mostly block.
      unsigned first = kMaxGpus, holders = 0;
      for (unsigned g = 0; g < dc_.gpus_of(b); ++g)
        if (b.gpu(g).resident.test(p)) {
          first = std::min(first, g);
          ++holders;
        }
      const bool on_cpu = b.cpu_resident.test(p);
      if (on_cpu) {
        if (write && holders) {  // a CPU write ends read duplication
          PageMask one;
          one.set(p);
          for (unsigned g = 0; g < dc_.gpus_of(b); ++g)
            if (b.gpu(g).resident.test(p)) dc_.shared.residency[g]->invalidate(b, one, st.cpu);
        }
        continue;
      }
      if (!holders) {
        if (populate_on_pref && cpu_mapped) {
          on_pref.set(p);
          continue;
        }
        // first touch on the CPU: populated in host memory, no transfer
        b.cpu_resident.set(p);
        b.cpu_backed.set(p);
        ++s.cpu_first_touch_pages;
        continue;
      }
      if (cpu_mapped && cpu_mapped->test(p)) continue;  // in the holder's memory: coherent
      // Only on a GPU: an x86 CPU cannot map GPU memory over PCIe, so it faults
      // (uvm_va_block_cpu_fault). A throttled CPU sleeps until the throttling period ends and
      // tries again. Over PCIe a pin for the CPU is a pin in host memory, so the page moves
      // here; over a coherent link the pin may keep it on the GPU.
      ThrashingDetector::Result h;
      for (int tries = 0; tries < 8; ++tries) {
        h = thrashing_hint(thrashing_, b, p, Processor::Cpu, dc_.va().gpus(), st.cpu);
        if (h.type == ThrashingDetector::Hint::Pin) ++s.pin_hints;
        if (h.type != ThrashingDetector::Hint::Throttle) break;
        ++s.throttle_hints;
        st.cpu = std::max(st.cpu, h.throttle_end);
      }
      if (cpu_mapped && cpu_keeps_on_gpu(b, p, kind, h)) {
        ++s.cpu_faults;
        ++s.cpu_remote_maps;
        st.cpu += ns_to_ps(dc_.cfg.cost.cpu_fault_ns);
        cpu_mapped->set(p);
        continue;
      }
      // The holding GPU's copy comes back (its copy engine, its prefetcher's choice); copies
      // on other GPUs are read duplicates and stay unless the CPU writes.
      dc_.shared.host[first]->cpu_fault(b, p, write, st);
    }
    if (on_pref.any()) {
      // Zero-filled in the preferred GPU's memory (a chunk, evicting if it must), mapped by the
      // GPU and by the CPU, which writes it over the link.
      Residency& r = *dc_.shared.residency[static_cast<unsigned>(pref_gpu)];
      r.make_resident_gpu(b, on_pref, PageMask{}, HtodCause::Demand, st,
                          write ? &on_pref : nullptr);
      GpuBlockState& gs = b.gpu(static_cast<unsigned>(pref_gpu));
      ++gs.mapping_gen;
      gs.map_ready_at = std::max(gs.map_ready_at, std::max(st.cpu, st.copy_done));
      *cpu_mapped |= on_pref;
      s.cpu_remote_maps += on_pref.count();
    }
  });
  return std::max(st.cpu, st.copy_done);
}

bool HostOperations::cpu_keeps_on_gpu(const VaBlock& b, unsigned page, AccessKind kind,
                                      const ThrashingDetector::Result& hint) const {
  // The driver's choice for a CPU fault (block_select_processor_residency): a GPU that holds
  // the page keeps it and the CPU maps it there. A choice of a GPU without a copy (a preferred
  // GPU while another has the page) would move it there; the model brings it to the host
  // instead (docs/platforms.md).
  const int t = select_residency(b, page, Processor::Cpu, kind, hint, dc_.shared.topology,
                                 dc_.gpus_of(b), dc_.cfg.thrashing.map_remote_on_native_atomics);
  return t > 0 && b.gpu(static_cast<unsigned>(t - 1)).resident.test(page);
}

void HostOperations::cpu_fault(VaBlock& b, unsigned page, bool write, ServiceTimes& st) {
  // The faulted page plus the tree prefetcher's choice, towards the CPU.
  ++dc_.stats().cpu_faults;
  st.cpu += ns_to_ps(dc_.cfg.cost.cpu_fault_ns);
  PageMask faulted, prefetch;
  faulted.set(page);
  if (b.last_migration_dest != Processor::Cpu) {
    b.fault_migrations_to_last_proc = 0;
    b.last_migration_dest = Processor::Cpu;
  }
  ++b.fault_migrations_to_last_proc;
  if (!is_gpu(b.preferred) &&
      b.fault_migrations_to_last_proc >= dc_.cfg.driver.prefetch_min_faults) {
    policies_.prefetch().compute(PrefetchPolicy::Request{b, Processor::Cpu, b.cpu_resident, faulted,
                                                         thrashing_.thrashing_pages(b.id), st.cpu},
                                 prefetch);
  }
  // A CPU read of a read-mostly block duplicates (can_read_duplicate): the GPU keeps its copy.
  residency_.migrate_to_cpu(b, faulted | prefetch, DtohCause::CpuFault, st,
                            b.read_mostly && !write);
  st.cpu = std::max(st.cpu, st.copy_done);
}

Tick HostOperations::user_prefetch(Addr va, std::uint64_t size, Processor dest, Tick t) {
  ServiceTimes st{t + ns_to_ps(dc_.cfg.cost.user_prefetch_ns), t};
  for_each_block_page(dc_.va(), va, size, [&](VaBlock& b, unsigned p0, unsigned p1) {
    PageMask pages;
    pages.set_range(p0, p1);
    st.cpu += ns_to_ps(dc_.cfg.cost.block_ns);
    if (!is_gpu(dest)) {  // every GPU's copy comes back
      for (unsigned g = 0; g < dc_.gpus_of(b); ++g)
        dc_.shared.residency[g]->migrate_to_cpu(b, pages, DtohCause::UserPrefetch, st);
      return;
    }
    const PlacementState& place = pool_.placement();
    if (place.active()) {
      pages.and_not(place.block(b.id).host_pinned);  // host pins stay on the host
      if (pages.none() || (!dc_.gpu_state(b).has_chunk && !pool_.chunk_obtainable(b))) return;
    }
    if (observations_.find(b.id)) observations_.drop(b, false);
    residency_.make_resident_gpu(b, pages, PageMask{}, HtodCause::UserPrefetch, st, nullptr);
    dc_.gpu_state(b).remote_mapped.and_not(dc_.gpu_state(b).resident);
    ++dc_.gpu_state(b).mapping_gen;
    dc_.gpu_state(b).map_ready_at =
        std::max(dc_.gpu_state(b).map_ready_at, std::max(st.cpu, st.copy_done));
  });
  return std::max(st.cpu, st.copy_done);
}

Tick HostOperations::free_allocation(VaRange& r, Tick t) {
  // cudaFree of managed memory ends in uvm_va_range_destroy: each VA block is killed
  // (uvm_va_block_kill) once its tracker is done, its GPU chunks go back to the PMM free list and
  // its CPU pages are freed. Nothing is copied back: the data is dead.
  auto& s = dc_.stats();
  ++s.frees;
  ServiceTimes st{t, t};
  for (std::uint32_t id = r.first_block; id < r.first_block + r.num_blocks; ++id) {
    VaBlock& b = dc_.block(id);
    thrashing_.forget_block(b.id);
    const PageMask host = b.cpu_backed | b.cpu_resident;
    s.freed_cpu_pages += host.count();
    // Every GPU's part of the block (its chunk, its policies, its placement state).
    for (unsigned g = 0; g < dc_.gpus_of(b); ++g) dc_.shared.host[g]->free_block(b, host.any(), st);
    b.cpu_resident.clear();
    b.cpu_backed.clear();
    b.preferred = PreferredLocation::None;
    b.accessed_by = 0;
    b.read_mostly = false;
    b.fault_migrations_to_last_proc = 0;
    b.last_migration_dest = Processor::Cpu;
  }
  r.freed = true;
  if (dc_.log().enabled())
    dc_.log().row(t, "free", -1, r.base, r.size, "", "", r.num_blocks, st.cpu - t);
  return st.cpu;
}

void HostOperations::free_block(VaBlock& b, bool host_pages, ServiceTimes& st) {
  auto& s = dc_.stats();
  GpuBlockState& gs = dc_.gpu_state(b);
  PlacementState& place = pool_.placement();
  if (observations_.find(b.id)) observations_.drop(b, false);
  if (residency_.ats_system(b)) {
    // free()/munmap of system memory: the OS frees its pages; UVM's policies never saw them.
    pool_.remove_system_pages(gs.count);
    s.freed_gpu_pages += gs.count;
    note_leaving_gpu(gs, gs.resident, s.prefetch_use);
  } else if (gs.has_chunk || (host_pages && dc_.gpu == 0)) {
    // The block lock, unmapping and chunk frees: the per-block cost of the driver's work (the
    // host pages' share is GPU 0's, so that a block without GPU memory still pays it once).
    st.cpu = std::max(st.cpu, b.copies_in_done) + ns_to_ps(dc_.cfg.cost.block_ns);
    policies_.each_for(b, [&](PolicyBase& p) { p.on_freed(b, st.cpu); });
    s.freed_gpu_pages += gs.count;
    note_leaving_gpu(gs, gs.resident, s.prefetch_use);
    pool_.free_chunk(b);
  }
  if (place.active()) {
    place.leave_reservation(b);
    place.block(b.id) = BlockPlacement{};
    pool_.refresh(b, st.cpu);
  }
  gs.resident.clear();
  gs.remote_mapped.clear();
  gs.read_only.clear();
  gs.dirty.clear();
  gs.count = 0;
  ++gs.mapping_gen;
}

void HostOperations::advise(Addr va, std::uint64_t size, trace::Advice advice, Processor device) {
  using trace::Advice;
  for_each_block_page(dc_.va(), va, size, [&](VaBlock& b, unsigned, unsigned) {
    switch (advice) {
      case Advice::SetPreferredLocation:
        b.preferred = preferred_on(device);
        break;
      case Advice::UnsetPreferredLocation:
        b.preferred = PreferredLocation::None;
        break;
      case Advice::SetAccessedBy:
        b.accessed_by |= processor_bit(device);
        break;
      case Advice::UnsetAccessedBy:
        b.accessed_by &= ~processor_bit(device);
        break;
      case Advice::SetReadMostly:
        b.read_mostly = true;
        break;
      case Advice::UnsetReadMostly:
        b.read_mostly = false;
        break;
    }
    // Every GPU's view of the block changes: mappings are rebuilt on the next access.
    for (unsigned g = 0; g < dc_.gpus_of(b); ++g) {
      HostOperations& h = *dc_.shared.host[g];
      if (h.observations_.find(b.id)) h.observations_.drop(b, false);
      GpuBlockState& gs = b.gpu(g);
      if (advice == Advice::UnsetPreferredLocation) gs.remote_mapped.clear();
      if (advice == Advice::UnsetReadMostly) gs.read_only.clear();
      ++gs.mapping_gen;
    }
  });
}

}  // namespace uvmsim
