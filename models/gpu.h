// The GPU model: SMs running threadblocks dispatched in id order as slots free, warps issuing
// their trace records in order (independent accesses back to back, a compute gap waiting for the
// warp's outstanding accesses), per-SM L1 TLBs and a shared L2 TLB with mapping-size aware
// entries, HBM and link timing, and the GMMU far-fault path: uTLBs with a bounded number of
// outstanding faults writing replayable entries into the fault buffer, and replays that make
// every held-back access retry.
//
// The boundary to the driver is one-way, as on real hardware: the GPU writes the fault buffer and
// the access counters' notification buffer and raises the interrupt; the driver answers with
// page-table changes (the VA space's residency and mapping state) and replays (on_replay). A
// GpuListener hears completed accesses and threadblocks (models/gpu_listener.h).
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "core/huge_page_allocator.h"
#include "models/access_counters.h"
#include "models/fault_buffer.h"
#include "models/gpu_listener.h"
#include "models/interrupt.h"
#include "models/sim_context.h"
#include "models/sm_throughput.h"
#include "models/timing.h"
#include "models/tlb.h"
#include "traces/trace.h"

namespace uvmsim {

class Gpu final : public ThreadblockSource {
 public:
  /// GPU `ordinal` of the machine: its events carry it (Event::gpu).
  Gpu(SimContext& ctx, FaultBuffer& buffer, AccessCounters& counters, Interrupt& irq,
      std::uint8_t ordinal);
  std::uint8_t ordinal() const { return ord_; }
  /// Tests only: switches the TLB-hit shortcut (Gpu::memo_hit) off for GPUs created after the
  /// call, to check that it changes no result.
  static void set_translation_memo(bool on) { memo_default_ = on; }
  /// Who hears completed accesses (if it wants them) and threadblock ends; may be null.
  void set_listener(GpuListener* l) {
    listener_ = l;
    notify_accesses_ = l && l->wants_accesses();
  }

  /// Starts a launch at `start`. The caller drains the event queue; done() tells completion.
  void launch(const trace::KernelInfo& kernel, trace::LaunchStream& stream, Tick start,
              KernelStats& ks);
  bool done() const { return tbs_done_ == tbs_total_; }
  /// The GPU runs a warp on without the event queue only up to `t` (inclusive): the simulator
  /// sets it to the next host event's time while other GPUs' work and host events interleave, so
  /// no GPU gets ahead of a host action (kTickMax: only the queue bounds it).
  void set_inline_horizon(Tick t) { inline_horizon_ = t; }
  Tick end_time() const { return end_time_; }
  std::uint64_t unfinished_threadblocks() const { return tbs_total_ - tbs_done_; }

  /// Inline: it is the event loop's most common call (a STREAM run wakes ~3 times per warp),
  /// and the call into it cost about as much as its test.
  void on_warp_wake(std::uint32_t wi, Tick now) {
    if (wi < warps_.size() && warps_[wi].active) run_warp(wi, now);
  }
  /// A WarpWake of `wi` comes soon: `stage` 0 brings the warp's state into the cache, stage 1
  /// (a few events later, its state then cached) the bytes of its next trace record. Changes
  /// nothing but what the caches hold.
  void prefetch_warp(std::uint32_t wi, int stage) const {
    if (wi >= warps_.size()) return;
    if (stage == 0) {
      __builtin_prefetch(&warps_[wi]);
    } else if (const std::uint8_t* p = warps_[wi].stream.position()) {
      __builtin_prefetch(p);
    }
  }
  /// The running threadblocks and the records issued by their slowest unfinished warp.
  void running_threadblocks(std::vector<ThreadblockProgress>& out) const override;
  void on_replay(Tick now);
  /// uTLB `utlb`'s oldest queued far fault is due: the GMMU writes it into the fault buffer now,
  /// or, if it is writing another uTLB's entry, the uTLB waits in line for on_gmmu_free.
  void on_fault_report(std::uint32_t utlb, Tick now);
  /// The GMMU is free again: it writes the report of the uTLB that has waited longest for it.
  /// While more wait and no other event is due before the GMMU is free again (nor `horizon`,
  /// the last time the caller lets it run to without looking), it goes on writing without a
  /// trip through the event queue. Returns the time of the last entry written.
  Tick on_gmmu_free(Tick now, Tick horizon);

