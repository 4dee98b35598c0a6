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
// threadblocks: a threadblock whose slowest running warp has decoded k records is at its
// idealised start + k - 1 (the k-th may still wait for its fault to be serviced and replayed),
// and the present is the earliest of them (never moving back; between launches, the end of the
// launch), so a region that a lagging warp still needs counts as in use.
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
// Two-pass OPT (`order` = a file of `uvmsim run --record-order`): the future is instead the
// order in which a first simulation's GPU completed its accesses (policies/eviction/opt/
// order_file.h), bucketed by the completed-access count, and the present is this run's
// completed-access count. That is plain Belady over the recorded order: no threadblock
// knowledge, no running window.
//
// Memory does not grow with the trace's length. The pre-pass (program_order.h) writes the
// (bucket, region) uses to disk and sorts them externally; a backward pass over them, latest
// first, gives each use the region's next use after it (Belady's classic reverse scan) and
// writes (bucket, region, next) records to a file that the run reads forwards as its present
// advances. Per-threadblock region lists are read forwards as threadblocks complete (only the
// running ones' lists are held), per-threadblock idealised starts one launch at a time. Memory:
// about 70 bytes per region (100 during the pre-pass), 8 per threadblock of the current launch,
// 16 per launch, the sort's run buffer (`sort_buffer` keys) and fixed read buffers (1 MB per
// merge); disk: 12 bytes per next-use record plus 4 per threadblock use, in `tmpdir` (unlinked
// files, freed at exit). A region used in consecutive buckets is one run (a start and an end
// record; see backward_pass()).
// bucket_steps = 0 picks the smallest bucket that keeps at most 1 M buckets.
#include <algorithm>
#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "policies/eviction/opt/order_file.h"
#include "policies/eviction/opt/program_order.h"
#include "policies/eviction/opt/spill.h"
#include "policies/policy.h"
#include "policies/registry.h"
#include "traces/trace.h"

namespace uvmsim {
namespace {

namespace bi = boost::intrusive;
constexpr std::uint32_t kNoUse = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kDead = std::numeric_limits<std::uint64_t>::max();
constexpr const char* kTmpdirKnob = "policy.opt.tmpdir";

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

/// One use of a region and the region's next use after it (kNoUse: none).
struct NextUse {
  std::uint32_t bucket, region, next;
};

class Opt final : public EvictionPolicy {
 public:
  explicit Opt(const PolicyContext& ctx)
      : engine_(ctx.engine()),
        nodes_(ctx.va_space.blocks().size()),
        bucket_steps_(ctx.params["bucket_steps"].get<std::uint64_t>()),
        tmpdir_(spill::temp_dir(ctx.params["tmpdir"].get<std::string>())),
        next_uses_(tmpdir_, kTmpdirKnob) {
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) nodes_[i].block = i;
    if (engine_.trace_path().empty())
      throw UserError("--eviction opt", "trace",
                      "OPT needs the trace's future; it runs only inside a simulation");
    const auto order = ctx.params["order"].get<std::string>();
    const auto run_keys = ctx.params["sort_buffer"].get<std::uint64_t>();
    if (order == "program")
      build_program(ctx.va_space, run_keys);
    else
      build_recorded(order, run_keys);
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
    if (!program_) return;
    const ProgramPosition& p = engine_.position();
    if (p.launch < 0 || static_cast<std::size_t>(p.launch) + 1 >= launch_tb_base_.size()) return;
    const std::uint64_t t = launch_tb_base_[p.launch] + tb;
    if (t >= launch_tb_base_.back()) return;
    std::vector<std::uint32_t>& list = scratch_;
    if (t < next_tb_) {
      // Read ahead when a later threadblock completed first: this one was running then.
      auto it = pending_.find(t);
      if (it == pending_.end()) return;  // reported twice
      list = std::move(it->second);
      pending_.erase(it);
    } else {
      // Threadblocks start in id order: those before t that have not completed are running.
      for (; next_tb_ < t; ++next_tb_) read_tb_list(pending_[next_tb_]);
      read_tb_list(list);
      ++next_tb_;
    }
    for (const std::uint32_t r : list)
      if (--tbs_left_[r] == 0) rekey(r);
  }

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    advance();
    for (auto it = set_.rbegin(); it != set_.rend(); ++it) {
      if (it->block == requester) continue;
      // Recorded order: plain Belady. Program order: dead, or next used beyond what the running
      // warps are at: the furthest future.
      if (!program_ || it->key > leader_ / bucket_steps_ + 1) return it->block;
      break;
    }
    for (const auto& n : by_alloc_)  // everything is in use now: the oldest allocation
      if (n.block != requester) return n.block;
    return kNoBlock;
  }

