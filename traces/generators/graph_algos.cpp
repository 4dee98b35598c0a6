// Graph workloads on seeded graphs besides bfs:
//  - `sssp`: single-source shortest paths by frontier Bellman-Ford (as in Pannotia / LonestarGPU):
//    per round a relax kernel has every frontier vertex atomicMin its neighbours' distances and
//    an update kernel turns the improved vertices into the next frontier, until nothing changes;
//    on an R-MAT graph or, with graph=rodinia, a graph shaped like Rodinia's (graphgen);
//  - `minivite`: one phase of Louvain community detection as in miniVite (Li & Chapman's ECP
//    proxy application): per iteration every vertex scans its neighbours' communities and the
//    communities' degrees to pick a target community, the moves update the community degrees with
//    atomics, and a reduction computes the modularity. Community choice is modelled by label
//    propagation (the most frequent neighbouring community), which touches the same data.
#include <algorithm>
#include <limits>
#include <random>

#include "core/error.h"
#include "traces/generators/emulation.h"
#include "traces/generators/graph.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 256;

// ---- per-thread work of sssp (compute_cost.h) ----
// sssp_relax: tid, if (tid < n), &mask[tid]; if (mask[tid]) &dist[tid] and &row[tid] (row[tid+1]
// at the next word). Per arc: the loop step, &col[e] and &weights[e]; nd = d + w and
// &dist[nid] for the atomicMin; if (old > nd) &updated[nid].
constexpr Work kRelaxMask = kGlobalIndex + kGuard + kAddress;
constexpr Work kRelaxVertex = kGuard + 2 * kAddress;
constexpr Work kRelaxArc = kLoop + 2 * kAddress;
constexpr Work kRelaxMin = int_ops(1) + kAddress;
constexpr Work kRelaxUpdated = kGuard + kAddress;
// sssp_update: tid, if (tid < n), &updated[tid]; &mask[tid] for mask[tid] = updated[tid]; then
// if (updated[tid]) the clear and *changed = 1.
constexpr Work kUpdateLoad = kGlobalIndex + kGuard + kAddress;
constexpr Work kUpdateMask = kAddress;
constexpr Work kUpdateSet = kGuard;
// ---- minivite (GraphWeight is double) ----
// louvain_best_community: tid, if (tid < n), &curr_comm[tid] and the two edge offsets. Per arc:
// the loop step and &edge_list[e] (tail and weight); &curr_comm[tail]; &comm_degree[comm]; then
// the local community map update (hash, compare, DADD of the weight). Finally the modularity gain
// of the best candidate (four DFMA) and &target_comm[tid].
constexpr Work kBestStart = kGlobalIndex + kGuard + 2 * kAddress;
constexpr Work kBestArc = kLoop + kAddress;
constexpr Work kBestComm = kAddress;
constexpr Work kBestArcUpdate = int_ops(4) + cmp(2) + branch(1) + fp64(1);
constexpr Work kBestStore = fp64(4) + cmp(1) + kAddress;
// louvain_update: tid, if (tid < n), &curr_comm[tid] and &target_comm[tid]; if (they differ)
// &vertex_degree[tid]; the addresses of the two community degrees for the atomics.
constexpr Work kMoveLoads = kGlobalIndex + kGuard + 2 * kAddress;
constexpr Work kMoveDegree = kGuard + kAddress;
constexpr Work kMoveAtomics = 2 * kAddress;
// louvain_modularity: the degree squared (DMUL) and a block reduction in shared memory: eight
// steps of two shared accesses, a DADD, a barrier and the step's test; thread 0 stores.
constexpr Work kModLoad = kGlobalIndex + kGuard + kAddress;
constexpr Work kModReduce =
    fp64(1) + 8 * (shared(2) + fp64(1) + kBarrier + kGuard) + kGuard + kAddress;

unsigned graph_scale(const GenContext& ctx,
                     const std::function<std::uint64_t(std::uint64_t)>& bytes) {
  unsigned scale = 4;
  while (scale < 28 && bytes(std::uint64_t{2} << scale) <= ctx.footprint) ++scale;
  return scale;
}