 private:
  struct Warp {
    trace::WarpStream stream;
    trace::AccessRecord cur;
    std::uint32_t tb_slot = 0;
    std::uint32_t sm = 0;  ///< == sm_of(this warp's index), read where the warp is in cache
    bool has_cur = false;
    bool gap_paid = false;
    bool active = false;
  };
  /// What a replay's retried access updates in its warp, kept apart from `Warp` (112 bytes; 5,120
  /// warps on `titanv` are 573 KB, beyond the L2 cache): 16 bytes a warp, so the retries of a
  /// heavy-faulting run (`random`, thousands of warps per replay, in page order) find it in
  /// the cache instead of missing on each warp's record (`perf annotate` of retry_waiters).
  struct WarpSync {
    Tick group_done = 0;            ///< when the warp's accesses issued so far complete
    std::uint32_t outstanding = 0;  ///< accesses waiting for a replay
    bool waiting = false;           ///< the warp sleeps until `outstanding` reaches 0
  };
  struct TbSlot {
    trace::ThreadblockView view;
    std::uint32_t warps_left = 0;
    bool active = false;
  };
  /// An access waiting for a replay (slab entry; `next` links the waiters of one record).
  struct Waiter {
    trace::AccessRecord rec;
    std::uint32_t warp = 0;
    std::uint32_t next = kNil;
  };
  /// One faulting page as seen by one uTLB: the uTLB keeps a single miss per page, and every
  /// access to it waits with it. `raised` says whether it has an entry in the fault buffer.
  struct FaultRecord {
    Addr page_va = 0;
    std::uint32_t block = 0;
    std::uint32_t head = kNil, tail = kNil;
    std::uint32_t next_in_page = kNil;  ///< other uTLBs' records for the same page
    std::uint16_t page = 0;
    std::uint16_t utlb = 0;
    AccessKind kind = AccessKind::Read;
    bool live = false;
    /// Accesses waiting on the miss (saturating): with gpu.utlb_fault_per_access each raises
    /// its own entry at a replay.
    std::uint16_t waiting = 0;
  };
  /// A fault a uTLB has raised and not yet reported (paced reporting): the entry it becomes
  /// (the uTLB is the queue's owner, the write time the GMMU's), its record, the record's block,
  /// and the record's generation when it was raised (a record freed by an earlier report's
  /// successful walk makes its later reports stale). One 32-byte element: the entry and its
  /// record in two vectors cost two capacity checks per raise and two lines per write.
  struct QueuedReport {
    Addr page_va = 0;
    Tick valid_at = 0;  ///< when the uTLB may report it
    std::uint32_t rid = 0, block = 0, gen = 0;
    AccessKind kind = AccessKind::Read;
    bool counted = true;  ///< it took one of its uTLB's outstanding slots
  };
  static_assert(sizeof(QueuedReport) == 32);
  struct Utlb {
    /// Records in fault order; entries whose generation no longer matches are dead.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> fifo;
    std::size_t fifo_head = 0;
    std::uint32_t outstanding = 0;  ///< records with an entry in the buffer this epoch
    std::uint32_t live = 0;
    /// Far faults raised but not yet written to the buffer, oldest first (paced reporting),
    /// each with its record and block (so the walk reads the block's mapping without first
    /// missing on the record).
    std::vector<QueuedReport> reports;
    std::size_t report_head = 0;
    Tick report_free = 0;  ///< the uTLB may report its next fault from here on
    bool report_scheduled = false;
  };
  static constexpr std::uint32_t kNil = ~std::uint32_t{0};
  /// A uTLB queue entry still names a live miss. An entry moved to the back by a `round_robin`
  /// replay carries kNil and is known dead without reading record_gen_ (a cache miss per entry:
  /// the dead prefix of a thrashing uTLB's queue was ~40 % of Gpu::on_replay on `random` 4 GB).
  bool fifo_live(const std::pair<std::uint32_t, std::uint32_t>& e) const {
    return e.second != kNil && record_gen_[e.first] == e.second;
  }

