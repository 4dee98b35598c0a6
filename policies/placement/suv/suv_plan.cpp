#include "policies/placement/suv/suv_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace uvmsim::suv {

const char* to_string(Class c) {
  switch (c) {
    case Class::Density:
      return "density";
    case Class::Temporal:
      return "temporal";
    case Class::Unknown:
      return "unknown";
  }
  return "?";
}

const char* to_string(Decision::Kind k) {
  switch (k) {
    case Decision::Reserve:
      return "reserve";
    case Decision::OnDemand:
      return "on_demand";
    case Decision::Pin:
      return "pin";
    case Decision::DramPin:
      return "dram_pin";
    case Decision::Window:
      return "window";
  }
  return "?";
}

std::vector<DataStructure> classify(const trace::KernelHint& hint, const trace::KernelInfo& kernel,
                                    std::int32_t iteration, std::uint64_t concurrent,
                                    const std::vector<AllocSize>& sizes, const Params& p) {
  // §V-B "Estimating working set size": TBs per SM (from the block's threads, registers and
  // shared memory) x SMs run concurrently. With more than half of all TBs in flight a kernel
  // cannot show temporal behaviour, and no WSS is computed.
  const bool temporal_possible =
      concurrent > 0 && static_cast<double>(concurrent) <=
                            p.temporal_tb_fraction * static_cast<double>(kernel.threadblocks());
  std::vector<DataStructure> out;
  for (const auto& u : hint.uses) {
    if (u.alloc >= sizes.size() || sizes[u.alloc].size == 0) continue;
    DataStructure d;
    d.alloc = u.alloc;
    d.size = sizes[u.alloc].size;
    d.blocks = sizes[u.alloc].blocks;
    // Access count of the launch (Listing 3: threads x trip counts, summed over its memops).
    d.accesses =
        static_cast<double>(u.reads.at(iteration)) + static_cast<double>(u.writes.at(iteration));
    d.density = d.accesses / static_cast<double>(d.size);
    // WSS: one TB's extent (min/max offset of its memops) x concurrent TBs.
    const std::uint64_t per_tb = u.bytes_per_tb.at(iteration);
    d.wss = concurrent && per_tb > UINT64_MAX / concurrent ? UINT64_MAX : per_tb * concurrent;
    if (u.data_dependent) {
      d.cls = Class::Unknown;  // pointer chase / indirect: no density or WSS (§V-A)
    } else if (temporal_possible &&
               static_cast<double>(d.wss) < p.temporal_wss_fraction * static_cast<double>(d.size)) {
      d.cls = Class::Temporal;
    }
    // 'Iterative': some memop's offset depends on the host-loop variable (§V-B "span").
    d.iterative = u.iteration_dependent && iteration >= 0;
    if (d.iterative) {
      bool any = false, all = true;
      for (const auto& r : hint.refs) {
        if (r.alloc != u.alloc) continue;
        any = true;
        all &= r.window.has_value();
      }
      d.window_only = any && all;
    }
    out.push_back(d);
  }
  return out;
}

std::vector<Decision> algorithm1(const std::vector<DataStructure>& ds,
                                 const std::vector<std::uint64_t>& held, std::uint64_t avail,
                                 const Params& p) {
  std::vector<Decision> out;
  // Lines 2-5: HBM for 'Unknown' structures in proportion to their share of the kernel's
  // footprint, with access-counter migration. Whole chunks, at least one while any is left.
  const double footprint = std::accumulate(ds.begin(), ds.end(), 0.0, [](double a, const auto& d) {
    return a + static_cast<double>(d.size);
  });
  const std::uint64_t avail0 = avail;
  for (const auto& d : ds) {
    if (d.cls != Class::Unknown) continue;
    auto q = static_cast<std::uint64_t>(
        std::floor(static_cast<double>(d.size) / footprint * static_cast<double>(avail0)));
    if (q == 0 && avail0 > 0) q = 1;
    q = std::min(q, avail);
    avail -= q;  // "sets aside HBM capacity" (§V-C)
    out.push_back({Decision::Reserve, d.alloc, q});
  }
  // Line 6: the others in decreasing access density (stable: allocation order on ties).
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < ds.size(); ++i)
    if (ds[i].cls != Class::Unknown) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return ds[a].density > ds[b].density; });
  for (const std::size_t i : order) {
    const DataStructure& d = ds[i];
    if (d.window_only) {  // accessed only through iteration windows: Algorithm 2 places it
      out.push_back({Decision::Window, d.alloc, 0});
      continue;
    }
    if (avail == 0) {  // lines 8-9
      out.push_back({Decision::DramPin, d.alloc, 0});
      continue;
    }
    if (d.cls == Class::Temporal) {  // lines 10-16
      if (d.density > p.density_threshold) {
        const std::uint64_t w = std::min(
            avail, std::max<std::uint64_t>(1, (d.wss + (std::uint64_t{2} << 20) - 1) >> 21));
        out.push_back({Decision::OnDemand, d.alloc, w});
        avail -= w;
      } else {
        out.push_back({Decision::DramPin, d.alloc, 0});
      }
      continue;
    }
    // Lines 17-21: pin what fits on the HBM, the rest on the DRAM.
    const std::uint64_t have = i < held.size() ? held[i] : 0;
    const std::uint64_t need = d.blocks > have ? d.blocks - have : 0;
    const std::uint64_t n = std::min(need, avail);
    out.push_back({Decision::Pin, d.alloc, n});
    avail -= n;
  }
  return out;
}

