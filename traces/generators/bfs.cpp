// `bfs`: Rodinia's breadth-first search (SUV's and ObservUVM's BFS, Li & Chapman's bfs) on a
// seeded graph in CSR form: by default one shaped like Rodinia's own inputs (graphgen's uniform
// degrees, source vertex 0), or an R-MAT graph. The host loops over BFS levels, launching two
// interleaved kernels per level until no vertex is updated: Kernel expands the frontier (mask)
// through the edge list, reading visited/cost of data-dependent neighbours; Kernel2 turns the
// updated vertices into the next frontier. The edge list and the per-vertex arrays are accessed in
// an irregular, input-dependent order.
#include "core/error.h"
#include "traces/generators/emulation.h"
#include "traces/generators/graph.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 512;  // MAX_THREADS_PER_BLOCK

// ---- per-thread work (compute_cost.h) ----
// Kernel: tid, if (tid < no_of_nodes && g_graph_mask[tid]); &g_graph_nodes[tid] (starting and
// no_of_edges, one 8-byte load; the mask is cleared at the same address). Per arc: the loop step
// and &g_graph_edges[i]; &g_graph_visited[id]; if (!visited) &g_cost[tid]; cost + 1 and the
// addresses of g_cost[id] and g_updating_graph_mask[id].
constexpr Work k1Mask = kGlobalIndex + kGuard + kAddress;
constexpr Work k1Node = kGuard + kAddress;
constexpr Work k1Edge = kLoop + int_ops(1) + kAddress;
constexpr Work k1Visited = kAddress;
constexpr Work k1CostMe = kGuard + kAddress;
constexpr Work k1Update = int_ops(1) + 2 * kAddress;
// Kernel2: tid, if (tid < no_of_nodes && g_updating_graph_mask[tid]); the mask and visited
// addresses for the four stores.
constexpr Work k2Load = kGlobalIndex + kGuard + kAddress;
constexpr Work k2Stores = kGuard + 2 * kAddress;

