#include "policies/eviction/opt/program_order.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <queue>
#include <stdexcept>

#include "core/error.h"

namespace uvmsim::opt {

namespace {
/// Runs' Start and End keys pair up: identical ones of different runs are all kept.
bool is_run_bound(std::uint64_t key) { return key_kind(key) != UseKind::Single; }
constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
}  // namespace

ProgramOrder::ProgramOrder(trace::TraceReader& reader, const VaSpace& va, const SlotsOf& slots,
                           const ProgramOrderOptions& o)
    : bucket_steps_(o.bucket_steps),
      uses_(o.tmpdir, o.tmpdir_knob, o.run_keys, 32, o.runs ? &is_run_bound : nullptr),
      tb_starts_(o.tmpdir, o.tmpdir_knob),
      tb_regions_(o.tmpdir, o.tmpdir_knob) {
  const auto& meta = reader.metadata();
  auto slots_of = [&](std::uint32_t kernel_id) {
    return std::max<std::uint64_t>(1, slots(meta.find_kernel(kernel_id)));
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

  const std::size_t nblocks = va.blocks().size();
  // Per region: the last bucket and threadblock that used it (consecutive repeats are dropped
  // before they reach the sort).
  std::vector<std::uint64_t> last_bucket(nblocks, kNever), last_tb(nblocks, kNever);
  // With runs: per region, the first bucket of its current run (last_bucket is its last).
  std::vector<std::uint64_t> run_start(o.runs ? nblocks : 0, kNever);
  auto end_run = [&](std::uint32_t b) {
    if (last_bucket[b] == kNever) return;
    if (run_start[b] == last_bucket[b]) {
      uses_.add(use_key(last_bucket[b], b, UseKind::Single));
    } else {
      uses_.add(use_key(run_start[b], b, UseKind::Start));
      uses_.add(use_key(last_bucket[b], b, UseKind::End));
    }
  };
  if (o.threadblocks) tbs_using_.assign(nblocks, 0);
  if (!o.keep.empty() && o.keep.size() != nblocks)
    throw std::logic_error("ProgramOrder: keep mask of the wrong size");
  std::vector<std::uint64_t> page_bits(o.pages ? nblocks * (kPagesPerBlock / 64) : 0);
  std::vector<trace::WarpStream> warps;
  std::vector<std::uint32_t> active, tb_list;
  std::uint64_t launch_start = 0, launch_end = 0, tb_index = 0;
  trace::HostEvent ev;
  while (reader.next_host_event(ev)) {
    if (ev.type != trace::HostEventType::KernelLaunch) continue;
    if (launch_tb_base_.size() != ev.launch_index)
      throw UserError(reader.display_name(), "host events", "launch indices out of order");
    launch_tb_base_.push_back(tb_index);
    launch_start = launch_end;
    const std::uint64_t nslots = slots_of(ev.kernel_id);
    std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> free_at;
    trace::LaunchStream launch = reader.launch(ev.launch_index);
    trace::ThreadblockView tb;
    while (launch.next(tb)) {
      std::uint64_t start = launch_start;
      if (free_at.size() == nslots) {
        start = free_at.top();
        free_at.pop();
      }
      tb.warp_streams(warps);
      tb_list.clear();
      // The warps in lock step (step k: every warp's record k), so that the uses come out in
      // logical-time order and repeats across warps are dropped here.
      active.resize(warps.size());
      for (std::uint32_t i = 0; i < active.size(); ++i) active[i] = i;
      std::uint64_t longest = 0;
      trace::AccessRecord r;
      for (std::uint64_t k = 0; !active.empty(); ++k) {
        const std::uint64_t bucket = (start + k) / bucket_steps_;
        std::size_t kept = 0;
        for (const std::uint32_t w : active) {
          if (!warps[w].next(r)) {
            longest = k;  // this warp had k records
            continue;
          }
          active[kept++] = w;
          ++records_;
          if (bucket >= buckets_) {
            if (bucket >= kMaxBuckets)
              throw UserError(o.bucket_knob, "value",
                              "more than 2^30 buckets of logical time; raise it");
            buckets_ = bucket + 1;
          }
          const VaRange* range = va.find_range(r.va);
          if (!range || !range->managed) continue;
          const std::uint32_t b = va.block_index(*range, r.va);
          if (o.pages) {
            const unsigned page = VaSpace::page_index(r.va);
            page_bits[std::size_t{b} * (kPagesPerBlock / 64) + page / 64] |= std::uint64_t{1}
                                                                             << (page % 64);
          }
          if (!o.keep.empty() && !o.keep[b]) continue;
          if (o.threadblocks && last_tb[b] != tb_index) {
            last_tb[b] = tb_index;
            tb_list.push_back(b);
            ++tbs_using_[b];
          }
          if (last_bucket[b] == bucket) continue;
          if (!o.runs) {
            uses_.add(use_key(bucket, b, UseKind::Single));
            last_bucket[b] = bucket;
          } else if (last_bucket[b] != kNever && bucket >= run_start[b] &&
                     bucket <= last_bucket[b] + 1) {
            // Inside the region's current run or right after it: another threadblock using it
            // at the same time, or the same one going on. The run still covers every bucket
            // from its start to its end.
            last_bucket[b] = std::max(last_bucket[b], bucket);
          } else {
            end_run(b);
            run_start[b] = last_bucket[b] = bucket;
          }
        }
        active.resize(kept);
      }
      if (o.threadblocks) {
        tb_starts_.append(start);
        tb_regions_.append(static_cast<std::uint32_t>(tb_list.size()));
        for (const std::uint32_t b : tb_list) tb_regions_.append(b);
        threadblock_uses_ += tb_list.size();
      }
      free_at.push(start + longest);
      launch_end = std::max(launch_end, start + longest);
      launch.release(tb);
      ++tb_index;
    }
    launch_ideal_end_.push_back(launch_end);
  }
  launch_tb_base_.push_back(tb_index);  // sentinel
  if (o.runs)
    for (std::uint32_t b = 0; b < nblocks; ++b) end_run(b);
  tb_starts_.flush();
  tb_starts_.release_buffer();
  tb_regions_.flush();
  tb_regions_.release_buffer();
  uses_.finish();
  if (o.pages) {
    pages_touched_.assign(nblocks, 0);
    for (std::size_t b = 0; b < nblocks; ++b)
      for (unsigned w = 0; w < kPagesPerBlock / 64; ++w)
        pages_touched_[b] +=
            static_cast<std::uint32_t>(std::popcount(page_bits[b * (kPagesPerBlock / 64) + w]));
  }
}

}  // namespace uvmsim::opt
