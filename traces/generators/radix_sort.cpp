// `radix-sort`: least-significant-digit radix sort of 32-bit key/value pairs, 4 bits per pass (as
// in the CUDA samples' and CUB's tile-based sorts). Per pass: radix_histogram counts each 1024-key
// tile's digits, radix_scan turns the per-tile counts into global offsets, and radix_scatter
// sorts each tile by digit in shared memory and writes keys and values to their data-dependent
// destinations. Keys and values ping-pong between two buffers, so every pass streams all of them
// again (one kernel entry per buffer direction).
//
// Host events follow the prefetching baseline of the sort UVM-Discard evaluates (Altis' sort,
// uvm-prefetch mode): the host writes the keys and values, prefetches both to the GPU before the
// first pass and back to the CPU after the last, where it reads (verifies) them. `prefetch=off`
// leaves every migration to demand faults.
#include <random>

#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 256, kPerThread = 4, kTile = kBlock * kPerThread;
constexpr std::uint32_t kBits = 4, kDigits = 1u << kBits, kPasses = 32 / kBits;

// ---- per-thread work (compute_cost.h) ----
// A 256-thread block scan in shared memory: eight steps of two shared accesses, an add, the
// step's test and a barrier.
constexpr Work kBlockScan = 8 * (shared(2) + int_ops(1) + kGuard + kBarrier);
// radix_histogram: zero the shared histogram (STS, barrier), the thread's index and the tile's
// address (its four keys are immediate offsets, loaded back to back); per key the digit (shift,
// AND) and a shared-memory atomic increment; barrier; if (tid < 16) the count (LDS), the index
// digit * tiles + tile and its address.
constexpr Work kHistLoads = shared(1) + kBarrier + kGlobalIndex + kAddress;
constexpr Work kHistStore = kPerThread * (cmp(1) + int_ops(1) + shared(2)) + kBarrier + kGuard +
                            shared(1) + kIndex2D + kAddress;
// radix_scan: index, guard, address; the block scan; the store address.
constexpr Work kScanLoad = kGlobalIndex + kGuard + kAddress;
constexpr Work kScanStore = shared(1) + kBlockScan + shared(1) + kAddress;
// radix_scatter: the index and the addresses of the tile's keys and values; if (tid < 16) the
// digit's global offset; then the tile is sorted in shared memory by four 1-bit splits (per bit:
// the four keys' bit, a block scan, the four keys and values moved, a barrier); per output
// element the key and value from shared memory, its digit, the digit's offset, the rank and the
// two destination addresses (the eight stores issue back to back).
constexpr Work kScatterLoads = kGlobalIndex + 2 * kAddress;
constexpr Work kScatterOffset = kGuard + kIndex2D + kAddress;
constexpr Work kLocalSort =
    kBits * (kPerThread * (cmp(1) + int_ops(1)) + kBlockScan + shared(8) + int_ops(4) + kBarrier);
constexpr Work kScatterStores =
    kPerThread * (shared(3) + cmp(1) + int_ops(1) + int_ops(2) + 2 * kAddress);

