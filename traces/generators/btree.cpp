// `btree`: Rodinia's b+tree findK (SUV's and ObservUVM's BTR): one threadblock of `order`
// threads per query descends a B+-tree stored as an array of nodes in level order. At every level
// all threads read two adjacent keys of the current node and the one whose key range holds the
// query follows its child index, so the node visited next depends on the data (pointer chasing);
// at the leaf the matching thread reads the record. The tree is bulk-loaded from the seed with
// nodes between half and completely full; each node is 4 KB, one page.
#include <random>

#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kOrder = 508;  // DEFAULT_ORDER
// struct knode { int location; int indices[order + 1]; int keys[order + 1]; bool is_leaf;
//                int num_keys; }
constexpr std::uint32_t kIndices = 4, kKeys = kIndices + (kOrder + 1) * 4;
constexpr std::uint32_t kNodeBytes = kKeys + (kOrder + 1) * 4 + 8;

// ---- per-thread work of findK (compute_cost.h) ----
// Each level: the loop step, thid and bid, &currKnodeD[bid]; then (dependent) the node's address
// currKnodeD[bid] * sizeof(knode) + thid and &keysD[bid], for the two key loads and the query key.
constexpr Work kLevelStart = kLoop + int_ops(2) + kAddress;
constexpr Work kNodeLoads = kIndex2D + int_ops(1) + 2 * kAddress;
// if (keys[thid] <= key && keys[thid+1] > key): two compares and the branch, then &offsetD[bid].
constexpr Work kMatch = cmp(2) + branch(1) + kAddress;
// knodesD[offsetD[bid]].indices[thid]: the node's address again.
constexpr Work kChild = kIndex2D + int_ops(1) + kAddress;
// if (indices[thid] < knodes_elem) offsetD[bid] = ...
constexpr Work kBoundsCheck = kGuard;
// __syncthreads(); if (thid == 0) currKnodeD[bid] = offsetD[bid];
constexpr Work kAdvance = kBarrier + kGuard;
// After the loop: __syncthreads(), &currKnodeD[bid]; the leaf's key and &keysD[bid]; if
// (keys[thid] == key) its record index, the record's address, and &ansD[bid].
constexpr Work kLeafStart = kBarrier + kAddress;
constexpr Work kLeafHit = kGuard + int_ops(1);
constexpr Work kRecord = kAddress;
constexpr Work kAnswer = kAddress;

struct Tree {
  std::uint64_t nodes = 0;
  unsigned height = 0;  // levels including the leaves
  // Per node: first key of each child (internal) or record keys (leaf), and child / record index.
  std::vector<std::vector<std::uint32_t>> keys, indices;
};

/// Bulk-loads keys 0..records-1 (record i holds key i) into a B+-tree in level order.
Tree build_tree(std::uint64_t records, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto fill = [&] {
    return static_cast<std::uint32_t>(kOrder / 2 + uniform_below(rng, kOrder / 2));
  };
  // Levels bottom-up: each level is a list of nodes, each a list of (first key, child index).
  std::vector<std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>>> levels(1);
  for (std::uint64_t r = 0; r < records;) {
    const std::uint64_t n = std::min<std::uint64_t>(fill(), records - r);
    auto& node = levels[0].emplace_back();
    for (std::uint64_t i = 0; i < n; ++i, ++r)
      node.emplace_back(static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(r));
  }
  while (levels.back().size() > 1) {
    const auto& below = levels.back();
    std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> up;
    for (std::uint64_t c = 0; c < below.size();) {
      const std::uint64_t n = std::min<std::uint64_t>(fill(), below.size() - c);
      auto& node = up.emplace_back();
      for (std::uint64_t i = 0; i < n; ++i, ++c)
        node.emplace_back(below[c].front().first, static_cast<std::uint32_t>(c));
    }
    levels.push_back(std::move(up));
  }
  // Level order from the root: renumber child indices to global node positions.
  Tree t;
  t.height = static_cast<unsigned>(levels.size());
  std::uint64_t pos = 0;
  std::vector<std::uint64_t> start(levels.size());
  for (std::size_t l = levels.size(); l-- > 0;) start[l] = pos, pos += levels[l].size();
  t.nodes = pos;
  t.keys.resize(pos);
  t.indices.resize(pos);
  for (std::size_t l = 0; l < levels.size(); ++l) {
    for (std::size_t i = 0; i < levels[l].size(); ++i) {
      auto& k = t.keys[start[l] + i];
      auto& x = t.indices[start[l] + i];
      for (const auto& [key, child] : levels[l][i]) {
        k.push_back(key);
        x.push_back(l == 0 ? child : static_cast<std::uint32_t>(start[l - 1] + child));
      }
    }
  }
  return t;
}