void write_bfs(GenContext& ctx) {
  const bool rodinia = ctx.params.choice("graph", {"rodinia", "rmat"}) == "rodinia";
  const auto ef = static_cast<unsigned>(ctx.params.integer("edge_factor", 1, 64));
  // Node{starting, no_of_edges} + mask + updating + visited + cost per vertex, 4 bytes per arc.
  const auto bytes = [](std::uint64_t v, std::uint64_t arcs) {
    return v * (8 + 3 + 4) + arcs * 4 + 1;
  };
  Csr g;
  std::uint64_t source = 0;
  if (rodinia) {
    const std::uint64_t n = rodinia_vertices(ctx.seed, ctx.footprint, bytes);
    if (n == 0) throw UserError("--footprint: too small for a Rodinia graph of 20 vertices");
    g = rodinia_graph(n, ctx.seed);  // Rodinia's bfs always starts from vertex 0
  } else {
    unsigned scale = 4;
    while (scale < 30 &&
           bytes(std::uint64_t{2} << scale, (std::uint64_t{2} << scale) * 2 * ef) <= ctx.footprint)
      ++scale;
    g = rmat_graph(scale, ef, ctx.seed);
    source = first_connected_vertex(g);
  }
  const std::uint64_t v = g.vertices;
  const std::vector<std::uint32_t> level = bfs_levels(g, source);
  std::uint32_t depth = 0;
  for (std::uint32_t l : level) {
    if (l != UINT32_MAX) depth = std::max(depth, l);
  }

  Workload wl(ctx);
  auto& params = wl.metadata().params;
  if (!rodinia) {
    unsigned scale = 0;
    while ((std::uint64_t{1} << scale) < v) ++scale;
    params["scale"] = scale;
  }
  params["vertices"] = v;
  params["arcs"] = g.arcs();
  params["source"] = source;
  const std::uint32_t nodes = wl.alloc("d_graph_nodes", v * 8),
                      edges = wl.alloc("d_graph_edges", std::max<std::uint64_t>(1, g.arcs()) * 4),
                      mask = wl.alloc("d_graph_mask", v),
                      updating = wl.alloc("d_updating_graph_mask", v),
                      visited = wl.alloc("d_graph_visited", v), cost = wl.alloc("d_cost", v * 4),
                      over = wl.alloc("d_over", 1);
  const Dim3 grid = grid_1d(v, kBlock), block{kBlock, 1, 1};
  const auto vv = static_cast<std::int64_t>(v), arcs = static_cast<std::int64_t>(g.arcs());
  const std::int64_t tb = std::min<std::int64_t>(kBlock, vv);
  using P = AccessPattern;
  // Static estimates as a compiler makes them (Li & Chapman §5.2): every guarded thread runs and
  // every arc is traversed once per launch.
  const std::uint32_t k1 = wl.kernel("Kernel", grid, block);
  const Ref k1_mask = wl.ref(k1, Access(mask, AccessKind::Read, vv, tb).size(1));
  const Ref k1_nodes = wl.ref(k1, Access(nodes, AccessKind::Read, vv, tb * 8).size(8).guarded());
  const Ref k1_unmask = wl.ref(k1, Access(mask, AccessKind::Write, vv, tb).size(1).guarded());
  auto arc_ref = [&](std::uint32_t alloc, AccessKind kind, std::uint32_t size, bool cond) {
    Access a(alloc, kind, arcs, static_cast<std::int64_t>(wl.size(alloc)), P::Irregular);
    a.size(size).indirect();
    if (cond) a.guarded();
    return wl.ref(k1, a);
  };
  const Ref k1_edge = arc_ref(edges, AccessKind::Read, 4, false);
  const Ref k1_visited = arc_ref(visited, AccessKind::Read, 1, false);
  const Ref k1_cost_me = wl.ref(k1, Access(cost, AccessKind::Read, arcs, tb * 4).guarded());
  const Ref k1_cost = arc_ref(cost, AccessKind::Write, 4, true);
  const Ref k1_upd = arc_ref(updating, AccessKind::Write, 1, true);
  wl.body(k1, [=, &g, &level](Block& blk, std::int32_t it) {
    const auto l = static_cast<std::uint32_t>(it);
    blk.warps([&](Warp& w) {
      auto tid = [&](const Thread& t) { return blk.gx(t) < v ? blk.gx(t) : kOff; };
      auto me = [&](const Thread& t) {  // if (g_graph_mask[tid])
        return tid(t) != kOff && level[tid(t)] == l ? tid(t) : kOff;
      };
      w.op(k1_mask, k1Mask, tid);
      w.op(k1_nodes, k1Node, me);
      w.op(k1_unmask, kNoWork, me);
      for_each_arc_step(w, g, me, [&](std::uint64_t, auto&& arc, auto&& head) {
        auto fresh = [&](const Thread& t) {  // !g_graph_visited[id]
          return head(t) != kOff && level[head(t)] > l ? head(t) : kOff;
        };
        w.op(k1_edge, k1Edge, arc);
        w.op(k1_visited, k1Visited, head);
        w.op(k1_cost_me, k1CostMe,
             [&](const Thread& t) { return fresh(t) == kOff ? kOff : me(t); });
        w.op(k1_cost, k1Update, fresh);
        w.op(k1_upd, kNoWork, fresh);
      });
    });
  });

  const std::uint32_t k2 = wl.kernel("Kernel2", grid, block);
  const Ref k2_upd = wl.ref(k2, Access(updating, AccessKind::Read, vv, tb).size(1));
  const Ref k2_mask = wl.ref(k2, Access(mask, AccessKind::Write, vv, tb).size(1).guarded());
  const Ref k2_visited = wl.ref(k2, Access(visited, AccessKind::Write, vv, tb).size(1).guarded());
  const Ref k2_over =
      wl.ref(k2, Access(over, AccessKind::Write, vv, 1, P::Shared).size(1).guarded());
  const Ref k2_clear = wl.ref(k2, Access(updating, AccessKind::Write, vv, tb).size(1).guarded());
  wl.body(k2, [=, &level](Block& blk, std::int32_t it) {
    const auto l = static_cast<std::uint32_t>(it);
    blk.warps([&](Warp& w) {
      auto tid = [&](const Thread& t) { return blk.gx(t) < v ? blk.gx(t) : kOff; };
      auto updated = [&](const Thread& t) {  // set by Kernel in this level
        return tid(t) != kOff && level[tid(t)] == l + 1 ? tid(t) : kOff;
      };
      w.op(k2_upd, k2Load, tid);
      w.op(k2_mask, k2Stores, updated);
      w.op(k2_visited, kNoWork, updated);
      w.op(k2_over, kNoWork, [&](const Thread& t) { return updated(t) == kOff ? kOff : 0; });
      w.op(k2_clear, kNoWork, updated);
    });
  });

  wl.cpu_write({nodes, edges, mask, updating, visited, cost});
  for (std::uint32_t l = 0; l <= depth; ++l) {  // do { ... } while (stop)
    wl.cpu(over, AccessKind::Write, 0, 1);      // stop = false; copied to d_over
    wl.launch(k1, static_cast<std::int32_t>(l));
    wl.launch(k2, static_cast<std::int32_t>(l));
    wl.cpu(over, AccessKind::Read, 0, 1);  // stop = *d_over
  }
  wl.write();
}

const Registrar kBfs{Generator{
    "bfs",
    "level-synchronous BFS over a Rodinia graphgen graph (2-4 random neighbours picked per "
    "vertex, source 0; vertices = largest with the CSR arrays <= footprint) or an R-MAT graph "
    "(2^scale vertices, edge_factor*2^scale undirected edges); --seed picks the graph",
    {{"graph", "rodinia",
      "rodinia: uniform degrees like Rodinia's inputs (graphgen); rmat: Graph500 R-MAT, with hubs"},
     {"edge_factor", "8", "R-MAT only: edges per vertex (each stored as two arcs)"}},
    write_bfs,
    "irregular",
    std::uint64_t{32} << 20,
    "Rodinia bfs",
}};

}  // namespace
}  // namespace uvmsim::gen
