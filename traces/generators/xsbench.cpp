// `xsbench`: XSBench's event-based macroscopic cross-section lookup (HeCBench xsbench; SUV's
// XSB), unionized energy grid. One thread per lookup draws an energy and a material, binary-
// searches the unionized energy grid (each probe depends on the previous one's loaded value),
// then for every nuclide of the material reads the index grid at the found point and the two
// bracketing points of that nuclide's grid. All grid accesses are data-dependent.
#include <algorithm>
#include <random>

#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 256;
constexpr std::uint64_t kIsotopes = 68;  // XSBench "small"
constexpr std::uint32_t kPoint = 48;     // NuclideGridPoint: energy + 5 cross sections (doubles)
// Nuclides per material and the material distribution of XSBench's small problem.
constexpr std::uint32_t kNucs[12] = {34, 5, 4, 4, 27, 21, 21, 21, 21, 21, 21, 9};
constexpr std::uint32_t kDist[12] = {140, 52, 275, 134, 154, 64,
                                     66,  55, 8,   15,  25,  13};  // per mille

// ---- per-thread work of xs_lookup_kernel_baseline (compute_cost.h); XSBench computes in double
// ----
// One step of the 64-bit LCG: a 64-bit multiply-add (four IMADs) and the carries.
constexpr Work kLcgStep = imad(4) + int_ops(2);
// fast_forward_LCG(seed, 2 * i): about 17 rounds of square-and-multiply (the bit test, two
// 64-bit multiply-adds, the loop step).
constexpr Work kFastForward = 17 * (kLoop + cmp(1) + 2 * kLcgStep);
// LCG_random_double: a step, the conversion to double and the scale.
constexpr Work kRandomDouble = kLcgStep + cvt64(1) + fp64(1);
// i, if (i < lookups), the fast-forward, the energy, pick_mat (a random double and a walk over
// the 12 cumulative probabilities, double compares), &num_nucs[mat].
constexpr Work kLookupStart =
    kGlobalIndex + kGuard + kFastForward + 2 * kRandomDouble + 12 * (fp64(1) + kLoop) + kAddress;
// grid_search: per step the loop test, mid = lower + (upper - lower) / 2 and its address; from
// the second step on, the previous probe's double compare and the two selects.
constexpr Work kSearchStep = kLoop + int_ops(2) + cmp(1) + kAddress;
constexpr Work kSearchNext = fp64(1) + cmp(2) + kSearchStep;
// Per nuclide: the loop step, mat * max_num_nucs + j and the addresses of mats[] and concs[];
// index_grid[idx * n_isotopes + p_nuc]; nuclide_grid[p_nuc * n_gridpoints + index] (low and high
// are adjacent). Then calculate_micro_xs: f = (high.energy - E) / (high.energy - low.energy)
// (two DADD and a double division: MUFU.RCP64H and Newton-Raphson DFMAs), five cross sections
// high.xs - f * (high.xs - low.xs) (DADD, DFMA each), and the five macro accumulations (DFMA).
constexpr Work kNuclide = kLoop + kIndex2D + 2 * kAddress;
constexpr Work kIndexGrid = kIndex2D + kAddress;
constexpr Work kNuclideGrid = kIndex2D + kAddress;
constexpr Work kMicroXs = fp64(2) + sfu(1) + fp64(8) + 5 * fp64(2) + fp64(5);
// After the search, before the first nuclide: the last compare. At the end: the maximum of the
// five cross sections (double compares and selects) and &verification[i].
constexpr Work kSearchDone = fp64(1) + cmp(2);
constexpr Work kVerify = fp64(5) + cmp(5) + kAddress;

double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

