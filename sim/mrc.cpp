#include "sim/mrc.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "models/occupancy.h"
#include "policies/eviction/opt/program_order.h"
#include "state/va_space.h"

namespace uvmsim::mrc {

namespace {

constexpr std::uint32_t kNoPos = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kHashRange = std::uint64_t{1} << 24;

/// SHARDS' spatial filter: a fixed, well-mixed hash of the region id (splitmix64's finaliser).
std::uint64_t region_hash(std::uint64_t r) {
  r += 0x9e3779b97f4a7c15ULL;
  r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ULL;
  r = (r ^ (r >> 27)) * 0x94d049bb133111ebULL;
  return (r ^ (r >> 31)) % kHashRange;
}

/// LRU stack distances with a Fenwick tree over use positions: a position holds 1 while it is
/// some region's latest use, so the regions used since position p are the ones marked after
/// it. Positions are renumbered when they run out, so memory is O(regions), not O(uses).
class StackDistances {
 public:
  explicit StackDistances(std::size_t regions)
      : size_(2 * regions + 64), tree_(size_ + 1, 0), pos_(regions, kNoPos) {}

  /// Uses `r`; returns the number of distinct other regions used since its previous use, or
  /// -1 on its first use.
  std::int64_t use(std::uint32_t r) {
    if (next_ == size_) renumber();
    std::int64_t d = -1;
    if (pos_[r] != kNoPos) {
      d = static_cast<std::int64_t>(marked_ - prefix(pos_[r]));
      add(pos_[r], -1);
      --marked_;
    }
    pos_[r] = next_++;
    add(pos_[r], 1);
    ++marked_;
    return d;
  }
  /// Regions by their latest use, latest first (the final LRU stack).
  std::vector<std::uint32_t> stack() const {
    std::vector<std::uint32_t> s;
    for (std::uint32_t r = 0; r < pos_.size(); ++r)
      if (pos_[r] != kNoPos) s.push_back(r);
    std::sort(s.begin(), s.end(), [&](auto a, auto b) { return pos_[a] > pos_[b]; });
    return s;
  }

 private:
  void add(std::uint32_t p, std::int64_t v) {
    for (std::size_t i = p + 1; i <= size_; i += i & (~i + 1)) tree_[i] += v;
  }
  /// Marks at positions <= p.
  std::uint64_t prefix(std::uint32_t p) const {
    std::int64_t s = 0;
    for (std::size_t i = p + 1; i > 0; i -= i & (~i + 1)) s += tree_[i];
    return static_cast<std::uint64_t>(s);
  }
  void renumber() {
    const std::vector<std::uint32_t> s = stack();
    std::fill(tree_.begin(), tree_.end(), 0);
    next_ = 0;
    for (auto it = s.rbegin(); it != s.rend(); ++it) {
      pos_[*it] = next_++;
      add(pos_[*it], 1);
    }
  }

