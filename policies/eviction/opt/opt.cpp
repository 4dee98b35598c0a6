// OPT: Belady's optimal replacement at 2 MB-region granularity, an oracle showing the headroom
// every other eviction policy leaves: evict the GPU-resident region whose next use lies furthest
// in the future, regions never used again first.
//
// What "future" means in a timing-dependent simulation. Threadblocks run concurrently and the
// driver evicts while servicing faults, so a trace has no single sequence of accesses. OPT uses
// the program order of an idealised schedule, computed by a pre-pass over the trace:
//   * launches run one after the other; a launch's threadblocks are dispatched in id order onto
//     as many slots as the GPU holds at once (its occupancy, as the GPU model computes it), each
//     taking the slot that frees first;
//   * within a threadblock every warp issues one record per step, so record k of a warp of a
//     threadblock started at step s happens at logical time s + k, and the threadblock ends
//     after its longest warp.
// Logical time is cut into buckets of `bucket_steps`; the pre-pass keeps, per region, the sorted
// buckets that use it. At run time the present is mapped onto logical time through the running
// threadblocks: a threadblock whose slowest running warp has issued k records is at its
// idealised start + k, and the present is the earliest of them (never moving back; between
// launches, the end of the launch), so a region that a lagging warp still needs counts as in use.
// Regions are ranked by their next bucket of use at or after the present; in addition a region
// is dead, the first to go, once every threadblock that uses it has completed (the GPU reports
// each completion), which stays exact when the idealised and the simulated schedules diverge; a
// region with no use after the present whose threadblocks still run comes next. When every
// resident region is needed within the window the running warps span (from the slowest to the
// fastest), the idealised order cannot rank them: all are in use now. OPT then evicts the
// least recently allocated one, as the driver does, which lets some threadblocks finish while
// the others wait (a lock-step ranking would make every threadblock fault in turn).
// So OPT is exact for the idealised program order at bucket granularity; it ignores what
// prefetching and fault timing change, which makes it an oracle, not a proven lower bound on
// the simulated eviction count.
//
// Memory is bounded by the (bucket, region) and (threadblock, region) uses of the trace, about
// 20 bytes per use (max_entries caps them), plus 8 bytes per bucket, 16 per threadblock and 48
// per region; it does not grow with the number of accesses. bucket_steps = 0 picks the smallest
// bucket that keeps at most 1 M buckets.
#include <algorithm>
#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>
#include <limits>
#include <queue>

#include "core/error.h"
#include "policies/policy.h"
#include "policies/registry.h"
#include "traces/trace.h"

namespace uvmsim {
namespace {

namespace bi = boost::intrusive;
constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kMaxAutoBuckets = std::uint64_t{1} << 20;
constexpr std::uint64_t kDead = std::numeric_limits<std::uint64_t>::max();

struct AllocTag;
struct OptNode : bi::set_base_hook<bi::link_mode<bi::auto_unlink>>,
                 bi::list_base_hook<bi::tag<AllocTag>, bi::link_mode<bi::auto_unlink>> {
  std::uint32_t block = 0;
  std::uint64_t key = 0;  ///< larger = better victim
  friend bool operator<(const OptNode& a, const OptNode& b) {
    return a.key != b.key ? a.key < b.key : a.block < b.block;
  }
};
using OptSet = bi::set<OptNode, bi::constant_time_size<false>>;
using AllocList =
    bi::list<OptNode,
             bi::base_hook<bi::list_base_hook<bi::tag<AllocTag>, bi::link_mode<bi::auto_unlink>>>,
             bi::constant_time_size<false>>;

class Opt final : public EvictionPolicy {
 public:
  explicit Opt(const PolicyContext& ctx)
      : engine_(ctx.engine()),
        nodes_(ctx.va_space.blocks().size()),
        max_entries_(ctx.params["max_entries"].get<std::uint64_t>()),
        bucket_steps_(ctx.params["bucket_steps"].get<std::uint64_t>()) {
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) nodes_[i].block = i;
    build(ctx.va_space);
  }