void write_sssp(GenContext& ctx) {
  const bool rodinia = ctx.params.choice("graph", {"rmat", "rodinia"}) == "rodinia";
  const auto ef = static_cast<unsigned>(ctx.params.integer("edge_factor", 1, 64));
  // Offsets, distance, two masks per vertex; column and weight per arc.
  const auto bytes = [](std::uint64_t v, std::uint64_t arcs) {
    return v * (4 + 4 + 2) + arcs * 8 + 8;
  };
  Csr g;
  std::uint64_t source = 0;
  if (rodinia) {
    const std::uint64_t n = rodinia_vertices(ctx.seed, ctx.footprint, bytes);
    if (n == 0) throw UserError("--footprint: too small for a Rodinia graph of 20 vertices");
    g = rodinia_graph(n, ctx.seed);
  } else {
    const unsigned scale = graph_scale(ctx, [&](std::uint64_t v) { return bytes(v, 2 * ef * v); });
    g = rmat_graph(scale, ef, ctx.seed);
    source = first_connected_vertex(g);
  }
  const std::uint64_t v = g.vertices;
  // Weights 1..64, or graphgen's MIN_WEIGHT..MAX_WEIGHT = 1..10 for its graphs.
  std::vector<std::uint32_t> weight(g.arcs());
  std::mt19937_64 rng(ctx.seed + 2);
  const std::uint64_t max_weight = rodinia ? 10 : 64;
  for (auto& w : weight) w = static_cast<std::uint32_t>(1 + uniform_below(rng, max_weight));
  // Run the rounds in the order the trace replays them (block, warp, edge step, lane), recording
  // which atomicMin improved a distance; each round's frontier is the previous round's updates.
  std::vector<std::vector<bool>> frontier{std::vector<bool>(v, false)}, improved;
  frontier[0][source] = true;
  std::vector<std::uint32_t> dist(v, std::numeric_limits<std::uint32_t>::max());
  dist[source] = 0;
  for (;;) {
    const auto& mask = frontier.back();
    std::vector<bool> imp(g.arcs(), false), next(v, false);
    bool changed = false;
    for (std::uint64_t w0 = 0; w0 < v; w0 += 32) {
      const std::uint64_t lanes = std::min<std::uint64_t>(32, v - w0);
      std::uint64_t max_deg = 0;
      std::uint32_t d[32];
      for (std::uint64_t l = 0; l < lanes; ++l) {
        d[l] = dist[w0 + l];
        if (mask[w0 + l]) max_deg = std::max(max_deg, g.degree(w0 + l));
      }
      for (std::uint64_t e = 0; e < max_deg; ++e) {
        for (std::uint64_t l = 0; l < lanes; ++l) {
          if (!mask[w0 + l] || e >= g.degree(w0 + l)) continue;
          const std::uint64_t a = g.offsets[w0 + l] + e;
          const std::uint32_t nd = d[l] + weight[a];
          if (nd < dist[g.targets[a]])
            dist[g.targets[a]] = nd, imp[a] = true, next[g.targets[a]] = true, changed = true;
        }
      }
    }
    improved.push_back(std::move(imp));
    if (!changed) break;
    frontier.push_back(std::move(next));
  }
  const std::uint64_t rounds = improved.size();

  Workload wl(ctx);
  if (!rodinia) {
    unsigned scale = 0;
    while ((std::uint64_t{1} << scale) < v) ++scale;
    wl.metadata().params["scale"] = scale;
  }
  wl.metadata().params["vertices"] = v;
  wl.metadata().params["arcs"] = g.arcs();
  wl.metadata().params["source"] = source;
  const std::uint32_t offs = wl.alloc("d_row_offsets", (v + 1) * 4),
                      cols = wl.alloc("d_col_indices", std::max<std::uint64_t>(1, g.arcs()) * 4),
                      wts = wl.alloc("d_weights", std::max<std::uint64_t>(1, g.arcs()) * 4),
                      dst = wl.alloc("d_dist", v * 4), mask = wl.alloc("d_mask", v),
                      upd = wl.alloc("d_updated", v), changed = wl.alloc("d_changed", 4);
  const Dim3 grid = grid_1d(v, kBlock), block{kBlock, 1, 1};
  const auto vv = static_cast<std::int64_t>(v), arcs = static_cast<std::int64_t>(g.arcs());
  const std::int64_t tb = std::min<std::int64_t>(kBlock, vv);
  const std::uint32_t kr = wl.kernel("sssp_relax", grid, block);
  const Ref r_mask = wl.ref(kr, Access(mask, AccessKind::Read, vv, tb).size(1));
  const Ref r_d = wl.ref(kr, Access(dst, AccessKind::Read, vv, tb * 4).guarded());
  const Ref r_lo = wl.ref(kr, Access(offs, AccessKind::Read, vv, tb * 4).guarded());
  const Ref r_hi = wl.ref(kr, Access(offs, AccessKind::Read, vv, tb * 4).guarded());
  const Ref r_col = wl.ref(kr, Access(cols, AccessKind::Read, arcs, arcs * 4).guarded());
  const Ref r_w = wl.ref(kr, Access(wts, AccessKind::Read, arcs, arcs * 4).guarded());
  const Ref r_min = wl.ref(
      kr,
      Access(dst, AccessKind::Atomic, arcs, vv * 4, AccessPattern::Irregular).indirect().guarded());
  const Ref r_upd = wl.ref(kr, Access(upd, AccessKind::Write, arcs, vv, AccessPattern::Irregular)
                                   .size(1)
                                   .indirect()
                                   .guarded());
  wl.body(kr, [=, &g, &frontier, &improved](Block& b, std::int32_t it) {
    const auto& m = frontier[static_cast<std::size_t>(it)];
    const auto& imp = improved[static_cast<std::size_t>(it)];
    b.warps([&](Warp& w) {
      auto tid = [&](const Thread& t) { return b.gx(t) < v ? b.gx(t) : kOff; };
      auto act = [&](const Thread& t) { return tid(t) != kOff && m[tid(t)] ? tid(t) : kOff; };
      w.op(r_mask, kRelaxMask, tid);
      w.op(r_d, kRelaxVertex, act);
      w.op(r_lo, kNoWork, act);
      w.op(r_hi, kNoWork, [&](const Thread& t) { return act(t) == kOff ? kOff : act(t) + 1; });
      for_each_arc_step(w, g, act, [&](std::uint64_t, auto&& arc, auto&& head) {
        w.op(r_col, kRelaxArc, arc);
        w.op(r_w, kNoWork, arc);
        w.op(r_min, kRelaxMin, head);
        w.op(r_upd, kRelaxUpdated,
             [&](const Thread& t) { return arc(t) != kOff && imp[arc(t)] ? head(t) : kOff; });
      });
    });
  });
  const std::uint32_t ku = wl.kernel("sssp_update", grid, block);
  const Ref u_r = wl.ref(ku, Access(upd, AccessKind::Read, vv, tb).size(1));
  const Ref u_mask = wl.ref(ku, Access(mask, AccessKind::Write, vv, tb).size(1));
  const Ref u_clear = wl.ref(ku, Access(upd, AccessKind::Write, vv, tb).size(1).guarded());
  const Ref u_chg =
      wl.ref(ku, Access(changed, AccessKind::Write, vv, 4, AccessPattern::Shared).guarded());
  wl.body(ku, [=, &frontier, &improved](Block& b, std::int32_t it) {
    // Vertices updated in this round form the next frontier.
    const auto r = static_cast<std::size_t>(it);
    const std::vector<bool>* next = r + 1 < frontier.size() ? &frontier[r + 1] : nullptr;
    (void)improved;
    b.warps([&](Warp& w) {
      auto tid = [&](const Thread& t) { return b.gx(t) < v ? b.gx(t) : kOff; };
      auto set = [&](const Thread& t) {
        return tid(t) != kOff && next && (*next)[tid(t)] ? tid(t) : kOff;
      };
      w.op(u_r, kUpdateLoad, tid);
      w.op(u_mask, kUpdateMask, tid);  // mask[tid] = updated[tid]
      w.op(u_clear, kUpdateSet, set);
      w.op(u_chg, kNoWork, [&](const Thread& t) { return set(t) == kOff ? kOff : 0; });
    });
  });
  wl.cpu_write({offs, cols, wts, dst, mask, upd});
  for (std::uint64_t r = 0; r < rounds; ++r) {
    wl.cpu(changed, AccessKind::Write, 0, 4);
    wl.launch(kr, static_cast<std::int32_t>(r));
    wl.launch(ku, static_cast<std::int32_t>(r));
    wl.cpu(changed, AccessKind::Read, 0, 4);
  }
  wl.write();
}

