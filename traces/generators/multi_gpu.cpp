// The classic multi-GPU patterns (issue 17): programs that split their work over `gpus` GPUs of
// one node with cudaSetDevice and share one process's managed memory (docs/multi-gpu.md).
//  - `mgpu-halo`: a data-parallel Jacobi sweep over a 2-D grid split into horizontal slabs, one
//    per GPU, each reading its neighbours' boundary rows (the halo) every iteration — NVIDIA's
//    multi-GPU programming models Jacobi solver in its unified-memory variant;
//  - `mgpu-pipeline`: a model-parallel pipeline (GPipe): one layer per GPU, microbatches flowing
//    through the stages, each stage reading the activations the previous GPU wrote;
//  - `mgpu-alltoall`: an all-to-all shuffle: every GPU packs a send buffer of one chunk per GPU,
//    then every GPU gathers its chunk from every GPU's send buffer.
// Launches on different GPUs are asynchronous (no Synchronize after each): they run concurrently
// until the Synchronize that ends their group. With gpus = 1 the traces have no SetDevice event.
#include <cmath>

#include "core/error.h"
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

const ParamSpec kGpusSpec{"gpus", "4",
                          "GPUs the program runs on (1..16); run the trace with --set "
                          "system.gpus=N, N >= gpus"};

std::uint64_t gpus_param(GenContext& ctx) { return ctx.params.integer("gpus", 1, kMaxGpus); }

/// cudaSetDevice(g) before a launch; a one-GPU program never calls it, so its trace has no
/// SetDevice and keeps the lowest format version.
void on_device(Workload& wl, std::uint64_t gpus, std::uint64_t g) {
  if (gpus > 1) wl.set_device(static_cast<unsigned>(g));
}

std::string footprint_error(std::uint64_t min, const std::string& name, std::uint64_t gpus) {
  return "--footprint: must be at least " + std::to_string(min) + " bytes for " + name +
         " with gpus=" + std::to_string(gpus);
}

// ---- mgpu-halo ---------------------------------------------------------------------------------

constexpr std::uint32_t kJacobiX = 32, kJacobiY = 4;  // dim_block_x, dim_block_y

// jacobi_kernel per thread: iy = blockIdx.y * blockDim.y + threadIdx.y + iy_start and ix =
// blockIdx.x * blockDim.x + threadIdx.x + 1 (the 2-D index and two adds), local_l2_norm = 0 (a
// MOV), if (iy < iy_end && ix < nx - 1), the row-major index iy * nx + ix and the addresses of
// rows iy, iy + 1 and iy - 1 (ix + 1 and ix - 1 are immediate offsets); the five loads (four
// neighbours and, for the residue, the centre; __restrict__ lets them issue together).
constexpr Work kJacobiLoads =
    kGlobalIndex2D + int_ops(3) + cmp(2) + branch(1) + kIndex2D + 3 * kAddress;
// new_val = 0.25 * (four terms): three FADD and the multiply (the double literal is exact in
// float, so the compiler narrows the multiply to an FMUL); the address of a_new[iy * nx + ix].
constexpr Work kJacobiStore = fp32(4) + kAddress;
// if (iy == 1) a_new[(ny - 1) * nx + ix] = new_val, if (iy == ny - 2) a_new[ix] = new_val: the
// periodic boundary rows. A compare, the branch and the row's address each.
constexpr Work kPeriodicStore = cmp(1) + branch(1) + kIndex2D + kAddress;