  void on_chunk_allocated(const VaBlock& b, Tick) override {
    advance();
    nodes_[b.id].key = key(b.id);
    set_.insert(nodes_[b.id]);
    by_alloc_.push_back(nodes_[b.id]);
  }
  void on_eviction(const VaBlock& b, Tick) override {
    OptNode& n = nodes_[b.id];
    n.bi::set_base_hook<bi::link_mode<bi::auto_unlink>>::unlink();
    n.bi::list_base_hook<bi::tag<AllocTag>, bi::link_mode<bi::auto_unlink>>::unlink();
  }

  void on_threadblock_end(std::uint64_t tb, Tick) override {
    const ProgramPosition& p = engine_.position();
    if (p.launch < 0 || static_cast<std::size_t>(p.launch) >= launch_tb_base_.size()) return;
    const std::uint64_t t = launch_tb_base_[p.launch] + tb;
    if (t + 1 >= tb_start_.size()) return;
    for (std::uint64_t k = tb_start_[t]; k < tb_start_[t + 1]; ++k) {
      const std::uint32_t r = tb_regions_[k];
      if (--tbs_left_[r] == 0) rekey(r);
    }
  }

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    advance();
    for (auto it = set_.rbegin(); it != set_.rend(); ++it) {
      if (it->block == requester) continue;
      // Dead, or next used beyond what the running warps are at: the furthest future.
      if (it->key > leader_ / bucket_steps_ + 1) return it->block;
      break;
    }
    for (const auto& n : by_alloc_)  // everything is in use now: the oldest allocation
      if (n.block != requester) return n.block;
    return kNoBlock;
  }

  void report(nlohmann::json& out) const override {
    out["buckets"] = bucket_start_.size() - 1;
    out["bucket_steps"] = bucket_steps_;
    out["uses"] = region_buckets_.size();
    out["threadblock_uses"] = tb_regions_.size();
    out["memory_bytes"] = region_buckets_.size() * 12 + tb_regions_.size() * 4 +
                          bucket_start_.size() * 8 + tb_start_.size() * 16 +
                          nodes_.size() * (sizeof(OptNode) + 20);
  }

