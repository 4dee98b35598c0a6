// Profile-derived hints: one pass over the trace's launches, accumulating per launch and static
// instruction, then fitting the per-launch values as polynomials in the host-loop iteration.
#include "traces/analyze.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

namespace uvmsim::trace {

namespace {

constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

/// One static instruction's accesses to one allocation during one launch.
struct RefLaunch {
  std::uint64_t bytes = 0;  ///< record bytes x repeat
  std::uint32_t gcd = 0;    ///< gcd of record sizes (bounds the per-thread access size)
  AccessKind kind = AccessKind::Read;
  std::uint64_t lo = kNone, hi = 0;  ///< offsets touched: [lo, hi)
  std::uint64_t extent = 0;          ///< largest per-threadblock extent
  std::uint64_t steps = 0, strided = 0;
  // Current threadblock / warp state.
  std::uint64_t tb = kNone, tb_lo = 0, tb_hi = 0;
  std::uint64_t warp = kNone, last_off = 0;

  void close_tb() {
    if (tb != kNone) extent = std::max(extent, tb_hi - tb_lo);
  }
};

/// Per (kernel, ref, alloc): its values in every launch, keyed by x = max(iteration, 0).
struct Series {
  std::map<std::int64_t, std::uint64_t> bytes, extent, lo, hi;
  std::uint32_t gcd = 0;
  AccessKind kind = AccessKind::Read;
  std::uint64_t steps = 0, strided = 0;
  bool in_loop = false;  ///< launched with an iteration >= 0
};

void put_max(std::map<std::int64_t, std::uint64_t>& m, std::int64_t x, std::uint64_t v) {
  auto [it, fresh] = m.emplace(x, v);
  if (!fresh) it->second = std::max(it->second, v);
}
void put_min(std::map<std::int64_t, std::uint64_t>& m, std::int64_t x, std::uint64_t v) {
  auto [it, fresh] = m.emplace(x, v);
  if (!fresh) it->second = std::min(it->second, v);
}

/// The polynomial of degree <= 2 with int64 coefficients through every point, if there is one.
/// Values come from the trace (up to 2^64 - 1 as unsigned, x up to 2^31): the arithmetic is done in
/// 128 bits, where none of it can overflow, and a fit whose coefficients do not fit in 64 bits is
/// no fit.
std::optional<Poly> exact_fit(const std::map<std::int64_t, std::int64_t>& pts) {
  __extension__ typedef __int128 Wide;
  if (pts.empty()) return Poly{};
  std::vector<std::pair<Wide, Wide>> p(pts.begin(), pts.end());
  auto narrow = [](Wide v) { return v >= INT64_MIN && v <= INT64_MAX; };
  auto fits = [&](Wide c, Wide b, Wide a) {
    if (!narrow(c) || !narrow(b) || !narrow(a)) return false;
    for (const auto& [x, y] : p) {
      if (c + b * x + a * x * x != y) return false;
    }
    return true;
  };
  auto poly = [](Wide c, Wide b, Wide a) {
    return Poly{static_cast<std::int64_t>(c), static_cast<std::int64_t>(b),
                static_cast<std::int64_t>(a)};
  };
  if (fits(p[0].second, 0, 0)) return poly(p[0].second, 0, 0);
  if (p.size() >= 2) {
    const auto [x0, y0] = p[0];
    const auto [x1, y1] = p[1];
    if ((y1 - y0) % (x1 - x0) == 0) {
      const Wide b = (y1 - y0) / (x1 - x0);
      if (fits(y0 - b * x0, b, 0)) return poly(y0 - b * x0, b, 0);
    }
  }
  if (p.size() >= 3) {
    // Through the first three points (Lagrange), kept only if the coefficients are integers.
    const auto [x0, y0] = p[0];
    const auto [x1, y1] = p[1];
    const auto [x2, y2] = p[2];
    const Wide d01 = x1 - x0, d02 = x2 - x0, d12 = x2 - x1;
    const Wide num_a = (y2 - y0) * d01 - (y1 - y0) * d02;
    const Wide den_a = d01 * d02 * d12;
    if (num_a % den_a == 0) {
      const Wide a = num_a / den_a;
      const Wide rest = (y1 - y0) - a * (x1 * x1 - x0 * x0);
      if (narrow(a) && rest % d01 == 0) {
        const Wide b = rest / d01;
        if (narrow(b) && fits(y0 - b * x0 - a * x0 * x0, b, a)) {
          return poly(y0 - b * x0 - a * x0 * x0, b, a);
        }
      }
    }
  }
  return std::nullopt;
}

/// Exact polynomial fit, or the maximum (an upper bound for every launch).
Poly fit(const std::map<std::int64_t, std::uint64_t>& pts) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::map<std::int64_t, std::int64_t> s;
  std::uint64_t mx = 0;
  for (const auto& [x, y] : pts) {
    // Above INT64_MAX a value is out of the hints' range: the fit (or bound) uses INT64_MAX.
    s[x] = static_cast<std::int64_t>(std::min(y, kMax));
    mx = std::max(mx, y);
  }
  if (auto q = exact_fit(s)) return *q;
  return Poly{static_cast<std::int64_t>(std::min(mx, kMax))};
}

/// The window [start(x), start(x) + span(x)) covering [lo(x), hi(x)) for every x, if the lowest
/// offset is a non-constant polynomial in the iteration (the offset depends on the loop variable,
/// as SUV's analysis requires) over more iterations than the polynomial has coefficients;
/// offsets that move irregularly (data-dependent guards) make none.
std::optional<IterationWindow> fit_window(const Series& s) {
  std::map<std::int64_t, std::int64_t> lo;
  for (const auto& [x, v] : s.lo) lo[x] = static_cast<std::int64_t>(v);
  const std::optional<Poly> q = exact_fit(lo);
  if (!q || (q->per_iteration == 0 && q->per_iteration_squared == 0)) return std::nullopt;
  // Any two points lie on a line and any three on a parabola: only a fit with a point to spare
  // is evidence that the offset follows the iteration.
  const std::size_t params = q->per_iteration_squared != 0 ? 3 : 2;
  if (lo.size() <= params) return std::nullopt;
  const Poly start = *q;
  std::map<std::int64_t, std::uint64_t> span;
  for (const auto& [x, h] : s.hi)
    span[x] = h - std::min<std::uint64_t>(h, start.at(static_cast<std::int32_t>(x)));
  return IterationWindow{start, fit(span)};
}

}  // namespace

