#include "models/uvm_driver.h"

#include <algorithm>
#include <stdexcept>

#include "core/error.h"
#include "policies/registry.h"

namespace uvmsim {

namespace {
constexpr const char* kHtod = "htod";
constexpr const char* kDtoh = "dtoh";
}  // namespace

UvmDriver::UvmDriver(SimContext& ctx, FaultBuffer& buffer, std::uint64_t capacity_chunks,
                     std::filesystem::path trace_path, const trace::Hints* hints)
    : ctx_(ctx),
      cfg_(ctx.cfg),
      buffer_(buffer),
      capacity_chunks_(capacity_chunks),
      trace_path_(std::move(trace_path)),
      hints_(hints) {
  const std::size_t nblocks = ctx.va.blocks().size();
  thrashing_.configure(cfg_.thrashing, nblocks);
  counters_.configure(cfg_.access_counters);
  resident_pos_.assign(nblocks, ~0u);
  region_queued_.assign(nblocks, 0);
  resident_.reserve(std::min<std::uint64_t>(capacity_chunks, nblocks));
  obs_.configure(cfg_.observe, cfg_.access_counters.count, nblocks, capacity_chunks,
                 cfg_.engine.seed);
  place_.configure(nblocks, capacity_chunks);
  acm_all_ = cfg_.access_counters.migration;

  // Policies are created last: they may use the engine (this) from their constructors.
  validate_policy_params(cfg_);
  const PolicyContext base{cfg_, ctx.va, cfg_.engine.seed, nlohmann::json::object(), this};
  eviction_ = make_eviction_policy(cfg_.engine.eviction, base.for_policy(cfg_.engine.eviction));
  const std::string pf = cfg_.driver.prefetch_enable ? cfg_.engine.prefetch : "none";
  prefetch_ = make_prefetch_policy(pf, base.for_policy(pf));
  placement_ = make_placement_policy(cfg_.engine.placement, base.for_policy(cfg_.engine.placement));
  bool observing = false;
  each_policy([&](PolicyBase& p) {
    if (p.wants_access_notifications()) access_subscribers_.push_back(&p);
    observing |= p.uses_observability();
  });
  if (observing) {
    // One hardware counter watches each observed region (2 MB granularity, threshold 1).
    const std::uint64_t want =
        std::uint64_t{cfg_.observe.max_regions} + cfg_.observe.max_feedback_regions;
    if (want > cfg_.access_counters.count)
      throw UserError(
          "observe.max_regions", "value",
          "observe.max_regions + observe.max_feedback_regions = " + std::to_string(want) +
              " exceeds the " + std::to_string(cfg_.access_counters.count) +
              " hardware access counters (access_counters.count)");
    obs_.set_active(true);
    ctx_.stats.observe.active = true;
    counters_.reserve(static_cast<std::uint32_t>(want));
  }
  ce_htod_.configure(&cfg_.link.htod_curve, ns_to_ps(cfg_.cost.copy_run_ns));
  ce_dtoh_.configure(&cfg_.link.dtoh_curve, ns_to_ps(cfg_.cost.copy_run_ns));
  batch_.reserve(cfg_.driver.fault_batch_count);
}

UvmDriver::~UvmDriver() = default;

// ---------------------------------------------------------------------------------------------
// Bottom half: fetch, coalesce, sort, service per VA block, flush, replay (uvm-driver.md §2).

void UvmDriver::on_fault_pushed(Tick valid_at) {
  if (bh_running_ || wake_scheduled_) return;
  wake_scheduled_ = true;
  ctx_.queue.schedule(valid_at + ns_to_ps(cfg_.gpu.interrupt_latency_ns), EventType::DriverWake);
}

void UvmDriver::on_remote_access(Addr va, std::uint32_t n, Tick now) {
  if (!counters_.record(va, n)) return;
  ++ctx_.stats.access_counter_notifications;
  if (!bh_running_ && !wake_scheduled_) {
    wake_scheduled_ = true;
    ctx_.queue.schedule(now + ns_to_ps(cfg_.gpu.interrupt_latency_ns), EventType::DriverWake);
  }
}

void UvmDriver::on_driver_wake(Tick now) {
  clock_ = now;
  wake_scheduled_ = false;
  if (!bh_running_) {
    bh_running_ = true;
    batches_in_run_ = throttled_in_run_ = 0;
    replay_issued_in_run_ = false;
    ++ctx_.stats.bottom_halves;
  }
  start_batch(now);
}

void UvmDriver::start_batch(Tick now) {
  if (policy_work_pending()) {
    // Observation notifications, region prefetches and observation set-up share the serial
    // service thread with fault batches. Work that takes no driver time falls through.
    ServiceTimes st{now, now};
    if (service_policy_work(st)) {
      wake_scheduled_ = true;
      ctx_.queue.schedule(std::max(st.cpu, st.copy_done), EventType::DriverWake);
      return;
    }
  }
  if (!counters_.pending().empty()) {
    // Access-counter notifications have their own servicing path in the driver; it shares the
    // serial service thread with fault batches here.
    ServiceTimes st{now + ns_to_ps(cfg_.cost.batch_fixed_ns), now};
    service_access_counters(st);
    wake_scheduled_ = true;
    ctx_.queue.schedule(std::max(st.cpu, st.copy_done), EventType::DriverWake);
    return;
  }
  if (batches_in_run_ >= cfg_.driver.max_batches_per_service ||
      throttled_in_run_ >= cfg_.driver.max_throttle_per_service) {
    end_bottom_half(now);
    return;
  }
  // Fetch up to fault_batch_count raw entries that are valid now, coalescing duplicates of the
  // same uTLB's last fault or of the batch's last fault (fetch_fault_buffer_entries).
  batch_.clear();
  utlb_last_.assign(utlb_last_.size(), ~0u);
  std::size_t fetched = 0;
  std::uint64_t coalesced = 0;
  while (fetched < cfg_.driver.fault_batch_count && !buffer_.empty() &&
         buffer_.front().valid_at <= now) {
    const FaultEntry e = buffer_.front();
    buffer_.pop();
    ++fetched;
    if (cfg_.driver.fault_coalesce) {
      if (e.utlb >= utlb_last_.size()) utlb_last_.resize(e.utlb + 1, ~0u);
      const std::uint32_t li = utlb_last_[e.utlb];
      BatchFault* into = nullptr;
      if (li != ~0u && batch_[li].page_va == e.page_va) {
        into = &batch_[li];
      } else if (!batch_.empty() && batch_.back().page_va == e.page_va &&
                 e.kind <= batch_.back().kind) {
        into = &batch_.back();
      }
      if (into) {
        into->kind = std::max(into->kind, e.kind);
        ++into->instances;
        ++coalesced;
        continue;
      }
      utlb_last_[e.utlb] = static_cast<std::uint32_t>(batch_.size());
    }
    batch_.push_back({e.page_va, e.kind, e.utlb, 1});
  }
  if (fetched == 0) {
    end_bottom_half(now);
    return;
  }
  cached_put_unfetched_ = buffer_.valid_count(now);
  auto& s = ctx_.stats;
  s.faults_fetched += fetched;
  s.faults_coalesced += coalesced;
  s.add_batch(fetched);
  ++batch_id_;
  ++batches_in_run_;
  batch_raw_ = fetched;
  batch_duplicates_ = coalesced;
  batch_throttled_ = false;
  batch_start_ = now;

  // preprocess_fault_batch: sort by address, most intrusive access first.
  std::sort(batch_.begin(), batch_.end(), [](const BatchFault& a, const BatchFault& b) {
    return a.page_va != b.page_va ? a.page_va < b.page_va : a.kind > b.kind;
  });

  Tick cpu = now + ns_to_ps(cfg_.cost.batch_fixed_ns) +
             ns_to_ps(cfg_.cost.fault_entry_ns) * static_cast<Tick>(fetched);
  if (!first_batch_done_) {
    cpu += ns_to_ps(cfg_.cost.first_fault_ns);
    first_batch_done_ = true;
  }
  ServiceTimes st{cpu, cpu};
  const std::uint64_t htod_before = s.htod_bytes;
  log_batch_ = batch_id_;
  // service_fault_batch: every fault of one VA block is serviced together.
  for (std::size_t i = 0; i < batch_.size();) {
    const Addr block_base = batch_[i].page_va & ~(kBlockSize - 1);
    std::size_t j = i + 1;
    while (j < batch_.size() && (batch_[j].page_va & ~(kBlockSize - 1)) == block_base) ++j;
    service_block(i, j, st, batch_throttled_);
    if (cfg_.driver.replay_policy == ReplayPolicy::Block) {
      schedule_replay(std::max(st.cpu, st.copy_done));
    }
    i = j;
  }
  log_batch_ = -1;
  if (obs_.active()) obs_refill_due_ = true;  // evictions and faults changed the candidates
  const Tick end = std::max(st.cpu, st.copy_done);
  s.batch_time_total += end - now;
  if (ctx_.log.enabled()) {
    ctx_.log.row(now, "batch", batch_id_, 0, s.htod_bytes - htod_before, "", "", fetched,
                 end - now);
  }
  ctx_.queue.schedule(end, EventType::BatchEnd, batch_id_);
}

void UvmDriver::on_batch_end(std::uint32_t, Tick now) {
  if (batch_throttled_) ++throttled_in_run_;
  switch (cfg_.driver.replay_policy) {
    case ReplayPolicy::BatchFlush: {
      // Entries between GET and the PUT cached at fetch time were never fetched: discard them.
      // With many duplicates PUT is re-read, so faults raised during servicing go too. The
      // discarded faults are raised again when the replay makes their warps retry.
      std::size_t n = std::min(cached_put_unfetched_, buffer_.size());
      if (batch_duplicates_ * 100 > std::uint64_t{cfg_.driver.replay_update_put_ratio} * batch_raw_)
        n = std::max(n, buffer_.valid_count(now));
      buffer_.discard(n);
      ctx_.stats.faults_flushed += n;
      schedule_replay(now);
      break;
    }
    case ReplayPolicy::Batch:
      schedule_replay(now);
      break;
    case ReplayPolicy::Block:
    case ReplayPolicy::Once:
      break;
  }
  // The bottom half waits for the replay to complete before fetching the next batch.
  wake_scheduled_ = true;
  ctx_.queue.schedule(now + ns_to_ps(cfg_.cost.replay_ns), EventType::DriverWake);
}

void UvmDriver::schedule_replay(Tick t) {
  ++ctx_.stats.replays;
  replay_issued_in_run_ = true;
  ctx_.queue.schedule(t + ns_to_ps(cfg_.cost.replay_ns), EventType::Replay);
}

void UvmDriver::end_bottom_half(Tick now) {
  if (!replay_issued_in_run_ && batches_in_run_ > 0) schedule_replay(now);
  bh_running_ = false;
  if (!buffer_.empty()) {
    // Interrupts are re-enabled; pending faults re-trigger the ISR.
    wake_scheduled_ = true;
    ctx_.queue.schedule(
        std::max(now, buffer_.front().valid_at) + ns_to_ps(cfg_.gpu.interrupt_latency_ns),
        EventType::DriverWake);
  }
}

void UvmDriver::service_block(std::size_t first, std::size_t last, ServiceTimes& st,
                              bool& throttled) {
  auto& s = ctx_.stats;
  const VaRange* r = ctx_.va.find_range(batch_[first].page_va);
  if (!r || !r->managed) return;  // the GPU model never faults outside managed ranges
  VaBlock& b = ctx_.va.blocks()[ctx_.va.block_index(*r, batch_[first].page_va)];
  st.cpu += ns_to_ps(cfg_.cost.block_ns);
  ++s.va_blocks_serviced;

  PageMask faulted, remote, writes;
  bool collapsed = false;
  unsigned prev = ~0u;
  for (std::size_t k = first; k < last; ++k) {
    const auto& f = batch_[k];
    const unsigned page = VaSpace::page_index(f.page_va);
    if (page == prev) {
      ++s.faults_duplicate;
      ++batch_duplicates_;
      continue;
    }
    prev = page;
    const bool write = f.kind >= AccessKind::Write;
    if (b.remote_mapped.test(page) ||
        (b.gpu_resident.test(page) && !(write && b.read_only_gpu.test(page)))) {
      ++s.faults_already_resident;
      continue;
    }
    switch (thrashing_.get_hint(b.id, page, Processor::Gpu, st.cpu)) {
      case ThrashingDetector::Hint::Throttle:
        ++s.faults_throttled;
        ++s.throttle_hints;
        throttled = true;
        continue;
      case ThrashingDetector::Hint::Pin:
        ++s.pin_hints;
        if (!b.gpu_resident.test(page)) remote.set(page);
        continue;
      case ThrashingDetector::Hint::None:
        break;
    }
    ++s.faults_serviced;
    if (write && b.gpu_resident.test(page)) {
      // Write to a read-duplicated page: collapse to the GPU copy, invalidate the CPU's.
      b.cpu_resident.reset(page);
      b.read_only_gpu.reset(page);
      b.dirty.set(page);
      collapsed = true;
      continue;
    }
    if (place_.active() && place_.block(b.id).no_migrate.test(page)) {
      // suvSetNoMigrateRegion / host pin: the driver never migrates it; the GPU maps it.
      ++s.placement.no_migrate_remote_maps;
      remote.set(page);
    } else if (placement_->place(b, page, f.kind, st.cpu) == PlacementPolicy::Decision::MapRemote) {
      remote.set(page);
    } else if (!b.has_chunk && !chunk_obtainable(b)) {
      // Every chunk this block could take is pinned or reserved for others: serve it remotely.
      ++s.placement.no_chunk_remote_maps;
      remote.set(page);
    } else {
      faulted.set(page);
      if (write) writes.set(page);
    }
  }

  if (remote.any()) {
    // Pages resident nowhere are populated in host memory first (zero-filled, no copy).
    PageMask fresh = minus(minus(remote, b.cpu_resident), b.gpu_resident);
    b.cpu_resident |= fresh;
    b.remote_mapped |= remote;
    const unsigned n = remote.count();
    s.remote_maps += n;
    st.cpu += ns_to_ps(cfg_.cost.page_ns) * n;
    if (ctx_.log.enabled())
      ctx_.log.row(st.cpu, "remote_map", log_batch_, b.page_va(remote.find_next(0)),
                   std::uint64_t{n} * kPageSize, "", "demand", n, 0);
  }
  if (faulted.any()) {
    PageMask prefetch;
    // Prefetch only if every faulted page of the block goes to one processor (the GPU here),
    // only towards the preferred location if there is one, and after min_faults faults.
    if (b.last_migration_dest != Processor::Gpu) {
      b.fault_migrations_to_last_proc = 0;
      b.last_migration_dest = Processor::Gpu;
    }
    b.fault_migrations_to_last_proc += faulted.count();
    const bool gated = remote.none() && (b.preferred == PreferredLocation::None ||
                                         b.preferred == PreferredLocation::Gpu);
    if (gated && b.fault_migrations_to_last_proc >= cfg_.driver.prefetch_min_faults) {
      if (b.preferred == PreferredLocation::Gpu && b.gpu_count == 0 && b.cpu_resident.none()) {
        prefetch = b.valid_mask();  // first touch at the preferred location: whole block
      } else {
        prefetch_->compute(PrefetchPolicy::Request{b, Processor::Gpu, b.gpu_resident, faulted,
                                                   thrashing_.thrashing_pages(b.id), st.cpu},
                           prefetch);
      }
      prefetch &= b.valid_mask();
      prefetch.and_not(faulted);
      prefetch.and_not(b.gpu_resident);
      if (place_.active()) prefetch.and_not(place_.block(b.id).no_migrate);  // host pins stay
      // An observed region's sample pages stay on the host until the GPU touches them.
      if (const ObservedRegion* o = obs_.find(b.id)) prefetch.and_not(o->samples);
    }
    if (prefetch.any()) {
      // onPrefetch, then the prefetch policy may keep feedback samples of it on the host.
      each_policy_for(b, [&](PolicyBase& p) { p.on_prefetch(b, prefetch, st.cpu); });
      observe_prefetch(b, prefetch, st);
    }
    make_resident_gpu(b, faulted, prefetch, HtodCause::Demand, st, &writes);
    if (obs_.active()) obs_.on_fault(b.id);
    for (unsigned p = faulted.find_next(0); p < kPagesPerBlock; p = faulted.find_next(p + 1))
      each_policy_for(b, [&](PolicyBase& x) { x.on_page_fault(b, p, st.cpu); });
  }
  if (faulted.any() || remote.any() || collapsed) {
    ++b.mapping_gen;  // PTE writes + TLB invalidate
    b.map_ready_at = std::max(b.map_ready_at, std::max(st.cpu, st.copy_done));
  }
}

// ---------------------------------------------------------------------------------------------
// make_resident and eviction (uvm-driver.md §5, §6).

void UvmDriver::set_gpu_resident(VaBlock& b, const PageMask& pages, Tick now) {
  const bool was_empty = b.gpu_count == 0;
  b.gpu_resident |= pages;
  b.gpu_count = b.gpu_resident.count();
  if (was_empty && b.gpu_count) each_policy_for(b, [&](PolicyBase& p) { p.on_populated(b, now); });
}

void UvmDriver::clear_gpu_resident(VaBlock& b, const PageMask& pages, Tick now) {
  const bool was_empty = b.gpu_count == 0;
  b.gpu_resident.and_not(pages);
  b.gpu_count = b.gpu_resident.count();
  if (!was_empty && b.gpu_count == 0 && b.has_chunk)
    each_policy_for(b, [&](PolicyBase& p) { p.on_emptied(b, now); });
}

void UvmDriver::copy_runs(const VaBlock& b, const PageMask& pages, bool htod, const char* cause,
                          Tick start, ServiceTimes& st, std::uint64_t& bytes_out) {
  CopyEngine& ce = htod ? ce_htod_ : ce_dtoh_;
  pages.for_each_run([&](unsigned s, unsigned e) {
    const std::uint64_t bytes = std::uint64_t{e - s} * kPageSize;
    Tick begin;
    const Tick done = ce.submit(start, bytes, begin);
    st.copy_done = std::max(st.copy_done, done);
    bytes_out += bytes;
    if (ctx_.log.enabled())
      ctx_.log.row(begin, "migration", log_batch_, b.page_va(s), bytes, htod ? kHtod : kDtoh, cause,
                   e - s, done - begin);
  });
}

unsigned UvmDriver::make_resident_gpu(VaBlock& b, const PageMask& demand, const PageMask& prefetch,
                                      HtodCause demand_cause, ServiceTimes& st,
                                      const PageMask* writes, bool track_thrashing) {
  PageMask want = demand | prefetch;
  want &= b.valid_mask();
  want.and_not(b.gpu_resident);
  if (want.none()) return 0;
  Tick ready = st.cpu;
  if (!b.has_chunk) ready = std::max(ready, allocate_chunk(b, st));

  PageMask from_cpu = want & b.cpu_resident;
  PageMask zero = minus(want, b.cpu_resident);
  if (zero.any()) {
    ctx_.stats.zero_filled_pages += zero.count();
    if (ctx_.log.enabled())
      ctx_.log.row(ready, "zero_fill", log_batch_, b.page_va(zero.find_next(0)),
                   std::uint64_t{zero.count()} * kPageSize, "", "", zero.count(), 0);
  }
  // Per-page host work (CPU unmap, PTE set-up) precedes the copies it enables.
  st.cpu += ns_to_ps(cfg_.cost.page_ns) * want.count();
  ready = std::max(ready, st.cpu);

  // Copy runs in address order; a run is split where the cause changes, as CUPTI reports a
  // faulted page and its prefetched neighbours as separate transfers (calibration-facts.md).
  auto& s = ctx_.stats;
  PageMask dem = from_cpu & demand, pre = minus(from_cpu, demand);
  for (unsigned i = from_cpu.find_next(0); i < kPagesPerBlock;) {
    const bool is_demand = dem.test(i);
    const PageMask& m = is_demand ? dem : pre;
    unsigned j = m.find_next_clear(i);
    PageMask run;
    run.set_range(i, j);
    std::uint64_t bytes = 0;
    const HtodCause cause = is_demand ? demand_cause : HtodCause::Prefetch;
    copy_runs(b, run, true, to_string(cause), ready, st, bytes);
    s.add_htod(cause, bytes);
    i = from_cpu.find_next(j);
  }

  if (b.read_mostly) {
    // Read duplication: the CPU keeps its copy of pages that were only read.
    PageMask dup = from_cpu;
    if (writes) dup.and_not(*writes);
    b.read_only_gpu |= dup;
    b.cpu_resident.and_not(minus(from_cpu, dup));
  } else {
    b.cpu_resident.and_not(want);
  }
  if (writes) b.dirty |= (*writes & want);
  set_gpu_resident(b, want, st.cpu);
  for (unsigned p = want.find_next(0); track_thrashing && p < kPagesPerBlock;
       p = want.find_next(p + 1)) {
    if (thrashing_.on_migration(b.id, p, Processor::Gpu, st.cpu)) ++s.thrashing_pages;
  }
  st.copy_done = std::max(st.copy_done, ready);
  return want.count();
}

Tick UvmDriver::allocate_chunk(VaBlock& b, ServiceTimes& st) {
  auto& s = ctx_.stats;
  ++s.chunk_allocations;
  Tick ready = st.cpu;
  // A free chunk, or the victim whose chunk `b` takes (the eviction policy's for the general
  // pool; the placement partition decides when chunks are pinned or reserved).
  const std::uint32_t victim = choose_victim(b, st.cpu);
  if (victim == kNoBlock) {
    ++allocated_chunks_;
    if (pma_reserve_ == 0) {
      // PMA hands out root chunks in batches; the extra ones wait on UVM's free lists.
      st.cpu += ns_to_ps(cfg_.cost.pma_alloc_ns);
      pma_reserve_ = cfg_.driver.pma_batch_chunks;
      ++s.pma_calls;
    }
    --pma_reserve_;
    ready = st.cpu;
  } else {
    VaBlock& v = ctx_.va.blocks()[victim];
    ServiceTimes ev{st.cpu + ns_to_ps(cfg_.cost.eviction_ns), st.cpu};
    evict(v, ev);
    st.cpu = ev.cpu;
    st.copy_done = std::max(st.copy_done, ev.copy_done);
    // The refill of the recycled chunk is ordered after the copy-out (root chunk tracker).
    ready = std::max(ev.cpu, ev.copy_done);
  }
  b.has_chunk = true;
  resident_pos_[b.id] = static_cast<std::uint32_t>(resident_.size());
  resident_.push_back(b.id);
  if (place_.active()) {
    place_.on_chunk_allocated(b);
    place_.refresh(b);
    track_evictable(b);
    s.placement.max_pinned_chunks =
        std::max<std::uint64_t>(s.placement.max_pinned_chunks, place_.pinned_chunks());
  }
  each_policy_for(b, [&](PolicyBase& p) { p.on_chunk_allocated(b, st.cpu); });
  // block_zero_new_gpu_chunk: every page of the new chunk resident nowhere is zeroed on the GPU.
  PageMask nowhere = minus(minus(b.valid_mask(), b.cpu_resident), b.gpu_resident);
  if (nowhere.any()) {
    const double gbps =
        cfg_.cost.zero_fill_gbps > 0 ? cfg_.cost.zero_fill_gbps : cfg_.hbm.bandwidth_gbps;
    ready += static_cast<Tick>(static_cast<double>(nowhere.count()) * kPageSize * 1000.0 / gbps);
  }
  return ready;
}

void UvmDriver::evict(VaBlock& v, ServiceTimes& st) {
  auto& s = ctx_.stats;
  const PageMask pages = v.gpu_resident;
  // No dirty tracking in the driver: every GPU-resident page is copied back, except pages that
  // also have a valid CPU copy (read duplication). dirty-only write-back is a what-if option.
  PageMask copy = minus(pages, v.cpu_resident);
  if (cfg_.driver.evict_dirty_only) copy &= v.dirty;
  std::uint64_t bytes = 0;
  const Tick start = st.cpu;
  copy.for_each_run([&](unsigned a, unsigned e) {
    PageMask run;
    run.set_range(a, e);
    std::uint64_t rb = 0;
    copy_runs(v, run, false, to_string(DtohCause::Eviction), start, st, rb);
    s.add_dtoh(DtohCause::Eviction, rb);
    bytes += rb;
  });
  ++s.evictions;
  s.evicted_pages += pages.count();
  if (ctx_.log.enabled())
    ctx_.log.row(start, "eviction", log_batch_, v.start + (Addr{v.first_page} << kPageShift), bytes,
                 kDtoh, "eviction", pages.count(), 0);
  v.cpu_resident |= pages;
  // With access-counter migration on, evicted pages are mapped back remotely
  // (uvm_perf_map_remote_on_eviction) and the counters can bring them back.
  if (counters_.enabled()) v.remote_mapped |= remap_on_eviction(v, pages);
  v.gpu_resident.clear();
  v.gpu_count = 0;
  v.read_only_gpu.clear();
  v.dirty.clear();
  v.has_chunk = false;
  ++v.mapping_gen;
  // allocated_chunks_ is unchanged: the chunk is handed straight to the requester.
  const std::uint32_t pos = resident_pos_[v.id];
  resident_pos_[resident_.back()] = pos;
  resident_[pos] = resident_.back();
  resident_.pop_back();
  resident_pos_[v.id] = ~0u;
  if (place_.active()) {
    if (place_.block(v.id).reservation) ++s.placement.reservation_evictions;
    place_.refresh(v);
    track_evictable(v);
  }
  // Policies see an observed region's observation during on_eviction ("evicted before being
  // accessed", negative feedback); it ends right after.
  each_policy_for(v, [&](PolicyBase& p) { p.on_eviction(v, st.cpu); });
  if (obs_.active()) {
    if (obs_.find(v.id)) drop_observation(v, true);
    if (const int d = obs_.on_evicted(v.id)) {
      ++(d > 0 ? s.observe.samples_doubled : s.observe.samples_halved);
    }
  }
}

void UvmDriver::migrate_to_cpu(VaBlock& b, const PageMask& pages_in, DtohCause cause,
                               ServiceTimes& st) {
  PageMask pages = pages_in & b.gpu_resident;
  if (pages.none()) return;
  PageMask copy = minus(pages, b.cpu_resident);
  std::uint64_t bytes = 0;
  copy.for_each_run([&](unsigned a, unsigned e) {
    PageMask run;
    run.set_range(a, e);
    std::uint64_t rb = 0;
    copy_runs(b, run, false, to_string(cause), st.cpu, st, rb);
    ctx_.stats.add_dtoh(cause, rb);
    bytes += rb;
  });
  b.cpu_resident |= pages;
  b.read_only_gpu.and_not(pages);
  b.dirty.and_not(pages);
  if (place_.active()) unpin_leaving(b, pages, st.cpu);
  clear_gpu_resident(b, pages, st.cpu);
  ++b.mapping_gen;
  if (cause == DtohCause::CpuFault) {
    for (unsigned p = pages.find_next(0); p < kPagesPerBlock; p = pages.find_next(p + 1))
      if (thrashing_.on_migration(b.id, p, Processor::Cpu, st.cpu)) ++ctx_.stats.thrashing_pages;
  }
}

void UvmDriver::service_access_counters(ServiceTimes& st) {
  auto& s = ctx_.stats;
  ++s.access_counter_batches;
  // One notification batch: at most access_counters.batch_count notifications, oldest first;
  // the rest wait for the next round of the service thread.
  auto& pending = counters_.pending();
  const std::size_t take = std::min<std::size_t>(pending.size(), counters_.batch_count());
  for (std::size_t k = 0; k < take; ++k) {
    const AccessCounterNotification n = pending[k];
    const std::uint64_t sub = n.region_bytes / 32;
    for (unsigned i = 0; i < 32; ++i) {
      if (!(n.subregion_mask >> i & 1u)) continue;
      for_each_block_page(n.region_base + i * sub, sub, [&](VaBlock& b, unsigned p0, unsigned p1) {
        PageMask pages;
        pages.set_range(p0, p1);
        pages &= b.cpu_resident;  // only pages resident on the remote owner
        pages.and_not(b.gpu_resident);
        if (const ObservedRegion* o = obs_.find(b.id)) pages.and_not(o->samples);
        if (place_.active() || !acm_all_) {
          // Range-scoped access-counter migration and no-migrate ranges (SUV §V-D ⑤).
          for (unsigned p = pages.find_next(0); p < kPagesPerBlock; p = pages.find_next(p + 1)) {
            if (counter_migration_allowed(b, p)) continue;
            pages.reset(p);
            ++s.placement.notifications_ignored;
          }
          if (pages.any() && !b.has_chunk && !chunk_obtainable(b)) return;
        }
        for (unsigned p = pages.find_next(0); p < kPagesPerBlock; p = pages.find_next(p + 1)) {
          if (thrashing_.get_hint(b.id, p, Processor::Gpu, st.cpu) ==
              ThrashingDetector::Hint::Throttle)
            pages.reset(p);
        }
        if (pages.none()) return;
        st.cpu += ns_to_ps(cfg_.cost.block_ns);
        PageMask prefetch;
        prefetch_->compute(PrefetchPolicy::Request{b, Processor::Gpu, b.gpu_resident, pages,
                                                   thrashing_.thrashing_pages(b.id), st.cpu},
                           prefetch);
        prefetch &= b.cpu_resident;  // access-counter servicing never zero-fills untouched pages
        prefetch.and_not(pages);
        if (place_.active()) prefetch.and_not(place_.block(b.id).no_migrate);
        make_resident_gpu(b, pages, prefetch, HtodCause::AccessCounter, st, nullptr);
        b.remote_mapped.and_not(b.gpu_resident);
        ++b.mapping_gen;
        b.map_ready_at = std::max(b.map_ready_at, std::max(st.cpu, st.copy_done));
      });
    }
  }
  pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(take));
}

