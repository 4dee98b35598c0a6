// `hash-join`: the partitioned GPU hash join UVM-Discard evaluates (Sioulas et al., "Hardware-
// conscious Hash-Joins on GPUs", ICDE 2019; psiul/ICDE2019-GPU-Join with managed buffers). Both
// relations — a build relation R and a probe relation S (4 x |R| tuples), each a key column and a
// payload column — are radix-partitioned on the GPU in two passes (input -> temp -> final, 2^b1
// then 2^b2 partitions by the bits of the key's hash), then one kernel joins each final
// partition: it builds a hash table of the R partition in shared memory and probes it with the S
// partition, aggregating the matches. Only the inputs come from the host (a third of the
// footprint); the temp and final partitions are written by the GPU.
//
// As in the original, each partition pass is a grid-stride kernel of 64 blocks x 1024 threads
// reading 4 tuples per thread (one vec4 load per column) per 4096-tuple chunk, grouping the chunk
// by partition in shared memory and writing each partition's run contiguously after reserving its
// space with an atomic on the partition's head. The original allocates that space as chains of
// 4096-tuple buckets; here a partition is one contiguous run (the same pages, without the bucket
// slack). The host writes the relations and prefetches them to the GPU (cudaMemPrefetchAsync, as
// UVM-Discard's baseline does); `prefetch=off` leaves them to demand faults.
#include <algorithm>
#include <memory>
#include <random>

#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kPartBlock = 1024, kPartGrid = 64, kPerThread = 4;
constexpr std::uint32_t kChunk = kPartBlock * kPerThread;  // tuples per block iteration
constexpr std::uint32_t kJoinBlock = 512;
constexpr std::uint32_t kMaxBits1 = 8, kMaxBits2 = 5;  // log_parts1, log_parts2 of the original
constexpr std::uint32_t kTuplesPerPartition = 2048;    // R tuples a join block's table holds well

// ---- per-thread work (compute_cost.h) ----
// The hash of a key (multiply, xor-shifts) and its partition bits.
constexpr Work kHash = imad(2) + int_ops(3) + cmp(3) + int_ops(1);
// init_metadata: heads[i] = 0 for i < partitions.
constexpr Work kInitStore = kGlobalIndex + kGuard + kAddress;
// partition passes, per chunk: the grid-stride step and the vec4 addresses of both columns; then
// per tuple the hash and a shared-memory atomic count, a barrier, and (threads < partitions
// present) the reservation's address; then the tuples moved through shared memory (STS, barrier,
// LDS of keys and payloads), their ranks and the eight store addresses (issued back to back).
constexpr Work kPartLoads = kLoop + 2 * kAddress;
constexpr Work kPartFirstLoads = kGlobalIndex + kPartLoads;
constexpr Work kPartReserve = kPerThread * (kHash + shared(2)) + kBarrier + kGuard + kAddress;
constexpr Work kPartStores = shared(1) + shared(2 * kPerThread) + kBarrier +
                             shared(2 * kPerThread) + int_ops(2 * kPerThread) +
                             2 * kPerThread * kAddress;
// join_partitioned_aggregate, per partition: the loop step and the addresses of the R and S
// partition bounds; clearing the shared bucket heads (four STS) and a barrier, then per 2048-tuple
// step of R the addresses of both columns (four tuples per thread, back to back) and, once
// loaded, per tuple the hash, an atomicExch on the shared head and three STS; a barrier before
// the probe; per step of S the addresses, then per tuple the hash, the head (LDS) and about one
// and a half chain steps (LDS key, compare, LDS next; a payload multiply-add on a match).
constexpr Work kJoinBounds = kLoop + 2 * kAddress;
constexpr Work kJoinSteps = kLoop + 2 * kAddress;
constexpr Work kBuildTuples = kPerThread * (kHash + shared(2) + shared(3));
constexpr Work kProbeTuples = kPerThread * (kHash + shared(4) + cmp(2) + imad(1) + branch(2));
constexpr Work kBuildStart = shared(4) + kBarrier + kJoinSteps;

std::uint64_t hash_of(std::uint32_t key) {
  return (std::uint64_t{key} * 2654435761u >> 7) & 0xffffffffu;  // multiplicative hashing
}