 private:
  /// The pre-pass: one streaming read of the trace (memory bounded by the decoded chunks).
  void build(const VaSpace& va) {
    if (engine_.trace_path().empty())
      throw UserError("--eviction opt", "trace",
                      "OPT needs the trace's future; it runs only inside a simulation");
    trace::TraceReader reader(engine_.trace_path());
    const auto& meta = reader.metadata();
    auto slots_of = [&](std::uint32_t kernel_id) -> std::uint64_t {
      const trace::KernelInfo* k = meta.find_kernel(kernel_id);
      return std::max<std::uint64_t>(1, k ? engine_.concurrent_threadblocks(*k) : 1);
    };
    if (bucket_steps_ == 0) {
      // Estimate the idealised schedule's length from the index to size the buckets.
      std::uint64_t steps = 0;
      for (const auto& l : reader.launches()) {
        const trace::KernelInfo* k = meta.find_kernel(l.kernel_id);
        const std::uint64_t warps = std::max<std::uint64_t>(1, k ? k->warps_per_block() : 1);
        const std::uint64_t tbs = std::max<std::uint64_t>(1, l.threadblocks);
        const std::uint64_t waves = (tbs + slots_of(l.kernel_id) - 1) / slots_of(l.kernel_id);
        steps += waves * (l.records / (tbs * warps) + 1);
      }
      bucket_steps_ = std::max<std::uint64_t>(1, (steps + kMaxAutoBuckets - 1) / kMaxAutoBuckets);
    }

    const std::size_t nblocks = nodes_.size();
    std::vector<std::uint64_t> pairs;  // (region << 32 | bucket), sorted and deduplicated below
    std::vector<std::uint32_t> last_bucket(nblocks, kNone), last_tb(nblocks, kNone);
    tbs_left_.assign(nblocks, 0);
    std::vector<trace::WarpStream> warps;
    std::uint64_t launch_start = 0, launch_end = 0, tb_index = 0, buckets = 0;
    auto check_cap = [&] {
      if (pairs.size() + tb_regions_.size() >= max_entries_)
        throw UserError("policy.opt.max_entries", "value",
                        "the trace has more than " + std::to_string(max_entries_) +
                            " region uses; raise it or policy.opt.bucket_steps");
    };
    trace::HostEvent ev;
    while (reader.next_host_event(ev)) {
      if (ev.type != trace::HostEventType::KernelLaunch) continue;
      if (launch_tb_base_.size() != ev.launch_index)
        throw UserError(reader.display_name(), "host events", "launch indices out of order");
      launch_tb_base_.push_back(tb_index);
      launch_start = launch_end;
      const std::uint64_t slots = slots_of(ev.kernel_id);
      std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> free_at;
      trace::LaunchStream launch = reader.launch(ev.launch_index);
      trace::ThreadblockView tb;
      while (launch.next(tb)) {
        std::uint64_t start = launch_start;
        if (free_at.size() == slots) {
          start = free_at.top();
          free_at.pop();
        }
        tb.warp_streams(warps);
        tb_start_.push_back(tb_regions_.size());
        tb_ideal_start_.push_back(start);
        std::uint64_t longest = 0;
        trace::AccessRecord r;
        for (auto& w : warps) {
          std::uint64_t k = 0;
          for (; w.next(r); ++k) {
            const std::uint64_t bucket = (start + k) / bucket_steps_;
            if (bucket >= buckets) {
              if (bucket >= (std::uint64_t{1} << 28))
                throw UserError("policy.opt.bucket_steps", "value",
                                "more than 2^28 buckets of logical time; raise it");
              buckets = bucket + 1;
            }
            const VaRange* range = va.find_range(r.va);
            if (!range || !range->managed) continue;
            const std::uint32_t b = va.block_index(*range, r.va);
            if (last_tb[b] != tb_index) {
              last_tb[b] = static_cast<std::uint32_t>(tb_index);
              check_cap();
              tb_regions_.push_back(b);
              ++tbs_left_[b];
            }
            if (last_bucket[b] != bucket) {
              last_bucket[b] = static_cast<std::uint32_t>(bucket);
              check_cap();
              pairs.push_back(std::uint64_t{b} << 32 | bucket);
            }
          }
          longest = std::max(longest, k);
        }
        free_at.push(start + longest);
        launch_end = std::max(launch_end, start + longest);
        launch.release(tb);
        ++tb_index;
      }
      launch_ideal_end_.push_back(launch_end);
    }
    tb_start_.push_back(tb_regions_.size());  // sentinel

    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    // Per region, its buckets in order (CSR); per bucket, its uses (to move regions past it).
    region_start_.assign(nblocks + 1, 0);
    region_buckets_.resize(pairs.size());
    std::vector<std::uint64_t> per_bucket(buckets + 1, 0);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      ++region_start_[(pairs[i] >> 32) + 1];
      region_buckets_[i] = static_cast<std::uint32_t>(pairs[i]);
      ++per_bucket[(pairs[i] & 0xffffffffu) + 1];
    }
    for (std::size_t r = 0; r < nblocks; ++r) region_start_[r + 1] += region_start_[r];
    for (std::size_t b = 0; b + 1 < per_bucket.size(); ++b) per_bucket[b + 1] += per_bucket[b];
    bucket_start_ = per_bucket;
    bucket_uses_.resize(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i)
      bucket_uses_[per_bucket[pairs[i] & 0xffffffffu]++] = static_cast<std::uint32_t>(i);
    cursor_.assign(region_start_.begin(), region_start_.end() - 1);
  }

  std::uint64_t key(std::uint32_t r) const {
    if (tbs_left_[r] == 0) return kDead;
    // No use after the present (which follows the slowest warp): done, though a threadblock
    // that used it still runs.
    if (cursor_[r] == region_start_[r + 1]) return kDead - 1;
    return std::uint64_t{region_buckets_[cursor_[r]]} + 1;
  }
  void rekey(std::uint32_t r) {
    OptNode& n = nodes_[r];
    auto& hook = static_cast<bi::set_base_hook<bi::link_mode<bi::auto_unlink>>&>(n);
    if (!hook.is_linked()) return;
    hook.unlink();
    n.key = key(r);
    set_.insert(n);
  }

  /// The present in logical time: the earliest running threadblock's idealised start plus the
  /// records its slowest warp has issued; the launch's idealised end when none runs.
  std::uint64_t present() {
    const ProgramPosition& p = engine_.position();
    if (p.launch < 0) return 0;
    const auto l = static_cast<std::size_t>(p.launch);
    if (l >= launch_tb_base_.size()) return ~std::uint64_t{0};
    if (!p.in_kernel) return leader_ = launch_ideal_end_[l];
    engine_.running_threadblocks(running_);
    std::uint64_t t = ~std::uint64_t{0};
    leader_ = 0;
    for (const auto& r : running_) {
      const std::uint64_t g = launch_tb_base_[l] + r.tb;
      if (g >= tb_ideal_start_.size()) continue;
      t = std::min(t, tb_ideal_start_[g] + r.records_done);
      leader_ = std::max(leader_, tb_ideal_start_[g] + r.records_done);
    }
    return t;
  }

  /// Moves the present forward; regions used in the buckets passed move on to their next use.
  void advance() {
    const std::uint64_t t = present();
    if (t == ~std::uint64_t{0}) return;
    const std::uint64_t target =
        std::min<std::uint64_t>(t / bucket_steps_, bucket_start_.size() - 1);
    for (; now_ < target; ++now_) {
      for (std::uint64_t k = bucket_start_[now_]; k < bucket_start_[now_ + 1]; ++k) {
        const std::uint32_t i = bucket_uses_[k];
        const auto r = static_cast<std::uint32_t>(
            std::upper_bound(region_start_.begin(), region_start_.end(), i) -
            region_start_.begin() - 1);
        if (cursor_[r] <= i) {
          cursor_[r] = i + 1;
          rekey(r);
        }
      }
    }
  }

  const PolicyEngine& engine_;
  std::vector<OptNode> nodes_;
  OptSet set_;  ///< GPU-resident regions by key
  // Logical-time uses.
  std::vector<std::uint64_t> region_start_;      ///< per region: its range in region_buckets_
  std::vector<std::uint32_t> region_buckets_;    ///< buckets using each region, sorted
  std::vector<std::uint64_t> cursor_;            ///< per region: its first use not yet passed
  std::vector<std::uint64_t> bucket_start_;      ///< per bucket: its range in bucket_uses_
  std::vector<std::uint32_t> bucket_uses_;       ///< indices into region_buckets_, by bucket
  std::uint64_t now_ = 0;                        ///< buckets [0, now_) are past
  std::vector<std::uint64_t> tb_ideal_start_;    ///< per threadblock: idealised start step
  std::vector<std::uint64_t> launch_ideal_end_;  ///< per launch: idealised end step
  std::vector<ThreadblockProgress> running_;     ///< scratch for running_threadblocks()
  std::uint64_t leader_ = 0;  ///< logical time of the fastest running warp (at the last look)
  AllocList by_alloc_;        ///< GPU-resident regions, oldest allocation first
  // Threadblock uses (for dead regions).
  std::vector<std::uint64_t> launch_tb_base_;  ///< global index of each launch's first tb
  std::vector<std::uint64_t> tb_start_;        ///< per threadblock: its range in tb_regions_
  std::vector<std::uint32_t> tb_regions_;
  std::vector<std::uint32_t> tbs_left_;  ///< per region: threadblocks still to complete
  std::uint64_t max_entries_;
  std::uint64_t bucket_steps_;
};

}  // namespace

UVMSIM_REGISTER_EVICTION(
    "opt",
    "oracle: Belady's OPT at 2 MB granularity over the trace's idealised program order "
    "(pre-pass); evict the region used furthest in the future",
    Opt,
    PolicyKnob::integer("bucket_steps", 0, 0, 1e12,
                        "logical time steps (records of a warp) per bucket; 0 = smallest that "
                        "keeps at most 1 M buckets"),
    PolicyKnob::integer("max_entries", 1 << 25, 1, 1e12,
                        "cap on region uses kept (about 20 bytes each)"));

}  // namespace uvmsim
