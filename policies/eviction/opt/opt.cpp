// OPT: Belady's optimal replacement at 2 MB-region granularity, an oracle showing the headroom
// every other eviction policy leaves: evict the GPU-resident region whose next use lies furthest
// in the future, regions never used again first.
//
// What "future" means in a timing-dependent simulation. Threadblocks of a launch run
// concurrently and the driver evicts while servicing faults, so there is no single sequence of
// accesses. OPT's future is the trace's *program order*, at threadblock granularity: launches in
// order, each launch's threadblocks in id order (the order the GPU dispatches them), grouped in
// epochs of `epoch_tbs` threadblocks. A pre-pass over the trace records which regions each epoch
// touches and links each use to the region's next one. At run time an epoch is
//   * past     once all of its threadblocks have completed (the GPU reports each completion),
//   * running  once its first threadblock has been dispatched, and not yet past,
//   * future   before that.
// A region's pending use is its earliest use in an epoch that is not past. The victim is, in
// order of preference: a region with no pending use (dead); the region whose pending use is in
// the furthest future epoch; failing those, a region in use by running threadblocks, the
// oldest running epoch first. Within an epoch the order of accesses is not kept, and OPT ignores
// what prefetching and eviction timing change, so it is an oracle for the program order, not a
// proven lower bound on the simulated eviction count.
//
// Memory is bounded by the (epoch, region) uses of the trace, 16 bytes each (max_entries caps
// them), plus 12 bytes per epoch and 40 bytes per region; it does not grow with the number of
// accesses. epoch_tbs = 0 uses single-threadblock epochs unless the trace has more than 4 M
// threadblocks, then the smallest epoch that keeps 4 M epochs.
#include <algorithm>
#include <boost/intrusive/set.hpp>
#include <limits>

#include "policies/policy.h"
#include "sim/error.h"
#include "traces/trace.h"

namespace uvmsim {
namespace {

namespace bi = boost::intrusive;
constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kMaxAutoEpochs = std::uint64_t{1} << 22;

struct Use {
  std::uint32_t block;
  std::uint32_t epoch;
  std::uint64_t next;  ///< index in uses_ of the block's next use, kNone if none
};

struct OptNode : bi::set_base_hook<bi::link_mode<bi::auto_unlink>> {
  std::uint32_t block = 0;
  std::uint64_t key = 0;  ///< larger = better victim
  friend bool operator<(const OptNode& a, const OptNode& b) {
    return a.key != b.key ? a.key < b.key : a.block < b.block;
  }
};
using OptSet = bi::set<OptNode, bi::constant_time_size<false>>;

class Opt final : public EvictionPolicy {
 public:
  explicit Opt(const PolicyContext& ctx)
      : engine_(ctx.engine()),
        nodes_(ctx.va_space.blocks().size()),
        pending_(ctx.va_space.blocks().size(), kNone),
        max_entries_(ctx.params["max_entries"].get<std::uint64_t>()),
        epoch_tbs_(ctx.params["epoch_tbs"].get<std::uint64_t>()) {
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) nodes_[i].block = i;
    build(ctx.va_space);
  }

  void on_chunk_allocated(const VaBlock& b, Tick) override {
    catch_up_started();
    nodes_[b.id].key = key(b.id);
    set_.insert(nodes_[b.id]);
  }
  void on_eviction(const VaBlock& b, Tick) override { nodes_[b.id].unlink(); }

  void on_threadblock_end(std::uint64_t tb, Tick) override {
    const ProgramPosition& p = engine_.position();
    if (p.launch < 0 || static_cast<std::size_t>(p.launch) >= launch_base_.size()) return;
    const std::uint64_t e = launch_base_[p.launch] + tb / epoch_tbs_;
    if (e >= epoch_done_.size()) return;
    const std::uint64_t first_tb = (e - launch_base_[p.launch]) * epoch_tbs_;
    const std::uint64_t size = std::min(epoch_tbs_, launch_tbs_[p.launch] - first_tb);
    if (++epoch_done_[e] == size) complete(e);
  }

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    catch_up_started();
    for (auto it = set_.rbegin(); it != set_.rend(); ++it)
      if (it->block != requester) return it->block;
    return kNoBlock;
  }

  void report(nlohmann::json& out) const override {
    out["epochs"] = epoch_start_.size() - 1;
    out["epoch_tbs"] = epoch_tbs_;
    out["uses"] = uses_.size();
    out["memory_bytes"] = uses_.size() * sizeof(Use) +
                          epoch_start_.size() * (sizeof(std::uint64_t) + sizeof(std::uint32_t)) +
                          nodes_.size() * (sizeof(OptNode) + sizeof(std::uint64_t));
  }