  void run_warp(std::uint32_t wi, Tick t);
  /// Issues one record at `t`. Returns true with `done` set if it completed, false if it
  /// faulted (then it waits in its uTLB for a replay).
  /// Warp `wi` runs on `sm` (the caller passes it: see sm_of). `retried`: the access waited for a
  /// replay and its page is now mapped, so the TLB-hit memo cannot know it yet (its entry is for
  /// an earlier mapping or another page); the look-up is skipped (a cache miss on a
  /// heavy-faulting run, for nothing).
  bool issue(std::uint32_t wi, std::uint32_t sm, const trace::AccessRecord& r, Tick t, Tick& done,
             bool retried = false);
  /// The SM warp `wi` runs on. Warp slots are laid out SM by SM (start_tb: slot `sm *
  /// tbs_per_sm_ + k`, warps `slot * warps_per_tb_ + i`), so this is arithmetic, not a load of
  /// the warp: a replay retries accesses of thousands of warps whose state is not in the cache.
  /// The warp loop, whose warp is in the cache, reads `Warp::sm` instead of dividing.
  std::uint32_t sm_of(std::uint32_t wi) const { return wi / warps_per_sm_; }
  Tick local_access(Tick t, const trace::AccessRecord& r);
  Tick remote_access(Tick t, const trace::AccessRecord& r);
  /// A remote access to GPU `holder`'s memory over the peer link (system.peer).
  Tick peer_access(Tick t, const trace::AccessRecord& r, unsigned holder);
  /// The other GPU whose copy of `page` of `b` this GPU reaches (the lowest holding it), or -1.
  int peer_holder(const VaBlock& b, unsigned page) const {
    for (unsigned h = 0; h < gpus_; ++h)
      if (h != ord_ && b.gpu(h).resident.test(page)) return static_cast<int>(h);
    return -1;
  }
  /// With peer access, a page not resident here nor on the host may be mapped in a peer's
  /// memory: by a fault that chose it (peer_mapped), or for accessed-by (the driver maps an
  /// accessed-by processor wherever the page moves: uvm_va_block_add_mappings_after_migration).
  bool peer_mapped(const VaBlock& b, const GpuBlockState& g, unsigned page) const {
    return g.peer_mapped.test(page) || ((b.accessed_by & self_bit_) && peer_holder(b, page) >= 0);
  }
  /// This GPU's state of `b` (an empty one if it never touched the block).
  const GpuBlockState& state_of(const VaBlock& b) const { return b.gpu(ord_); }
  /// True if the GPU, whose state of `b` is `g`, has a valid mapping for `kind` on `page` of
  /// `b` at `t`. (The access path looks its state up once and passes it on.)
  bool mapped(const VaBlock& b, const GpuBlockState& g, unsigned page, AccessKind kind,
              Tick t) const {
    const bool write = kind >= AccessKind::Write;
    if (g.resident.test(page))
      return (t >= g.map_ready_at || !g.map_pending.test(page)) &&
             !(write && g.read_only.test(page));
    return g.remote_mapped.test(page) ||
           ((b.accessed_by & self_bit_) && b.cpu_resident.test(page)) ||
           // A peer's copy of a read-mostly page is read-only (a read duplicate): a write faults.
           (peers_ && !(write && b.read_mostly) && peer_mapped(b, g, page));
  }
  void raise_fault(std::uint32_t wi, std::uint32_t sm, const trace::AccessRecord& r,
                   std::uint32_t block, unsigned page, Tick t);
  void raise_entry(FaultRecord& fr, Tick t, bool counted = true);
  /// True if the fault buffer has room for one more entry (counting reports on their way).
  bool buffer_room() const { return buffer_.size() + queued_reports_ < buffer_.capacity(); }
  void free_record(std::uint32_t rid);
  void complete_waiters(std::uint32_t bi, Tick now);
  /// Completes the waiters of `fr` (page `p` of `b`) that the mapping now allows; true if none
  /// is left.
  bool retry_waiters(FaultRecord& fr, const VaBlock& b, unsigned p, Tick now);
  /// Report `e` (record `rid`, of `block`) is due: if its page has been mapped since the miss (a
  /// batch serviced it meanwhile), the GMMU's walk succeeds, the record's waiters complete and
  /// true is returned.
  bool resolve_report(const FaultEntry& e, std::uint32_t rid, std::uint32_t block, Tick now,
                      bool counted);
  void finish_warp(std::uint32_t wi, Tick t);
  void start_tb(std::uint32_t slot, Tick t);
  bool can_inline(Tick t) const {
    return t <= inline_horizon_ && (ctx_.queue.empty() || t < ctx_.queue.next_time());
  }
  Tick cycles(std::uint64_t c) const { return static_cast<Tick>(c * ps_per_cycle_); }