ActiveWindows algorithm2(const trace::Hints& hints, const std::vector<std::uint32_t>& kernels,
                         std::int32_t it, std::int32_t last_iteration,
                         const std::vector<AllocSize>& sizes, const Params& p,
                         const ActiveWindows& before) {
  ActiveWindows out;
  if (it < 0) return out;  // outside the host loop every window has expired
  for (const std::uint32_t kid : kernels) {
    const trace::KernelHint* kh = hints.kernel(kid);
    if (!kh) continue;
    for (const auto& r : kh->refs) {
      const std::uint64_t key = std::uint64_t{kid} << 32 | r.id;
      if (!r.window || out.count(key) || r.alloc >= sizes.size()) continue;
      if (const auto b = before.find(key); b != before.end() && b->second.until > it) {
        out[key] = b->second;  // still covered by an earlier batch
        continue;
      }
      const std::uint64_t span = r.window->span.at(it);
      if (span == 0) continue;
      // Spans below batch_bytes are prefetched for several iterations together (§V-C).
      std::int64_t n = span < p.batch_bytes ? static_cast<std::int64_t>(p.batch_bytes / span) : 1;
      if (last_iteration >= it) n = std::min<std::int64_t>(n, last_iteration - it + 1);
      n = std::max<std::int64_t>(n, 1);
      // The union of the batch's windows (start and span are polynomials in the iteration).
      std::uint64_t lo = UINT64_MAX, hi = 0;
      for (std::int64_t j = it; j < it + n; ++j) {
        const auto jj = static_cast<std::int32_t>(j);
        const std::uint64_t s = r.window->start.at(jj);
        lo = std::min(lo, s);
        hi = std::max(hi, s + r.window->span.at(jj));
      }
      hi = std::min(hi, sizes[r.alloc].size);
      if (lo >= hi) continue;
      out[key] = {{r.alloc, lo, hi}, it + n};
    }
  }
  return out;
}

std::vector<Window> merge(std::vector<Window> w) {
  std::sort(w.begin(), w.end(), [](const Window& a, const Window& b) {
    return a.alloc != b.alloc ? a.alloc < b.alloc : a.lo < b.lo;
  });
  std::vector<Window> out;
  for (const auto& x : w) {
    if (x.lo >= x.hi) continue;
    if (!out.empty() && out.back().alloc == x.alloc && x.lo <= out.back().hi) {
      out.back().hi = std::max(out.back().hi, x.hi);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

std::vector<Window> windows_of(const ActiveWindows& active) {
  std::vector<Window> w;
  for (const auto& [ref, a] : active) w.push_back(a.window);
  return merge(std::move(w));
}

std::vector<Window> subtract(const std::vector<Window>& a, const std::vector<Window>& b) {
  std::vector<Window> out;
  for (const auto& x : a) {
    std::uint64_t lo = x.lo;
    for (const auto& y : b) {
      if (y.alloc != x.alloc || y.hi <= lo || y.lo >= x.hi) continue;
      if (y.lo > lo) out.push_back({x.alloc, lo, y.lo});
      lo = std::max(lo, y.hi);
      if (lo >= x.hi) break;
    }
    if (lo < x.hi) out.push_back({x.alloc, lo, x.hi});
  }
  return out;
}

}  // namespace uvmsim::suv