  void report(nlohmann::json& out) const override {
    out["order"] = program_ ? "program" : "recorded";
    out["buckets"] = buckets_;
    out["bucket_steps"] = bucket_steps_;
    out["uses"] = next_uses_.size();
    out["threadblock_uses"] = threadblock_uses_;
    out["sort_runs"] = sort_runs_;
    out["disk_bytes"] = disk_bytes_;
    // What stays in memory whatever the trace's length (the read buffers aside).
    out["memory_bytes"] = nodes_.size() * (sizeof(OptNode) + 8) + launch_starts_.capacity() * 8 +
                          launch_tb_base_.size() * 16;
  }

 private:
  /// The idealised program order's uses, and the threadblock files for dead regions.
  void build_program(const VaSpace& va, std::uint64_t run_keys) {
    program_ = true;
    trace::TraceReader reader(engine_.trace_path());
    opt::ProgramOrderOptions o;
    o.bucket_steps = bucket_steps_;
    o.tmpdir = tmpdir_;
    o.tmpdir_knob = kTmpdirKnob;
    o.run_keys = static_cast<std::size_t>(run_keys);
    o.bucket_knob = "policy.opt.bucket_steps";
    o.runs = true;
    program_order_ = std::make_unique<opt::ProgramOrder>(
        reader, va,
        [&](const trace::KernelInfo* k) { return k ? engine_.concurrent_threadblocks(*k) : 1; }, o);
    auto& po = *program_order_;
    bucket_steps_ = po.bucket_steps();
    buckets_ = po.buckets();
    launch_tb_base_ = po.launch_tb_base();
    launch_ideal_end_ = po.launch_ideal_end();
    tbs_left_ = po.tbs_using();
    threadblock_uses_ = po.threadblock_uses();
    tb_lists_.emplace(po.tb_regions());
    backward_pass(po.uses());
  }

  /// The order a first run recorded: bucket = accesses / bucket_steps.
  void build_recorded(const std::string& path, std::uint64_t run_keys) {
    program_ = false;
    spill::KeySorter uses(tmpdir_, kTmpdirKnob, static_cast<std::size_t>(run_keys));
    std::uint64_t per_bucket = 1;
    opt::read_order(
        path, nodes_.size(),
        [&](const opt::OrderHeader& h) {
          // Whole windows per bucket; 0 = the fewest that keep at most 1 M buckets.
          if (bucket_steps_ == 0)
            bucket_steps_ = std::max<std::uint64_t>(
                1, (h.accesses + opt::kMaxAutoBuckets - 1) / opt::kMaxAutoBuckets);
          per_bucket = std::max<std::uint64_t>(1, (bucket_steps_ + h.window - 1) / h.window);
          bucket_steps_ = per_bucket * h.window;
          buckets_ = h.accesses / bucket_steps_ + 1;
        },
        [&](std::uint64_t w, std::uint32_t region) {
          uses.add(opt::use_key(w / per_bucket, region, opt::UseKind::Single));
        });
    tbs_left_.assign(nodes_.size(), 0);
    uses.finish();
    backward_pass(uses);
  }