void write_btree(GenContext& ctx) {
  const std::uint64_t queries = ctx.params.integer("queries", 1, 0x7fffffff);
  // ~ one 4 KB node per 381 records (3/4 full on average) plus 4 bytes per record.
  const std::uint64_t records =
      std::max<std::uint64_t>(kOrder, ctx.footprint / (4 + kNodeBytes / 381 + 1));
  const Tree tree = build_tree(records, ctx.seed);
  Workload wl(ctx);
  wl.metadata().params["records"] = records;
  wl.metadata().params["nodes"] = tree.nodes;
  wl.metadata().params["height"] = tree.height;
  const std::uint32_t knodes = wl.alloc("knodesD", tree.nodes * kNodeBytes),
                      recs = wl.alloc("recordsD", records * 4),
                      curr = wl.alloc("currKnodeD", queries * 8),
                      offset = wl.alloc("offsetD", queries * 8),
                      keys = wl.alloc("keysD", queries * 4), ans = wl.alloc("ansD", queries * 4);
  const std::uint32_t k =
      wl.kernel("findK", {static_cast<std::uint32_t>(queries), 1, 1}, {kOrder, 1, 1});
  const auto q = static_cast<std::int64_t>(queries), h = static_cast<std::int64_t>(tree.height);
  const std::int64_t all = q * kOrder * h,
                     node = static_cast<std::int64_t>(tree.nodes) * kNodeBytes;
  using P = AccessPattern;
  auto per_query = [&](std::uint32_t alloc, AccessKind kind, std::int64_t count,
                       std::uint32_t size) {
    return wl.ref(k, Access(alloc, kind, count, size, P::Shared).size(size));
  };
  auto in_tree = [&](std::uint32_t alloc, AccessKind kind, std::int64_t count, std::uint32_t field,
                     bool cond) {
    Access a(alloc, kind, count, alloc == knodes ? node : static_cast<std::int64_t>(records * 4),
             P::Irregular);
    a.indirect().field(4,
                       field);  // element e: base + field + 4 e (node n's slot i: e = n*1021 + i)
    if (cond) a.guarded();
    return wl.ref(k, a);
  };
  // Per level: all threads test keys[thid] <= key < keys[thid+1] of node currKnode[bid]...
  const Ref l_curr = per_query(curr, AccessKind::Read, all, 8);
  const Ref l_key = per_query(keys, AccessKind::Read, all, 4);
  const Ref l_k0 = in_tree(knodes, AccessKind::Read, all, kKeys, false);
  const Ref l_k1 = in_tree(knodes, AccessKind::Read, all, kKeys + 4, false);
  // ... the one that matches follows indices[thid] of node offset[bid] ...
  const Ref l_off =
      wl.ref(k, Access(offset, AccessKind::Read, all, 8, P::Shared).size(8).guarded());
  const Ref l_idx = in_tree(knodes, AccessKind::Read, all, kIndices, true);
  const Ref l_offw =
      wl.ref(k, Access(offset, AccessKind::Write, all, 8, P::Shared).size(8).guarded());
  // ... and thread 0 makes it the current node.
  const Ref l_off0 = per_query(offset, AccessKind::Read, q * h, 8);
  const Ref l_currw = wl.ref(k, Access(curr, AccessKind::Write, q * h, 8, P::Shared).size(8));
  // Leaf: if (keys[thid] == key) ans[bid] = records[indices[thid]]
  const std::int64_t threads = q * kOrder;
  const Ref f_curr = per_query(curr, AccessKind::Read, threads, 8);
  const Ref f_key = per_query(keys, AccessKind::Read, threads, 4);
  const Ref f_k = in_tree(knodes, AccessKind::Read, threads, kKeys, false);
  const Ref f_idx = in_tree(knodes, AccessKind::Read, threads, kIndices, true);
  const Ref f_rec = in_tree(recs, AccessKind::Read, threads, 0, true);
  const Ref f_ans = wl.ref(k, Access(ans, AccessKind::Write, threads, 4, P::Shared).guarded());

  std::vector<std::uint32_t> query(queries);
  std::mt19937_64 rng(ctx.seed + 1);
  for (auto& x : query) x = static_cast<std::uint32_t>(uniform_below(rng, records));
  constexpr std::uint32_t kNoKey = 0xffffffffu;  // unused key slots
  wl.body(k, [=, &tree, &query](Block& b, std::int32_t) {
    const std::uint32_t key = query[b.x];
    // The path from the root: the node at each level and the slot the matching thread takes.
    std::uint64_t path[64], slot[64];
    std::uint64_t n = 0;
    for (unsigned l = 0; l < tree.height; ++l) {
      const auto& ks = tree.keys[n];
      const std::uint64_t s =
          static_cast<std::uint64_t>(std::upper_bound(ks.begin(), ks.end(), key) - ks.begin()) - 1;
      path[l] = n, slot[l] = s;
      if (l + 1 < tree.height) n = tree.indices[n][s];
    }
    auto key_at = [&](std::uint64_t nd, std::uint64_t i) {
      return i < tree.keys[nd].size() ? tree.keys[nd][i] : kNoKey;
    };
    b.warps([&](Warp& w) {
      auto all_t = [&](std::uint64_t e) { return [e](const Thread&) { return e; }; };
      for (unsigned l = 0; l + 1 < tree.height; ++l) {
        const std::uint64_t nd = path[l];
        w.op(l_curr, l == 0 ? kLevelStart : kBarrier + kLevelStart, all_t(b.x));
        w.op(l_k0, kNodeLoads, [&](const Thread& t) { return nd * (kNodeBytes / 4) + t.x; });
        w.op(l_key, kNoWork, all_t(b.x));
        w.op(l_k1, kNoWork, [&](const Thread& t) { return nd * (kNodeBytes / 4) + t.x; });
        auto match = [&](const Thread& t) { return t.x == slot[l]; };
        w.op(l_off, kMatch, [&](const Thread& t) { return match(t) ? b.x : kOff; });
        w.op(l_idx, kChild,
             [&](const Thread& t) { return match(t) ? nd * (kNodeBytes / 4) + t.x : kOff; });
        w.op(l_offw, kBoundsCheck, [&](const Thread& t) { return match(t) ? b.x : kOff; });
        w.op(l_off0, kAdvance, [&](const Thread& t) { return t.x == 0 ? b.x : kOff; });
        w.op(l_currw, kNoWork, [&](const Thread& t) { return t.x == 0 ? b.x : kOff; });
      }
      // The kernel loops maxheight times; in the last pass the node is the leaf: the matching
      // thread reads its record index, which fails the "is a node" test, so offset stays.
      const std::uint64_t leaf = path[tree.height - 1];
      w.op(l_curr, tree.height > 1 ? kBarrier + kLevelStart : kLevelStart, all_t(b.x));
      w.op(l_k0, kNodeLoads, [&](const Thread& t) { return leaf * (kNodeBytes / 4) + t.x; });
      w.op(l_key, kNoWork, all_t(b.x));
      w.op(l_k1, kNoWork, [&](const Thread& t) { return leaf * (kNodeBytes / 4) + t.x; });
      auto leaf_slot = [&](const Thread& t) { return t.x == slot[tree.height - 1]; };
      w.op(l_off, kMatch, [&](const Thread& t) { return leaf_slot(t) ? b.x : kOff; });
      w.op(l_idx, kChild,
           [&](const Thread& t) { return leaf_slot(t) ? leaf * (kNodeBytes / 4) + t.x : kOff; });
      w.op(l_off0, kBoundsCheck + kAdvance, [&](const Thread& t) { return t.x == 0 ? b.x : kOff; });
      w.op(l_currw, kNoWork, [&](const Thread& t) { return t.x == 0 ? b.x : kOff; });
      auto hit = [&](const Thread& t) { return key_at(leaf, t.x) == key; };
      w.op(f_curr, kLeafStart, all_t(b.x));
      w.op(f_k, kNodeLoads, [&](const Thread& t) { return leaf * (kNodeBytes / 4) + t.x; });
      w.op(f_key, kNoWork, all_t(b.x));
      w.op(f_idx, kLeafHit,
           [&](const Thread& t) { return hit(t) ? leaf * (kNodeBytes / 4) + t.x : kOff; });
      w.op(f_rec, kRecord,
           [&](const Thread& t) { return hit(t) ? std::uint64_t{tree.indices[leaf][t.x]} : kOff; });
      w.op(f_ans, kAnswer, [&](const Thread& t) { return hit(t) ? b.x : kOff; });
    });
  });
  wl.cpu_write({knodes, recs, curr, offset, keys});
  wl.launch(k);
  // kernel_gpu_cuda_wrapper ends by freeing its device buffers.
  for (const std::uint32_t a : {knodes, recs, curr, offset, keys, ans}) wl.free(a);
  wl.write();
}

const Registrar kBtree{Generator{
    "btree",
    "B+-tree point queries (findK), one block of 508 threads per query descending 4 KB nodes; "
    "records ~ footprint / 15, tree bulk-loaded from the seed",
    {{"queries", "16384", "number of queries (threadblocks)"}},
    write_btree,
    "irregular",
    std::uint64_t{64} << 20,
    "Rodinia b+tree",
}};

}  // namespace
}  // namespace uvmsim::gen
