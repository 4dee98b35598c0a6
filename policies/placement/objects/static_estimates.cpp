#include "policies/placement/objects/static_estimates.h"

#include <algorithm>
#include <limits>

namespace uvmsim::objects {

namespace {

constexpr std::int64_t kNone = -1;

void add_unique(std::vector<std::uint32_t>& v, std::uint32_t x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

StaticProgram::StaticProgram(const trace::Hints& h, std::uint32_t trip_count)
    : trips_(std::max<std::uint32_t>(1, trip_count)) {
  // ---- The static structure: straight-line sites and loops of sites (see the header).
  if (h.launches.empty()) {
    for (const auto& k : h.kernels) {
      segments_.push_back({false, static_cast<std::uint32_t>(sites_.size()), 1});
      sites_.push_back({static_cast<std::uint32_t>(segments_.size() - 1), 0, {k.kernel}, {}});
    }
  }
  bool in_loop = false;
  std::int32_t iteration = 0;
  std::uint32_t position = 0;
  for (const auto& l : h.launches) {
    if (l.iteration < 0) {
      in_loop = false;
      segments_.push_back({false, static_cast<std::uint32_t>(sites_.size()), 1});
      sites_.push_back({static_cast<std::uint32_t>(segments_.size() - 1), 0, {l.kernel}, {}});
      site_of_launch_.push_back(static_cast<std::uint32_t>(sites_.size() - 1));
      continue;
    }
    if (!in_loop || l.iteration < iteration) {
      in_loop = true;
      segments_.push_back({true, static_cast<std::uint32_t>(sites_.size()), 0});
      position = 0;
    } else if (l.iteration != iteration) {
      position = 0;  // the next iteration starts at the loop's first site again
    }
    iteration = l.iteration;
    Segment& seg = segments_.back();
    if (position == seg.sites) {
      sites_.push_back({static_cast<std::uint32_t>(segments_.size() - 1), position, {}, {}});
      ++seg.sites;
    }
    const std::uint32_t s = seg.first_site + position++;
    add_unique(sites_[s].kernels, l.kernel);
    site_of_launch_.push_back(s);
  }

  std::uint32_t nalloc = 0;
  for (const auto& k : h.kernels)
    for (const auto& u : k.uses) nalloc = std::max(nalloc, u.alloc + 1);
  for (const auto& a : h.allocations) nalloc = std::max(nalloc, a.id + 1);
  auto site_allocs = [&](const Site& s) {
    std::vector<std::uint32_t> v;
    for (const std::uint32_t k : s.kernels)
      if (const trace::KernelHint* kh = h.kernel(k))
        for (const auto& u : kh->uses) add_unique(v, u.alloc);
    return v;
  };

  // ---- Global locality (Eq. 1) with the estimated frequencies.
  global_locality_.assign(nalloc, 0.0);
  for (const Site& s : sites_) {
    const bool loop = segments_[s.segment].loop;
    const double share = 1.0 / static_cast<double>(s.kernels.size());
    for (const std::uint32_t k : s.kernels) {
      const trace::KernelHint* kh = h.kernel(k);
      if (!kh) continue;
      for (const auto& u : kh->uses) {
        double rl = 0;
        if (!loop) {
          rl = static_cast<double>(u.reads.at(-1)) + static_cast<double>(u.writes.at(-1));
        } else {
          // RF x RL of a loop site: the site's RL summed over the expected iterations.
          for (std::uint32_t it = 0; it < trips_; ++it) {
            const auto i = static_cast<std::int32_t>(std::min<std::uint32_t>(
                it, static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max())));
            rl += static_cast<double>(u.reads.at(i)) + static_cast<double>(u.writes.at(i));
          }
        }
        global_locality_[u.alloc] += share * rl;
      }
    }
  }

  // ---- Reuse distances (§4.3), by one backward pass over the segments. pos = the expected
  // number of target regions before a segment; next[d] = the expected (1-based) position of the
  // first region that uses d after the current segment. From a loop site at position j the
  // expected count of the loop's remaining regions is (n - 1 - j) + (T - 1) n (the geometric
  // number of further iterations), so a use after the loop lies next[d] - (pos + j + 1) ahead.
  const auto T = static_cast<std::int64_t>(trips_);
  std::vector<std::int64_t> pos(segments_.size() + 1, 0);
  for (std::size_t g = 0; g < segments_.size(); ++g)
    pos[g + 1] = pos[g] + (segments_[g].loop ? T * segments_[g].sites : 1);
  std::vector<std::int64_t> next(nalloc, kNone);
  for (std::size_t g = segments_.size(); g-- > 0;) {
    const Segment& seg = segments_[g];
    const std::int64_t n = seg.sites;
    std::vector<std::vector<std::uint32_t>> uses(seg.sites);
    for (std::uint32_t j = 0; j < seg.sites; ++j) uses[j] = site_allocs(sites_[seg.first_site + j]);
    for (std::uint32_t j = 0; j < seg.sites; ++j) {
      Site& s = sites_[seg.first_site + j];
      for (const std::uint32_t d : uses[j]) {
        std::int64_t best = next[d] == kNone ? kNone : next[d] - (pos[g] + j + 1);
        if (seg.loop) {
          auto consider = [&](std::int64_t v) {
            if (best == kNone || v < best) best = v;
          };
          std::int64_t first = kNone, later = kNone;
          for (std::uint32_t k = 0; k < seg.sites; ++k) {
            if (std::find(uses[k].begin(), uses[k].end(), d) == uses[k].end()) continue;
            if (first == kNone) first = k;
            if (k > j && later == kNone) later = k;
          }
          if (later != kNone) consider(later - j);
          // The back edge: with one expected trip the loop never repeats.
          if (T > 1) consider(n - j + first);
        }
        s.distance.emplace_back(d, best);
      }
    }
    for (std::uint32_t j = seg.sites; j-- > 0;)
      for (const std::uint32_t d : uses[j]) next[d] = pos[g] + j + 1;
  }
}

std::int64_t StaticProgram::reuse_distance(std::uint32_t launch, std::uint32_t alloc) const {
  if (launch >= site_of_launch_.size()) return kNone;
  for (const auto& [d, dist] : sites_[site_of_launch_[launch]].distance)
    if (d == alloc) return dist;
  return kNone;
}

double StaticProgram::global_locality(std::uint32_t alloc) const {
  return alloc < global_locality_.size() ? global_locality_[alloc] : 0.0;
}

double StaticProgram::frequency(std::uint32_t launch) const {
  if (launch >= site_of_launch_.size()) return 0;
  return segments_[sites_[site_of_launch_[launch]].segment].loop ? static_cast<double>(trips_) : 1;
}

}  // namespace uvmsim::objects