void write_mgpu_halo(GenContext& ctx) {
  const std::uint64_t gpus = gpus_param(ctx);
  const std::uint64_t iters = ctx.params.integer("iters", 1, 100000);
  const bool gpu0_init = ctx.params.choice("init", {"cpu", "gpu0"}) == "gpu0";
  const bool read_mostly = ctx.params.choice("advise", {"none", "read-mostly"}) == "read-mostly";
  // nx: whole 4 KB pages per row (a multiple of 1024 floats), so every row is its own pages and a
  // slab boundary is a page boundary; ny: a multiple of 4 * gpus, so each GPU gets chunk = ny /
  // gpus rows and chunk / 4 block rows. Roughly square: nx ~ sqrt(footprint / 8).
  const auto side = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(ctx.footprint) / 8));
  const std::uint64_t nx = std::max<std::uint64_t>(1024, side / 1024 * 1024);
  const std::uint64_t ny = ctx.footprint / (8 * nx) / (kJacobiY * gpus) * (kJacobiY * gpus);
  if (ny == 0) throw UserError(footprint_error(8 * 1024 * kJacobiY * gpus, "mgpu-halo", gpus));
  const std::uint64_t chunk = ny / gpus;

  Workload wl(ctx);
  wl.metadata().params["nx"] = nx;
  wl.metadata().params["ny"] = ny;
  wl.metadata().params["chunk"] = chunk;
  const std::uint32_t a = wl.alloc("a", nx * ny * 4), a_new = wl.alloc("a_new", nx * ny * 4);

  // One kernel entry per GPU and buffer order (jacobi_kernel(a_new, a, ...) and, after the
  // swap, jacobi_kernel(a, a_new, ...)), each with its own iy_start and iy_end; the static
  // instructions keep their ref ids across entries.
  const Dim3 grid{static_cast<std::uint32_t>(ceil_div(nx, kJacobiX)),
                  static_cast<std::uint32_t>(chunk / kJacobiY), 1};
  const auto inx = static_cast<std::int64_t>(nx);
  std::vector<std::uint32_t> kernels(2 * gpus);  // [g * 2 + parity]
  std::vector<Ref> first;                        // the refs of entry 0, for the others' `same`
  for (std::uint64_t g = 0; g < gpus; ++g) {
    // The rows GPU g updates: its chunk without the grid's first and last row.
    const std::uint64_t iy_start = std::max<std::uint64_t>(g * chunk, 1);
    const std::uint64_t iy_end = std::min((g + 1) * chunk, ny - 1);
    const auto rows = static_cast<std::int64_t>(iy_end - iy_start);
    std::uint64_t block_rows = 0;  // most rows one block updates
    for (std::uint64_t by = 0; by < grid.y; ++by) {
      const std::uint64_t lo = iy_start + by * kJacobiY;
      if (lo < iy_end)
        block_rows = std::max(block_rows, std::min<std::uint64_t>(kJacobiY, iy_end - lo));
    }
    const std::int64_t points = rows * (inx - 2);
    const Poly tile = ((static_cast<std::int64_t>(block_rows) - 1) * inx + kJacobiX) * 4;
    const bool has_first = iy_start <= 1 && 1 < iy_end,
               has_last = iy_start <= ny - 2 && ny - 2 < iy_end;
    for (std::uint32_t parity = 0; parity < 2; ++parity) {
      const std::uint32_t in = parity == 0 ? a : a_new, out = parity == 0 ? a_new : a;
      const std::uint32_t k = wl.kernel("jacobi_kernel", grid, {kJacobiX, kJacobiY, 1});
      kernels[g * 2 + parity] = k;
      auto ref = [&](std::size_t i, const Access& acc) {
        const Ref r = wl.ref(k, acc, first.size() > i ? &first[i] : nullptr);
        if (first.size() == i) first.push_back(r);
        return r;
      };
      const Ref east = ref(0, {in, AccessKind::Read, points, tile});
      const Ref west = ref(1, {in, AccessKind::Read, points, tile});
      const Ref south = ref(2, {in, AccessKind::Read, points, tile});
      const Ref north = ref(3, {in, AccessKind::Read, points, tile});
      const Ref centre = ref(4, {in, AccessKind::Read, points, tile});
      const Ref store = ref(5, {out, AccessKind::Write, points, tile});
      const Ref to_last =
          ref(6, {out, AccessKind::Write, has_first ? inx - 2 : 0, has_first ? kJacobiX * 4 : 0});
      const Ref to_first =
          ref(7, {out, AccessKind::Write, has_last ? inx - 2 : 0, has_last ? kJacobiX * 4 : 0});
      wl.body(k, [=](Block& b, std::int32_t) {
        b.warps([&](Warp& w) {
          // A warp of the 32 x 4 block is one row iy of 32 columns ix = blockIdx.x * 32 + lane +
          // 1. Element iy * nx + ix of each lane that updates a point (else off), once per warp.
          const std::uint64_t iy = iy_start + b.gy(w.lane(0));
          if (iy >= iy_end) return;  // past the GPU's last row: the whole warp skips
          std::uint64_t c[32];
          for (std::uint32_t l = 0; l < w.size(); ++l) {
            const std::uint64_t ix = b.gx(w.lane(l)) + 1;
            c[l] = ix < nx - 1 ? iy * nx + ix : kOff;
          }
          // a[(iy + dy) * nx + ix + dx]: unsigned wrap-around adds a negative offset.
          auto at = [&](std::int64_t dy, std::int64_t dx) {
            const auto d = static_cast<std::uint64_t>(dy * inx + dx);
            return [&c, d](std::uint32_t l) { return c[l] == kOff ? kOff : c[l] + d; };
          };
          w.op_lane(east, kJacobiLoads, at(0, 1));
          w.op_lane(west, kNoWork, at(0, -1));
          w.op_lane(south, kNoWork, at(1, 0));
          w.op_lane(north, kNoWork, at(-1, 0));
          w.op_lane(centre, kNoWork, at(0, 0));
          w.op_lane(store, kJacobiStore, at(0, 0));
          // The periodic rows: row 1's values to row ny - 1, row ny - 2's to row 0.
          if (iy == 1) {
            w.op_lane(to_last, kPeriodicStore, at(static_cast<std::int64_t>(ny) - 2, 0));
          } else {
            w.compute(cmp(1) + branch(1));  // the test that failed
          }
          if (iy == ny - 2)
            w.op_lane(to_first, kPeriodicStore, at(-static_cast<std::int64_t>(iy), 0));
        });
      });
    }
  }

  if (gpu0_init) {
    // cudaMemset(a, 0), cudaMemset(a_new, 0) and initialize_boundaries on GPU 0 (the program's
    // first device): every page starts in GPU 0's memory. The memsets are modelled as kernels
    // storing 16 bytes per thread; initialize_boundaries writes the left and right column of
    // both arrays, one row per thread (a grid-stride loop of ny / 128 + 1 blocks of 128).
    constexpr std::uint32_t kMemsetBlock = 256, kBoundaryBlock = 128;
    const std::uint64_t vecs = nx * ny / 4;
    const auto ivecs = static_cast<std::int64_t>(vecs);
    std::vector<std::uint32_t> memsets;
    for (const std::uint32_t arr : {a, a_new}) {
      const std::uint32_t k =
          wl.kernel("memset", grid_1d(vecs, kMemsetBlock), {kMemsetBlock, 1, 1});
      const Ref r = wl.ref(k, Access(arr, AccessKind::Write, ivecs, kMemsetBlock * 16).size(16));
      wl.body(k, [=](Block& b, std::int32_t) {
        b.warps([&](Warp& w) {
          w.op(r, kGlobalIndex + kGuard + kAddress,
               [&](const Thread& t) { return b.gx(t) < vecs ? b.gx(t) : kOff; });
        });
      });
      memsets.push_back(k);
    }
    const std::uint64_t bblocks = ny / kBoundaryBlock + 1;
    const std::uint32_t kb =
        wl.kernel("initialize_boundaries", {static_cast<std::uint32_t>(bblocks), 1, 1},
                  {kBoundaryBlock, 1, 1});
    const auto iny = static_cast<std::int64_t>(ny);
    const Poly column_tb = ((std::min<std::int64_t>(kBoundaryBlock, iny) - 1) * inx + 1) * 4;
    std::vector<Ref> br;
    for (const std::uint32_t arr : {a, a, a_new, a_new})
      br.push_back(wl.ref(kb, {arr, AccessKind::Write, iny, column_tb}));
    // y0 = sin(2.0 * pi * iy / (ny - 1)) in double: iy and ny - 1 to double and y0 back to float
    // (three 64-bit conversions), two DMUL, the division (MUFU.RCP64H and four DFMA) and sin()
    // (a range reduction and a polynomial, ~20 DFMA); then the four stores' addresses.
    const Work y0 = cvt64(3) + fp64(2) + sfu(1) + fp64(4) + fp64(20);
    const Work first_store = kGlobalIndex + kGuard + y0 + kIndex2D + kAddress;
    wl.body(kb, [=](Block& b, std::int32_t) {
      b.warps([&](Warp& w) {
        // iy = blockIdx.x * blockDim.x + threadIdx.x; iy < ny (one step: the grid covers ny)
        auto cell = [&](std::uint64_t x) {
          return [&, x](const Thread& t) { return b.gx(t) < ny ? b.gx(t) * nx + x : kOff; };
        };
        w.op(br[0], first_store, cell(0));
        w.op(br[1], kAddress, cell(nx - 1));
        w.op(br[2], kAddress, cell(0));
        w.op(br[3], kAddress, cell(nx - 1));
      });
    });
    on_device(wl, gpus, 0);
    wl.launch_async(memsets[0]);
    wl.launch_async(memsets[1]);
    wl.launch(kb);
  } else {
    wl.cpu_write({a, a_new});  // the host writes the initial grid and its boundary values
  }
  if (read_mostly) {
    for (const std::uint32_t arr : {a, a_new})
      wl.advise(arr, trace::Advice::SetReadMostly, Processor::Gpu);
  }
  for (std::uint64_t it = 0; it < iters; ++it) {
    for (std::uint64_t g = 0; g < gpus; ++g) {
      on_device(wl, gpus, g);
      wl.launch_async(kernels[g * 2 + it % 2], static_cast<std::int32_t>(it));
    }
    wl.synchronize();
  }
  wl.write();
}

