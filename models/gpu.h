// The GPU model: SMs running threadblocks dispatched in id order as slots free, warps issuing
// their trace records in order (independent accesses back to back, a compute gap waiting for the
// warp's outstanding accesses), per-SM L1 TLBs and a shared L2 TLB with mapping-size aware
// entries, HBM and link timing, and the GMMU far-fault path: uTLBs with a bounded number of
// outstanding faults writing replayable entries into the fault buffer, and replays that make
// every held-back access retry.
#pragma once

#include <cstdint>
#include <vector>

#include "models/fault_buffer.h"
#include "models/sim_context.h"
#include "models/timing.h"
#include "models/tlb.h"
#include "models/uvm_driver.h"
#include "traces/trace.h"

namespace uvmsim {

class Gpu {
 public:
  Gpu(SimContext& ctx, FaultBuffer& buffer, UvmDriver& driver);

  /// Starts a launch at `start`. The caller drains the event queue; done() tells completion.
  void launch(const trace::KernelInfo& kernel, trace::LaunchStream& stream, Tick start,
              KernelStats& ks);
  bool done() const { return tbs_done_ == tbs_total_; }
  Tick end_time() const { return end_time_; }
  std::uint64_t unfinished_threadblocks() const { return tbs_total_ - tbs_done_; }

  void on_warp_wake(std::uint32_t warp, Tick now);
  void on_replay(Tick now);

 private:
  struct Warp {
    trace::WarpStream stream;
    trace::AccessRecord cur;
    Tick group_done = 0;
    std::uint32_t outstanding = 0;
    std::uint32_t tb_slot = 0;
    std::uint32_t sm = 0;
    const VaRange* last_range = nullptr;
    bool has_cur = false;
    bool gap_paid = false;
    bool waiting = false;
    bool active = false;
  };
  struct TbSlot {
    trace::ThreadblockView view;
    std::uint32_t warps_left = 0;
    bool active = false;
  };
  struct Pending {
    std::uint32_t warp;
    trace::AccessRecord rec;
  };
  struct Utlb {
    std::vector<Addr> outstanding;  ///< faulting pages with an entry in the buffer
    std::vector<Pending> pending;   ///< accesses waiting for a replay, in issue order
  };

  void run_warp(std::uint32_t wi, Tick t);
  /// Issues one record at `t`. Returns true with `done` set if it completed, false if it
  /// faulted (then it waits in its uTLB for a replay).
  bool issue(std::uint32_t wi, const trace::AccessRecord& r, Tick t, Tick& done);
  Tick local_access(Tick t, const trace::AccessRecord& r);
  Tick remote_access(Tick t, const trace::AccessRecord& r);
  void raise_fault(std::uint32_t wi, const trace::AccessRecord& r, Tick t);
  void finish_warp(std::uint32_t wi, Tick t);
  void start_tb(std::uint32_t slot, Tick t);
  bool can_inline(Tick t) const { return ctx_.queue.empty() || t < ctx_.queue.next_time(); }
  Tick cycles(std::uint64_t c) const { return static_cast<Tick>(c * ps_per_cycle_); }

  SimContext& ctx_;
  const SimConfig& cfg_;
  FaultBuffer& buffer_;
  UvmDriver& driver_;
  EvictionPolicy& eviction_;
  const bool notify_accesses_;
  double ps_per_cycle_;
  Tick l1_lat_, l2_lat_, walk_lat_, fault_lat_;

  std::vector<Tlb> l1_;
  Tlb l2_;
  BandwidthServer hbm_, link_;
  std::vector<Utlb> utlbs_;
  std::vector<Pending> replay_scratch_;

  // Current launch.
  trace::LaunchStream* stream_ = nullptr;
  KernelStats* ks_ = nullptr;
  std::vector<Warp> warps_;
  std::vector<TbSlot> slots_;
  std::vector<trace::WarpStream> stream_scratch_;
  std::uint32_t warps_per_tb_ = 1, tbs_per_sm_ = 1;
  std::uint64_t tbs_total_ = 0, tbs_started_ = 0, tbs_done_ = 0;
  Tick end_time_ = 0;
};

}  // namespace uvmsim
