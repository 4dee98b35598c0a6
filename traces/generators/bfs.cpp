// `bfs`: Rodinia's breadth-first search (SUV's and ObservUVM's BFS, Li & Chapman's bfs) on a
// seeded R-MAT graph in CSR form. The host loops over BFS levels, launching two interleaved
// kernels per level until no vertex is updated: Kernel expands the frontier (mask) through the
// edge list, reading visited/cost of data-dependent neighbours; Kernel2 turns the updated vertices
// into the next frontier. The edge list and the per-vertex arrays are accessed in an irregular,
// input-dependent order.
#include "traces/generators/emulation.h"
#include "traces/generators/graph.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 512;  // MAX_THREADS_PER_BLOCK

void write_bfs(GenContext& ctx) {
  const auto ef = static_cast<unsigned>(ctx.params.integer("edge_factor", 1, 64));
  // Node{starting, no_of_edges} + mask + updating + visited + cost per vertex, 2*ef arcs.
  const auto bytes = [&](std::uint64_t v) { return v * (8 + 3 + 4) + 2 * ef * v * 4 + 1; };
  unsigned scale = 4;
  while (scale < 30 && bytes(std::uint64_t{2} << scale) <= ctx.footprint) ++scale;
  const Csr g = rmat_graph(scale, ef, ctx.seed);
  const std::uint64_t v = g.vertices, source = first_connected_vertex(g);
  const std::vector<std::uint32_t> level = bfs_levels(g, source);
  std::uint32_t depth = 0;
  for (std::uint32_t l : level) {
    if (l != UINT32_MAX) depth = std::max(depth, l);
  }

  Workload wl(ctx);
  auto& params = wl.metadata().params;
  params["scale"] = scale;
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
      w.op(k1_mask, kIndexGap, tid);
      w.op(k1_nodes, kAluGap, me);
      w.op(k1_unmask, 0, me);
      for_each_arc_step(w, g, me, [&](std::uint64_t, auto&& arc, auto&& head) {
        auto fresh = [&](const Thread& t) {  // !g_graph_visited[id]
          return head(t) != kOff && level[head(t)] > l ? head(t) : kOff;
        };
        w.op(k1_edge, kAluGap, arc);
        w.op(k1_visited, kIndexGap, head);
        w.op(k1_cost_me, kIndexGap,
             [&](const Thread& t) { return fresh(t) == kOff ? kOff : me(t); });
        w.op(k1_cost, kAluGap, fresh);
        w.op(k1_upd, 0, fresh);
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
      w.op(k2_upd, kIndexGap, tid);
      w.op(k2_mask, kAluGap, updated);
      w.op(k2_visited, 0, updated);
      w.op(k2_over, 0, [&](const Thread& t) { return updated(t) == kOff ? kOff : 0; });
      w.op(k2_clear, 0, updated);
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
    "level-synchronous BFS over an R-MAT graph (2^scale vertices, edge_factor*2^scale undirected "
    "edges); scale = largest with the CSR arrays <= footprint; --seed picks the graph",
    {{"edge_factor", "8", "edges per vertex (each stored as two arcs)"}},
    write_bfs,
    "irregular",
    std::uint64_t{32} << 20,
    "Rodinia bfs",
}};

}  // namespace
}  // namespace uvmsim::gen
