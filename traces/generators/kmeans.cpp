// Rodinia's distance kernels:
//  - `kmeans`: k-means clustering (Li & Chapman's kmeans). invert_mapping transposes the
//    point-major features to feature-major once; then per iteration kmeansPoint assigns every
//    point to its nearest of `clusters` centres (reading all its features once per centre), and
//    the host reads the memberships and writes the new centres. The centres, in constant memory
//    in the original, are a small managed array here.
//  - `nn`: nearest neighbour, one launch per query computing the distance of every record
//    (lat, lng) to the query point; the host reads the distances to pick the nearest.
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 256;

// ---- per-thread work (compute_cost.h) ----
// invert_mapping: tid, if (tid < npoints); per feature the loop step and the strength-reduced
// address of input[tid * nfeatures + i] (the first also tid * nfeatures), and the address of
// output[tid + npoints * i] once the value is loaded.
constexpr Work kInvertFirst = kGlobalIndex + kGuard + kLoop + kIndex2D + kAddress;
constexpr Work kInvertNext = kLoop + kAddress;
constexpr Work kInvertStore = kAddress;
// kmeansPoint: point_id over a 2-D grid, if (point_id < npoints); per centre and feature the
// loop step and the addresses of the feature and the centre coordinate, and diff = f - c,
// ans += diff * diff (FADD, FFMA) once they are loaded; per centre the compare with the minimum
// and its select. membership[point_id] = index.
constexpr Work kPointFirst = kGlobalIndex2D + kGuard + 2 * kLoop + 2 * kAddress;
constexpr Work kPointNext = fp32(2) + kLoop + 2 * kAddress;
constexpr Work kPointNextCentre = kPointNext + cmp(2) + kLoop;
constexpr Work kPointStore = fp32(2) + cmp(2) + kAddress;
// euclid: globalId over a 2-D grid, if (globalId < numRecords), &d_locations[globalId]; the
// distance sqrt((lat - x.lat)^2 + (lng - x.lng)^2) (two FADD, FMUL, FFMA, sqrtf) and its address.
constexpr Work kEuclidLoad = kGlobalIndex2D + kGuard + kAddress;
constexpr Work kEuclidStore = fp32(4) + kSqrt + kAddress;

void write_kmeans(GenContext& ctx) {
  const std::uint64_t iters = ctx.params.integer("iters", 1, 100000);
  const std::uint64_t nf = ctx.params.integer("features", 1, 1024);
  const std::uint64_t nc = ctx.params.integer("clusters", 1, 1024);
  const std::uint64_t np =
      std::max<std::uint64_t>(1, (ctx.footprint - nc * nf * 4) / (2 * nf * 4 + 4));
  Workload wl(ctx);
  wl.metadata().params["points"] = np;
  const std::uint32_t feat = wl.alloc("feature_d", np * nf * 4),
                      flip = wl.alloc("feature_flipped_d", np * nf * 4),
                      member = wl.alloc("membership_d", np * 4),
                      clusters = wl.alloc("clusters_d", nc * nf * 4);
  const Dim3 grid = grid_1d(np, kBlock), block{kBlock, 1, 1};
  const auto p = static_cast<std::int64_t>(np), f = static_cast<std::int64_t>(nf),
             c = static_cast<std::int64_t>(nc);
  const std::int64_t tb = std::min<std::int64_t>(kBlock, p);
  auto point = [np](const Block& b, const Thread& t) { return b.gx(t) < np ? b.gx(t) : kOff; };
  // invert_mapping: output[point + npoints*i] = input[point*nfeatures + i]
  const std::uint32_t ki = wl.kernel("invert_mapping", grid, block);
  const Ref i_r = wl.ref(ki, {feat, AccessKind::Read, p * f, tb * f * 4});
  const Ref i_w =
      wl.ref(ki, {flip, AccessKind::Write, p * f, ((f - 1) * p + tb) * 4, AccessPattern::Strided});
  wl.body(ki, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      for (std::uint64_t i = 0; i < nf; ++i) {
        w.op(i_r, i == 0 ? kInvertFirst : kInvertNext,
             [&](const Thread& t) { return point(b, t) == kOff ? kOff : point(b, t) * nf + i; });
        w.op(i_w, kInvertStore,
             [&](const Thread& t) { return point(b, t) == kOff ? kOff : point(b, t) + np * i; });
      }
    });
  });
  // kmeansPoint: for each centre, dist += (features[l*npoints + point] - clusters[i*nf + l])^2
  const std::uint32_t kp = wl.kernel("kmeansPoint", grid, block);
  const Ref p_f = wl.ref(kp, {flip, AccessKind::Read, p * f * c, ((f - 1) * p + tb) * 4});
  const Ref p_c =
      wl.ref(kp, {clusters, AccessKind::Read, p * f * c, c * f * 4, AccessPattern::Shared});
  const Ref p_m = wl.ref(kp, {member, AccessKind::Write, p, tb * 4});
  wl.body(kp, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      for (std::uint64_t i = 0; i < nc; ++i) {
        for (std::uint64_t l = 0; l < nf; ++l) {
          const Work work = i + l == 0 ? kPointFirst : l == 0 ? kPointNextCentre : kPointNext;
          w.op(p_f, work,
               [&](const Thread& t) { return point(b, t) == kOff ? kOff : l * np + point(b, t); });
          w.op(p_c, kNoWork,
               [&](const Thread& t) { return point(b, t) == kOff ? kOff : i * nf + l; });
        }
      }
      w.op(p_m, kPointStore, [&](const Thread& t) { return point(b, t); });
    });
  });
  wl.cpu_write(feat);
  wl.cpu_write(clusters);
  wl.launch(ki);
  for (std::uint64_t it = 0; it < iters; ++it) {
    wl.launch(kp, static_cast<std::int32_t>(it));
    wl.cpu_read(member);     // new centres are computed on the host
    wl.cpu_write(clusters);  // and copied back
  }
  // cluster() ends with deallocateMemory(), which frees the device buffers, before main
  // prints the centres from host memory.
  for (const std::uint32_t a : {feat, flip, member, clusters}) wl.free(a);
  wl.write();
}