// ---------------------------------------------------------------------------------------------
// Host-side operations.

Tick UvmDriver::cpu_access(Addr va, std::uint64_t size, AccessKind kind, Tick t) {
  auto& s = ctx_.stats;
  ServiceTimes st{t, t};
  const bool write = kind >= AccessKind::Write;
  for_each_block_page(va, size, [&](VaBlock& b, unsigned p0, unsigned p1) {
    for (unsigned p = p0; p < p1; ++p) {
      const bool on_gpu = b.gpu_resident.test(p), on_cpu = b.cpu_resident.test(p);
      if (on_cpu) {
        if (write && on_gpu) {  // a CPU write ends read duplication
          PageMask one;
          one.set(p);
          b.read_only_gpu.reset(p);
          if (place_.active()) unpin_leaving(b, one, st.cpu);
          clear_gpu_resident(b, one, st.cpu);
          ++b.mapping_gen;
        }
        continue;
      }
      if (!on_gpu) {  // first touch on the CPU: populated in host memory, no transfer
        b.cpu_resident.set(p);
        ++s.cpu_first_touch_pages;
        continue;
      }
      const auto hint = thrashing_.get_hint(b.id, p, Processor::Cpu, st.cpu);
      if (hint == ThrashingDetector::Hint::Throttle) {
        ++s.throttle_hints;
        st.cpu += static_cast<Tick>(cfg_.thrashing.lapse_us * cfg_.thrashing.nap * kPsPerUs);
      } else if (hint == ThrashingDetector::Hint::Pin) {
        ++s.pin_hints;
        continue;  // stays on the GPU; the CPU accesses it remotely
      }
      // CPU fault: the faulted page plus the tree prefetcher's choice, towards the CPU.
      ++s.cpu_faults;
      st.cpu += ns_to_ps(cfg_.cost.cpu_fault_ns);
      PageMask faulted, prefetch;
      faulted.set(p);
      if (b.last_migration_dest != Processor::Cpu) {
        b.fault_migrations_to_last_proc = 0;
        b.last_migration_dest = Processor::Cpu;
      }
      ++b.fault_migrations_to_last_proc;
      if (b.preferred != PreferredLocation::Gpu &&
          b.fault_migrations_to_last_proc >= cfg_.driver.prefetch_min_faults) {
        prefetch_->compute(PrefetchPolicy::Request{b, Processor::Cpu, b.cpu_resident, faulted,
                                                   thrashing_.thrashing_pages(b.id), st.cpu},
                           prefetch);
      }
      migrate_to_cpu(b, faulted | prefetch, DtohCause::CpuFault, st);
      st.cpu = std::max(st.cpu, st.copy_done);
    }
  });
  return std::max(st.cpu, st.copy_done);
}