// ---- mgpu-pipeline -----------------------------------------------------------------------------

constexpr std::uint32_t kTile = 32;  // matrixMul's block_size: 32 x 32 threads, 32 x 32 tiles

// layer_forward, the CUDA samples' matrixMul over a microbatch: per tile step the loop step, the
// advanced tile origins and the addresses of x[row][step * 32 + tx] and w[step * 32 + ty][col]
// (the first step also the 2-D index); the two loads go to shared memory (STS) between two
// barriers and the 32 x 32 tiles are multiplied: per k two LDS and an FFMA.
constexpr Work kStageLoads = kLoop + 2 * (int_ops(1) + kAddress);
constexpr Work kStageFirstLoads = kGlobalIndex2D + kStageLoads;
constexpr Work kStageMultiply = shared(2) + 2 * kBarrier + kTile * (shared(2) + fp32(1));
// After the last step: y = max(sum, 0) (the ReLU) and the address of y[row][col].
constexpr Work kStageStore = cmp(1) + kIndex2D + kAddress;

void write_mgpu_pipeline(GenContext& ctx) {
  const std::uint64_t stages = gpus_param(ctx);
  const std::uint64_t micro = ctx.params.integer("microbatches", 1, 4096);
  const std::uint64_t batch = ctx.params.integer("batch", 32, 65536);
  if (batch % kTile != 0)
    ctx.params.fail("batch", "expected a multiple of 32, got " + std::to_string(batch));
  // hidden: the largest multiple of 32 with the weights (stages x hidden^2 floats) and the
  // activations (stages + 1 buffers of microbatches x batch x hidden floats) in the footprint.
  auto bytes = [&](std::uint64_t h) {
    return stages * h * h * 4 + (stages + 1) * micro * batch * h * 4;
  };
  if (bytes(kTile) > ctx.footprint) {
    throw UserError(footprint_error(bytes(kTile), "mgpu-pipeline", stages) + ", microbatches=" +
                    std::to_string(micro) + " and batch=" + std::to_string(batch));
  }
  const std::uint64_t hidden = fit(ctx.footprint, kTile, bytes);
  const std::uint64_t slice = batch * hidden * 4;  // one microbatch's activations: whole pages

  Workload wl(ctx);
  wl.metadata().params["hidden"] = hidden;
  std::vector<std::uint32_t> weights, act;
  for (std::uint64_t s = 0; s < stages; ++s)
    weights.push_back(wl.alloc("weights" + std::to_string(s), hidden * hidden * 4));
  for (std::uint64_t s = 0; s <= stages; ++s)
    act.push_back(wl.alloc("act" + std::to_string(s), micro * slice));

  const auto h = static_cast<std::int64_t>(hidden), b = static_cast<std::int64_t>(batch);
  const std::int64_t loads = b * h * (h / kTile), isl = static_cast<std::int64_t>(slice);
  const std::uint64_t steps = hidden / kTile;
  std::vector<std::uint32_t> kernels;
  std::vector<Ref> first;
  for (std::uint64_t s = 0; s < stages; ++s) {
    const std::uint32_t k = wl.kernel(
        "layer_forward",
        {static_cast<std::uint32_t>(hidden / kTile), static_cast<std::uint32_t>(batch / kTile), 1},
        {kTile, kTile, 1}, 2 * kTile * kTile * 4);
    kernels.push_back(k);
    auto ref = [&](std::size_t i, const Access& acc) {
      const Ref r = wl.ref(k, acc, first.size() > i ? &first[i] : nullptr);
      if (first.size() == i) first.push_back(r);
      return r;
    };
    // Microbatch m (the launch's iteration) is rows [m * batch, (m + 1) * batch) of the
    // activation buffers.
    const Ref rx =
        ref(0, Access(act[s], AccessKind::Read, loads, kTile * h * 4, AccessPattern::Tiled)
                   .iterates(Poly(0, isl), isl));
    const Ref rw = ref(
        1, {weights[s], AccessKind::Read, loads, ((h - 1) * h + kTile) * 4, AccessPattern::Shared});
    const Ref ry =
        ref(2, Access(act[s + 1], AccessKind::Write, b * h, ((kTile - 1) * h + kTile) * 4)
                   .iterates(Poly(0, isl), isl));
    wl.body(k, [=](Block& blk, std::int32_t m) {
      const std::uint64_t row0 =
          static_cast<std::uint64_t>(m) * batch + std::uint64_t{blk.y} * kTile;
      const std::uint64_t col0 = std::uint64_t{blk.x} * kTile;
      blk.warps([&](Warp& w) {
        for (std::uint64_t step = 0; step < steps; ++step) {
          w.op(rx, step == 0 ? kStageFirstLoads : kStageMultiply + kStageLoads,
               [&](const Thread& t) { return (row0 + t.y) * hidden + step * kTile + t.x; });
          w.op(rw, kNoWork,
               [&](const Thread& t) { return (step * kTile + t.y) * hidden + col0 + t.x; });
        }
        w.op(ry, kStageMultiply + kStageStore,
             [&](const Thread& t) { return (row0 + t.y) * hidden + col0 + t.x; });
      });
    });
  }

  // The host writes every stage's weights and the input microbatches. Then the pipeline's clock:
  // at step c, stage s (GPU s) runs microbatch m = c - s; the stages of one step run
  // concurrently, and the Synchronize ending the step makes stage s's output of microbatch m
  // ready for stage s + 1 at step c + 1 (GPipe's schedule, forward pass). Finally the host reads
  // the output activations.
  for (const std::uint32_t w : weights) wl.cpu_write(w);
  wl.cpu_write(act[0]);
  for (std::uint64_t c = 0; c + 1 < micro + stages; ++c) {
    for (std::uint64_t s = 0; s < stages; ++s) {
      if (c < s || c - s >= micro) continue;
      on_device(wl, stages, s);
      wl.launch_async(kernels[s], static_cast<std::int32_t>(c - s));
    }
    wl.synchronize();
  }
  wl.cpu_read(act[stages]);
  wl.write();
}