 private:
  /// The pre-pass: one streaming read of the trace (memory bounded by the decoded chunks).
  void build(const VaSpace& va) {
    if (engine_.trace_path().empty())
      throw UserError("--eviction opt", "trace",
                      "OPT needs the trace's future; it runs only inside a simulation");
    trace::TraceReader reader(engine_.trace_path());
    if (epoch_tbs_ == 0) {
      std::uint64_t tbs = 0;
      for (const auto& l : reader.launches()) tbs += l.threadblocks;
      epoch_tbs_ = std::max<std::uint64_t>(1, (tbs + kMaxAutoEpochs - 1) / kMaxAutoEpochs);
    }
    std::vector<std::uint32_t> seen_in(nodes_.size(), ~0u);  // last epoch touching the block
    std::vector<std::uint64_t> last(nodes_.size(), kNone);   // its latest entry in uses_
    std::vector<trace::WarpStream> warps;
    trace::HostEvent ev;
    while (reader.next_host_event(ev)) {
      if (ev.type != trace::HostEventType::KernelLaunch) continue;
      if (launch_base_.size() != ev.launch_index)
        throw UserError(reader.display_name(), "host events", "launch indices out of order");
      launch_base_.push_back(epoch_start_.size());
      trace::LaunchStream launch = reader.launch(ev.launch_index);
      launch_tbs_.push_back(launch.threadblocks());
      trace::ThreadblockView tb;
      for (std::uint64_t i = 0; launch.next(tb); ++i) {
        if (i % epoch_tbs_ == 0) epoch_start_.push_back(uses_.size());
        const auto epoch = static_cast<std::uint32_t>(epoch_start_.size() - 1);
        tb.warp_streams(warps);
        trace::AccessRecord r;
        for (auto& w : warps) {
          while (w.next(r)) {
            const VaRange* range = va.find_range(r.va);
            if (!range || !range->managed) continue;
            const std::uint32_t b = va.block_index(*range, r.va);
            if (seen_in[b] == epoch) continue;
            seen_in[b] = epoch;
            if (uses_.size() >= max_entries_)
              throw UserError("policy.opt.max_entries", "value",
                              "the trace has more than " + std::to_string(max_entries_) +
                                  " (epoch, region) uses; raise it or policy.opt.epoch_tbs");
            if (last[b] != kNone) uses_[last[b]].next = uses_.size();
            if (pending_[b] == kNone) pending_[b] = uses_.size();
            last[b] = uses_.size();
            uses_.push_back({b, epoch, kNone});
          }
        }
        launch.release(tb);
      }
    }
    epoch_start_.push_back(uses_.size());  // sentinel
    epoch_done_.assign(epoch_start_.size() - 1, 0);
    completed_.assign(epoch_start_.size() - 1, false);
  }

  /// First epoch not yet dispatched: everything before it is running or past.
  std::uint64_t started_frontier() const {
    const ProgramPosition& p = engine_.position();
    const std::uint64_t epochs = epoch_start_.size() - 1;
    if (p.launch < 0) return 0;
    const auto l = static_cast<std::size_t>(p.launch);
    if (l >= launch_base_.size()) return epochs;
    const std::uint64_t end = l + 1 < launch_base_.size() ? launch_base_[l + 1] : epochs;
    if (!p.in_kernel) return end;
    return std::min(end, launch_base_[l] + (p.tbs_started + epoch_tbs_ - 1) / epoch_tbs_);
  }

  std::uint64_t key(std::uint32_t block) const {
    const std::uint64_t u = pending_[block];
    if (u == kNone) return std::uint64_t{3} << 32;  // dead
    const std::uint32_t e = uses_[u].epoch;
    if (e >= started_) return (std::uint64_t{2} << 32) | e;  // future: furthest first
    return (std::uint64_t{1} << 32) | (0xffffffffu - e);     // running: oldest first
  }
  void rekey(std::uint32_t block) {
    OptNode& n = nodes_[block];
    if (!n.is_linked()) return;
    n.unlink();
    n.key = key(block);
    set_.insert(n);
  }

  /// Regions whose pending use is in a newly dispatched epoch become "running".
  void catch_up_started() {
    const std::uint64_t target = started_frontier();
    for (; started_ < target; ++started_)
      for (std::uint64_t k = epoch_start_[started_]; k < epoch_start_[started_ + 1]; ++k)
        if (pending_[uses_[k].block] == k) rekey(uses_[k].block);
  }

  /// Epoch `e` is past: its regions' pending uses move to their next use in an unfinished epoch.
  void complete(std::uint64_t e) {
    completed_[e] = true;
    catch_up_started();
    for (std::uint64_t k = epoch_start_[e]; k < epoch_start_[e + 1]; ++k) {
      const std::uint32_t b = uses_[k].block;
      if (pending_[b] != k) continue;  // an earlier use is still pending
      std::uint64_t n = uses_[k].next;
      while (n != kNone && completed_[uses_[n].epoch]) n = uses_[n].next;
      pending_[b] = n;
      rekey(b);
    }
  }

  const PolicyEngine& engine_;
  std::vector<OptNode> nodes_;
  OptSet set_;                          ///< GPU-resident regions by key
  std::vector<std::uint64_t> pending_;  ///< per block: entry of its earliest unfinished use
  std::vector<Use> uses_;
  std::vector<std::uint64_t> epoch_start_;  ///< index into uses_ per epoch (+ sentinel)
  std::vector<std::uint32_t> epoch_done_;   ///< completed threadblocks per epoch
  std::vector<bool> completed_;
  std::vector<std::uint64_t> launch_base_;  ///< first epoch of each launch
  std::vector<std::uint64_t> launch_tbs_;
  std::uint64_t started_ = 0;  ///< epochs [0, started_) have been dispatched
  std::uint64_t max_entries_;
  std::uint64_t epoch_tbs_;
};

}  // namespace

UVMSIM_REGISTER_EVICTION(
    "opt",
    "oracle: Belady's OPT at 2 MB granularity over the trace's program order (pre-pass); evict "
    "the region used furthest in the future",
    Opt,
    PolicyKnob::integer("epoch_tbs", 0, 0, 1e12,
                        "threadblocks per epoch of program order; 0 = 1 (coarser only beyond 4 M "
                        "threadblocks)"),
    PolicyKnob::integer("max_entries", 1 << 25, 1, 1e12,
                        "cap on (epoch, region) uses kept (16 bytes each)"));

}  // namespace uvmsim
