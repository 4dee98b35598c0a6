#include "models/gpu.h"

#include <algorithm>

#include "sim/error.h"

namespace uvmsim {

Gpu::Gpu(SimContext& ctx, FaultBuffer& buffer, UvmDriver& driver)
    : ctx_(ctx),
      cfg_(ctx.cfg),
      buffer_(buffer),
      driver_(driver),
      eviction_(driver.eviction()),
      notify_accesses_(driver.eviction().wants_access_notifications()) {
  ps_per_cycle_ = 1e6 / cfg_.gpu.clock_mhz;
  l1_lat_ = cycles(cfg_.tlb.l1_latency_cycles);
  l2_lat_ = cycles(cfg_.tlb.l2_latency_cycles);
  walk_lat_ = ns_to_ps(cfg_.tlb.walk_latency_ns);
  fault_lat_ = ns_to_ps(cfg_.gpu.fault_latency_ns);
  l1_.resize(cfg_.gpu.num_sms);
  for (auto& t : l1_) t.reset(cfg_.tlb.l1_entries, cfg_.tlb.l1_assoc);
  l2_.reset(cfg_.tlb.l2_entries, cfg_.tlb.l2_assoc);
  hbm_.configure(cfg_.hbm.bandwidth_gbps, cfg_.hbm.latency_ns);
  link_.configure(cfg_.link.bandwidth_gbps, cfg_.link.remote_latency_ns);
  utlbs_.resize((cfg_.gpu.num_sms + cfg_.gpu.sms_per_utlb - 1) / cfg_.gpu.sms_per_utlb);
  buffer_.configure(cfg_.gpu.fault_buffer_entries);
}

void Gpu::launch(const trace::KernelInfo& k, trace::LaunchStream& stream, Tick start,
                 KernelStats& ks) {
  const auto& g = cfg_.gpu;
  const std::uint64_t threads = k.block.count();
  warps_per_tb_ = k.warps_per_block();
  // Occupancy: threadblocks per SM limited by every per-SM resource the kernel uses.
  std::uint64_t per_sm = g.max_blocks_per_sm;
  per_sm = std::min<std::uint64_t>(per_sm, g.max_warps_per_sm / std::max(1u, warps_per_tb_));
  per_sm = std::min<std::uint64_t>(per_sm, g.max_threads_per_sm / std::max<std::uint64_t>(1, threads));
  if (k.regs_per_thread)
    per_sm = std::min<std::uint64_t>(per_sm, g.regs_per_sm / (std::uint64_t{k.regs_per_thread} * threads));
  if (k.shared_mem_bytes) per_sm = std::min<std::uint64_t>(per_sm, g.smem_per_sm / k.shared_mem_bytes);
  if (per_sm == 0)
    throw UserError("kernel '" + k.name + "'", "block",
                    "a threadblock of " + std::to_string(threads) +
                        " threads does not fit on one SM of " + g.name);
  tbs_per_sm_ = static_cast<std::uint32_t>(per_sm);
  const std::size_t nslots = std::size_t{g.num_sms} * tbs_per_sm_;
  slots_.assign(nslots, TbSlot{});
  if (warps_.size() < nslots * warps_per_tb_) warps_.resize(nslots * warps_per_tb_);
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
  s.active = true;
  s.view.warp_streams(stream_scratch_);
  if (s.view.num_warps > warps_per_tb_) {
    throw UserError("trace", "threadblock",
                    "threadblock " + std::to_string(s.view.tb_id) + " has " +
                        std::to_string(s.view.num_warps) + " warps, kernel declares " +
                        std::to_string(warps_per_tb_));
  }
  s.warps_left = s.view.num_warps;
  const std::uint32_t sm = slot / tbs_per_sm_;
  for (std::uint32_t i = 0; i < s.view.num_warps; ++i) {
    const std::uint32_t wi = slot * warps_per_tb_ + i;
    Warp& w = warps_[wi];
    w = Warp{};
    w.stream = stream_scratch_[i];
    w.tb_slot = slot;
    w.sm = sm;
    w.active = true;
    w.group_done = t;
    ctx_.queue.schedule(t, EventType::WarpWake, wi);
  }
  if (s.view.num_warps == 0) {
    s.warps_left = 1;
    warps_[slot * warps_per_tb_].tb_slot = slot;
    finish_warp(slot * warps_per_tb_, t);
  }
}

void Gpu::on_warp_wake(std::uint32_t wi, Tick now) {
  if (wi < warps_.size() && warps_[wi].active) run_warp(wi, now);
}

void Gpu::run_warp(std::uint32_t wi, Tick t) {
  Warp& w = warps_[wi];
  for (;;) {
    if (!w.has_cur) {
      if (!w.stream.next(w.cur)) {
        if (w.outstanding) {
          w.waiting = true;
          return;
        }
        if (w.group_done > t) {
          if (!can_inline(w.group_done)) {
            ctx_.queue.schedule(w.group_done, EventType::WarpWake, wi);
            return;
          }
          t = w.group_done;
        }
        finish_warp(wi, t);
        return;
      }
      w.has_cur = true;
      w.gap_paid = false;
      ++ctx_.stats.records;
    }
    if (w.cur.gap_cycles && !w.gap_paid) {
      // Compute consumes the results of the warp's earlier loads: wait for all of them.
      if (w.outstanding) {
        w.waiting = true;
        return;
      }
      const Tick ready = std::max(t, w.group_done) + cycles(w.cur.gap_cycles);
      w.gap_paid = true;
      if (!can_inline(ready)) {
        ctx_.queue.schedule(ready, EventType::WarpWake, wi);
        return;
      }
      t = ready;
    }
    w.has_cur = false;
    Tick done;
    if (issue(wi, w.cur, t, done)) {
      w.group_done = std::max(w.group_done, done);
    } else {
      ++w.outstanding;
    }
  }
}

Tick Gpu::local_access(Tick t, const trace::AccessRecord& r) {
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
  Tick done = link_.access(t, bytes);
  if (r.repeat > 1 && r.gap_cycles)
    done += (r.repeat - 1) * (link_.latency() + cycles(r.gap_cycles));
  return done;
}

bool Gpu::issue(std::uint32_t wi, const trace::AccessRecord& r, Tick t, Tick& done) {
  Warp& w = warps_[wi];
  auto& s = ctx_.stats;
  const VaRange* rg = w.last_range;
  if (!rg || r.va < rg->base || r.va >= rg->base + rg->size) {
    rg = ctx_.va.find_range(r.va);
    w.last_range = rg;
  }
  ++s.l1_tlb_lookups;
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
  const bool local = b.gpu_resident.test(page) && t >= b.map_ready_at &&
                     !(write && b.read_only_gpu.test(page));
  const bool remote = !local && !b.gpu_resident.test(page) &&
                      (b.remote_mapped.test(page) ||
                       (b.accessed_by_gpu && b.cpu_resident.test(page)));
  Tick lat = l1_lat_;
  if (local || remote) {
    // The PTE size the driver would have written: 2 MB if the whole block is resident, 64 KB
    // for a fully resident big page, else 4 KB (uvm-driver.md §6).
    unsigned shift = kPageShift, cls = 0;
    if (local) {
      if (b.full_block() && b.gpu_count == kPagesPerBlock) {
        shift = kBlockShift, cls = 2;
      } else if (b.gpu_resident.big_page_full(page / kPagesPerBigPage)) {
        shift = kBigPageShift, cls = 1;
      }
    }
    const std::uint64_t key = ((r.va >> shift) << 2) | cls;
    Tlb& l1 = l1_[w.sm];
    if (l1.lookup(key, b.mapping_gen)) {
      ++s.l1_tlb_hits;
    } else {
      lat += l2_lat_;
      ++s.l2_tlb_lookups;
      if (l2_.lookup(key, b.mapping_gen)) {
        ++s.l2_tlb_hits;
      } else {
        lat += walk_lat_;
        ++s.page_walks;
        l2_.insert(key, b.mapping_gen);
      }
      l1.insert(key, b.mapping_gen);
    }
    if (local) {
      done = local_access(t + lat, r);
      if (write) b.dirty.set(page);
      if (notify_accesses_) eviction_.on_access(b, page, t);
    } else {
      done = remote_access(t + lat, r);
      driver_.on_remote_access(r.va, r.repeat, t);
    }
    s.accesses += r.repeat;
    ks_->accesses += r.repeat;
    return true;
  }
  // No valid PTE: the L1 and L2 TLBs miss, the GMMU walk finds nothing, and a far fault follows.
  ++s.l2_tlb_lookups;
  ++s.page_walks;
  raise_fault(wi, r, t + lat + l2_lat_ + walk_lat_);
  return false;
}

void Gpu::raise_fault(std::uint32_t wi, const trace::AccessRecord& r, Tick t) {
  const std::uint32_t u = warps_[wi].sm / cfg_.gpu.sms_per_utlb;
  Utlb& ut = utlbs_[u];
  const Addr page_va = r.va & ~(kPageSize - 1);
  ut.pending.push_back({wi, r});
  // A uTLB holds one outstanding miss per page: later accesses to it just wait with it.
  if (std::find(ut.outstanding.begin(), ut.outstanding.end(), page_va) != ut.outstanding.end())
    return;
  if (ut.outstanding.size() >= cfg_.gpu.utlb_max_outstanding_faults || buffer_.full()) {
    ++ctx_.stats.utlb_stalls;  // held back; it retries at the next replay
    return;
  }
  ut.outstanding.push_back(page_va);
  const Tick valid_at = t + fault_lat_;
  buffer_.push(FaultEntry{page_va, valid_at, u, r.kind});
  ++ctx_.stats.gpu_faults;
  ++ks_->gpu_faults;
  driver_.on_fault_pushed(valid_at);
}

void Gpu::on_replay(Tick now) {
  for (auto& ut : utlbs_) {
    if (ut.pending.empty()) {
      ut.outstanding.clear();
      continue;
    }
    replay_scratch_.swap(ut.pending);
    ut.pending.clear();
    ut.outstanding.clear();
    for (const Pending& p : replay_scratch_) {
      ++ctx_.stats.fault_retries;
      Warp& w = warps_[p.warp];
      Tick done;
      if (!issue(p.warp, p.rec, now, done)) continue;  // faulted again: pending once more
      w.group_done = std::max(w.group_done, done);
      if (--w.outstanding == 0 && w.waiting) {
        w.waiting = false;
        ctx_.queue.schedule(now, EventType::WarpWake, p.warp);
      }
    }
    replay_scratch_.clear();
  }
}

void Gpu::finish_warp(std::uint32_t wi, Tick t) {
  Warp& w = warps_[wi];
  w.active = false;
  TbSlot& s = slots_[w.tb_slot];
  end_time_ = std::max(end_time_, t);
  if (--s.warps_left) return;
  stream_->release(s.view);
  s.active = false;
  ++tbs_done_;
  if (tbs_started_ < tbs_total_) start_tb(w.tb_slot, t);
}

}  // namespace uvmsim