// ---- mgpu-alltoall -----------------------------------------------------------------------------

constexpr std::uint32_t kShuffleBlock = 256;

// pack: i = global index, if (i < n), the payload (a function of i, the GPU and the round: an
// IMAD, three integer operations and a conversion to float) and the address of send[i].
constexpr Work kPackStore = kGlobalIndex + kGuard + imad(1) + int_ops(3) + kConvert + kAddress;
// alltoall, per thread e of a chunk: the index and guard, then per peer (unrolled) the source
// pointer (a kernel parameter) and the address of src[peer][me * chunk + e]; the loads issue
// together; each store needs its destination's offset and address.
constexpr Work kPeerAddress = int_ops(1) + kAddress;
constexpr Work kShuffleStore = kPeerAddress;

void write_mgpu_alltoall(GenContext& ctx) {
  const std::uint64_t gpus = gpus_param(ctx);
  const std::uint64_t rounds = ctx.params.integer("rounds", 1, 100000);
  // Each GPU's send and receive buffers hold one chunk per GPU; a chunk is whole 4 KB pages so
  // that no two GPUs' chunks share a page.
  const std::uint64_t chunk = ctx.footprint / (2 * gpus * gpus) / kPageSize * kPageSize;
  if (chunk == 0)
    throw UserError(footprint_error(2 * gpus * gpus * kPageSize, "mgpu-alltoall", gpus));
  const std::uint64_t elems = chunk / 4;

  Workload wl(ctx);
  wl.metadata().params["chunk"] = chunk;
  std::vector<std::uint32_t> send, recv;
  for (std::uint64_t g = 0; g < gpus; ++g)
    send.push_back(wl.alloc("send" + std::to_string(g), gpus * chunk));
  for (std::uint64_t g = 0; g < gpus; ++g)
    recv.push_back(wl.alloc("recv" + std::to_string(g), gpus * chunk));

  const auto e = static_cast<std::int64_t>(elems);
  const Poly tb = kShuffleBlock * 4;
  std::vector<std::uint32_t> pack, shuffle;
  std::vector<Ref> first_pack, first_shuffle;
  auto same = [](std::vector<Ref>& first, std::size_t i) {
    return first.size() > i ? &first[i] : nullptr;
  };
  for (std::uint64_t g = 0; g < gpus; ++g) {
    // pack<<<gpus * elems / 256, 256>>>(send): GPU g fills its send buffer.
    const std::uint32_t kp =
        wl.kernel("pack", grid_1d(gpus * elems, kShuffleBlock), {kShuffleBlock, 1, 1});
    pack.push_back(kp);
    const Ref rp = wl.ref(kp, {send[g], AccessKind::Write, static_cast<std::int64_t>(gpus) * e, tb},
                          same(first_pack, 0));
    if (first_pack.empty()) first_pack.push_back(rp);
    const std::uint64_t n = gpus * elems;
    wl.body(kp, [=](Block& b, std::int32_t) {
      b.warps([&](Warp& w) {
        w.op(rp, kPackStore, [&](const Thread& t) { return b.gx(t) < n ? b.gx(t) : kOff; });
      });
    });

    // alltoall<<<elems / 256, 256>>>(recv, src[]): thread e copies element e of chunk g of every
    // GPU's send buffer into chunk j of its receive buffer, peers in the order j = g, g + 1, ...
    // (mod gpus) so that the GPUs start on different sources; the first is its own chunk.
    const std::uint32_t ks =
        wl.kernel("alltoall", grid_1d(elems, kShuffleBlock), {kShuffleBlock, 1, 1});
    shuffle.push_back(ks);
    std::vector<Ref> loads, stores;
    for (std::uint64_t p = 0; p < gpus; ++p) {
      const Ref r =
          wl.ref(ks, {send[(g + p) % gpus], AccessKind::Read, e, tb}, same(first_shuffle, p));
      if (first_shuffle.size() == p) first_shuffle.push_back(r);
      loads.push_back(r);
    }
    for (std::uint64_t p = 0; p < gpus; ++p) {
      const Ref r = wl.ref(ks, {recv[g], AccessKind::Write, e, tb}, same(first_shuffle, gpus + p));
      if (first_shuffle.size() == gpus + p) first_shuffle.push_back(r);
      stores.push_back(r);
    }
    wl.body(ks, [=](Block& b, std::int32_t) {
      b.warps([&](Warp& w) {
        auto at = [&](std::uint64_t c) {
          return [&, c](const Thread& t) { return b.gx(t) < elems ? c * elems + b.gx(t) : kOff; };
        };
        for (std::uint64_t p = 0; p < gpus; ++p)
          w.op(loads[p],
               p == 0 ? kGlobalIndex + kGuard + static_cast<std::uint32_t>(gpus) * kPeerAddress
                      : kNoWork,
               at(g));
        for (std::uint64_t p = 0; p < gpus; ++p) w.op(stores[p], kShuffleStore, at((g + p) % gpus));
      });
    });
  }

  // Per round: every GPU packs (concurrently), Synchronize; every GPU gathers, Synchronize.
  for (std::uint64_t r = 0; r < rounds; ++r) {
    for (const auto* phase : {&pack, &shuffle}) {
      for (std::uint64_t g = 0; g < gpus; ++g) {
        on_device(wl, gpus, g);
        wl.launch_async((*phase)[g], static_cast<std::int32_t>(r));
      }
      wl.synchronize();
    }
  }
  wl.write();
}

