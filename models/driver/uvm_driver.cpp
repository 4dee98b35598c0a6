#include "models/driver/uvm_driver.h"

#include <algorithm>

namespace uvmsim {

UvmDriver::UvmDriver(SimContext& ctx, DriverShared& shared, FaultBuffer& buffer,
                     AccessCounters& counters, Interrupt& irq, std::uint64_t capacity_chunks,
                     std::filesystem::path trace_path, const trace::Hints* hints)
    : dc_{ctx, ctx.cfg, shared, irq.gpu()},
      buffer_(buffer),
      irq_(irq),
      thrashing_(shared.thrashing),
      policies_(placement_),
      pool_(dc_, placement_, policies_, capacity_chunks),
      copies_(dc_),
      observations_(dc_, counters, policies_, pool_),
      counter_service_(dc_, counters, pool_, policies_, thrashing_, observations_),
      eviction_(dc_, copies_, pool_, policies_, observations_, counter_service_),
      residency_(dc_, pool_, policies_, thrashing_, copies_, eviction_),
      blocks_(dc_, pool_, policies_, thrashing_, observations_, residency_),
      host_(dc_, pool_, policies_, thrashing_, observations_, residency_),
      facade_(dc_, {pool_, policies_, observations_, counter_service_, residency_},
              std::move(trace_path), hints, [this](Tick t) { request_service(t); }),
      batch_(ctx.cfg.driver) {
  dc_.trace_name = facade_.trace_path().string();
  shared.residency[dc_.gpu] = &residency_;
  shared.host[dc_.gpu] = &host_;
  // Policies are created last: they may use the engine (the facade) from their constructors.
  policies_.create(dc_.cfg, facade_, dc_.gpu);
  observations_.activate_if_used();
}

void UvmDriver::finish_stats() {
  dc_.stats().thrashing_block_resets = thrashing_.block_resets();
  observations_.finish_stats();
  facade_.finish_stats();
}

// ---------------------------------------------------------------------------------------------
// The bottom half (uvm-driver.md §2).

void UvmDriver::wake_at(Tick t) {
  irq_.mask();
  dc_.sim.queue.schedule(t, EventType::DriverWake, 0, irq_.gpu());
}

void UvmDriver::request_service(Tick now) {
  if (irq_.masked()) return;  // running or scheduled: it will see the work
  wake_at(now);
}

void UvmDriver::on_driver_wake(Tick now) {
  dc_.clock = now;
  expire_thrashing_pins(thrashing_, dc_, now);
  if (!bh_running_) {
    bh_running_ = true;
    batches_in_run_ = throttled_in_run_ = 0;
    replay_issued_in_run_ = false;
    run_copies_done_ = 0;
    ++dc_.stats().bottom_halves;
  }
  start_batch(now);
}

void UvmDriver::start_batch(Tick now) {
  if (service_other_work(now)) return;
  const auto& d = dc_.cfg.driver;
  if (batches_in_run_ >= d.max_batches_per_service ||
      throttled_in_run_ >= d.max_throttle_per_service || !service_fault_batch(now)) {
    end_bottom_half(now);
  }
}

bool UvmDriver::service_other_work(Tick now) {
  if (policy_work_pending()) {
    // Observation notifications, region prefetches and observation set-up share the serial
    // service thread with fault batches. Work that takes no driver time falls through.
    ServiceTimes st{now, now};
    if (service_policy_work(st)) {
      wake_at(std::max(st.cpu, st.copy_done));
      return true;
    }
  }
  if (counter_service_.pending()) {
    // Access-counter notifications have their own servicing path in the driver; it shares the
    // serial service thread with fault batches here.
    ServiceTimes st{now + ns_to_ps(dc_.cfg.cost.batch_fixed_ns), now};
    counter_service_.service(st, residency_);
    wake_at(std::max(st.cpu, st.copy_done));
    return true;
  }
  return false;
}

bool UvmDriver::service_policy_work(ServiceTimes& st) {
  const Tick t0 = st.cpu;
  if (observations_.notifications_pending()) observations_.service_notifications(st, residency_);
  facade_.service_region_prefetches(st);
  facade_.service_deferred_actions(st);
  if (observations_.refill_due()) observations_.refill(st, residency_);
  return st.cpu != t0 || st.copy_done != t0;
}

bool UvmDriver::service_fault_batch(Tick now) {
  const std::size_t fetched = batch_.fetch(buffer_, now);
  if (fetched == 0) return false;
  auto& s = dc_.stats();
  s.faults_fetched += fetched;
  s.faults_coalesced += batch_.coalesced();
  s.add_batch(fetched);
  ++batches_;
  ++dc_.shared.batch_id;
  ++batches_in_run_;
  batch_throttled_ = false;

  const auto& cost = dc_.cfg.cost;
  Tick cpu = now + ns_to_ps(cost.batch_fixed_ns) +
             ns_to_ps(cost.fault_entry_ns) * static_cast<Tick>(fetched);
  if (!dc_.shared.first_batch_done) {
    cpu += ns_to_ps(cost.first_fault_ns);
    dc_.shared.first_batch_done = true;
  }
  ServiceTimes st{cpu, cpu};
  const std::uint64_t htod_before = s.htod_bytes;
  dc_.log_batch = dc_.shared.batch_id;
  if (dc_.cfg.driver.prefetch_cross_block) note_batch_faults();
  // service_fault_batch: every fault of one VA block is serviced together.
  std::uint32_t blocks = 0;
  batch_.for_each_block([&](std::span<const BatchFault> faults) {
    // Counted as the driver logs them: one per entry left after fetch-time coalescing
    // (num_coalesced_faults; Allen & Ge's instrumented 460.27.04 driver prints exactly these
    // entries in service_fault_batch, and their SC'21 tables count them, docs/validation.md).
    s.batch.faults_per_va_block.add(static_cast<double>(faults.size()));
    ++blocks;
    if (dc_.cfg.driver.prefetch_cross_block) {
      const std::uint32_t id = managed_block_of(faults.front().page_va);
      if (id != kNoBlock) facade_.clear_batch_faults(id);  // serviced now, no longer pending
    }
    batch_.add_duplicates(blocks_.service(faults, st, batch_throttled_));
    if (dc_.cfg.driver.replay_policy == ReplayPolicy::Block)
      schedule_replay(std::max(st.cpu, st.copy_done));
  });
  dc_.log_batch = -1;
  s.batch.va_blocks_per_batch.add(blocks);
  s.batch.faults_per_sm_per_batch.add(static_cast<double>(fetched - batch_.coalesced()) /
                                      dc_.cfg.gpu.num_sms);
  s.batch.sources_per_batch.add(batch_.sources());
  observations_.mark_refill_due();  // evictions and faults changed the candidates
  const Tick end = std::max(st.cpu, st.copy_done);
  s.batch_time_total += end - now;
  if (dc_.log().enabled()) {
    dc_.log().row(now, "batch", dc_.shared.batch_id, 0, s.htod_bytes - htod_before, "", "", fetched,
                  end - now);
  }
  // service_fault_batch returns when the batch's host work is done; its copies run on (each
  // block's tracker only joins the batch's). What follows the batch happens then: under
  // BATCH_FLUSH the flush (fault_buffer_flush_locked reads PUT, if it does, with the copies still
  // running) and the replay push, which acquires the batch's tracker, so the GPU replays once the
  // copies are done; only then does uvm_tracker_wait on the replay tracker let the thread fetch
  // again. Under BATCH, BLOCK and ONCE the thread goes on to the next batch at once.
  batch_copies_done_ = st.copy_done;
  run_copies_done_ = std::max(run_copies_done_, st.copy_done);
  dc_.sim.queue.schedule(st.cpu, EventType::BatchEnd, dc_.shared.batch_id, irq_.gpu());
  return true;
}

std::uint32_t UvmDriver::managed_block_of(Addr va) {
  const VaRange* r = dc_.va().find_range(va);
  return r && r->managed && !r->freed ? dc_.va().block_index(*r, va) : kNoBlock;
}

void UvmDriver::note_batch_faults() {
  // The batch is sorted by address: count each block's distinct pages.
  batch_.for_each_block([&](std::span<const BatchFault> faults) {
    const std::uint32_t id = managed_block_of(faults.front().page_va);
    if (id == kNoBlock) return;
    unsigned pages = 0;
    Addr prev = ~Addr{0};
    for (const BatchFault& f : faults) {
      const Addr page = f.page_va & ~(kPageSize - 1);
      pages += page != prev;
      prev = page;
    }
    facade_.note_batch_faults(id, pages);
  });
}

void UvmDriver::on_batch_end(std::uint32_t, Tick now) {
  if (batch_throttled_) ++throttled_in_run_;
  Tick t = now;  // the bottom half's clock: a flush reads the entries it discards
  switch (dc_.cfg.driver.replay_policy) {
    case ReplayPolicy::BatchFlush: {
      // Entries between GET and the PUT cached at fetch time were never fetched: discard them.
      // With many duplicates PUT is re-read, so faults raised during servicing go too. The
      // discarded faults are raised again when the replay makes their warps retry.
      // fault_buffer_flush_locked waits for each entry's valid bit and clears it before it writes
      // GET and pushes the replay: the memory traffic of a fetch without the parse, charged here
      // at the fetch's per-entry cost (cost.fault_entry_ns, an upper bound).
      const std::size_t n = batch_.flush_count(buffer_, now);
      buffer_.discard(n);
      dc_.stats().faults_flushed += n;
      const Tick flush = static_cast<Tick>(n) * ns_to_ps(dc_.cfg.cost.fault_entry_ns);
      dc_.stats().flush_time += flush;
      t += flush;
      // The replay push waits on the GPU for the batch's copies; the bottom half waits for the
      // replay before it fetches the next batch.
      t = std::max(t, batch_copies_done_);
      schedule_replay(t);
      wake_at(t + ns_to_ps(dc_.cfg.cost.replay_ns));
      return;
    }
    case ReplayPolicy::Batch:
      // push_replay_on_parent_gpu: the replay runs once the batch's copies are done; the thread
      // goes on to the next batch without waiting.
      schedule_replay(std::max(t, batch_copies_done_));
      break;
    case ReplayPolicy::Block:  // replays were pushed per VA block during the batch
    case ReplayPolicy::Once:   // one replay when the bottom half ends
      break;
  }
  wake_at(t);
}

void UvmDriver::schedule_replay(Tick t) {
  ++dc_.stats().replays;
  replay_issued_in_run_ = true;
  dc_.sim.queue.schedule(t + ns_to_ps(dc_.cfg.cost.replay_ns), EventType::Replay, 0, irq_.gpu());
}

void UvmDriver::end_bottom_half(Tick now) {
  // ONCE (and any run that issued none) pushes one replay, ordered after all the run's copies.
  if (!replay_issued_in_run_ && batches_in_run_ > 0)
    schedule_replay(std::max(now, run_copies_done_));
  bh_running_ = false;
  if (buffer_.empty()) {
    irq_.unmask();
    return;
  }
  // Interrupts are re-enabled; pending faults re-trigger the ISR.
  wake_at(std::max(now, buffer_.front().valid_at) + irq_.latency());
}

}  // namespace uvmsim
