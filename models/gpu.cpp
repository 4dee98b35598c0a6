#include "models/gpu.h"

#include "models/occupancy.h"
#include "state/prefetch_use.h"

#include <algorithm>
#include <bit>
#include <cassert>

#include "core/error.h"

namespace uvmsim {

Gpu::Gpu(SimContext& ctx, FaultBuffer& buffer, AccessCounters& counters, Interrupt& irq,
         std::uint8_t ordinal)
    : ctx_(ctx),
      cfg_(ctx.cfg),
      buffer_(buffer),
      counters_(counters),
      irq_(irq),
      ord_(ordinal),
      self_bit_(processor_bit(gpu_processor(ordinal))),
      link_(ctx.link(ordinal)),
      position_(ctx.position(ordinal)),
      remote_bytes_(ctx.stats.per_gpu[ordinal].remote_bytes) {
  ps_per_cycle_ = 1e6 / cfg_.gpu.clock_mhz;
  l1_lat_ = cycles(cfg_.tlb.l1_latency_cycles);
  l2_lat_ = cycles(cfg_.tlb.l2_latency_cycles);
  walk_lat_ = ns_to_ps(cfg_.tlb.walk_latency_ns);
  ats_ = cfg_.driver.ats;
  system_page_shift_ = static_cast<unsigned>(std::countr_zero(cfg_.driver.system_page_size));
  fault_lat_ = ns_to_ps(cfg_.gpu.fault_latency_ns);
  utlb_interval_ = ns_to_ps(cfg_.gpu.utlb_fault_interval_ns);
  write_interval_ = ns_to_ps(cfg_.gpu.fault_write_interval_ns);
  paced_ = utlb_interval_ > 0 || write_interval_ > 0;
  recheck_pte_ = cfg_.gpu.fault_write_rechecks_pte;
  per_access_ = cfg_.gpu.utlb_fault_per_access;
  limit_misses_ = cfg_.gpu.utlb_limit_counts_misses;
  round_robin_ = cfg_.gpu.utlb_replay_order == UtlbReplayOrder::RoundRobin;
  gmmu_random_ = cfg_.gpu.gmmu_arbitration == GmmuArbitration::Random;
  gmmu_rng_.seed(cfg_.engine.seed ^ (0x9E3779B97F4A7C15ull * (ordinal + 1)));  // a stream per GPU
  l1_.resize(cfg_.gpu.num_sms);
  memo_on_ = memo_default_;
  memo_.resize(std::size_t{cfg_.gpu.num_sms} << kMemoBits);
  for (auto& t : l1_) t.reset(cfg_.tlb.l1_entries, cfg_.tlb.l1_assoc);
  l2_.reset(cfg_.tlb.l2_entries, cfg_.tlb.l2_assoc);
  hbm_.configure(cfg_.hbm.bandwidth_gbps, cfg_.hbm.latency_ns);
  remote_lat_ = static_cast<Tick>(cfg_.link.remote_latency_ns * kPsPerNs);
  gpus_ = cfg_.system.gpus;
  peers_ = ctx_.peers.enabled() && gpus_ > 1;
  peer_lat_ = ns_to_ps(cfg_.system.peer_latency_ns);
  sm_.configure(cfg_.gpu, ps_per_cycle_);
  utlbs_.resize((cfg_.gpu.num_sms + cfg_.gpu.sms_per_utlb - 1) / cfg_.gpu.sms_per_utlb);
  gmmu_ring_.assign(utlbs_.size(), 0);
  gmmu_waiting_.assign(utlbs_.size(), 0);
  buffer_.configure(cfg_.gpu.fault_buffer_entries);
  const std::size_t nblocks = ctx_.va.blocks().size();
  block_wait_.resize(nblocks);
}

void Gpu::launch(const trace::KernelInfo& k, trace::LaunchStream& stream, Tick start,
                 KernelStats& ks) {
  const auto& g = cfg_.gpu;
  const std::uint64_t threads = k.block.count();
  warps_per_tb_ = k.warps_per_block();
  const std::uint64_t per_sm = threadblocks_per_sm(g, k);
  if (per_sm == 0)
    throw UserError("kernel '" + k.name + "'", "block",
                    "a threadblock of " + std::to_string(threads) +
                        " threads does not fit on one SM of " + g.name);
  tbs_per_sm_ = static_cast<std::uint32_t>(per_sm);
  warps_per_sm_ = warps_per_tb_ * tbs_per_sm_;
  const std::size_t nslots = std::size_t{g.num_sms} * tbs_per_sm_;
  slots_.assign(nslots, TbSlot{});
  if (warps_.size() < nslots * warps_per_tb_) {
    warps_.resize(nslots * warps_per_tb_);
    sync_.resize(warps_.size());
  }
  // The far-fault slabs start with room for one waiting access per resident thread: what an
  // all-miss kernel holds at once (`random`: 5,120 warps, 163,840 records and waiters). Grown
  // by doubling instead, they were copied ~18 times on the fault path (a third of
  // raise_fault's samples in a `perf record` of `random` 1 GB). Only capacity: the pages are
  // touched when used, so memory stays what is in flight.
  if (const std::size_t lanes = warps_.size() * kThreadsPerWarp; records_.capacity() < lanes) {
    records_.reserve(lanes);
    record_gen_.reserve(lanes);
    free_records_.reserve(lanes);
    waiters_.reserve(lanes);
    free_waiters_.reserve(lanes);
  }
  for (auto& w : warps_) w.active = false;
  stream_ = &stream;
  ks_ = &ks;
  tbs_total_ = stream.threadblocks();
  tbs_started_ = tbs_done_ = 0;
  end_time_ = start;
  ks.threadblocks = tbs_total_;
  // Dispatch in id order breadth-first over SMs: TB0->SM0, TB1->SM1, ..., then second slots.
  for (std::uint32_t k2 = 0; k2 < tbs_per_sm_; ++k2)
    for (std::uint32_t sm = 0; sm < g.num_sms && tbs_started_ < tbs_total_; ++sm)
      start_tb(sm * tbs_per_sm_ + k2, start);
}

void Gpu::start_tb(std::uint32_t slot, Tick t) {
  TbSlot& s = slots_[slot];
  if (!stream_->next(s.view)) return;
  ++tbs_started_;
  ++position_.tbs_started;
  s.active = true;
  s.view.warp_streams(stream_scratch_);
  if (s.view.num_warps > warps_per_tb_) {
    throw UserError("trace", "threadblock",
                    "threadblock " + std::to_string(s.view.tb_id) + " has " +
                        std::to_string(s.view.num_warps) + " warps, kernel declares " +
                        std::to_string(warps_per_tb_));
  }
  s.warps_left = s.view.num_warps;
  for (std::uint32_t i = 0; i < s.view.num_warps; ++i) {
    const std::uint32_t wi = slot * warps_per_tb_ + i;
    Warp& w = warps_[wi];
    // Field by field, not `w = Warp{}`: `cur` is read only after next() fills it (has_cur), so
    // clearing its 112 bytes first was ~1 % of a STREAM run (32 warps a threadblock, 3 records
    // a warp).
    w.stream = stream_scratch_[i];
    w.tb_slot = slot;
    w.sm = sm_of(wi);
    w.has_cur = false;
    w.gap_paid = false;
    w.active = true;
    sync_[wi] = WarpSync{t, 0, false};
    ctx_.queue.schedule(t, EventType::WarpWake, wi, ord_);
  }
  if (s.view.num_warps == 0) {
    s.warps_left = 1;
    warps_[slot * warps_per_tb_].tb_slot = slot;
    finish_warp(slot * warps_per_tb_, t);
  }
}

void Gpu::running_threadblocks(std::vector<ThreadblockProgress>& out) const {
  for (std::uint32_t slot = 0; slot < slots_.size(); ++slot) {
    const TbSlot& s = slots_[slot];
    if (!s.active) continue;
    std::uint64_t done = ~std::uint64_t{0};
    for (std::uint32_t i = 0; i < s.view.num_warps; ++i) {
      const Warp& w = warps_[slot * warps_per_tb_ + i];
      if (w.active) done = std::min<std::uint64_t>(done, w.stream.consumed());
    }
    if (done != ~std::uint64_t{0}) out.push_back({s.view.tb_id, done});
  }
}

inline Tick Gpu::local_access(Tick t, const trace::AccessRecord& r) {
  if (r.repeat <= 1) return hbm_.access(t, r.bytes);
  const Tick done = hbm_.access(t, std::uint64_t{r.bytes} * r.repeat);
  if (r.gap_cycles == 0) return done;
  // Dependent repeats: each waits for the previous one plus the compute gap.
  return done + (r.repeat - 1) * (hbm_.latency() + cycles(r.gap_cycles));
}

Tick Gpu::remote_access(Tick t, const trace::AccessRecord& r) {
  const std::uint32_t sector = cfg_.link.sector_bytes;
  const std::uint64_t bytes = (std::uint64_t{r.bytes} + sector - 1) / sector * sector * r.repeat;
  ctx_.stats.remote_accesses += r.repeat;
  ctx_.stats.remote_bytes += bytes;
  remote_bytes_ += bytes;
  (r.kind >= AccessKind::Write ? ctx_.stats.remote_write_bytes : ctx_.stats.remote_read_bytes) +=
      bytes;
  // Reads bring data host to device, writes (and atomics) send it device to host: each shares
  // its direction of the link with the copy engines' runs (models/host_link.h).
  LinkDirection& dir = r.kind >= AccessKind::Write ? link_.dtoh : link_.htod;
  Tick done = dir.remote(t, bytes) + remote_lat_ + dir.wire_time(bytes);
  if (r.repeat > 1 && r.gap_cycles) done += (r.repeat - 1) * (remote_lat_ + cycles(r.gap_cycles));
  return done;
}

Tick Gpu::peer_access(Tick t, const trace::AccessRecord& r, unsigned holder) {
  const std::uint32_t sector = cfg_.link.sector_bytes;
  const std::uint64_t bytes = (std::uint64_t{r.bytes} + sector - 1) / sector * sector * r.repeat;
  const bool write = r.kind >= AccessKind::Write;
  ctx_.stats.remote_accesses += r.repeat;
  ctx_.stats.remote_bytes += bytes;
  (write ? ctx_.stats.remote_write_bytes : ctx_.stats.remote_read_bytes) += bytes;
  ctx_.stats.per_gpu[ord_].peer_remote_bytes += bytes;
  // Reads bring the holder's data here, writes (and atomics) send it there.
  const unsigned src = write ? ord_ : holder, dst = write ? holder : ord_;
  ctx_.stats.peer_remote_bytes[std::size_t{src} * gpus_ + dst] += bytes;
  PeerFabric& f = ctx_.peers;
  Tick done = f.remote(src, dst, t, bytes) + peer_lat_ + f.wire_time(src, dst, bytes);
  if (r.repeat > 1 && r.gap_cycles) done += (r.repeat - 1) * (peer_lat_ + cycles(r.gap_cycles));
  return done;
}

[[gnu::always_inline]] inline bool Gpu::memo_hit(const Memo& m, std::uint32_t sm,
                                                 const trace::AccessRecord& r, Tick t, Tick& done) {
  // What issue's full path would find for this access, checked on the block's current state.
  // The PTE size, and so the TLB key, changes only with the block's residency, which the
  // driver changes only together with its mapping generation (every PTE write bumps it: it is
  // what invalidates TLB entries), so an unchanged generation keeps the memo's key. The page
  // must still be resident with its PTE usable at `t` and writable for a write (Gpu::mapped for
  // a local page), and the L1 entry the memo points at must still hold the key at this
  // generation, which is exactly when the set's scan would hit there (a key sits in at most one
  // way of its set).
  GpuBlockState& g = *m.g;
  const unsigned page = VaSpace::page_index(r.va);
  if (g.mapping_gen != m.gen || !g.resident.test(page) ||
      (t < g.map_ready_at && g.map_pending.test(page)) ||
      (r.kind >= AccessKind::Write && g.read_only.test(page)))
    return false;
  Tlb& l1 = l1_[sm];
  if (!l1.holds(m.slot, m.key, m.gen)) return false;
  assert(m.key == tlb_key(*m.b, g, r.va, page));
  auto& s = ctx_.stats;
  ++s.l1_tlb_hits;
  l1.touch(m.slot);
  done = local_access(t + l1_lat_, r);
  if (r.kind >= AccessKind::Write) g.dirty.set(page);
  note_gpu_access(g, page, s.prefetch_use);
  if (notify_accesses_)
    listener_->on_access(
        AccessEvent{*m.b, page, r.va, r.ref_id, r.bytes, r.repeat, r.kind, false, t});
  s.accesses += r.repeat;
  ks_->accesses += r.repeat;
  return true;
}

[[gnu::always_inline]] inline bool Gpu::issue(std::uint32_t wi, std::uint32_t sm,
                                              const trace::AccessRecord& r, Tick t, Tick& done,
                                              bool retried) {
  // The instruction passes the SM's LSU first (a replayed one again): its sectors queue behind
  // those of the SM's other warps.
  t = sm_.lsu(sm, t, r.va, r.bytes, r.repeat);
  ++ctx_.stats.l1_tlb_lookups;
  Memo& memo = memo_[memo_index(sm, r.va)];
  if (!retried && memo.tag == r.va >> memo.shift && memo_hit(memo, sm, r, t, done)) return true;
  // The full look-up is out of line: a TLB-hit-bound run (STREAM, gemm) takes the memo on most
  // accesses, and the full path's register saves were ~20 instructions of every call.
  return translate(wi, sm, r, t, done, memo);
}

void Gpu::run_warp(std::uint32_t wi, Tick t) {
  Warp& w = warps_[wi];
  WarpSync& ws = sync_[wi];
  for (;;) {
    if (!w.has_cur) {
      if (!w.stream.next(w.cur)) {
        if (w.stream.has_more()) {
          // A paged threadblock (engine.decoded_trace_mb): the warp's next segment of records.
          slots_[w.tb_slot].view.next_segment(wi - w.tb_slot * warps_per_tb_, w.stream);
          continue;
        }
        if (ws.outstanding) {
          ws.waiting = true;
          return;
        }
        // Done once its last accesses complete. Nothing else waits on a finishing warp, so it
        // retires now with that end time instead of costing an event; a threadblock that
        // completes hands its slot to the next one at the right time.
        finish_warp(wi, std::max(t, ws.group_done));
        return;
      }
      w.has_cur = true;
      w.gap_paid = false;
      ++ctx_.stats.records;
    }
    if (w.cur.gap_cycles && !w.gap_paid) {
      // Compute consumes the results of the warp's earlier loads: wait for all of them.
      if (ws.outstanding) {
        ws.waiting = true;
        return;
      }
      const Tick ready = sm_.issue(w.sm, std::max(t, ws.group_done), w.cur.gap_cycles);
      w.gap_paid = true;
      if (!can_inline(ready)) {
        ctx_.queue.schedule(ready, EventType::WarpWake, wi, ord_);
        return;
      }
      t = ready;
    }
    w.has_cur = false;
    Tick done;
    if (issue(wi, w.sm, w.cur, t, done)) {
      ws.group_done = std::max(ws.group_done, done);
    } else {
      ++ws.outstanding;
    }
  }
}

bool Gpu::translate(std::uint32_t wi, std::uint32_t sm, const trace::AccessRecord& r, Tick t,
                    Tick& done, Memo& memo) {
  auto& s = ctx_.stats;
  const VaRange* rg = ctx_.va.find_range(r.va);
  if (!rg || !rg->managed) {
    // Outside managed memory: device memory (cudaMalloc) or pinned host memory, always mapped.
    if (!rg) s.unmapped_accesses += r.repeat;
    ++s.l1_tlb_hits;
    done = (rg && rg->host_pinned) ? remote_access(t + l1_lat_, r) : local_access(t + l1_lat_, r);
    s.accesses += r.repeat;
    ks_->accesses += r.repeat;
    return true;
  }
  VaBlock& b = ctx_.va.blocks()[ctx_.va.block_index(*rg, r.va)];
  const unsigned page = VaSpace::page_index(r.va);
  const bool write = r.kind >= AccessKind::Write;
  Tick lat = l1_lat_;
  const GpuBlockState& g = state_of(b);
  if (mapped(b, g, page, r.kind, t)) {
    const bool local = g.resident.test(page);
    // ATS: the GPU translates system memory through the CPU's page table, one OS page per
    // entry wherever the page lies (the GPU's 2 MB PTEs are for memory UVM manages).
    const bool ats = b.system && ats_;
    const std::uint64_t key = ats     ? ((r.va >> system_page_shift_) << 2) | 3
                              : local ? tlb_key(b, g, r.va, page)
                                      : (r.va >> kPageShift) << 2;
    Tlb& l1 = l1_[sm];
    // A miss fills the entry in the same scan (Tlb::access): the walk's result is written
    // into the L2 TLB and the L1 TLB on the way back.
    if (l1.access(key, g.mapping_gen)) {
      ++s.l1_tlb_hits;
    } else {
      lat += l2_lat_;
      ++s.l2_tlb_lookups;
      if (l2_.access(key, g.mapping_gen)) {
        ++s.l2_tlb_hits;
      } else {
        lat += walk_lat_;
        ++s.page_walks;
      }
    }
    if (local) {
      done = local_access(t + lat, r);
      // A page resident here: `g` is this GPU's own state of the (mutable) block, not the
      // empty stand-in a GPU without state reads.
      GpuBlockState& mine = const_cast<GpuBlockState&>(g);
      if (write) mine.dirty.set(page);
      note_gpu_access(mine, page, s.prefetch_use);
      if (!ats && memo_on_) {
        // The window the entry covers: its PTE's (tlb_key's size class). A 2 MB PTE is a full
        // block's; a 64 KB one lies in the block too, since only the block's own pages are ever
        // resident in it.
        static constexpr std::uint8_t kShift[4] = {kPageShift, kBigPageShift, kBlockShift, 0};
        const std::uint8_t shift = kShift[key & 3];
        assert((key & 3) != 1 || (page / kPagesPerBigPage * kPagesPerBigPage >= b.first_page &&
                                  (page / kPagesPerBigPage + 1) * kPagesPerBigPage <= b.end_page));
        memo = Memo{r.va >> shift, &b, &mine, key, l1.last_slot(), g.mapping_gen, shift};
      }
    } else {
      // Remote: the host copy, or with peer access a peer's (the GPU's access counters count
      // both: they track accesses to memory that is not the GPU's own).
      int holder;
      if (peers_ && !b.cpu_resident.test(page) && (holder = peer_holder(b, page)) >= 0)
        done = peer_access(t + lat, r, static_cast<unsigned>(holder));
      else
        done = remote_access(t + lat, r);
      counters_.on_remote_access(b.id, page, r.va, r.repeat, t);
    }
    if (notify_accesses_)
      listener_->on_access(
          AccessEvent{b, page, r.va, r.ref_id, r.bytes, r.repeat, r.kind, !local, t});
    s.accesses += r.repeat;
    ks_->accesses += r.repeat;
    return true;
  }
  // No valid PTE: the L1 and L2 TLBs miss, the GMMU walk finds nothing, and a far fault follows.
  ++s.l2_tlb_lookups;
  ++s.page_walks;
  raise_fault(wi, sm, r, b.id, page, t + lat + l2_lat_ + walk_lat_);
  return false;
}

void Gpu::raise_fault(std::uint32_t wi, std::uint32_t sm, const trace::AccessRecord& r,
                      std::uint32_t block, unsigned page, Tick t) {
  const std::uint32_t u = sm / cfg_.gpu.sms_per_utlb;
  const Addr page_va = r.va & ~(kPageSize - 1);
  BlockWait& bw = block_wait_[block];
  // The uTLB's record for this page, if it has one: the page's chain holds one per uTLB. The
  // block's waiting mask says whether the page has a chain at all, so a first miss on a page
  // (every access of `random`) reads no chain head: that load missed the cache on ~40 % of
  // this function's samples (`perf annotate`, `random` 1 GB at 50 %).
  std::uint32_t rid = kNil;
  if (bw.heads != kNil && bw.waiting.test(page)) {
    for (std::uint32_t x = head_slab_[bw.heads][page]; x != kNil; x = records_[x].next_in_page) {
      if (records_[x].utlb == u) {
        rid = x;
        break;
      }
    }
  }
  if (rid == kNil) {
    // A new miss for this uTLB: it gets a fault entry unless the uTLB already has its maximum
    // of outstanding faults (or the buffer is full); then it waits for a replay to retry.
    if (!free_records_.empty()) {
      rid = free_records_.back();
      free_records_.pop_back();
    } else {
      rid = static_cast<std::uint32_t>(records_.size());
      records_.emplace_back();
      record_gen_.push_back(0);
    }
    FaultRecord& fr = records_[rid];
    fr.page_va = page_va;
    fr.block = block;
    fr.page = static_cast<std::uint16_t>(page);
    fr.utlb = static_cast<std::uint16_t>(u);
    fr.kind = r.kind;
    fr.head = fr.tail = kNil;
    fr.live = true;
    Utlb& ut = utlbs_[u];
    ut.fifo.emplace_back(rid, record_gen_[rid]);
    ++ut.live;
    if (bw.heads == kNil) {
      if (!free_heads_.empty()) {
        bw.heads = free_heads_.back();
        free_heads_.pop_back();
      } else {
        bw.heads = static_cast<std::uint32_t>(head_slab_.size());
        head_slab_.emplace_back();
      }
      // No fill: a page's head is read only while its waiting bit is set, which this function
      // sets after writing the head (2 KB of stores per block activation saved).
      bw.gen_seen = 0;
      active_blocks_.push_back(block);
    }
    auto& heads = head_slab_[bw.heads];
    fr.next_in_page = bw.waiting.test(page) ? heads[page] : kNil;
    heads[page] = rid;
    bw.waiting.set(page);
    ++bw.records;
    fr.waiting = 0;
    if (ut.outstanding < cfg_.gpu.utlb_max_outstanding_faults && buffer_room()) {
      raise_entry(fr, t);
    } else {
      ++ctx_.stats.utlb_stalls;
    }
  } else if (per_access_) {
    // Another access misses on a page the uTLB already has a miss for: its own fault packet,
    // which the driver's fetch merges into the uTLB's previous entry for the page.
    // gpu.utlb_limit_counts_misses: the uTLB already holds a slot for this page's miss, so the
    // repeat takes none (the vector add that measured the limit of 56 has one access per page,
    // so it cannot tell; the fit over Allen & Ge's rows prefers this, docs/driver-model.md).
    if (limit_misses_
            ? buffer_room()
            : utlbs_[u].outstanding < cfg_.gpu.utlb_max_outstanding_faults && buffer_room()) {
      raise_entry(records_[rid], t, !limit_misses_);
    } else {
      ++ctx_.stats.utlb_stalls;
    }
  }
  FaultRecord& fr = records_[rid];
  fr.kind = std::max(fr.kind, r.kind);
  if (fr.waiting != UINT16_MAX) ++fr.waiting;
  std::uint32_t w;
  if (!free_waiters_.empty()) {
    w = free_waiters_.back();
    free_waiters_.pop_back();
  } else {
    w = static_cast<std::uint32_t>(waiters_.size());
    waiters_.emplace_back();
  }
  waiters_[w] = Waiter{r, wi, kNil};
  if (fr.tail == kNil) {
    fr.head = fr.tail = w;
  } else {
    waiters_[fr.tail].next = w;
    fr.tail = w;
  }
}

void Gpu::raise_entry(FaultRecord& fr, Tick t, bool counted) {
  Utlb& ut = utlbs_[fr.utlb];
  if (counted) ++ut.outstanding;
  const Tick ready = t + fault_lat_;
  if (!paced_) {
    ++ctx_.stats.gpu_faults;
    ++ks_->gpu_faults;
    buffer_.push(FaultEntry{fr.page_va, ready, fr.utlb, fr.kind});
    irq_.raise(ready);
    return;
  }
  // The uTLB reports its misses one at a time and the GMMU serialises the writes of all uTLBs,
  // so concurrent faults of many SMs reach the buffer interleaved in time (Allen & Ge, SC'21:
  // every SM contributes ~3 entries to a full batch) rather than one uTLB's burst after another.
  const auto rid = static_cast<std::uint32_t>(&fr - records_.data());
  ut.reports.push_back(
      QueuedReport{fr.page_va, ready, rid, fr.block, record_gen_[rid], fr.kind, counted});
  ++queued_reports_;
  if (!ut.report_scheduled) {
    ut.report_scheduled = true;
    ctx_.queue.schedule(std::max(ready, ut.report_free), EventType::FaultReport, fr.utlb, ord_);
  }
}

bool Gpu::report_due(std::uint32_t u, Tick now) {
  Utlb& ut = utlbs_[u];
  if (ut.report_head == ut.reports.size()) {  // a replay dropped what was queued
    ut.report_scheduled = false;
    return false;
  }
  // A replay may also have replaced the report by a later one: wait for that one.
  if (const Tick ready = std::max(ut.reports[ut.report_head].valid_at, ut.report_free);
      ready > now) {
    ctx_.queue.schedule(ready, EventType::FaultReport, u, ord_);
    return false;
  }
  return true;
}

void Gpu::wait_for_gmmu(std::uint32_t u) {
  if (!gmmu_waiting_[u]) {
    gmmu_waiting_[u] = 1;
    // The ring holds each uTLB at most once, so head + count < 2 * size: a compare wraps it
    // instead of a division (one per fault entry here and in on_gmmu_free).
    std::size_t at = gmmu_head_ + gmmu_count_++;
    if (at >= gmmu_ring_.size()) at -= gmmu_ring_.size();
    gmmu_ring_[at] = u;
  }
}

void Gpu::on_fault_report(std::uint32_t u, Tick now) {
  settle_join(now, ctx_.queue.now_seq());
  if (!report_due(u, now)) return;
  if (gmmu_free_ > now) {
    // The GMMU is writing another uTLB's entry: wait in line (report_scheduled stays set).
    wait_for_gmmu(u);
    if (!gmmu_event_) {
      gmmu_event_ = true;
      ctx_.queue.schedule(gmmu_free_, EventType::GmmuFree, 0, ord_);
    }
    return;
  }
  write_report(u, now);
}

Tick Gpu::on_gmmu_free(Tick now, Tick horizon) {
  std::uint64_t seq = ctx_.queue.now_seq();
  for (;;) {
    settle_join(now, seq);
    gmmu_event_ = false;
    while (gmmu_count_ > 0) {
      if (gmmu_random_ && gmmu_count_ > 1) {
        // Any waiting uTLB may be next: swap the drawn one to the front of the line.
        const std::size_t k = (gmmu_head_ + gmmu_rng_() % gmmu_count_) % gmmu_ring_.size();
        std::swap(gmmu_ring_[k], gmmu_ring_[gmmu_head_]);
      }
      const std::uint32_t u = gmmu_ring_[gmmu_head_];
      if (++gmmu_head_ == gmmu_ring_.size()) gmmu_head_ = 0;
      --gmmu_count_;
      gmmu_waiting_[u] = 0;
      if (!report_due(u, now)) continue;
      write_report(u, now, gmmu_count_ > 0);
      break;
    }
    if (gmmu_count_ == 0) return now;
    // The next GmmuFree event. If it would be the next to fire (strictly earlier than every
    // queued event, whose sequence numbers are all smaller than its would be) and within the
    // horizon, fire it here: the same work in the same order, without the queue. Under heavy
    // thrash the GMMU is never idle and this was one event per fault entry (docs/speed-history.md,
    // "The same comparison without timing noise").
    const Tick next = gmmu_free_;
    if (next > horizon || (!ctx_.queue.empty() && ctx_.queue.next_time() <= next)) {
      gmmu_event_ = true;
      ctx_.queue.schedule(next, EventType::GmmuFree, 0, ord_);
      return now;
    }
    now = next;
    // A deferred join (settle_join) was reserved before this event would have been scheduled,
    // so at equal times it goes first: any sequence number above it says so.
    seq = ~std::uint64_t{0};
  }
}

void Gpu::write_report(std::uint32_t u, Tick now, bool defer) {
  Utlb& ut = utlbs_[u];
  const QueuedReport ref = ut.reports[ut.report_head++];
  --queued_reports_;
  const FaultEntry e{ref.page_va, now, u, ref.kind};
  // The GMMU's time goes to the walk whether or not it ends in an entry.
  gmmu_free_ = now + write_interval_;
  ut.report_free = now + utlb_interval_;
  // Counted when written: a report a replay drops before the GMMU writes it, or whose walk
  // finds a valid PTE, never reaches the buffer (gpu_faults counts fault-buffer entries,
  // docs/stats.md).
  if (record_gen_[ref.rid] != ref.gen) {
    // An earlier report of the same miss (gpu.utlb_fault_per_access) found the page mapped and
    // its record is gone: this walk finds the PTE too.
    if (ref.counted) --ut.outstanding;
    ++ctx_.stats.faults_resolved_at_walk;
  } else if (!recheck_pte_ || !resolve_report(e, ref.rid, ref.block, now, ref.counted)) {
    ++ctx_.stats.gpu_faults;
    ++ks_->gpu_faults;
    buffer_.push(e);
    irq_.raise(now);
  }
  if (ut.report_head == ut.reports.size()) {
    ut.reports.clear();  // keeps its capacity
    ut.report_head = 0;
    ut.report_scheduled = false;
    return;
  }
  // The next report's walk reads its record's generation and its block's residency: both are
  // cache misses when the GMMU gets to it (write_report and resolve_report were ~12 % of
  // `random` 4 GB at 50 %), so ask for them now, one GMMU interval ahead.
  const QueuedReport& next = ut.reports[ut.report_head];
  __builtin_prefetch(&record_gen_[next.rid]);
  const VaBlock& nb = ctx_.va.blocks()[next.block];
  const std::size_t word = VaSpace::page_index(next.page_va) / 64 * 8;
  __builtin_prefetch(reinterpret_cast<const char*>(&state_of(nb).resident) + word);
  __builtin_prefetch(reinterpret_cast<const char*>(&state_of(nb).remote_mapped) +
                     word);  // Gpu::mapped
  const Tick due = std::max(next.valid_at, ut.report_free);
  if (defer && due < gmmu_free_) {
    // Its event would find the GMMU busy and only join the ring (join_).
    join_ = DeferredJoin{due, ctx_.queue.reserve_seq(), u, true};
    return;
  }
  ctx_.queue.schedule(due, EventType::FaultReport, u, ord_);
}

void Gpu::free_record(std::uint32_t rid) {
  FaultRecord& fr = records_[rid];
  fr.live = false;
  if (++record_gen_[rid] == kNil) record_gen_[rid] = 0;  // kNil marks moved uTLB queue entries
  --utlbs_[fr.utlb].live;
  free_records_.push_back(rid);
}

void Gpu::complete_waiters(std::uint32_t bi, Tick now) {
  const VaBlock& b = ctx_.va.blocks()[bi];
  BlockWait& bw = block_wait_[bi];
  // Pages the GPU can now reach: resident ones once their PTEs are written, and remote ones.
  const GpuBlockState& g = state_of(b);
  PageMask reachable = g.remote_mapped;
  if (b.accessed_by & self_bit_) reachable |= b.cpu_resident;
  if (peers_) {
    reachable |= g.peer_mapped;
    if (b.accessed_by & self_bit_)
      for (unsigned h = 0; h < gpus_; ++h)
        if (h != ord_) reachable |= b.gpu(h).resident;
  }
  reachable.and_not(g.resident);
  reachable |= g.usable(now);
  const PageMask ready = bw.waiting & reachable;
  auto& heads = head_slab_[bw.heads];
  // Records and waiters were allocated in fault order, and pages complete in address order, so
  // each step below is a cache miss on a large heavy-faulting run (`random` 1 GB: 164 K live
  // records and waiters, `perf annotate`: ~85 % of this function's samples on those two loads).
  // Three sweeps first touch what the loop will read, a dependent level at a time (the pages'
  // chain heads, their first records, those records' waiters), so the misses
  // of all ready pages overlap instead of following one another. They read nothing the loop
  // changes and change nothing: only what the caches hold.
  for (unsigned p = ready.find_next(0); p < kPagesPerBlock; p = ready.find_next(p + 1))
    __builtin_prefetch(&heads[p]);
  for (unsigned p = ready.find_next(0); p < kPagesPerBlock; p = ready.find_next(p + 1)) {
    if (heads[p] == kNil) continue;
    __builtin_prefetch(&records_[heads[p]]);
    __builtin_prefetch(&record_gen_[heads[p]]);  // free_record bumps it
  }
  for (unsigned p = ready.find_next(0); p < kPagesPerBlock; p = ready.find_next(p + 1))
    for (std::uint32_t x = heads[p]; x != kNil; x = records_[x].next_in_page)
      if (const std::uint32_t w = records_[x].head; w != kNil) {
        // A 40-byte waiter may straddle two cache lines.
        __builtin_prefetch(&waiters_[w]);
        __builtin_prefetch(reinterpret_cast<const char*>(waiters_.data() + w + 1) - 1);
      }
  for (unsigned p = ready.find_next(0); p < kPagesPerBlock; p = ready.find_next(p + 1)) {
    std::uint32_t* link = &heads[p];
    while (*link != kNil) {
      const std::uint32_t rid = *link;
      if (retry_waiters(records_[rid], b, p, now)) {
        *link = records_[rid].next_in_page;
        free_record(rid);
        --bw.records;
      } else {
        link = &records_[rid].next_in_page;
      }
    }
    if (heads[p] == kNil) bw.waiting.reset(p);
  }
}

bool Gpu::retry_waiters(FaultRecord& fr, const VaBlock& b, unsigned p, Tick now) {
  // Retry every waiting access of the page; those the mapping allows complete.
  const GpuBlockState& g = state_of(b);
  std::uint32_t prev = kNil;
  for (std::uint32_t w = fr.head; w != kNil;) {
    const std::uint32_t next = waiters_[w].next;
    if (!mapped(b, g, p, waiters_[w].rec.kind, now)) {  // e.g. a write to a read-only copy
      prev = w;
      w = next;
      continue;
    }
    const Waiter wt = waiters_[w];
    if (prev == kNil)
      fr.head = next;
    else
      waiters_[prev].next = next;
    if (fr.tail == w) fr.tail = prev;
    free_waiters_.push_back(w);
    if (fr.waiting != UINT16_MAX && fr.waiting) --fr.waiting;
    WarpSync& warp = sync_[wt.warp];
    Tick done;
    issue(wt.warp, sm_of(wt.warp), wt.rec, now, done, /*retried=*/true);  // mapped: cannot fault
    warp.group_done = std::max(warp.group_done, done);
    if (--warp.outstanding == 0 && warp.waiting) {
      warp.waiting = false;
      ctx_.queue.schedule(now, EventType::WarpWake, wt.warp, ord_);
    }
    w = next;
  }
  return fr.head == kNil;
}

bool Gpu::resolve_report(const FaultEntry& e, std::uint32_t rid, std::uint32_t bi, Tick now,
                         bool counted) {
  const VaBlock& b = ctx_.va.blocks()[bi];
  const unsigned p = VaSpace::page_index(e.page_va);
  // Most walks still find no PTE: decide that from the block alone. A queued report's record
  // stays live until a replay, which drops the queue with it; accesses that joined the miss
  // since it was raised may need more (a write), so the record's own kind decides the rest.
  const GpuBlockState& g = state_of(b);
  if (!mapped(b, g, p, e.kind, now) || !mapped(b, g, p, records_[rid].kind, now)) return false;
  // The walk finds the PTE a batch wrote since the miss: no entry; the uTLB fills from the walk
  // and the accesses waiting on this miss go ahead now, not at the next replay.
  if (counted) --utlbs_[e.utlb].outstanding;
  ++ctx_.stats.faults_resolved_at_walk;
  if (retry_waiters(records_[rid], b, p, now)) {
    BlockWait& bw = block_wait_[bi];
    auto& heads = head_slab_[bw.heads];
    std::uint32_t* link = &heads[p];
    while (*link != rid) link = &records_[*link].next_in_page;
    *link = records_[rid].next_in_page;
    free_record(rid);
    --bw.records;
    if (heads[p] == kNil) bw.waiting.reset(p);
  }
  return true;
}

void Gpu::on_replay(Tick now) {
  // A deferred join: joined before the replay if its event came first, else it becomes that
  // event, which then sees what the replay leaves of the uTLB's reports (report_due).
  settle_join(now, ctx_.queue.now_seq());
  if (join_.active) {
    join_.active = false;
    ctx_.queue.schedule_reserved(join_.time, join_.seq, EventType::FaultReport, join_.utlb, ord_);
  }
  // 1. Every waiting access retries. Only pages whose block mapping changed since the last look
  //    can now succeed, so only those blocks are examined.
  std::size_t keep = 0;
  for (const std::uint32_t bi : active_blocks_) {
    const VaBlock& b = ctx_.va.blocks()[bi];
    BlockWait& bw = block_wait_[bi];
    const GpuBlockState& g = state_of(b);
    if (bw.gen_seen != g.mapping_gen) {
      // Remember the generation only once the new PTEs are usable, else look again next time.
      if (now >= g.map_ready_at) bw.gen_seen = g.mapping_gen;
      complete_waiters(bi, now);
    }
    if (bw.records == 0) {
      free_heads_.push_back(bw.heads);
      bw.heads = kNil;
      bw.waiting.clear();
    } else {
      active_blocks_[keep++] = bi;
    }
  }
  active_blocks_.resize(keep);
  // 2. The accesses that still miss fault again: each uTLB re-raises misses from the front of
  //    its queue, up to its outstanding limit; the rest stay held back until a later replay.
  const Tick retry_at = now + l1_lat_ + l2_lat_ + walk_lat_;
  for (auto& ut : utlbs_) {
    // Misses the uTLB has not reported yet are not in the buffer: the replay re-translates them
    // with the rest, and those still missing are raised again below, in queue order.
    queued_reports_ -= ut.reports.size() - ut.report_head;
    ut.reports.clear();
    ut.report_head = 0;
    ut.outstanding = 0;
    if (ut.live == 0) {
      ut.fifo.clear();
      ut.fifo_head = 0;
      continue;
    }
    std::size_t i = ut.fifo_head;
    for (; i < ut.fifo.size() && !fifo_live(ut.fifo[i]); ++i)
      if (i + 16 < ut.fifo.size()) __builtin_prefetch(&record_gen_[ut.fifo[i + 16].first]);
    ut.fifo_head = i;
    // `age`: the oldest misses first, so the warps that faulted first are served again first.
    // `round_robin`: a miss raised again goes to the back of the queue (its old place becomes
    // dead), behind the misses still held back, so the warps take the uTLB's entries in turn.
    // Which order the hardware uses is not documented; docs/driver-model.md ("Which misses a
    // uTLB raises after a replay") measures what each gives.
    const std::size_t end = ut.fifo.size();
    std::uint32_t raised = 0;  // misses (records) raised again, whatever their entry count
    for (; i < end; ++i) {
      // raise_entry reads the record, and records lie in allocation order, not FIFO order: a
      // miss each (~80 % of raise_entry's samples on `random` 4 GB). Ask for one 16 ahead.
      if (i + 16 < end) {
        __builtin_prefetch(&records_[ut.fifo[i + 16].first]);
        __builtin_prefetch(&record_gen_[ut.fifo[i + 16].first]);
      }
      if (!fifo_live(ut.fifo[i])) continue;
      const auto [rid, gen] = ut.fifo[i];
      if (ut.outstanding >= cfg_.gpu.utlb_max_outstanding_faults || !buffer_room()) break;
      ++ctx_.stats.fault_retries;
      ++raised;
      raise_entry(records_[rid], retry_at);
      // gpu.utlb_fault_per_access: every access still waiting on the miss faults again.
      for (unsigned k = 1; per_access_ && k < records_[rid].waiting; ++k) {
        if (!buffer_room() ||
            (!limit_misses_ && ut.outstanding >= cfg_.gpu.utlb_max_outstanding_faults))
          break;
        ++ctx_.stats.fault_retries;
        raise_entry(records_[rid], retry_at, !limit_misses_);
      }
      if (round_robin_) {
        ut.fifo[i].second = kNil;  // never a record's generation (free_record skips it)
        ut.fifo.emplace_back(rid, gen);
      }
    }
    // Misses held back: with an entry per waiting access, `outstanding` counts entries, which
    // may exceed the misses, so count the misses raised.
    ctx_.stats.utlb_stalls += ut.live - raised;
    // Drop dead entries once they dominate, so the walk above stays short.
    if (ut.fifo.size() - ut.fifo_head > 2 * std::size_t{ut.live} + 64) {
      std::size_t k = 0;
      for (std::size_t j = ut.fifo_head; j < ut.fifo.size(); ++j)
        if (fifo_live(ut.fifo[j])) ut.fifo[k++] = ut.fifo[j];
      ut.fifo.resize(k);
      ut.fifo_head = 0;
    } else if (ut.fifo_head > 4096 && ut.fifo_head * 2 > ut.fifo.size()) {
      ut.fifo.erase(ut.fifo.begin(), ut.fifo.begin() + static_cast<std::ptrdiff_t>(ut.fifo_head));
      ut.fifo_head = 0;
    }
  }
}

void Gpu::finish_warp(std::uint32_t wi, Tick t) {
  Warp& w = warps_[wi];
  w.active = false;
  TbSlot& s = slots_[w.tb_slot];
  end_time_ = std::max(end_time_, t);
  if (--s.warps_left) return;
  const std::uint64_t tb = s.view.tb_id;
  stream_->release(s.view);
  s.active = false;
  ++tbs_done_;
  ++position_.tbs_done;
  if (listener_) listener_->on_threadblock_end(tb, t);
  if (tbs_started_ < tbs_total_) start_tb(w.tb_slot, t);
}

}  // namespace uvmsim