  /// Belady's reverse scan: latest use first, each use learns the region's next use after it.
  /// A run of consecutive buckets (a Start and an End key) is one record at each end: after its
  /// start the region's next use is "the next bucket", after its end the use after the run.
  /// Inside a run the key stays at start + 2 while the present moves on: still at most the
  /// present + 1, "in use now", which is all select_victim() distinguishes there (it falls back
  /// to the allocation order), so no decision changes. Overlapping runs (threadblocks using a
  /// region at once) are merged by counting the runs open at each point.
  void backward_pass(spill::KeySorter& uses) {
    sort_runs_ = uses.runs();
    next_.assign(nodes_.size(), kNoUse);
    std::vector<std::uint32_t> open(nodes_.size(), 0);
    uses.visit(true, [&](std::uint64_t k) {
      const std::uint32_t r = opt::key_region(k);
      const auto b = static_cast<std::uint32_t>(opt::key_bucket(k));
      switch (opt::key_kind(k)) {
        case opt::UseKind::End:
          if (open[r]++ == 0) next_uses_.append(NextUse{b, r, next_[r]});
          break;
        case opt::UseKind::Start:
          if (open[r] > 0 && --open[r] == 0) next_uses_.append(NextUse{b, r, b + 1});
          break;
        case opt::UseKind::Single:
          if (open[r] == 0) next_uses_.append(NextUse{b, r, next_[r]});
          break;
      }
      next_[r] = b;
    });
    next_uses_.flush();
    next_uses_.release_buffer();
    disk_bytes_ = uses.peak_disk_bytes() + next_uses_.disk_bytes() +
                  (program_order_ ? program_order_->tb_regions().disk_bytes() +
                                        program_order_->tb_starts().disk_bytes()
                                  : 0);
    // The file holds the uses latest first: reading it backwards walks time forwards.
    upcoming_.emplace(next_uses_);
    have_use_ = upcoming_->next(use_);
  }

  void read_tb_list(std::vector<std::uint32_t>& out) {
    out.clear();
    std::uint32_t n = 0;
    if (!tb_lists_->next(n)) return;
    out.resize(n);
    for (auto& r : out) tb_lists_->next(r);
  }

  std::uint64_t key(std::uint32_t r) const {
    if (program_ && tbs_left_[r] == 0) return kDead;
    // No use after the present (which follows the slowest warp): done, though a threadblock
    // that used it may still run.
    if (next_[r] == kNoUse) return kDead - 1;
    return std::uint64_t{next_[r]} + 1;
  }
  void rekey(std::uint32_t r) {
    OptNode& n = nodes_[r];
    auto& hook = static_cast<bi::set_base_hook<bi::link_mode<bi::auto_unlink>>&>(n);
    if (!hook.is_linked()) return;
    hook.unlink();
    n.key = key(r);
    set_.insert(n);
  }

  /// Loads the idealised starts of launch `l`'s threadblocks.
  void load_launch(std::size_t l) {
    if (loaded_launch_ == l) return;
    loaded_launch_ = l;
    const std::uint64_t first = launch_tb_base_[l], n = launch_tb_base_[l + 1] - first;
    launch_starts_.resize(n);
    if (n) program_order_->tb_starts().read(first, n, launch_starts_.data());
  }

  /// The present in logical time. Program order: the earliest running threadblock's idealised
  /// start plus the records its slowest warp has decoded, less the one that may still be
  /// waiting for its fault; the launch's idealised end when none
  /// runs. Recorded order: the accesses completed.
  std::uint64_t present() {
    if (!program_) return engine_.accesses_completed();
    const ProgramPosition& p = engine_.position();
    if (p.launch < 0) return 0;
    const auto l = static_cast<std::size_t>(p.launch);
    if (l + 1 >= launch_tb_base_.size()) return ~std::uint64_t{0};
    if (!p.in_kernel) return leader_ = launch_ideal_end_[l];
    load_launch(l);
    engine_.running_threadblocks(running_);
    std::uint64_t t = ~std::uint64_t{0};
    leader_ = 0;
    for (const auto& r : running_) {
      if (r.tb >= launch_starts_.size()) continue;
      // The last record a warp decoded may still wait for its fault to be serviced and be
      // replayed: its use is not over, so the present is one step before it.
      const std::uint64_t at = launch_starts_[r.tb] + r.records_done;
      t = std::min(t, at - (r.records_done > 0));
      leader_ = std::max(leader_, at);
    }
    return t;
  }

