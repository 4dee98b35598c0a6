// `hash-join`: a GPU hash join of a build relation R and a probe relation S (4 x |R| tuples), as
// in the GPU join literature (e.g. Sioulas et al., ICDE 2019): the build kernel inserts every R
// tuple into an open-addressing table (linear probing with atomicCAS on the key), the probe kernel
// looks every S tuple up and appends matches to the result through an atomic counter. Table
// accesses are at hashed, data-dependent positions.
#include <random>

#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 256;
constexpr std::uint32_t kEmpty = 0xffffffffu;

std::uint64_t slot_of(std::uint32_t key, std::uint64_t slots) {
  return (std::uint64_t{key} * 2654435761u >> 7) & (slots - 1);  // multiplicative hashing
}

void write_hash_join(GenContext& ctx) {
  const std::uint64_t match_pct = ctx.params.integer("match", 0, 100);
  std::uint64_t nr = 256;  // |R|: the largest power of two with R, S, table and results fitting
  while ((nr * 2) * 88 + 4 <= ctx.footprint) nr *= 2;
  const std::uint64_t ns = 4 * nr, slots = 2 * nr;
  std::mt19937_64 rng(ctx.seed);
  // R keys: distinct; S keys: an R key with probability match %, otherwise a key not in R.
  const auto perm = random_permutation(2 * nr, ctx.seed + 1);
  std::vector<std::uint32_t> rkey(nr), skey(ns);
  for (std::uint64_t i = 0; i < nr; ++i) rkey[i] = static_cast<std::uint32_t>(perm[i]);
  for (auto& k : skey) {
    k = uniform_below(rng, 100) < match_pct
            ? rkey[uniform_below(rng, nr)]
            : static_cast<std::uint32_t>(perm[nr + uniform_below(rng, nr)]);
  }
  // Build on the host in the trace's order (thread i inserts R[i]; warps in order, lanes in order
  // within each probe step), recording each insert's probe sequence length.
  std::vector<std::uint32_t> table(slots, kEmpty);
  std::vector<std::uint32_t> build_probes(nr), probe_len(ns);
  std::uint64_t build_total = 0, probe_total = 0, matches = 0;
  for (std::uint64_t w0 = 0; w0 < nr; w0 += 32) {
    std::uint64_t h[32];
    bool done[32] = {};
    for (std::uint64_t l = 0; l < 32; ++l)
      h[l] = slot_of(rkey[w0 + l], slots), build_probes[w0 + l] = 0;
    for (bool any = true; any;) {
      any = false;
      for (std::uint64_t l = 0; l < 32; ++l) {
        if (done[l]) continue;
        ++build_probes[w0 + l];
        if (table[h[l]] == kEmpty) {
          table[h[l]] = rkey[w0 + l], done[l] = true;
        } else {
          h[l] = (h[l] + 1) & (slots - 1), any = true;
        }
      }
    }
  }
  for (auto p : build_probes) build_total += p;
  for (std::uint64_t i = 0; i < ns; ++i) {
    std::uint64_t h = slot_of(skey[i], slots);
    std::uint32_t p = 1;
    while (table[h] != kEmpty && table[h] != skey[i]) h = (h + 1) & (slots - 1), ++p;
    probe_len[i] = p;
    probe_total += p;
    matches += table[h] == skey[i];
  }

  Workload wl(ctx);
  auto& params = wl.metadata().params;
  params["build_tuples"] = nr;
  params["probe_tuples"] = ns;
  params["matches"] = matches;
  const std::uint32_t r = wl.alloc("R", nr * 8), s = wl.alloc("S", ns * 8),
                      ht = wl.alloc("hash_table", slots * 8), cnt = wl.alloc("result_count", 4),
                      res = wl.alloc("results", ns * 8);
  const auto r_n = static_cast<std::int64_t>(nr), s_n = static_cast<std::int64_t>(ns);
  const std::int64_t tb8 = kBlock * 8, whole = static_cast<std::int64_t>(slots * 8);
  using P = AccessPattern;
  // The probe loops' trip counts depend on the data; the hints give this input's totals.
  const std::uint32_t kb = wl.kernel("build_kernel", grid_1d(nr, kBlock), {kBlock, 1, 1});
  const Ref b_r = wl.ref(kb, Access(r, AccessKind::Read, r_n, tb8).size(8));
  const Ref b_cas = wl.ref(kb, Access(ht, AccessKind::Atomic,
                                      static_cast<std::int64_t>(build_total), whole, P::Irregular)
                                   .field(8, 0)
                                   .indirect()
                                   .guarded());
  const Ref b_pay =
      wl.ref(kb, Access(ht, AccessKind::Write, r_n, whole, P::Irregular).field(8, 4).indirect());
  wl.body(kb, [=, &rkey, &build_probes](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      std::uint64_t h[32];
      std::uint32_t left[32], max_p = 0;
      for (std::uint32_t l = 0; l < w.size(); ++l) {
        const std::uint64_t i = b.gx(w.lane(l));
        h[l] = slot_of(rkey[i], slots), left[l] = build_probes[i];
        max_p = std::max(max_p, left[l]);
      }
      w.op(b_r, kIndexGap, [&](const Thread& t) { return b.gx(t); });
      for (std::uint32_t p = 0; p < max_p; ++p) {
        w.op_lane(b_cas, 4 * kAluGap, [&](std::uint32_t l) { return p < left[l] ? h[l] : kOff; });
        for (std::uint32_t l = 0; l < w.size(); ++l) {
          if (p + 1 < left[l]) h[l] = (h[l] + 1) & (slots - 1);
        }
      }
      w.op_lane(b_pay, kAluGap, [&](std::uint32_t l) { return h[l]; });
    });
  });
  const std::uint32_t kp = wl.kernel("probe_kernel", grid_1d(ns, kBlock), {kBlock, 1, 1});
  const auto m = static_cast<std::int64_t>(matches);
  const Ref p_s = wl.ref(kp, Access(s, AccessKind::Read, s_n, tb8).size(8));
  const Ref p_key = wl.ref(
      kp, Access(ht, AccessKind::Read, static_cast<std::int64_t>(probe_total), whole, P::Irregular)
              .field(8, 0)
              .indirect()
              .guarded());
  const Ref p_pay = wl.ref(
      kp, Access(ht, AccessKind::Read, m, whole, P::Irregular).field(8, 4).indirect().guarded());
  const Ref p_cnt = wl.ref(kp, Access(cnt, AccessKind::Atomic, m, 4, P::Shared).guarded());
  const Ref p_out =
      wl.ref(kp, Access(res, AccessKind::Write, m, static_cast<std::int64_t>(ns * 8), P::Irregular)
                     .size(8)
                     .indirect()
                     .guarded());
  std::uint64_t next_result = 0;  // the atomic counter, advanced in trace order
  wl.body(kp, [=, &skey, &probe_len, &table, &next_result](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      std::uint64_t h[32], key[32];
      std::uint32_t len[32], max_p = 0;
      for (std::uint32_t l = 0; l < w.size(); ++l) {
        const std::uint64_t i = b.gx(w.lane(l));
        key[l] = skey[i], h[l] = slot_of(skey[i], slots), len[l] = probe_len[i];
        max_p = std::max(max_p, len[l]);
      }
      w.op(p_s, kIndexGap, [&](const Thread& t) { return b.gx(t); });
      for (std::uint32_t p = 0; p < max_p; ++p) {
        w.op_lane(p_key, 4 * kAluGap, [&](std::uint32_t l) { return p < len[l] ? h[l] : kOff; });
        for (std::uint32_t l = 0; l < w.size(); ++l) {
          if (p + 1 < len[l]) h[l] = (h[l] + 1) & (slots - 1);
        }
      }
      auto hit = [&](std::uint32_t l) { return table[h[l]] == key[l]; };
      w.op_lane(p_pay, kAluGap, [&](std::uint32_t l) { return hit(l) ? h[l] : kOff; });
      w.op_lane(p_cnt, 0, [&](std::uint32_t l) { return hit(l) ? 0 : kOff; });
      w.op_lane(p_out, kAluGap, [&](std::uint32_t l) { return hit(l) ? next_result++ : kOff; });
    });
  });
  wl.cpu_write(r);
  wl.cpu_write(s);
  wl.cpu_write(ht);  // the table is initialised to empty
  wl.cpu_write(cnt);
  wl.launch(kb);
  wl.launch(kp);
  wl.cpu_read(cnt);
  wl.write();
}

const Registrar kHashJoin{Generator{
    "hash-join",
    "hash join: build an open-addressing table from |R| tuples, probe it with 4|R| tuples; |R| = "
    "largest power of two with 88 |R| bytes <= footprint",
    {{"match", "50", "percentage of probe tuples with a matching build key"}},
    write_hash_join,
    "irregular",
    std::uint64_t{64} << 20,
    "GPU hash join (build + probe)",
}};

}  // namespace
}  // namespace uvmsim::gen