void write_minivite(GenContext& ctx) {
  const std::uint64_t iters = ctx.params.integer("iters", 1, 1000);
  const auto ef = static_cast<unsigned>(ctx.params.integer("edge_factor", 1, 64));
  const unsigned scale = graph_scale(
      ctx, [&](std::uint64_t v) { return v * 8 * 5 + 2 * ef * v * 16 + v / kBlock * 8 + 8; });
  const Csr g = rmat_graph(scale, ef, ctx.seed);
  const std::uint64_t v = g.vertices;
  // Label propagation: comm[i] per iteration (0 .. iters), synchronous updates.
  std::vector<std::vector<std::uint32_t>> comm(1, std::vector<std::uint32_t>(v));
  for (std::uint64_t i = 0; i < v; ++i) comm[0][i] = static_cast<std::uint32_t>(i);
  std::vector<std::uint32_t> nb;
  for (std::uint64_t it = 0; it < iters; ++it) {
    const auto& cur = comm.back();
    std::vector<std::uint32_t> next(cur);
    for (std::uint64_t i = 0; i < v; ++i) {
      nb.clear();
      for (std::uint64_t a = g.offsets[i]; a < g.offsets[i + 1]; ++a)
        nb.push_back(cur[g.targets[a]]);
      if (nb.empty()) continue;
      std::sort(nb.begin(), nb.end());
      std::uint32_t best = nb[0];
      std::size_t best_n = 0;
      for (std::size_t s = 0; s < nb.size();) {
        std::size_t e = s;
        while (e < nb.size() && nb[e] == nb[s]) ++e;
        if (e - s > best_n) best_n = e - s, best = nb[s];
        s = e;
      }
      next[i] = best;
    }
    comm.push_back(std::move(next));
  }

  Workload wl(ctx);
  wl.metadata().params["scale"] = scale;
  wl.metadata().params["vertices"] = v;
  wl.metadata().params["arcs"] = g.arcs();
  const std::uint64_t blocks = ceil_div(v, kBlock);
  const std::uint32_t offs = wl.alloc("edge_indices", (v + 1) * 8),
                      edges = wl.alloc("edge_list", std::max<std::uint64_t>(1, g.arcs()) * 16),
                      vdeg = wl.alloc("vertex_degree", v * 8), curr = wl.alloc("curr_comm", v * 8),
                      target = wl.alloc("target_comm", v * 8),
                      cdeg = wl.alloc("comm_degree", v * 8),
                      part = wl.alloc("modularity_partial", blocks * 8);
  const Dim3 grid = grid_1d(v, kBlock), block{kBlock, 1, 1};
  const auto vv = static_cast<std::int64_t>(v), arcs = static_cast<std::int64_t>(g.arcs());
  const std::int64_t tb = std::min<std::int64_t>(kBlock, vv) * 8;
  using P = AccessPattern;
  // louvain_best_community: scan neighbours' communities and those communities' degrees.
  const std::uint32_t k1 = wl.kernel("louvain_best_community", grid, block);
  const Ref b_cur = wl.ref(k1, Access(curr, AccessKind::Read, vv, tb).size(8));
  const Ref b_lo = wl.ref(k1, Access(offs, AccessKind::Read, vv, tb).size(8));
  const Ref b_hi = wl.ref(k1, Access(offs, AccessKind::Read, vv, tb).size(8));
  const Ref b_tail =
      wl.ref(k1, Access(edges, AccessKind::Read, arcs, arcs * 16).size(8).field(16, 0).guarded());
  const Ref b_wt =
      wl.ref(k1, Access(edges, AccessKind::Read, arcs, arcs * 16).size(8).field(16, 8).guarded());
  const Ref b_nc = wl.ref(
      k1, Access(curr, AccessKind::Read, arcs, vv * 8, P::Irregular).size(8).indirect().guarded());
  const Ref b_cd = wl.ref(
      k1, Access(cdeg, AccessKind::Read, arcs, vv * 8, P::Irregular).size(8).indirect().guarded());
  const Ref b_t = wl.ref(k1, Access(target, AccessKind::Write, vv, tb).size(8));
  wl.body(k1, [=, &g, &comm](Block& b, std::int32_t it) {
    const auto& cur = comm[static_cast<std::size_t>(it)];
    b.warps([&](Warp& w) {
      auto tid = [&](const Thread& t) { return b.gx(t) < v ? b.gx(t) : kOff; };
      w.op(b_cur, kBestStart, tid);
      w.op(b_lo, kNoWork, tid);
      w.op(b_hi, kNoWork, [&](const Thread& t) { return tid(t) == kOff ? kOff : tid(t) + 1; });
      for_each_arc_step(w, g, tid, [&](std::uint64_t, auto&& arc, auto&& head) {
        w.op(b_tail, kBestArc, arc);
        w.op(b_wt, kNoWork, arc);
        w.op(b_nc, kBestComm, head);
        w.op(b_cd, kBestComm,
             [&](const Thread& t) { return head(t) == kOff ? kOff : std::uint64_t{cur[head(t)]}; });
        w.compute(kBestArcUpdate);
      });
      w.op(b_t, kBestStore, tid);
    });
  });
  // louvain_update: vertices that change community move their degree with atomics.
  const std::uint32_t k2 = wl.kernel("louvain_update", grid, block);
  const Ref u_cur = wl.ref(k2, Access(curr, AccessKind::Read, vv, tb).size(8));
  const Ref u_tgt = wl.ref(k2, Access(target, AccessKind::Read, vv, tb).size(8));
  const Ref u_deg = wl.ref(k2, Access(vdeg, AccessKind::Read, vv, tb).size(8).guarded());
  const Ref u_sub = wl.ref(
      k2, Access(cdeg, AccessKind::Atomic, vv, vv * 8, P::Irregular).size(8).indirect().guarded());
  const Ref u_add = wl.ref(
      k2, Access(cdeg, AccessKind::Atomic, vv, vv * 8, P::Irregular).size(8).indirect().guarded());
  const Ref u_w = wl.ref(k2, Access(curr, AccessKind::Write, vv, tb).size(8).guarded());
  wl.body(k2, [=, &comm](Block& b, std::int32_t it) {
    const auto& cur = comm[static_cast<std::size_t>(it)];
    const auto& nxt = comm[static_cast<std::size_t>(it) + 1];
    b.warps([&](Warp& w) {
      auto tid = [&](const Thread& t) { return b.gx(t) < v ? b.gx(t) : kOff; };
      auto moves = [&](const Thread& t) {
        return tid(t) != kOff && cur[tid(t)] != nxt[tid(t)] ? tid(t) : kOff;
      };
      w.op(u_cur, kMoveLoads, tid);
      w.op(u_tgt, kNoWork, tid);
      w.op(u_deg, kMoveDegree, moves);
      w.op(u_sub, kMoveAtomics,
           [&](const Thread& t) { return moves(t) == kOff ? kOff : std::uint64_t{cur[tid(t)]}; });
      w.op(u_add, kNoWork,
           [&](const Thread& t) { return moves(t) == kOff ? kOff : std::uint64_t{nxt[tid(t)]}; });
      w.op(u_w, kNoWork, moves);
    });
  });
  // louvain_modularity: per community its degree squared, reduced per block.
  const std::uint32_t k3 = wl.kernel("louvain_modularity", grid, block, kBlock * 8);
  const Ref m_r = wl.ref(k3, Access(cdeg, AccessKind::Read, vv, tb).size(8));
  const Ref m_w =
      wl.ref(k3, Access(part, AccessKind::Write, static_cast<std::int64_t>(blocks), 8).size(8));
  wl.body(k3, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      w.op(m_r, kModLoad, [&](const Thread& t) { return b.gx(t) < v ? b.gx(t) : kOff; });
      w.op(m_w, kModReduce, [&](const Thread& t) { return t.x == 0 ? std::uint64_t{b.x} : kOff; });
    });
  });
  wl.cpu_write({offs, edges, vdeg, curr, cdeg});
  for (std::uint64_t it = 0; it < iters; ++it) {
    for (std::uint32_t k : {k1, k2, k3}) wl.launch(k, static_cast<std::int32_t>(it));
    wl.cpu_read(part);
  }
  wl.write();
}

const Registrar kSssp{Generator{
    "sssp",
    "frontier Bellman-Ford shortest paths on a weighted R-MAT (or Rodinia graphgen) graph, relax "
    "+ update kernels per round until no distance changes; the largest graph whose CSR arrays "
    "fit the footprint",
    {{"graph", "rmat",
      "rmat: Graph500 R-MAT (weights 1-64); rodinia: Rodinia graphgen's uniform degrees (weights "
      "1-10), source 0"},
     {"edge_factor", "8", "R-MAT only: edges per vertex (each stored as two arcs)"}},
    write_sssp,
    "irregular",
    std::uint64_t{32} << 20,
    "Pannotia / LonestarGPU sssp",
}};

const Registrar kMinivite{Generator{
    "minivite",
    "one Louvain phase on an R-MAT graph: best-community, move and modularity kernels per "
    "iteration; scale = largest with the graph and community arrays <= footprint",
    {{"iters", "3", "Louvain iterations (host loop)"},
     {"edge_factor", "8", "edges per vertex (each stored as two arcs)"}},
    write_minivite,
    "irregular",
    std::uint64_t{32} << 20,
    "miniVite (ECP proxy app)",
}};

}  // namespace
}  // namespace uvmsim::gen