/// One relation's two-pass partitioning, computed on the host: the final partition of every
/// tuple, the tuples in temp (pass one) order, and the partition sizes of both passes. Pass one
/// writes in the order the trace replays it — block by block, each block's chunks b, b + grid,
/// ... in turn, a chunk's tuples of one partition in input order — so `temp_src` is what the
/// trace's pass one wrote where.
struct Partitioning {
  std::vector<std::uint32_t> part;      // final partition (d1 * P2 + d2) of input tuple i
  std::vector<std::uint32_t> temp_src;  // input tuple at temp position t
  std::vector<std::uint64_t> start1;    // P1 + 1 first-pass partition starts
  std::vector<std::uint64_t> start;     // P + 1 final partition starts
};

Partitioning partition(const std::vector<std::uint32_t>& keys, std::uint32_t bits1,
                       std::uint32_t bits2, std::uint64_t grid) {
  const std::uint64_t n = keys.size(), p1 = std::uint64_t{1} << bits1,
                      p = std::uint64_t{1} << (bits1 + bits2);
  Partitioning r;
  r.part.resize(n);
  r.start1.assign(p1 + 1, 0);
  r.start.assign(p + 1, 0);
  for (std::uint64_t i = 0; i < n; ++i) {
    r.part[i] = static_cast<std::uint32_t>(hash_of(keys[i]) & (p - 1));
    ++r.start1[(r.part[i] >> bits2) + 1];
    ++r.start[r.part[i] + 1];
  }
  for (std::uint64_t d = 0; d < p1; ++d) r.start1[d + 1] += r.start1[d];
  for (std::uint64_t d = 0; d < p; ++d) r.start[d + 1] += r.start[d];
  r.temp_src.resize(n);
  std::vector<std::uint64_t> fill(r.start1.begin(), r.start1.end() - 1);
  const std::uint64_t chunks = n / kChunk;
  for (std::uint64_t b = 0; b < grid; ++b) {
    for (std::uint64_t c = b; c < chunks; c += grid) {
      for (std::uint64_t i = c * kChunk; i < (c + 1) * kChunk; ++i)
        r.temp_src[fill[r.part[i] >> bits2]++] = static_cast<std::uint32_t>(i);
    }
  }
  return r;
}

