// `ra`: random access (GUPS) as in the HPC Challenge RandomAccess benchmark's GPU version: each
// thread advances its own stream of the benchmark's LFSR (ran = (ran << 1) ^ (ran < 0 ? POLY : 0))
// and XORs table[ran & (size - 1)] with it. Every update reads and writes one 8-byte entry at a
// pseudo-random, data-dependent position: no spatial or temporal locality beyond chance.
#include <random>

#include "core/error.h"
#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 256;
constexpr std::uint64_t kPoly = 0x7;  // HPCC's POLY

// ---- per-thread work (compute_cost.h) ----
// The thread's index and &ran[tid]. Per update: the loop step; the 64-bit LFSR step (two shifts
// for the halves, the sign test, the select of POLY, a 64-bit XOR); ran & (size - 1) (64-bit AND)
// and &Table[...]. Then table[...] ^= ran (64-bit XOR) before the store.
constexpr Work kStart = kGlobalIndex + kAddress;
constexpr Work kUpdate = kLoop + cmp(4) + int_ops(2) + int_ops(2) + kAddress;
constexpr Work kXor = int_ops(2);

void write_ra(GenContext& ctx) {
  const std::uint64_t per_entry = ctx.params.integer("updates", 1, 64);
  const std::uint64_t threads_param = ctx.params.integer("threads", 32, 1u << 24);
  // Table entries: the largest power of two that fits with the threads' starting values.
  auto bytes = [&](std::uint64_t n) { return n * 8 + std::min(threads_param, n) * 8; };
  if (bytes(32) > ctx.footprint) throw UserError("--footprint: must be at least 512 bytes for ra");
  std::uint64_t size = 32;
  while (bytes(size * 2) <= ctx.footprint) size *= 2;
  const std::uint64_t threads = std::min(threads_param, size) / 32 * 32;
  const std::uint64_t per_thread = std::max<std::uint64_t>(1, size * per_entry / threads);
  Workload wl(ctx);
  wl.metadata().params["table_entries"] = size;
  wl.metadata().params["threads"] = threads;
  wl.metadata().params["updates_per_thread"] = per_thread;
  const std::uint32_t table = wl.alloc("Table", size * 8), starts = wl.alloc("ran", threads * 8);
  const std::uint32_t k = wl.kernel("RandomAccessUpdate", grid_1d(threads, kBlock), {kBlock, 1, 1});
  const auto t = static_cast<std::int64_t>(threads), u = static_cast<std::int64_t>(per_thread);
  const std::int64_t whole = static_cast<std::int64_t>(size * 8);
  const Ref r_start = wl.ref(k, Access(starts, AccessKind::Read, t, kBlock * 8).size(8));
  const Ref r_tab = wl.ref(
      k,
      Access(table, AccessKind::Read, t * u, whole, AccessPattern::Irregular).size(8).indirect());
  const Ref w_tab = wl.ref(
      k,
      Access(table, AccessKind::Write, t * u, whole, AccessPattern::Irregular).size(8).indirect());
  // Each thread's starting LFSR state (HPCC_starts spaces them along one sequence; seeded here).
  std::vector<std::uint64_t> start(threads);
  std::mt19937_64 rng(ctx.seed);
  for (auto& s : start) s = rng() | 1;
  wl.body(k, [=, &start](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      std::uint64_t ran[32];
      for (std::uint32_t l = 0; l < w.size(); ++l) ran[l] = start[b.gx(w.lane(l))];
      w.op(r_start, kStart, [&](const Thread& th) { return b.gx(th); });
      for (std::uint64_t i = 0; i < per_thread; ++i) {
        for (std::uint32_t l = 0; l < w.size(); ++l) {
          ran[l] = (ran[l] << 1) ^ (static_cast<std::int64_t>(ran[l]) < 0 ? kPoly : 0);
        }
        auto slot = [&](std::uint32_t l) { return ran[l] & (size - 1); };
        w.op_lane(r_tab, kUpdate, slot);
        w.op_lane(w_tab, kXor, slot);  // table[...] ^= ran
      }
    });
  });
  wl.cpu_write(table);
  wl.cpu_write(starts);
  wl.launch(k);
  wl.write();
}

const Registrar kRa{Generator{
    "ra",
    "GUPS: threads XOR pseudo-random 8-byte entries of a power-of-two table (read + write per "
    "update); table = largest power of two that fits the footprint",
    {{"updates", "1", "updates per table entry (HPCC uses 4)"},
     {"threads", "65536", "threads, each with its own random stream"}},
    write_ra,
    "irregular",
    std::uint64_t{32} << 20,
    "HPCC RandomAccess (GUPS)",
}};

}  // namespace
}  // namespace uvmsim::gen