Tick UvmDriver::user_prefetch(Addr va, std::uint64_t size, Processor dest, Tick t) {
  ServiceTimes st{t + ns_to_ps(cfg_.cost.user_prefetch_ns), t};
  for_each_block_page(va, size, [&](VaBlock& b, unsigned p0, unsigned p1) {
    PageMask pages;
    pages.set_range(p0, p1);
    if (dest == Processor::Gpu) {
      st.cpu += ns_to_ps(cfg_.cost.block_ns);
      if (place_.active()) {
        pages.and_not(place_.block(b.id).host_pinned);  // host pins stay on the host
        if (pages.none() || (!b.has_chunk && !chunk_obtainable(b))) return;
      }
      if (obs_.find(b.id)) drop_observation(b, false);
      make_resident_gpu(b, pages, PageMask{}, HtodCause::UserPrefetch, st, nullptr);
      b.remote_mapped.and_not(b.gpu_resident);
      ++b.mapping_gen;
      b.map_ready_at = std::max(b.map_ready_at, std::max(st.cpu, st.copy_done));
    } else {
      st.cpu += ns_to_ps(cfg_.cost.block_ns);
      migrate_to_cpu(b, pages, DtohCause::UserPrefetch, st);
    }
  });
  return std::max(st.cpu, st.copy_done);
}

void UvmDriver::advise(Addr va, std::uint64_t size, trace::Advice advice, Processor device) {
  using trace::Advice;
  for_each_block_page(va, size, [&](VaBlock& b, unsigned, unsigned) {
    if (obs_.find(b.id)) drop_observation(b, false);
    switch (advice) {
      case Advice::SetPreferredLocation:
        b.preferred = device == Processor::Cpu ? PreferredLocation::Cpu : PreferredLocation::Gpu;
        break;
      case Advice::UnsetPreferredLocation:
        b.preferred = PreferredLocation::None;
        b.remote_mapped.clear();
        break;
      case Advice::SetAccessedBy:
        if (device == Processor::Gpu) b.accessed_by_gpu = true;
        break;
      case Advice::UnsetAccessedBy:
        if (device == Processor::Gpu) b.accessed_by_gpu = false;
        break;
      case Advice::SetReadMostly:
        b.read_mostly = true;
        break;
      case Advice::UnsetReadMostly:
        b.read_mostly = false;
        b.read_only_gpu.clear();
        break;
    }
    ++b.mapping_gen;
  });
}

}  // namespace uvmsim