Hints profile_hints(TraceReader& reader) {
  const Metadata& meta = reader.metadata();
  Hints h;
  h.source = HintSource::Profile;
  h.workload = meta.workload;

  // Allocations by base address, for the record -> allocation lookup.
  std::vector<const Allocation*> by_base;
  for (const auto& a : meta.allocations) by_base.push_back(&a);
  std::sort(by_base.begin(), by_base.end(),
            [](const Allocation* a, const Allocation* b) { return a->base < b->base; });
  std::size_t cached = 0;
  auto find = [&](Addr va) -> const Allocation* {
    if (cached < by_base.size()) {
      const Allocation* a = by_base[cached];
      if (va >= a->base && va - a->base < a->size) return a;
    }
    auto it = std::upper_bound(by_base.begin(), by_base.end(), va,
                               [](Addr v, const Allocation* a) { return v < a->base; });
    if (it == by_base.begin()) return nullptr;
    --it;
    if (va - (*it)->base >= (*it)->size) return nullptr;
    cached = static_cast<std::size_t>(it - by_base.begin());
    return *it;
  };

  // The launch sequence, from the host events.
  struct LaunchInfo {
    std::uint32_t kernel;
    std::int32_t iteration;
    std::set<std::uint32_t> allocs;
  };
  std::vector<LaunchInfo> launches;
  reader.rewind_host();
  HostEvent ev;
  while (reader.next_host_event(ev)) {
    if (ev.type == HostEventType::KernelLaunch)
      launches.push_back({ev.kernel_id, ev.iteration, {}});
  }
  reader.rewind_host();

  // Per (kernel, ref, alloc) series over the launches.
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, Series> series;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::map<std::int64_t, std::uint64_t>>
      use_extent;  // per (kernel, alloc): largest per-TB extent of its refs, per x
  std::vector<WarpStream> warps;
  for (std::uint32_t li = 0; li < launches.size(); ++li) {
    LaunchInfo& L = launches[li];
    std::map<std::pair<std::uint32_t, std::uint32_t>, RefLaunch> acc;  // (ref, alloc)
    LaunchStream stream = reader.launch(li);
    ThreadblockView tb;
    while (stream.next(tb)) {
      tb.warp_streams(warps);
      for (std::uint32_t w = 0; w < warps.size(); ++w) {
        AccessRecord r;
        while (warps[w].next(r)) {
          const Allocation* a = find(r.va);
          if (!a) continue;
          RefLaunch& x = acc[{r.ref_id, a->id}];
          const std::uint64_t off = r.va - a->base;
          x.bytes += std::uint64_t{r.bytes} * r.repeat;
          x.gcd = std::gcd(x.gcd, r.bytes);
          x.kind = std::max(x.kind, r.kind);
          x.lo = std::min(x.lo, off);
          x.hi = std::max(x.hi, off + r.bytes);
          if (x.tb != tb.tb_id) {
            x.close_tb();
            x.tb = tb.tb_id;
            x.tb_lo = off;
            x.tb_hi = off + r.bytes;
          } else {
            x.tb_lo = std::min(x.tb_lo, off);
            x.tb_hi = std::max(x.tb_hi, off + r.bytes);
          }
          const std::uint64_t warp = tb.tb_id << 16 | w;
          if (x.warp == warp) {
            ++x.steps;
            if ((off > x.last_off ? off - x.last_off : x.last_off - off) >= 4096) ++x.strided;
          }
          x.warp = warp;
          x.last_off = off;
        }
      }
      stream.release(tb);
    }
    const std::int64_t xi = std::max<std::int32_t>(L.iteration, 0);
    for (auto& [key, x] : acc) {
      x.close_tb();
      const auto [ref, alloc] = key;
      L.allocs.insert(alloc);
      Series& s = series[{L.kernel, ref, alloc}];
      put_max(s.bytes, xi, x.bytes);
      put_max(s.extent, xi, x.extent);
      put_min(s.lo, xi, x.lo);
      put_max(s.hi, xi, x.hi);
      s.gcd = std::gcd(s.gcd, x.gcd);
      s.kind = std::max(s.kind, x.kind);
      s.steps += x.steps;
      s.strided += x.strided;
      s.in_loop |= L.iteration >= 0;
      put_max(use_extent[{L.kernel, alloc}], xi, x.extent);
    }
  }

  // Allocations the kernels use.
  std::set<std::uint32_t> used;
  for (const auto& L : launches) used.insert(L.allocs.begin(), L.allocs.end());
  for (const auto& a : meta.allocations)
    if (used.count(a.id)) h.allocations.push_back({a.id, a.name, a.size});

  // A ref id is kept for the kernel function that first shows it, with one allocation per
  // kernel entry; a (kernel, allocation) pair lists its refs only if all of them qualify.
  std::map<std::uint32_t, std::string> owner;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> allocs_of_ref;  // (k, ref)
  for (const auto& [key, s] : series) {
    const auto [k, ref, alloc] = key;
    ++allocs_of_ref[{k, ref}];
    const KernelInfo* ki = meta.find_kernel(k);
    owner.emplace(ref, ki ? ki->name : std::string());
  }
  std::map<std::pair<std::uint32_t, std::uint32_t>, bool> clean;  // (kernel, alloc)
  for (const auto& [key, s] : series) {
    const auto [k, ref, alloc] = key;
    const KernelInfo* ki = meta.find_kernel(k);
    const bool ok =
        ki && !ki->name.empty() && allocs_of_ref[{k, ref}] == 1 && owner[ref] == ki->name;
    auto [it, fresh] = clean.emplace(std::make_pair(k, alloc), ok);
    if (!fresh) it->second = it->second && ok;
  }

  for (const auto& k : meta.kernels) {
    KernelHint kh;
    kh.kernel = k.id;
    kh.name = k.name;
    std::map<std::uint32_t, UseHint> uses;
    std::map<std::uint32_t, std::map<std::int64_t, std::uint64_t>> reads, writes, bytes;
    std::map<std::uint32_t, std::pair<std::uint64_t, AccessPattern>> top;  // biggest ref's pattern
    for (const auto& [key, s] : series) {
      const auto [kid, ref, alloc] = key;
      if (kid != k.id) continue;
      const auto size = meta.find_allocation(alloc)->size;
      // A warp record carries the bytes of its lanes in one page, not the access size: assume
      // 4-byte accesses unless the records show a smaller size.
      const std::uint32_t elem = std::max<std::uint32_t>(1, std::min<std::uint32_t>(4, s.gcd));
      std::map<std::int64_t, std::uint64_t> count;
      for (const auto& [x, b] : s.bytes) count[x] = b / elem;
      RefHint r;
      r.id = ref;
      r.alloc = alloc;
      r.kind = s.kind == AccessKind::Prefetch ? AccessKind::Read : s.kind;
      r.bytes = elem;
      r.count = fit(count);
      r.bytes_per_tb = fit(s.extent);
      const std::uint64_t ext0 = s.extent.empty() ? 0 : s.extent.rbegin()->second;
      r.pattern = ext0 * 2 >= size                     ? AccessPattern::Shared
                  : s.strided * 2 > s.steps && s.steps ? AccessPattern::Strided
                                                       : AccessPattern::Streaming;
      // Offsets that move with the host-loop iteration make an iteration window.
      if (s.in_loop && s.lo.size() >= 2) r.window = fit_window(s);
      auto& m = r.kind == AccessKind::Read ? reads[alloc] : writes[alloc];
      for (const auto& [x, c] : count) m[x] += c;
      for (const auto& [x, b] : s.bytes) bytes[alloc][x] += b / elem * elem;
      UseHint& u = uses[alloc];
      u.alloc = alloc;
      auto& t = top[alloc];
      const std::uint64_t total =
          std::accumulate(s.bytes.begin(), s.bytes.end(), std::uint64_t{0},
                          [](std::uint64_t a, const auto& p) { return a + p.second; });
      if (total >= t.first) t = {total, r.pattern};
      if (clean[{k.id, alloc}]) {
        // Totals over listed refs must equal the sums of their fitted values; sums beyond 64 bits
        // cannot be written, and the allocation is then described by its totals alone.
        try {
          (r.kind == AccessKind::Read ? u.reads : u.writes) =
              (r.kind == AccessKind::Read ? u.reads : u.writes) + r.count;
          u.bytes = u.bytes + r.count * static_cast<std::int64_t>(r.bytes);
        } catch (const PolyOverflow&) {
          clean[{k.id, alloc}] = false;
          std::erase_if(kh.refs, [alloc = alloc](const RefHint& x) { return x.alloc == alloc; });
          u.iteration_dependent = false;
          continue;
        }
        u.iteration_dependent |= r.window.has_value();
        kh.refs.push_back(r);
      }
    }
    for (auto& [alloc, u] : uses) {
      if (!clean[{k.id, alloc}]) {
        u.reads = fit(reads[alloc]);
        u.writes = fit(writes[alloc]);
        u.bytes = fit(bytes[alloc]);
      }
      u.bytes_per_tb = fit(use_extent[{k.id, alloc}]);
      u.pattern = top[alloc].second;
      kh.uses.push_back(u);
    }
    if (!kh.uses.empty()) h.kernels.push_back(std::move(kh));
  }

  // The launch sequence with each allocation's next use (the next launch whose kernel uses it).
  std::map<std::uint32_t, std::vector<std::uint32_t>> users;  // alloc -> launches, ascending
  for (std::uint32_t li = 0; li < launches.size(); ++li) {
    if (const KernelHint* kh = h.kernel(launches[li].kernel))
      for (const auto& u : kh->uses) users[u.alloc].push_back(li);
  }
  for (std::uint32_t li = 0; li < launches.size(); ++li) {
    LaunchHint l;
    l.launch = li;
    l.kernel = launches[li].kernel;
    l.iteration = launches[li].iteration;
    const KernelHint* kh = h.kernel(l.kernel);
    if (!kh) {
      // A launch that touched no allocation still needs its kernel listed.
      KernelHint empty;
      empty.kernel = l.kernel;
      const KernelInfo* ki = meta.find_kernel(l.kernel);
      empty.name = ki ? ki->name : std::string();
      h.kernels.push_back(empty);
      kh = &h.kernels.back();
    }
    for (const auto& u : kh->uses) {
      const auto& v = users[u.alloc];
      const auto it = std::upper_bound(v.begin(), v.end(), li);
      l.next_use.emplace_back(u.alloc, it == v.end() ? -1 : static_cast<std::int64_t>(*it));
    }
    h.launches.push_back(std::move(l));
  }
  return h;
}

}  // namespace uvmsim::trace