  SimContext& ctx_;
  const SimConfig& cfg_;
  FaultBuffer& buffer_;
  AccessCounters& counters_;
  Interrupt& irq_;
  std::uint8_t ord_;                ///< this GPU's ordinal, carried by its events
  ProcessorMask self_bit_;          ///< this GPU's bit in processor masks (VaBlock::accessed_by)
  HostLink& link_;                  ///< this GPU's host link (remote accesses)
  ProgramPosition& position_;       ///< this GPU's program position (threadblock counts)
  Tick inline_horizon_ = kTickMax;  ///< set_inline_horizon
  std::uint64_t& remote_bytes_;     ///< this GPU's share of Stats::remote_bytes (GpuStats)
  GpuListener* listener_ = nullptr;
  bool notify_accesses_ = false;  ///< the listener wants every access
  double ps_per_cycle_;
  Tick l1_lat_, l2_lat_, walk_lat_, fault_lat_;
  bool ats_ = false;                 ///< driver.ats: system memory translates by OS pages
  unsigned system_page_shift_ = 16;  ///< log2(driver.system_page_size)
  Tick utlb_interval_, write_interval_;
  bool paced_;          ///< fault reports go through the GMMU's pacing
  bool recheck_pte_;    ///< gpu.fault_write_rechecks_pte
  bool per_access_;     ///< gpu.utlb_fault_per_access
  bool limit_misses_;   ///< gpu.utlb_limit_counts_misses
  bool round_robin_;    ///< gpu.utlb_replay_order = round_robin
  Tick gmmu_free_ = 0;  ///< the GMMU may write its next fault entry from here on
  std::size_t queued_reports_ = 0;
  /// uTLBs with a report due while the GMMU was busy, in the order they became due (a ring of
  /// one slot per uTLB: each waits at most once). One GmmuFree event serves them in turn, so a
  /// busy GMMU costs one event per written entry, not one per waiting uTLB.
  std::vector<std::uint32_t> gmmu_ring_;
  std::size_t gmmu_head_ = 0, gmmu_count_ = 0;
  bool gmmu_random_ = false;  ///< gpu.gmmu_arbitration = random
  std::mt19937_64 gmmu_rng_;  ///< its draws (raw engine output: the same on every platform)
  std::vector<std::uint8_t> gmmu_waiting_;
  bool gmmu_event_ = false;  ///< a GmmuFree event is scheduled
  /// The uTLB just written whose next report falls due while the GMMU is still busy and a
  /// GmmuFree event is pending: its FaultReport event would only join the ring, so it is not
  /// scheduled. It keeps the event's time and reserved sequence number and joins the ring when
  /// an event after it looks at the ring (settle_join), or becomes the real event if a replay
  /// comes first. The run is the same event for event, with one event fewer per entry written
  /// by a busy GMMU (docs/speed-history.md, "The fidelity work
  /// against this table").
  struct DeferredJoin {
    Tick time = 0;
    std::uint64_t seq = 0;
    std::uint32_t utlb = 0;
    bool active = false;
  } join_;
  /// Joins the deferred uTLB to the ring if its event would have fired before (now, seq).
  void settle_join(Tick now, std::uint64_t seq) {
    if (join_.active && (join_.time < now || (join_.time == now && join_.seq < seq))) {
      join_.active = false;
      wait_for_gmmu(join_.utlb);
    }
  }
  /// uTLB `u` waits in line for the busy GMMU.
  void wait_for_gmmu(std::uint32_t u);
  /// True if uTLB `u`'s oldest report can be written at `now`; otherwise clears its schedule
  /// (nothing left: a replay dropped it) or reschedules it for when it is due.
  bool report_due(std::uint32_t u, Tick now);
  /// Writes uTLB `u`'s due report into the buffer at `now` and schedules its next one.
  /// `defer`: called from on_gmmu_free with uTLBs still waiting (a GmmuFree event follows).
  void write_report(std::uint32_t u, Tick now, bool defer = false);

