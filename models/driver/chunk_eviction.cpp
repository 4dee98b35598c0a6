#include "models/driver/chunk_eviction.h"

#include "state/prefetch_use.h"

namespace uvmsim {

void ChunkEviction::evict(VaBlock& v, ServiceTimes& st) {
  GpuBlockState& gs = dc_.gpu_state(v);
  auto& s = dc_.stats();
  const PageMask pages = gs.resident;
  // No dirty tracking in the driver: every GPU-resident page is copied back, except pages that
  // also have a valid CPU copy (read duplication). dirty-only write-back is a what-if option.
  PageMask copy = minus(pages, v.cpu_resident);
  if (dc_.cfg.driver.evict_dirty_only) copy &= gs.dirty;
  std::uint64_t bytes = 0;
  // Host work before the copy-out can start (uvm_va_block_evict_chunks ->
  // uvm_va_block_make_resident to the CPU): every evicted page is unmapped from the GPU and its
  // per-page state updated, and pages that never had host memory get it allocated and
  // DMA-mapped first (block_populate_pages_cpu). The per-chunk part (cost.eviction_ns) is
  // charged by the caller. See docs/cost-model.md, "Eviction".
  const auto& cost = dc_.cfg.cost;
  const PageMask unbacked = minus(pages, v.cpu_backed);
  st.cpu += ns_to_ps(cost.eviction_page_ns) * pages.count() +
            ns_to_ps(cost.cpu_page_alloc_ns) * unbacked.count();
  s.cpu_backing_pages += unbacked.count();
  const Tick start = st.cpu;
  copy.for_each_run([&](unsigned a, unsigned e) {
    PageMask run;
    run.set_range(a, e);
    std::uint64_t rb = 0;
    copies_.copy_runs(v, run, false, to_string(DtohCause::Eviction), start, st, rb);
    s.add_dtoh(DtohCause::Eviction, rb);
    bytes += rb;
  });
  ++s.evictions;
  ++s.per_gpu[dc_.gpu].evictions;
  s.evicted_pages += pages.count();
  if (dc_.log().enabled())
    dc_.log().row(start, "eviction", dc_.log_batch, v.start + (Addr{v.first_page} << kPageShift),
                  bytes, "dtoh", "eviction", pages.count(), 0);
  v.cpu_resident |= pages;
  v.cpu_backed |= pages;
  // With access-counter migration on, evicted pages are mapped back remotely
  // (uvm_perf_map_remote_on_eviction) and the counters can bring them back.
  if (counters_.counting()) gs.remote_mapped |= counters_.remap_on_eviction(v, pages);
  note_leaving_gpu(gs, gs.resident, s.prefetch_use);
  gs.resident.clear();
  gs.count = 0;
  gs.read_only.clear();
  gs.dirty.clear();
  gs.has_chunk = false;
  ++gs.mapping_gen;
  pool_.release(v);
  // Policies see an observed region's observation during on_eviction ("evicted before being
  // accessed", negative feedback); it ends right after.
  policies_.each_for(v, [&](PolicyBase& p) { p.on_eviction(v, st.cpu); });
  st.cpu += policies_.messages(1, s);  // onEviction, relayed to userspace
  observations_.on_evicted(v);
}

}  // namespace uvmsim