void write_nn(GenContext& ctx) {
  const std::uint64_t queries = ctx.params.integer("queries", 1, 100000);
  const std::uint64_t n = std::max<std::uint64_t>(1, ctx.footprint / 12);  // LatLong + distance
  Workload wl(ctx);
  wl.metadata().params["records"] = n;
  const std::uint32_t loc = wl.alloc("d_locations", n * 8), dist = wl.alloc("d_distances", n * 4);
  // Rodinia splits the blocks over gridDim.y once they exceed 65535.
  const std::uint64_t blocks = ceil_div(n, kBlock);
  const Dim3 grid{static_cast<std::uint32_t>(std::min<std::uint64_t>(blocks, 65535)),
                  static_cast<std::uint32_t>(ceil_div(blocks, 65535)), 1};
  const std::uint32_t k = wl.kernel("euclid", grid, {kBlock, 1, 1});
  const auto nn = static_cast<std::int64_t>(n);
  const std::int64_t tb = std::min<std::int64_t>(kBlock, nn);
  const Ref r = wl.ref(k, Access(loc, AccessKind::Read, nn, tb * 8).size(8));
  const Ref w = wl.ref(k, {dist, AccessKind::Write, nn, tb * 4});
  wl.body(k, [=](Block& b, std::int32_t) {
    // globalId = blockDim.x * (gridDim.x * blockIdx.y + blockIdx.x) + threadIdx.x
    const std::uint64_t first = std::uint64_t{kBlock} * (std::uint64_t{b.grid.x} * b.y + b.x);
    b.warps([&](Warp& wp) {
      auto id = [&](const Thread& t) { return first + t.x < n ? first + t.x : kOff; };
      wp.op(r, kEuclidLoad, id);
      wp.op(w, kEuclidStore, id);
    });
  });
  wl.cpu_write(loc);
  for (std::uint64_t q = 0; q < queries; ++q) {
    wl.launch(k, static_cast<std::int32_t>(q));
    wl.cpu_read(dist);
  }
  wl.write();
}

const Registrar kKmeans{Generator{
    "kmeans",
    "k-means: a transpose kernel, then per iteration one thread per point computing its distance "
    "to every centre; points = footprint / (8 * features + 4)",
    {{"iters", "4", "clustering iterations (host loop)"},
     {"features", "34", "features per point (Rodinia's kdd_cup input has 34)"},
     {"clusters", "5", "number of centres"}},
    write_kmeans,
    "cyclic",
    std::uint64_t{64} << 20,
    "Rodinia kmeans",
}};

const Registrar kNn{Generator{
    "nn",
    "nearest neighbour: per query one thread per record computing its distance to the query; "
    "records = footprint / 12 (8-byte LatLong + 4-byte distance)",
    {{"queries", "4", "query launches (host loop)"}},
    write_nn,
    "cyclic",
    std::uint64_t{256} << 20,
    "Rodinia nn",
}};

}  // namespace
}  // namespace uvmsim::gen