  /// Moves the present forward; regions used in the buckets passed move on to their next use.
  void advance() {
    const std::uint64_t t = present();
    if (t == ~std::uint64_t{0}) return;
    const std::uint64_t target = std::min<std::uint64_t>(t / bucket_steps_, buckets_);
    while (have_use_ && use_.bucket < target) {
      next_[use_.region] = use_.next;
      rekey(use_.region);
      have_use_ = upcoming_->next(use_);
    }
  }

  const PolicyEngine& engine_;
  std::vector<OptNode> nodes_;
  OptSet set_;          ///< GPU-resident regions by key
  AllocList by_alloc_;  ///< GPU-resident regions, oldest allocation first
  std::uint64_t bucket_steps_, buckets_ = 0;
  bool program_ = true;
  std::filesystem::path tmpdir_;
  // Next uses.
  spill::RecordFile<NextUse> next_uses_;  ///< latest first
  std::optional<spill::BackwardReader<NextUse>> upcoming_;
  NextUse use_{};  ///< the first use not yet passed (if have_use_)
  bool have_use_ = false;
  std::vector<std::uint32_t> next_;  ///< per region: its next bucket of use, kNoUse if none
  // The idealised schedule (program order).
  std::unique_ptr<opt::ProgramOrder> program_order_;
  std::vector<std::uint64_t> launch_tb_base_;    ///< global index of each launch's first tb
  std::vector<std::uint64_t> launch_ideal_end_;  ///< per launch: idealised end step
  std::vector<std::uint64_t> launch_starts_;     ///< idealised starts of the loaded launch's tbs
  std::size_t loaded_launch_ = ~std::size_t{0};
  std::vector<ThreadblockProgress> running_;  ///< scratch for running_threadblocks()
  std::uint64_t leader_ = 0;  ///< logical time of the fastest running warp (at the last look)
  // Threadblock uses (for dead regions): lists read as threadblocks complete.
  std::optional<spill::ForwardReader<std::uint32_t>> tb_lists_;
  std::uint64_t next_tb_ = 0;  ///< global index of the next list to read
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> pending_;  ///< running, read
  std::vector<std::uint32_t> scratch_;
  std::vector<std::uint32_t> tbs_left_;  ///< per region: threadblocks still to complete
  std::uint64_t threadblock_uses_ = 0, sort_runs_ = 0, disk_bytes_ = 0;
};

}  // namespace

UVMSIM_REGISTER_EVICTION(
    "opt",
    "oracle: Belady's OPT at 2 MB granularity over the trace's idealised program order "
    "(pre-pass) or a first run's recorded access order; evict the region used furthest in "
    "the future",
    Opt,
    Knob::integer("bucket_steps", 0, 0, 1000000000000,
                  "logical time steps (records of a warp; accesses for a recorded order) per "
                  "bucket; 0 = smallest that keeps at most 1 M buckets"),
    Knob::text("order", "program",
               "program: the trace's idealised program order; else a file of `uvmsim run "
               "--record-order FILE` (two-pass OPT over the GPU order a first run simulated)"),
    Knob::text("tmpdir", "",
               "directory for the next-use files (12 bytes per region use); empty = $TMPDIR, "
               "else /tmp"),
    Knob::integer("sort_buffer", 1 << 22, 1024, 1000000000000,
                  "region uses sorted in memory at a time (8 bytes each) before going to disk"));

}  // namespace uvmsim