void write_xsbench(GenContext& ctx) {
  const std::uint64_t lookups = ctx.params.integer("lookups", 1, 0x7fffffff);
  const std::uint64_t per_point = kIsotopes * (8 + kIsotopes * 4 + kPoint);
  const std::uint64_t g = std::max<std::uint64_t>(2, ctx.footprint / per_point);  // n_gridpoints
  const std::uint64_t u = kIsotopes * g, max_nucs = kNucs[0];
  std::mt19937_64 rng(ctx.seed);
  // Nuclide energy grids (sorted) and the unionized grid of all of them.
  std::vector<double> egrid(u);
  for (std::uint64_t n = 0; n < kIsotopes; ++n) {
    for (std::uint64_t i = 0; i < g; ++i) egrid[n * g + i] = unit(rng);
    std::sort(egrid.begin() + static_cast<std::ptrdiff_t>(n * g),
              egrid.begin() + static_cast<std::ptrdiff_t>((n + 1) * g));
  }
  std::vector<double> unionized(egrid);
  std::sort(unionized.begin(), unionized.end());
  // Materials: the fuel holds nuclides 0..33, the others a seeded choice.
  std::vector<std::uint32_t> mats(12 * max_nucs, 0);
  for (std::uint32_t m = 0; m < 12; ++m) {
    const auto perm = random_permutation(kIsotopes, ctx.seed + m);
    for (std::uint32_t j = 0; j < kNucs[m]; ++j)
      mats[m * max_nucs + j] = m == 0 ? j : static_cast<std::uint32_t>(perm[j]);
  }
  // The lookups: energy and material of each.
  std::vector<double> energy(lookups);
  std::vector<std::uint8_t> mat(lookups);
  for (std::uint64_t i = 0; i < lookups; ++i) {
    energy[i] = unit(rng);
    std::uint64_t r = uniform_below(rng, 1000), m = 0;
    while (r >= kDist[m]) r -= kDist[m++];
    mat[i] = static_cast<std::uint8_t>(m);
  }

  Workload wl(ctx);
  wl.metadata().params["gridpoints"] = g;
  wl.metadata().params["isotopes"] = kIsotopes;
  const std::uint32_t num_nucs = wl.alloc("num_nucs", 12 * 4),
                      concs = wl.alloc("concs", 12 * max_nucs * 8),
                      mats_a = wl.alloc("mats", 12 * max_nucs * 4),
                      uni = wl.alloc("unionized_energy_array", u * 8),
                      index = wl.alloc("index_grid", u * kIsotopes * 4),
                      nuclide = wl.alloc("nuclide_grid", u * kPoint),
                      verify = wl.alloc("verification", lookups * 8);
  const std::uint32_t k =
      wl.kernel("xs_lookup_kernel_baseline", grid_1d(lookups, kBlock), {kBlock, 1, 1});
  const auto l = static_cast<std::int64_t>(lookups);
  std::uint64_t probes = 0;  // most binary search steps: the length halves, rounding up
  for (std::uint64_t len = u - 1; len > 1; len -= len / 2) ++probes;
  const auto p = static_cast<std::int64_t>(probes), nm = static_cast<std::int64_t>(max_nucs);
  auto irregular = [&](std::uint32_t alloc, std::int64_t count, std::uint32_t bytes, bool cond) {
    Access a(alloc, AccessKind::Read, count, static_cast<std::int64_t>(wl.size(alloc)),
             AccessPattern::Irregular);
    a.size(bytes).indirect();
    if (cond) a.guarded();
    return wl.ref(k, a);
  };
  // Static estimates: every lookup of the densest material (34 nuclides).
  const Ref r_nn = irregular(num_nucs, l, 4, false);
  const Ref r_uni = irregular(uni, l * p, 8, true);  // at most `probes` steps
  const Ref r_mat = irregular(mats_a, l * nm, 4, true);
  const Ref r_conc = irregular(concs, l * nm, 8, true);
  const Ref r_idx = irregular(index, l * nm, 4, true);
  const Ref r_low = irregular(nuclide, l * nm, kPoint, true);
  const Ref r_high = irregular(nuclide, l * nm, kPoint, true);
  const Ref w_ver = wl.ref(k, Access(verify, AccessKind::Write, l, kBlock * 8).size(8));
  wl.body(k, [=, &egrid, &unionized, &mats, &energy, &mat](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      std::uint64_t id[32], lo[32], hi[32], nucs[32] = {};
      std::uint32_t n = w.size(), max_n = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        id[i] = b.gx(w.lane(i));
        if (id[i] >= lookups) id[i] = kOff;
        lo[i] = 0, hi[i] = u - 1;
        if (id[i] != kOff)
          max_n = std::max(max_n, static_cast<std::uint32_t>(nucs[i] = kNucs[mat[id[i]]]));
      }
      auto live = [&](std::uint32_t i, std::uint64_t e) { return id[i] == kOff ? kOff : e; };
      w.op_lane(r_nn, kLookupStart,
                [&](std::uint32_t i) { return live(i, id[i] == kOff ? 0 : mat[id[i]]); });
      for (std::uint64_t s = 0; s < probes; ++s) {  // grid_search: while (upper - lower > 1)
        std::uint64_t probe[32];
        for (std::uint32_t i = 0; i < n; ++i) {
          probe[i] = id[i] == kOff || hi[i] - lo[i] <= 1 ? kOff : lo[i] + (hi[i] - lo[i]) / 2;
        }
        w.op_lane(r_uni, s == 0 ? kSearchStep : kSearchNext,
                  [&](std::uint32_t i) { return probe[i]; });
        for (std::uint32_t i = 0; i < n; ++i) {
          if (probe[i] == kOff) continue;
          (unionized[probe[i]] > energy[id[i]] ? hi[i] : lo[i]) = probe[i];
        }
      }
      for (std::uint32_t j = 0; j < max_n; ++j) {
        auto on = [&](std::uint32_t i) { return id[i] != kOff && j < nucs[i]; };
        auto nuc = [&](std::uint32_t i) { return mats[mat[id[i]] * max_nucs + j]; };
        // index_grid[idx][nuc] = the nuclide's grid point at or below the unionized energy
        auto point = [&](std::uint32_t i) {
          const double e = unionized[lo[i]];
          const auto first = egrid.begin() + static_cast<std::ptrdiff_t>(nuc(i) * g);
          const auto at =
              std::upper_bound(first, first + static_cast<std::ptrdiff_t>(g), e) - first;
          return std::min<std::uint64_t>(at == 0 ? 0 : static_cast<std::uint64_t>(at - 1), g - 2);
        };
        w.op_lane(r_mat, j == 0 ? kSearchDone + kNuclide : kNuclide,
                  [&](std::uint32_t i) { return on(i) ? mat[id[i]] * max_nucs + j : kOff; });
        w.op_lane(r_conc, kNoWork,
                  [&](std::uint32_t i) { return on(i) ? mat[id[i]] * max_nucs + j : kOff; });
        w.op_lane(r_idx, kIndexGrid,
                  [&](std::uint32_t i) { return on(i) ? lo[i] * kIsotopes + nuc(i) : kOff; });
        w.op_lane(r_low, kNuclideGrid,
                  [&](std::uint32_t i) { return on(i) ? nuc(i) * g + point(i) : kOff; });
        w.op_lane(r_high, kNoWork,
                  [&](std::uint32_t i) { return on(i) ? nuc(i) * g + point(i) + 1 : kOff; });
        w.compute(kMicroXs);
      }
      w.op_lane(w_ver, max_n == 0 ? kSearchDone + kVerify : kVerify,
                [&](std::uint32_t i) { return id[i]; });
    });
  });
  wl.cpu_write({num_nucs, concs, mats_a, uni, index, nuclide});
  wl.launch(k);
  wl.write();
}

const Registrar kXsbench{Generator{
    "xsbench",
    "macroscopic cross-section lookups: binary search of the unionized energy grid, then index "
    "and nuclide grid reads per nuclide (68 isotopes); gridpoints = footprint / 22304",
    {{"lookups", "65536", "number of lookups (threads)"}},
    write_xsbench,
    "irregular",
    std::uint64_t{256} << 20,
    "XSBench / HeCBench xsbench",
}};

}  // namespace
}  // namespace uvmsim::gen