void write_hash_join(GenContext& ctx) {
  const std::uint64_t match_pct = ctx.params.integer("match", 0, 100);
  const bool prefetch = ctx.params.choice("prefetch", {"on", "off"}) == "on";
  // Input, temp and final copies of R and S (key and payload columns, 4 bytes each) and the
  // heads of both passes: |R| = the largest multiple of 4096 that fits, |S| = 4 |R|.
  const auto bytes = [](std::uint64_t nr) {
    const std::uint64_t p1 = 1u << kMaxBits1, p = 1u << (kMaxBits1 + kMaxBits2);
    return 3 * 2 * 4 * (nr + 4 * nr) + 2 * (p1 + p) * 8 + 4;
  };
  const std::uint64_t nr = fit(ctx.footprint, kChunk, bytes), ns = 4 * nr;
  // Partition bits: enough final partitions for ~2048 R tuples each, at most 2^8 x 2^5.
  std::uint32_t total_bits = 0;
  while (total_bits < kMaxBits1 + kMaxBits2 && (nr >> total_bits) > kTuplesPerPartition)
    ++total_bits;
  const std::uint32_t bits1 = std::min(total_bits, kMaxBits1), bits2 = total_bits - bits1;
  const std::uint64_t p1 = std::uint64_t{1} << bits1, parts = std::uint64_t{1} << total_bits;

  // R keys: distinct; S keys: an R key with probability match %, otherwise a key not in R.
  std::mt19937_64 rng(ctx.seed);
  const auto perm = random_permutation(2 * nr, ctx.seed + 1);
  std::vector<std::uint32_t> rkey(nr), skey(ns);
  for (std::uint64_t i = 0; i < nr; ++i) rkey[i] = static_cast<std::uint32_t>(perm[i]);
  for (auto& k : skey) {
    k = uniform_below(rng, 100) < match_pct
            ? rkey[uniform_below(rng, nr)]
            : static_cast<std::uint32_t>(perm[nr + uniform_below(rng, nr)]);
  }
  auto grid_of = [](std::uint64_t n) { return std::min<std::uint64_t>(kPartGrid, n / kChunk); };
  const Partitioning pr = partition(rkey, bits1, bits2, grid_of(nr)),
                     ps = partition(skey, bits1, bits2, grid_of(ns));
  std::uint64_t matches = 0;
  {
    std::vector<bool> in_r(2 * nr, false);
    for (std::uint32_t k : rkey) in_r[k] = true;
    for (std::uint32_t k : skey) matches += in_r[k];
  }

  Workload wl(ctx);
  auto& params = wl.metadata().params;
  params["build_tuples"] = nr;
  params["probe_tuples"] = ns;
  params["matches"] = matches;
  params["partitions"] = parts;
  params["partitions_pass1"] = p1;
  // The original's buffers: R/Pr and S/Ps (keys / payloads), their _temp and _final copies.
  struct Rel {
    std::string key, payload;
    std::uint64_t n;
    const Partitioning* part;
    std::uint32_t in[2], temp[2], fin[2], heads;  // [0] keys, [1] payloads
  };
  Rel rel[2] = {{"R", "Pr", nr, &pr, {}, {}, {}, 0}, {"S", "Ps", ns, &ps, {}, {}, {}, 0}};
  for (Rel& r : rel) r.in[0] = wl.alloc(r.key, r.n * 4), r.in[1] = wl.alloc(r.payload, r.n * 4);
  for (Rel& r : rel) {
    r.temp[0] = wl.alloc(r.key + "_temp", r.n * 4);
    r.temp[1] = wl.alloc(r.payload + "_temp", r.n * 4);
  }
  for (Rel& r : rel) {
    r.fin[0] = wl.alloc(r.key + "_final", r.n * 4);
    r.fin[1] = wl.alloc(r.payload + "_final", r.n * 4);
  }
  // heads[0 .. P1) reserve space in pass one, heads[P1 .. P1 + P) in pass two.
  for (Rel& r : rel) r.heads = wl.alloc("heads_" + r.key, (p1 + parts) * 8);
  const std::uint32_t aggr = wl.alloc("aggr_cnt", 4);
  using P = AccessPattern;

  // ---- the kernels ----
  std::vector<Ref> init_refs, pass_refs[2];
  std::uint32_t k_init[2], k_pass[2][2];
  for (int ri = 0; ri < 2; ++ri) {
    const Rel& r = rel[ri];
    const auto n = static_cast<std::int64_t>(r.n), heads = static_cast<std::int64_t>(p1 + parts);
    // init_metadata: the heads of both passes.
    k_init[ri] = wl.kernel("init_metadata", grid_1d(p1 + parts, kPartBlock), {kPartBlock, 1, 1});
    const Ref h_w = wl.ref(
        k_init[ri],
        Access(r.heads, AccessKind::Write, heads, std::min<std::int64_t>(kPartBlock, heads) * 8)
            .size(8),
        init_refs.empty() ? nullptr : &init_refs[0]);
    if (init_refs.empty()) init_refs = {h_w};
    wl.body(k_init[ri], [=](Block& b, std::int32_t) {
      b.warps([&](Warp& w) {
        w.op(h_w, kInitStore,
             [&](const Thread& t) { return b.gx(t) < p1 + parts ? b.gx(t) : kOff; });
      });
    });
    // partition_pass_one (pass 0: input -> temp) and partition_pass_two (pass 1: temp -> final).
    const std::uint64_t chunks = r.n / kChunk;
    const std::uint64_t grid = grid_of(r.n);
    // A block's vec4 loads span its chunks b, b + grid, ...: block 0's are the widest.
    const auto span = static_cast<std::int64_t>(((chunks - 1) / grid * grid + 1) * kChunk * 4);
    for (int pass = 0; pass < 2; ++pass) {
      const std::uint32_t k =
          wl.kernel(pass == 0 ? "partition_pass_one" : "partition_pass_two",
                    {static_cast<std::uint32_t>(grid), 1, 1}, {kPartBlock, 1, 1},
                    (kChunk * 2 + (pass == 0 ? p1 : 1u << kMaxBits2)) * 4);
      k_pass[ri][pass] = k;
      const std::uint32_t* src = pass == 0 ? r.in : r.temp;
      const std::uint32_t* dst = pass == 0 ? r.temp : r.fin;
      std::vector<Ref>& same = pass_refs[pass];
      auto ref = [&](std::size_t i, const Access& a) {
        const Ref x = wl.ref(k, a, same.size() > i ? &same[i] : nullptr);
        if (same.size() <= i) same.push_back(x);
        return x;
      };
      const Ref ld_k = ref(0, Access(src[0], AccessKind::Read, n / 4, span).size(16));
      const Ref ld_p = ref(1, Access(src[1], AccessKind::Read, n / 4, span).size(16));
      const Ref resv = ref(2, Access(r.heads, AccessKind::Atomic, n, heads * 8, P::Irregular)
                                  .size(8)
                                  .indirect()
                                  .guarded());
      const Ref st_k = ref(3, Access(dst[0], AccessKind::Write, n, n * 4, P::Irregular).indirect());
      const Ref st_p = ref(4, Access(dst[1], AccessKind::Write, n, n * 4, P::Irregular).indirect());
      // The partition of the tuple at each source position, and where each partition's next
      // tuple goes: blocks replay in id order, so a running fill per partition reproduces the
      // atomic reservations in that order.
      auto fill = std::make_shared<std::vector<std::uint64_t>>();
      const Partitioning* pt = r.part;
      wl.body(k, [=](Block& b, std::int32_t) {
        const std::uint64_t nparts = pass == 0 ? p1 : parts;
        if (b.id == 0) {
          const auto& starts = pass == 0 ? pt->start1 : pt->start;
          fill->assign(starts.begin(), starts.end() - 1);
        }
        auto part_at = [&](std::uint64_t pos) -> std::uint64_t {
          const std::uint32_t f = pt->part[pass == 0 ? pos : pt->temp_src[pos]];
          return pass == 0 ? f >> bits2 : f;
        };
        std::uint64_t dest[kChunk];  // the chunk grouped by partition: where its s-th tuple goes
        std::vector<std::uint64_t> order;  // the partitions present in the chunk, ascending
        std::vector<std::uint64_t> slot(nparts, 0);
        std::vector<std::uint32_t> count(nparts, 0);
        for (std::uint64_t c = b.x; c < chunks; c += grid) {
          const std::uint64_t first = c * kChunk;
          order.clear();
          for (std::uint32_t i = 0; i < kChunk; ++i) {
            const std::uint64_t d = part_at(first + i);
            if (count[d]++ == 0) order.push_back(d);
          }
          std::sort(order.begin(), order.end());
          std::uint64_t s = 0;
          for (std::uint64_t d : order) slot[d] = s, s += count[d];
          // Stable within a partition; the reservation in block order is the running fill.
          for (std::uint32_t i = 0; i < kChunk; ++i) {
            const std::uint64_t d = part_at(first + i);
            dest[slot[d]++] = (*fill)[d]++;
          }
          b.warps([&](Warp& w) {
            auto vec = [&](const Thread& t) { return c * kPartBlock + t.x; };
            w.op(ld_k, c == b.x ? kPartFirstLoads : kPartLoads, vec);
            w.op(ld_p, kNoWork, vec);
            // Thread t reserves the space of the chunk's t-th partition (in rounds of 1024).
            for (std::uint64_t r0 = 0; r0 < order.size(); r0 += kPartBlock) {
              w.op(resv, r0 == 0 ? kPartReserve : kLoop + kAddress, [&](const Thread& t) {
                return r0 + t.x < order.size() ? (pass == 0 ? 0 : p1) + order[r0 + t.x] : kOff;
              });
            }
            for (std::uint32_t k2 = 0; k2 < kPerThread; ++k2) {
              w.op(st_k, k2 == 0 ? kPartStores : kNoWork,
                   [&](const Thread& t) { return dest[k2 * kPartBlock + t.x]; });
            }
            for (std::uint32_t k2 = 0; k2 < kPerThread; ++k2) {
              w.op(st_p, kNoWork, [&](const Thread& t) { return dest[k2 * kPartBlock + t.x]; });
            }
          });
          for (std::uint64_t d : order) count[d] = 0;
        }
      });
    }
  }

  // join_partitioned_aggregate: block b joins partitions b, b + P1, ...
  const std::uint32_t kj =
      wl.kernel("join_partitioned_aggregate", {static_cast<std::uint32_t>(p1), 1, 1},
                {kJoinBlock, 1, 1}, (4096 + 512) * (2 + 4 + 2) + 2048 * 4);
  const auto heads_bytes = static_cast<std::int64_t>((p1 + parts) * 8);
  const auto per_block = static_cast<std::int64_t>(parts / p1);
  auto bound = [&](const Rel& r) {
    return wl.ref(
        kj, Access(r.heads, AccessKind::Read, per_block * p1 * kJoinBlock, heads_bytes, P::Strided)
                .size(8)
                .guarded());
  };
  const Ref j_rb = bound(rel[0]), j_sb = bound(rel[1]);
  auto column = [&](std::uint32_t alloc, std::uint64_t n) {
    return wl.ref(kj, Access(alloc, AccessKind::Read, static_cast<std::int64_t>(n),
                             static_cast<std::int64_t>(n * 4))
                          .guarded());
  };
  const Ref j_rk = column(rel[0].fin[0], nr), j_rp = column(rel[0].fin[1], nr);
  const Ref j_sk = column(rel[1].fin[0], ns), j_sp = column(rel[1].fin[1], ns);
  const Ref j_agg = wl.ref(kj, Access(aggr, AccessKind::Atomic,
                                      static_cast<std::int64_t>(p1) * kJoinBlock, 4, P::Shared));
  wl.body(kj, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      bool built = false;
      for (std::uint64_t part = b.x; part < parts; part += p1) {
        // The partition's bounds: a thread-uniform load of each relation's head.
        w.op(j_rb, built ? kProbeTuples + kJoinBounds : kJoinBounds,
             [&](const Thread&) { return p1 + part; });
        w.op(j_sb, kNoWork, [&](const Thread&) { return p1 + part; });
        built = true;
        for (int side = 0; side < 2; ++side) {  // build from R, then probe with S
          const Partitioning& pt = side == 0 ? pr : ps;
          const Ref& rk = side == 0 ? j_rk : j_sk;
          const Ref& rp = side == 0 ? j_rp : j_sp;
          const std::uint64_t lo = pt.start[part], hi = pt.start[part + 1];
          for (std::uint64_t base = lo; base < hi; base += kPerThread * kJoinBlock) {
            const Work first = side == 0 ? (base == lo ? kBuildStart : kBuildTuples + kJoinSteps)
                                         : (base == lo ? kBuildTuples + kBarrier + kJoinSteps
                                                       : kProbeTuples + kJoinSteps);
            for (std::uint32_t k2 = 0; k2 < kPerThread; ++k2) {
              auto e = [&](const Thread& t) {
                const std::uint64_t i = base + k2 * kJoinBlock + t.x;
                return i < hi ? i : kOff;
              };
              w.op(rk, k2 == 0 ? first : kNoWork, e);
              w.op(rp, kNoWork, e);
            }
          }
          if (side == 0 && lo == hi) w.compute(kBarrier);
        }
      }
      // atomicAdd(results, count)
      w.op(j_agg, kProbeTuples + kAddress, [&](const Thread&) { return 0; });
    });
  });

  for (const Rel& r : rel) wl.cpu_write({r.in[0], r.in[1]});
  if (prefetch) {
    for (const Rel& r : rel) {
      wl.prefetch(r.in[0], Processor::Gpu);
      wl.prefetch(r.in[1], Processor::Gpu);
    }
  }
  for (int ri = 0; ri < 2; ++ri) {
    wl.launch(k_init[ri]);
    wl.launch(k_pass[ri][0]);
    wl.launch(k_pass[ri][1]);
  }
  wl.launch(kj);
  wl.cpu_read(aggr);
  wl.write();
}

const Registrar kHashJoin{Generator{
    "hash-join",
    "R (|R| tuples) and S (4|R|) radix-partitioned in two GPU passes, then "
    "one block per partition group builds a shared-memory table of R's partition and probes it "
    "with S's; |R| = largest multiple of 4096 with 120 |R| bytes (+ heads) <= footprint",
    {{"match", "50", "percentage of probe tuples with a matching build key"},
     {"prefetch", "on",
      "on: the relations are prefetched to the GPU after the host writes them; off: demand "
      "paging only"}},
    write_hash_join,
    "irregular",
    std::uint64_t{64} << 20,
    "GPU partitioned hash join (ICDE 2019, UVM-Discard)",
}};

}  // namespace
}  // namespace uvmsim::gen