void write_radix_sort(GenContext& ctx) {
  const bool prefetch = ctx.params.choice("prefetch", {"on", "off"}) == "on";
  const std::uint64_t n = std::max<std::uint64_t>(kTile, ctx.footprint / 16 / kTile * kTile);
  const std::uint64_t tiles = n / kTile;
  // Sort on the host first: the digit of every key in each pass's input order and each pass's
  // per-(digit, tile) start offsets.
  std::vector<std::uint32_t> keys(n), next(n);
  std::mt19937_64 rng(ctx.seed);
  for (auto& k : keys) k = static_cast<std::uint32_t>(rng());
  std::vector<std::vector<std::uint8_t>> digit(kPasses, std::vector<std::uint8_t>(n));
  std::vector<std::vector<std::uint64_t>> offset(kPasses,
                                                 std::vector<std::uint64_t>(kDigits * tiles));
  for (std::uint32_t p = 0; p < kPasses; ++p) {
    auto& d = digit[p];
    auto& off = offset[p];
    for (std::uint64_t i = 0; i < n; ++i)
      d[i] = static_cast<std::uint8_t>(keys[i] >> (p * kBits) & (kDigits - 1));
    for (std::uint64_t i = 0; i < n; ++i) ++off[d[i] * tiles + i / kTile];
    std::uint64_t sum = 0;  // exclusive scan in digit-major order
    for (auto& o : off) sum += std::exchange(o, sum);
    std::vector<std::uint64_t> fill(off);
    for (std::uint64_t i = 0; i < n; ++i) next[fill[d[i] * tiles + i / kTile]++] = keys[i];
    keys.swap(next);
  }

  Workload wl(ctx);
  wl.metadata().params["keys"] = n;
  const std::uint32_t kbuf[2] = {wl.alloc("d_keys0", n * 4), wl.alloc("d_keys1", n * 4)};
  const std::uint32_t vbuf[2] = {wl.alloc("d_values0", n * 4), wl.alloc("d_values1", n * 4)};
  const std::uint32_t counts = wl.alloc("d_counts", kDigits * tiles * 4),
                      offs = wl.alloc("d_offsets", kDigits * tiles * 4);
  const auto nn = static_cast<std::int64_t>(n), t = static_cast<std::int64_t>(tiles);
  const std::int64_t tile_bytes = kTile * 4, table = kDigits * t;
  const Dim3 grid{static_cast<std::uint32_t>(tiles), 1, 1}, block{kBlock, 1, 1};
  // Element k of thread x in a tile: tile * 1024 + k * 256 + x (coalesced loads).
  auto elem = [](const Block& b, const Thread& th, std::uint32_t k) {
    return std::uint64_t{b.x} * kTile + std::uint64_t{k} * kBlock + th.x;
  };
  std::uint32_t hist[2], scatter[2];
  std::vector<Ref> h_first, s_first;
  for (int dir = 0; dir < 2; ++dir) {  // dir: pass input in buffer `dir`
    hist[dir] = wl.kernel("radix_histogram", grid, block, kDigits * 4);
    const Ref h_k = wl.ref(hist[dir], {kbuf[dir], AccessKind::Read, nn, tile_bytes},
                           h_first.empty() ? nullptr : &h_first[0]);
    const Ref h_w = wl.ref(
        hist[dir],
        {counts, AccessKind::Write, table, ((kDigits - 1) * t + 1) * 4, AccessPattern::Strided},
        h_first.empty() ? nullptr : &h_first[1]);
    if (h_first.empty()) h_first = {h_k, h_w};
    wl.body(hist[dir], [=](Block& b, std::int32_t) {
      b.warps([&](Warp& w) {
        for (std::uint32_t k = 0; k < kPerThread; ++k) {
          w.op(h_k, k == 0 ? kHistLoads : kNoWork,
               [&](const Thread& th) { return elem(b, th, k); });
        }
        // threads 0..15 write their digit's count: counts[digit * tiles + tile]
        w.op(h_w, kHistStore, [&](const Thread& th) {
          return th.x < kDigits ? std::uint64_t{th.x} * tiles + b.x : kOff;
        });
      });
    });
    scatter[dir] = wl.kernel("radix_scatter", grid, block, (kTile * 2 + kDigits) * 4);
    const Ref* sf = s_first.empty() ? nullptr : s_first.data();
    const Ref s_k = wl.ref(scatter[dir], {kbuf[dir], AccessKind::Read, nn, tile_bytes}, sf);
    const Ref s_v =
        wl.ref(scatter[dir], {vbuf[dir], AccessKind::Read, nn, tile_bytes}, sf ? sf + 1 : nullptr);
    const Ref s_o =
        wl.ref(scatter[dir],
               {offs, AccessKind::Read, table, ((kDigits - 1) * t + 1) * 4, AccessPattern::Strided},
               sf ? sf + 2 : nullptr);
    const auto whole = static_cast<std::int64_t>(n * 4);
    const Ref s_wk = wl.ref(
        scatter[dir],
        Access(kbuf[1 - dir], AccessKind::Write, nn, whole, AccessPattern::Irregular).indirect(),
        sf ? sf + 3 : nullptr);
    const Ref s_wv = wl.ref(
        scatter[dir],
        Access(vbuf[1 - dir], AccessKind::Write, nn, whole, AccessPattern::Irregular).indirect(),
        sf ? sf + 4 : nullptr);
    if (s_first.empty()) s_first = {s_k, s_v, s_o, s_wk, s_wv};
    wl.body(scatter[dir], [=, &digit, &offset](Block& b, std::int32_t it) {
      const auto& d = digit[static_cast<std::size_t>(it)];
      const auto& off = offset[static_cast<std::size_t>(it)];
      // The tile sorted by digit (stable): sorted element s + r of digit g goes to
      // off[g][tile] + r.
      std::uint64_t dest[kTile];
      std::uint32_t count[kDigits] = {};
      const std::uint64_t first = std::uint64_t{b.x} * kTile;
      for (std::uint32_t i = 0; i < kTile; ++i) ++count[d[first + i]];
      for (std::uint32_t g = 0, s = 0; g < kDigits; s += count[g++]) {
        for (std::uint32_t r = 0; r < count[g]; ++r)
          dest[s + r] = off[std::uint64_t{g} * tiles + b.x] + r;
      }
      b.warps([&](Warp& w) {
        for (std::uint32_t k = 0; k < kPerThread; ++k) {
          w.op(s_k, k == 0 ? kScatterLoads : kNoWork,
               [&](const Thread& th) { return elem(b, th, k); });
          w.op(s_v, kNoWork, [&](const Thread& th) { return elem(b, th, k); });
        }
        w.op(s_o, kScatterOffset, [&](const Thread& th) {
          return th.x < kDigits ? std::uint64_t{th.x} * tiles + b.x : kOff;
        });
        w.compute(kLocalSort);                            // local split by digit in shared memory
        for (std::uint32_t k = 0; k < kPerThread; ++k) {  // sorted element k * 256 + x
          w.op(s_wk, k == 0 ? kScatterStores : kNoWork,
               [&](const Thread& th) { return dest[k * kBlock + th.x]; });
          w.op(s_wv, kNoWork, [&](const Thread& th) { return dest[k * kBlock + th.x]; });
        }
      });
    });
  }
  // radix_scan: exclusive scan of the digit-major count table, one element per thread.
  const std::uint32_t scan =
      wl.kernel("radix_scan", grid_1d(kDigits * tiles, kBlock), block, kBlock * 4);
  const std::int64_t tb = std::min<std::int64_t>(kBlock, table) * 4;
  const Ref c_r = wl.ref(scan, {counts, AccessKind::Read, table, tb});
  const Ref c_w = wl.ref(scan, {offs, AccessKind::Write, table, tb});
  wl.body(scan, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      auto i = [&](const Thread& th) { return b.gx(th) < kDigits * tiles ? b.gx(th) : kOff; };
      w.op(c_r, kScanLoad, i);
      w.op(c_w, kScanStore, i);
    });
  });
  wl.cpu_write(kbuf[0]);
  wl.cpu_write(vbuf[0]);
  if (prefetch) {
    wl.prefetch(kbuf[0], Processor::Gpu);
    wl.prefetch(vbuf[0], Processor::Gpu);
  }
  for (std::uint32_t p = 0; p < kPasses; ++p) {
    const auto it = static_cast<std::int32_t>(p);
    wl.launch(hist[p % 2], it);
    wl.launch(scan, it);
    wl.launch(scatter[p % 2], it);
  }
  if (prefetch) {  // eight passes end in buffer 0
    wl.prefetch(kbuf[0], Processor::Cpu);
    wl.prefetch(vbuf[0], Processor::Cpu);
  }
  wl.cpu_read(kbuf[0]);  // the host verifies the sort
  wl.cpu_read(vbuf[0]);
  wl.write();
}

const Registrar kRadixSort{Generator{
    "radix-sort",
    "LSD radix sort of footprint/16 key/value pairs (two buffers each), 8 passes of 4 bits, each "
    "a histogram, scan and scatter kernel over 1024-key tiles",
    {{"prefetch", "on",
      "on: keys and values prefetched to the GPU before the sort and back after it (Altis' "
      "uvm-prefetch baseline); off: demand paging only"}},
    write_radix_sort,
    "cyclic",
    std::uint64_t{64} << 20,
    "CUDA samples / CUB radix sort",
}};

}  // namespace
}  // namespace uvmsim::gen