const Registrar kMgpuHalo{Generator{
    "mgpu-halo",
    "data-parallel Jacobi sweep over an ny x nx float grid (a and a_new, swapped each "
    "iteration) split into `gpus` row slabs, one kernel per GPU per iteration reading its "
    "neighbours' boundary rows, then a Synchronize; nx = multiple of 1024 ~ sqrt(footprint/8), "
    "ny = multiple of 4*gpus with 8*nx*ny <= footprint",
    {kGpusSpec,
     {"iters", "4", "Jacobi iterations (host loop; a and a_new swap every iteration)"},
     {"init", "cpu",
      "cpu: the host writes both grids first (pages start in host memory); gpu0: cudaMemset and "
      "initialize_boundaries on GPU 0, as NVIDIA's program (every page starts on GPU 0)"},
     {"advise", "none",
      "none, or read-mostly: cudaMemAdviseSetReadMostly on both grids (a neighbour's read of a "
      "halo row duplicates it, the owner's next write collapses the copies)"}},
    write_mgpu_halo,
    "cyclic",
    std::uint64_t{64} << 20,
    "NVIDIA multi-GPU programming models, Jacobi (multi_threaded_um)",
}};

const Registrar kMgpuPipeline{Generator{
    "mgpu-pipeline",
    "model-parallel pipeline (forward pass): `gpus` stages, stage s on GPU s with its own "
    "hidden x hidden weights, microbatches of `batch` rows flowing through (step c runs "
    "microbatch c-s on stage s, Synchronize per step); hidden = largest multiple of 32 with "
    "weights and gpus+1 activation buffers <= footprint",
    {kGpusSpec,
     {"microbatches", "4", "microbatches per batch (1..4096), the launches' iteration index"},
     {"batch", "64", "rows (samples) per microbatch, a multiple of 32"}},
    write_mgpu_pipeline,
    "tiled-reuse",
    std::uint64_t{64} << 20,
    "GPipe-style pipeline parallelism (Huang et al., NeurIPS 2019), CUDA samples matrixMul layers",
}};

const Registrar kMgpuAlltoall{Generator{
    "mgpu-alltoall",
    "all-to-all shuffle: each GPU packs a send buffer of `gpus` chunks, Synchronize, then each GPU "
    "g copies chunk g of every GPU's send buffer into its receive buffer, Synchronize; chunk = "
    "footprint / (2*gpus^2) rounded down to 4 KB",
    {kGpusSpec, {"rounds", "2", "shuffle rounds (host loop: pack, then exchange)"}},
    write_mgpu_alltoall,
    "streaming",
    std::uint64_t{64} << 20,
    "MPI_Alltoall / ncclAllToAll pattern over managed memory",
}};

}  // namespace
}  // namespace uvmsim::gen