  /// The last translation through an L1 TLB entry by an SM (TLB-hit fast path, Gpu::memo_hit):
  /// the block and this GPU's state of it, the L1 TLB key it used and the L1 entry that holds it.
  /// Only a shortcut to where the full path would look; every condition is checked again.
  struct Memo {
    Addr tag = ~Addr{0};  ///< va >> shift
    VaBlock* b = nullptr;
    GpuBlockState* g = nullptr;
    std::uint64_t key = 0;
    std::size_t slot = 0;
    std::uint32_t gen = 0;  ///< the block's mapping generation when the entry was made
    /// What the entry covers: the page (kPageShift), or with a 64 KB or 2 MB PTE the whole big
    /// page (kBigPageShift) or block (kBlockShift), whose pages all share the one L1 TLB entry.
    /// Per page only, a fully resident block missed the memo on every new page (`bfs` 32 MB at
    /// 50 %: 92 % L1 TLB hits, nearly all on 64 KB entries, and 32 % memo hits). A coarse entry is
    /// only made when the window lies wholly in the block (translate), so the window's number
    /// names the block: no other range has pages there.
    std::uint8_t shift = kPageShift;
  };
  static constexpr unsigned kMemoBits = 6;  ///< 64 memo entries per SM
  static inline bool memo_default_ = true;
  bool memo_on_ = true;
  std::vector<Memo> memo_;
  /// An access's memo entry: by its 64 KB window, so that one probe finds a page's entry and its
  /// big page's alike (the pages of a window share a slot; a 2 MB entry is made again in each
  /// window of the block that is used).
  std::size_t memo_index(std::uint32_t sm, Addr va) const {
    // Multiplicative hash: arrays a power-of-two windows apart would share low bits.
    return (std::size_t{sm} << kMemoBits) +
           (((va >> kBigPageShift) * 0x9E3779B97F4A7C15ull) >> (64 - kMemoBits));
  }
  /// The L1/L2 TLB key of a page resident here: its VA at the PTE size the driver would have
  /// written (2 MB if the whole block is resident, 64 KB for a fully resident big page, else
  /// 4 KB; uvm-driver.md §6) and that size's class.
  static std::uint64_t tlb_key(const VaBlock& b, const GpuBlockState& g, Addr va, unsigned page) {
    if (b.full_block() && g.count == kPagesPerBlock) return ((va >> kBlockShift) << 2) | 2;
    if (g.resident.big_page_full(page / kPagesPerBigPage)) return ((va >> kBigPageShift) << 2) | 1;
    return (va >> kPageShift) << 2;
  }
  /// The access hits the L1 TLB entry `m` points at, on a page resident here: it completes (as
  /// issue's full path would) and true is returned; otherwise nothing is changed.
  bool memo_hit(const Memo& m, std::uint32_t sm, const trace::AccessRecord& r, Tick t, Tick& done);
  /// issue() past the TLB-hit memo: the VA range, block and TLB look-ups, or the far fault.
  bool translate(std::uint32_t wi, std::uint32_t sm, const trace::AccessRecord& r, Tick t,
                 Tick& done, Memo& memo);
  std::vector<Tlb> l1_;
  Tlb l2_;
  BandwidthServer hbm_;
  Tick remote_lat_;     ///< link.remote_latency_ns
  bool peers_ = false;  ///< system.peer is on and the node has other GPUs
  unsigned gpus_ = 1;   ///< system.gpus
  Tick peer_lat_ = 0;   ///< system.peer_latency_ns
  SmThroughput sm_;     ///< per-SM issue slots and LSU sectors (models/sm_throughput.h)
  std::vector<Utlb> utlbs_;
  HugePageVector<Waiter> waiters_;
  std::vector<std::uint32_t> free_waiters_;
  HugePageVector<FaultRecord> records_;
  /// Per record slot, bumped when it is freed: FIFO entries with an older value are dead. Kept
  /// apart from records_ so the replay's FIFO walk touches one dense array.
  std::vector<std::uint32_t> record_gen_;
  std::vector<std::uint32_t> free_records_;
  /// Faulting pages of one VA block: which pages have records, and per page a chain of them.
  struct BlockWait {
    PageMask waiting;
    std::uint32_t heads = kNil;  ///< index into head_slab_, allocated while records exist
    std::uint32_t records = 0;
    std::uint32_t gen_seen = 0;
  };
  std::vector<BlockWait> block_wait_;
  std::vector<std::array<std::uint32_t, kPagesPerBlock>> head_slab_;
  std::vector<std::uint32_t> free_heads_;
  std::vector<std::uint32_t> active_blocks_;  ///< blocks with live records

  // Current launch.
  trace::LaunchStream* stream_ = nullptr;
  KernelStats* ks_ = nullptr;
  std::vector<Warp> warps_;
  std::vector<WarpSync> sync_;  ///< per warp, parallel to warps_
  std::vector<TbSlot> slots_;
  std::vector<trace::WarpStream> stream_scratch_;
  std::uint32_t warps_per_tb_ = 1, tbs_per_sm_ = 1, warps_per_sm_ = 1;
  std::uint64_t tbs_total_ = 0, tbs_started_ = 0, tbs_done_ = 0;
  Tick end_time_ = 0;
};

}  // namespace uvmsim