  std::size_t size_;
  std::vector<std::int64_t> tree_;
  std::vector<std::uint32_t> pos_;  ///< per region: position of its latest use
  std::uint32_t next_ = 0;
  std::uint64_t marked_ = 0;
};

std::string fmt(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

Curve compute(trace::TraceReader& reader, const SimConfig& cfg, const Options& o) {
  if (!(o.sample > 0 && o.sample <= 1))
    throw UsageError("--sample", "value", "must be in (0, 1], got " + fmt(o.sample));
  const auto& meta = reader.metadata();
  VaSpace va;
  va.build(meta.allocations, cfg.driver.managed_tail_pow2);
  const std::size_t nregions = va.blocks().size();
  Curve c;
  c.sample = o.sample;
  for (const auto& r : va.ranges())
    if (r.managed) c.managed_chunks += r.num_blocks;

  opt::ProgramOrderOptions po;
  po.bucket_steps = o.bucket_steps;
  po.threadblocks = false;
  po.pages = true;
  po.tmpdir = spill::temp_dir(o.tmpdir.string());
  po.tmpdir_knob = "--tmpdir";
  po.run_keys = o.run_keys;
  po.bucket_knob = "--bucket-steps";
  if (o.sample < 1) {
    po.keep.resize(nregions);
    const auto threshold = static_cast<std::uint64_t>(o.sample * static_cast<double>(kHashRange));
    for (std::size_t r = 0; r < nregions; ++r) po.keep[r] = region_hash(r) < threshold;
  }
  c.sampled_regions =
      po.keep.empty() ? nregions
                      : static_cast<std::uint64_t>(std::count(po.keep.begin(), po.keep.end(), 1));
  opt::ProgramOrder order(
      reader, va,
      [&](const trace::KernelInfo* k) {
        return k && !o.serial ? threadblocks_per_sm(cfg.gpu, *k) * cfg.gpu.num_sms : 1;
      },
      po);
  c.bucket_steps = order.bucket_steps();
  c.records = order.records();
  const auto& pages = order.pages_touched();

  // Histograms of stack distances (in sampled regions): misses and the bytes they migrate.
  StackDistances sd(nregions);
  std::vector<double> hist(nregions + 1, 0), hist_bytes(nregions + 1, 0);
  double cold = 0, cold_bytes = 0;
  std::uint64_t distinct = 0;
  order.uses().visit(false, [&](std::uint64_t k) {
    const std::uint32_t r = opt::key_region(k);
    const double bytes = static_cast<double>(pages[r]) * kPageSize;
    const std::int64_t d = sd.use(r);
    if (d < 0) {
      cold += 1;
      cold_bytes += bytes;
      ++distinct;
    } else {
      hist[static_cast<std::size_t>(d)] += 1;
      hist_bytes[static_cast<std::size_t>(d)] += bytes;
    }
  });
  c.uses = order.uses().keys();
  // The rate actually achieved among the regions the trace uses (the pre-pass sees them all),
  // not R: with a few hundred regions the kept fraction deviates from R by several per cent
  // (binomially), and scaling by it removes that part of the error (as SHARDS_adj corrects
  // the sample size, Waldspurger et al. §4.3).
  std::uint64_t used = 0;
  for (const auto n : pages) used += n > 0;
  if (distinct == 0 && used > 0)
    throw UsageError("--sample", "value",
                     "no region the trace uses was sampled at " + fmt(o.sample) + "; raise it");
  const double rate =
      o.sample < 1 && used > 0 ? static_cast<double>(distinct) / static_cast<double>(used) : 1.0;
  const double scale = 1.0 / rate;
  c.regions_used = used;
  c.sampled_used = distinct;

  // Suffix sums: a use of distance d misses in every memory of at most d chunks (sampled).
  std::vector<double> miss_at(nregions + 2, 0), bytes_at(nregions + 2, 0);
  for (std::size_t d = nregions + 1; d-- > 0;) {
    miss_at[d] = miss_at[d + 1] + (d < hist.size() ? hist[d] : 0);
    bytes_at[d] = bytes_at[d + 1] + (d < hist.size() ? hist_bytes[d] : 0);
  }
  // What stays resident at the end: the top of the final LRU stack.
  const std::vector<std::uint32_t> stack = sd.stack();
  std::vector<double> resident_bytes(stack.size() + 1, 0);
  for (std::size_t i = 0; i < stack.size(); ++i)
    resident_bytes[i + 1] = resident_bytes[i] + static_cast<double>(pages[stack[i]]) * kPageSize;

  for (std::uint64_t chunks = 1; chunks <= std::max<std::uint64_t>(1, c.managed_chunks); ++chunks) {
    Point p;
    p.chunks = chunks;
    p.oversub_pct =
        100.0 * (static_cast<double>(c.managed_chunks) / static_cast<double>(chunks) - 1);
    // Memory of `chunks` chunks holds chunks * R sampled regions.
    const double sampled_capacity = static_cast<double>(chunks) * rate;
    const auto first_miss = static_cast<std::size_t>(
        std::min<double>(static_cast<double>(nregions + 1), std::ceil(sampled_capacity - 1e-9)));
    p.misses = (cold + miss_at[first_miss]) * scale;
    p.htod_bytes = (cold_bytes + bytes_at[first_miss]) * scale;
    const double resident = std::min(static_cast<double>(chunks), static_cast<double>(used));
    p.evictions = std::max(0.0, p.misses - resident);
    const auto kept = static_cast<std::size_t>(
        std::min<double>(static_cast<double>(stack.size()), std::floor(sampled_capacity + 1e-9)));
    p.dtoh_bytes = std::max(0.0, p.htod_bytes - resident_bytes[kept] * scale);
    if (o.sample == 1.0) p.evictions = std::round(p.evictions);
    c.points.push_back(p);
  }
  return c;
}

std::string Curve::csv() const {
  std::string out = std::string(kCsvHeader) + "\n";
  char buf[64];
  for (const auto& p : points) {
    std::snprintf(buf, sizeof buf, "%.4f", p.oversub_pct);
    out += std::to_string(p.chunks) + "," + std::to_string(p.chunks * kBlockSize) + "," + buf +
           "," + fmt(p.misses) + "," + fmt(p.evictions) + "," + fmt(p.htod_bytes) + "," +
           fmt(p.dtoh_bytes) + "," + (p.suggested ? "1" : "0") + "\n";
  }
  return out;
}

std::string Curve::oversub_for(std::uint64_t chunks) const {
  // Simulator::size_memory: floor(managed / (1 + P/100)). Prefer a short decimal that maps
  // back to exactly `chunks`.
  auto gives = [&](double pct) {
    return static_cast<std::uint64_t>(
               std::floor(static_cast<double>(managed_chunks) / (1.0 + pct / 100.0))) == chunks;
  };
  const double exact =
      100.0 * (static_cast<double>(managed_chunks) / static_cast<double>(chunks) - 1.0);
  char buf[64];
  for (int digits = 0; digits <= 6; ++digits) {
    const double m = std::pow(10.0, digits);
    for (const double v : {std::floor(exact * m) / m, std::ceil(exact * m) / m}) {
      if (v >= 0 && gives(v)) {
        std::snprintf(buf, sizeof buf, "%.*f", digits, v);
        return buf;
      }
    }
  }
  std::snprintf(buf, sizeof buf, "%.9g", exact);
  return buf;
}

std::vector<Point> Curve::suggest(std::size_t n) {
  std::vector<std::uint64_t> picked;
  auto pick = [&](std::uint64_t chunks) {
    if (chunks >= 1 && chunks <= points.size() && picked.size() < n &&
        std::find(picked.begin(), picked.end(), chunks) == picked.end())
      picked.push_back(chunks);
  };
  // The first size that evicts: one chunk less than the regions the trace uses.
  const std::uint64_t fits =
      std::clamp<std::uint64_t>(regions_used, 1, std::max<std::size_t>(1, points.size()));
  pick(fits - 1);
  // Both sides of the largest step of the miss curve: losing one chunk there costs most.
  std::uint64_t step = 0;
  double largest = 0;
  for (std::uint64_t ch = 2; ch <= points.size(); ++ch) {
    const double d = points[ch - 2].misses - points[ch - 1].misses;
    if (d > largest) largest = d, step = ch;
  }
  if (step) {
    pick(step - 1);  // just past the step
    pick(step);      // just before it
  }
  // Then the largest memories at which misses reach 2x, 4x, 8x ... those without evictions.
  const double base = points.empty() ? 0 : points.back().misses;
  for (double f = 2; picked.size() < n && base > 0 && f * base <= points.front().misses; f *= 2) {
    std::uint64_t ch = points.size();
    while (ch > 1 && points[ch - 1].misses < f * base) --ch;
    pick(ch);
  }
  std::sort(picked.begin(), picked.end(), std::greater<>());
  std::vector<Point> out;
  for (const auto ch : picked) {
    points[ch - 1].suggested = true;
    out.push_back(points[ch - 1]);
  }
  return out;
}

}  // namespace uvmsim::mrc
