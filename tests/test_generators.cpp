// Workload generators: registry, parameter handling, determinism and the access pattern each one
// promises (docs/generators.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "core/error.h"
#include "tests/test_util.h"
#include "traces/generators/generator.h"
#include "traces/trace.h"

namespace uvmsim::gen {
namespace {

using test::TempDir;
using trace::AccessRecord;
using trace::HostEvent;
using trace::HostEventType;

struct Rec {
  std::uint64_t tb;
  std::uint32_t warp;
  AccessRecord r;
};

struct Decoded {
  trace::Metadata meta;
  std::vector<HostEvent> host;
  std::vector<std::vector<Rec>> launches;
};

Decoded decode(const std::string& path) {
  trace::TraceReader reader(path);
  Decoded d;
  d.meta = reader.metadata();
  HostEvent ev;
  while (reader.next_host_event(ev)) d.host.push_back(ev);
  std::vector<trace::WarpStream> warps;
  for (std::uint32_t l = 0; l < reader.launches().size(); ++l) {
    auto& recs = d.launches.emplace_back();
    trace::LaunchStream s = reader.launch(l);
    trace::ThreadblockView tb;
    while (s.next(tb)) {
      tb.warp_streams(warps);
      AccessRecord r;
      for (std::uint32_t w = 0; w < warps.size(); ++w) {
        while (warps[w].next(r)) recs.push_back({tb.tb_id, w, r});
      }
      s.release(tb);
    }
  }
  return d;
}

std::string generate_to(const TempDir& dir, const std::string& name, std::uint64_t footprint,
                        const ParamMap& params = {}, std::uint64_t seed = 1,
                        const std::string& file = "t.uvt") {
  const std::string path = dir.file(file);
  generate(name, footprint, params, seed, path);
  return path;
}

std::vector<std::uint8_t> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Generators, RegistryListsAllWithDocumentedParams) {
  std::vector<std::string> names;
  for (const Generator* g : generators()) {
    names.push_back(g->name);
    EXPECT_FALSE(g->description.empty()) << g->name;
    for (const ParamSpec& p : g->params) EXPECT_FALSE(p.doc.empty()) << g->name << " " << p.name;
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* core : {"random", "regular", "stream", "touch", "vecadd"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), core), names.end()) << core;
  }
  EXPECT_EQ(find_generator("nope"), nullptr);
  EXPECT_THROW(register_generator(Generator{"regular", "dup", {}, nullptr}), std::logic_error);
}

TEST(Generators, BadInputNamesTheCulprit) {
  TempDir dir;
  const std::string out = dir.file("x.uvt");
  EXPECT_EQ(error_of([&] { generate("nope", 1 << 20, {}, 1, out); }),
            "unknown generator 'nope' (uvmsim gen --list shows them all)");
  EXPECT_EQ(error_of([&] {
              generate("regular", 1 << 20, {{"colour", "red"}}, 1, out);
            }),
            "--param colour: unknown parameter of generator 'regular' (its parameters: block, "
            "init; every generator's: alloc)");
  EXPECT_EQ(error_of([&] {
              generate("regular", 1 << 20, {{"init", "gpu"}}, 1, out);
            }),
            "--param init: expected one of none|cpu, got 'gpu'");
  EXPECT_EQ(error_of([&] {
              generate("stream", 1 << 20, {{"iters", "-1"}}, 1, out);
            }),
            "--param iters: expected an integer in [1, 1000000], got '-1'");
  EXPECT_EQ(error_of([&] { generate("touch", 1 << 20, {}, 1, out); }),
            "--param offsets: required by generator 'touch'");
  EXPECT_EQ(error_of([&] {
              generate("touch", 0, {{"offsets", "0,2M"}}, 1, out);
            }),
            "--param offsets: offset 2097152 (2 MiB) does not leave a 4-byte read inside size "
            "2 MiB");
  EXPECT_EQ(error_of([&] {
              generate("touch", 0, {{"offsets", "0,1X"}}, 1, out);
            }),
            "--param offsets: invalid size '1X'");
  EXPECT_EQ(error_of([&] {
              generate("touch", 0, {{"size", "lots"}, {"offsets", "0"}}, 1, out);
            }),
            "--param size: invalid size 'lots'");
  EXPECT_EQ(error_of([&] { generate("regular", 100, {}, 1, out); }),
            "--footprint: must be at least 4K for this generator");
  // A failed run leaves nothing behind.
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
}

TEST(Generators, SameInputsGiveByteIdenticalFiles) {
  TempDir dir;
  const std::vector<std::pair<std::string, ParamMap>> cases = {
      {"regular", {}},
      {"random", {{"init", "cpu"}}},
      {"stream", {{"iters", "2"}}},
      {"vecadd", {{"threads", "100"}}},
      {"touch", {{"offsets", "0,64K,1M"}}}};
  for (const auto& [name, params] : cases) {
    const auto a = bytes_of(generate_to(dir, name, 4 << 20, params, 42, "a.uvt"));
    const auto b = bytes_of(generate_to(dir, name, 4 << 20, params, 42, "b.uvt"));
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, b) << name;
  }
  const auto s1 = bytes_of(generate_to(dir, "random", 4 << 20, {}, 1, "s1.uvt"));
  const auto s2 = bytes_of(generate_to(dir, "random", 4 << 20, {}, 2, "s2.uvt"));
  EXPECT_NE(s1, s2);
}

TEST(Generators, PermutationIsPortableAndUniform) {
  // Pinned values: mt19937_64's output is fixed by the standard and the shuffle is our own, so
  // these must be the same with every compiler and standard library.
  EXPECT_EQ(random_permutation(10, 42), (std::vector<std::uint64_t>{1, 7, 9, 0, 3, 8, 4, 2, 5, 6}));
  const auto p = random_permutation(1000, 7);
  std::set<std::uint64_t> s(p.begin(), p.end());
  EXPECT_EQ(s.size(), 1000u);
  EXPECT_EQ(*s.rbegin(), 999u);
  std::mt19937_64 rng(3);
  std::vector<int> hist(3);
  for (int i = 0; i < 30000; ++i) ++hist[uniform_below(rng, 3)];
  for (int h : hist) EXPECT_NEAR(h, 10000, 500);
}

void expect_layout(const trace::Metadata& m) {
  Addr expected = kFirstAllocationBase;
  for (const auto& a : m.allocations) {
    EXPECT_EQ(a.base, expected) << a.name;
    EXPECT_EQ(a.base % kBlockSize, 0u);
    EXPECT_TRUE(a.managed);
    expected = (a.base + a.size + kBlockSize - 1) / kBlockSize * kBlockSize + kBlockSize;
  }
}

TEST(Generators, RegularTouchesPageIOnceWithThreadI) {
  TempDir dir;
  const Decoded d = decode(generate_to(dir, "regular", 8 << 20, {{"block", "128"}}));
  ASSERT_EQ(d.meta.allocations.size(), 1u);
  EXPECT_EQ(d.meta.allocations[0].name, "data");
  EXPECT_EQ(d.meta.allocations[0].size, 8u << 20);
  expect_layout(d.meta);
  ASSERT_EQ(d.meta.kernels.size(), 1u);
  EXPECT_EQ(d.meta.kernels[0].name, "page_touch_regular");
  EXPECT_EQ(d.meta.kernels[0].block, (trace::Dim3{128, 1, 1}));
  EXPECT_EQ(d.meta.kernels[0].grid, (trace::Dim3{2048 / 128, 1, 1}));
  EXPECT_EQ(
      d.meta.params,
      (nlohmann::json{{"footprint", 8 << 20}, {"seed", 1}, {"block", 128}, {"init", "none"}}));
  ASSERT_EQ(d.host.size(), 2u);  // launch + synchronize; no CPU initialisation by default
  EXPECT_EQ(d.host[0].type, HostEventType::KernelLaunch);
  EXPECT_EQ(d.host[1].type, HostEventType::Synchronize);
  ASSERT_EQ(d.launches[0].size(), 2048u);
  for (std::size_t i = 0; i < 2048; ++i) {
    const Rec& r = d.launches[0][i];
    const std::uint64_t thread = r.tb * 128 + r.warp * 32 + i % 32;
    EXPECT_EQ(thread, i);
    EXPECT_EQ(r.r.va, kFirstAllocationBase + i * kPageSize);
    EXPECT_EQ(r.r.bytes, 4u);
    EXPECT_EQ(r.r.kind, AccessKind::Read);
    EXPECT_EQ(r.r.repeat, 1u);
    // One instruction per warp, after the index (2 S2R + IMAD = 5 slots), the guard (ISETP 2 +
    // BRA 1) and the address (2): 10 issue slots.
    EXPECT_EQ(r.r.gap_cycles, i % 32 == 0 ? 10u : 0u);
  }
}

TEST(Generators, RegularCpuInitWritesTheWholeRangeFirst) {
  TempDir dir;
  const Decoded d = decode(generate_to(dir, "regular", 1 << 20, {{"init", "cpu"}}));
  ASSERT_GE(d.host.size(), 2u);
  EXPECT_EQ(d.host[0].type, HostEventType::CpuAccess);
  EXPECT_EQ(d.host[0].kind, AccessKind::Write);
  EXPECT_EQ(d.host[0].va, kFirstAllocationBase);
  EXPECT_EQ(d.host[0].size, 1u << 20);
  EXPECT_EQ(d.host[1].type, HostEventType::KernelLaunch);
}

TEST(Generators, RandomTouchesEveryPageExactlyOnce) {
  TempDir dir;
  const Decoded d = decode(generate_to(dir, "random", 4 << 20, {}, 9));
  EXPECT_EQ(d.meta.kernels[0].name, "page_touch_random");
  EXPECT_EQ(d.meta.params["seed"], 9);
  std::vector<std::uint64_t> pages;
  for (const Rec& r : d.launches[0]) pages.push_back((r.r.va - kFirstAllocationBase) / kPageSize);
  ASSERT_EQ(pages.size(), 1024u);
  EXPECT_FALSE(std::is_sorted(pages.begin(), pages.end()));
  std::sort(pages.begin(), pages.end());
  for (std::size_t i = 0; i < pages.size(); ++i) EXPECT_EQ(pages[i], i);
}

TEST(Generators, StreamTriadPerWarpPattern) {
  TempDir dir;
  const Decoded d = decode(generate_to(dir, "stream", 3 << 20, {{"iters", "3"}}));
  ASSERT_EQ(d.meta.allocations.size(), 3u);
  EXPECT_EQ(d.meta.allocations[0].name, "a");
  EXPECT_EQ(d.meta.allocations[1].name, "b");
  EXPECT_EQ(d.meta.allocations[2].name, "c");
  for (const auto& a : d.meta.allocations) EXPECT_EQ(a.size, 1u << 20);
  expect_layout(d.meta);
  EXPECT_EQ(d.meta.kernels[0].name, "triad");
  EXPECT_EQ(d.meta.kernels[0].block.x, 1024u);
  EXPECT_EQ(d.meta.kernels[0].grid.x, 256u);  // 2^18 floats / 1024
  const Addr a = d.meta.allocations[0].base, b = d.meta.allocations[1].base,
             c = d.meta.allocations[2].base;
  // CPU writes b and c, then 3 launches with iteration 0..2, each followed by a sync.
  ASSERT_EQ(d.host.size(), 2u + 3u * 2u);
  EXPECT_EQ(d.host[0].va, b);
  EXPECT_EQ(d.host[1].va, c);
  for (int it = 0; it < 3; ++it) {
    EXPECT_EQ(d.host[2 + 2 * it].type, HostEventType::KernelLaunch);
    EXPECT_EQ(d.host[2 + 2 * it].iteration, it);
  }
  ASSERT_EQ(d.launches.size(), 3u);
  const auto& recs = d.launches[0];
  ASSERT_EQ(recs.size(), 3u * (1u << 18) / 32);
  for (std::size_t i = 0; i < recs.size(); i += 3) {
    const std::uint64_t warp_global = recs[i].tb * 32 + recs[i].warp;
    const Addr off = warp_global * 128;
    EXPECT_EQ(recs[i].r.va, b + off);
    EXPECT_EQ(recs[i].r.kind, AccessKind::Read);
    EXPECT_EQ(recs[i + 1].r.va, c + off);
    // b[i] after the index (5), the guard (3) and two addresses (4); c[i] right after it;
    // a[i] after the FFMA (1) and its address (2).
    EXPECT_EQ(recs[i].r.gap_cycles, 12u);
    EXPECT_EQ(recs[i + 1].r.gap_cycles, 0u);
    EXPECT_EQ(recs[i + 2].r.va, a + off);
    EXPECT_EQ(recs[i + 2].r.kind, AccessKind::Write);
    EXPECT_EQ(recs[i + 2].r.gap_cycles, 3u);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(recs[i + k].r.bytes, 128u);
  }
  // init=none drops the CPU writes.
  const Decoded n = decode(generate_to(dir, "stream", 3 << 20, {{"init", "none"}}, 1, "n.uvt"));
  EXPECT_EQ(n.host[0].type, HostEventType::KernelLaunch);
  // init=all: the host writes a, b and c (StreamTriad's host initialisation), in that order.
  const Decoded all = decode(generate_to(dir, "stream", 3 << 20, {{"init", "all"}}, 1, "all.uvt"));
  ASSERT_EQ(all.host.size(), 3u + 2u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(all.host[k].type, HostEventType::CpuAccess);
    EXPECT_EQ(all.host[k].kind, AccessKind::Write);
    EXPECT_EQ(all.host[k].va, all.meta.allocations[k].base);
    EXPECT_EQ(all.host[k].size, 1u << 20);
  }
  EXPECT_EQ(all.host[3].type, HostEventType::KernelLaunch);
  EXPECT_EQ(all.meta.params["init"], "all");
  // elem=8 (BabelStream's double build): half the elements, a warp's access is 256 bytes, and a
  // 1024-thread block covers two pages of each array.
  const Decoded dbl = decode(generate_to(dir, "stream", 3 << 20, {{"elem", "8"}}, 1, "dbl.uvt"));
  for (const auto& al : dbl.meta.allocations) EXPECT_EQ(al.size, 1u << 20);
  EXPECT_EQ(dbl.meta.kernels[0].grid.x, 128u);  // 2^17 doubles / 1024
  ASSERT_EQ(dbl.launches[0].size(), 3u * (1u << 17) / 32);
  const Addr da = dbl.meta.allocations[0].base, db = dbl.meta.allocations[1].base;
  for (std::size_t i = 0; i < dbl.launches[0].size(); i += 3) {
    const auto& r = dbl.launches[0];
    const Addr off = (r[i].tb * 32 + r[i].warp) * 256;
    EXPECT_EQ(r[i].r.va, db + off);
    EXPECT_EQ(r[i + 2].r.va, da + off);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(r[i + k].r.bytes, 256u);
  }
  EXPECT_EQ(dbl.meta.params["elem"], "8");
}

TEST(Generators, SgemmInitAbcWritesCOnTheHostToo) {
  TempDir dir;
  const Decoded ab = decode(generate_to(dir, "sgemm", 3 << 20, {}, 1, "ab.uvt"));
  const Decoded abc = decode(generate_to(dir, "sgemm", 3 << 20, {{"init", "abc"}}, 1, "abc.uvt"));
  auto cpu_writes = [](const Decoded& d) {
    std::vector<Addr> v;
    for (const auto& h : d.host)
      if (h.type == HostEventType::CpuAccess && h.kind == AccessKind::Write) v.push_back(h.va);
    return v;
  };
  const auto& al = abc.meta.allocations;
  ASSERT_EQ(al.size(), 3u);
  EXPECT_EQ(cpu_writes(ab), (std::vector<Addr>{al[0].base, al[1].base}));
  EXPECT_EQ(cpu_writes(abc), (std::vector<Addr>{al[0].base, al[1].base, al[2].base}));
  // The kernel's records do not change.
  ASSERT_EQ(ab.launches.size(), 1u);
  ASSERT_EQ(abc.launches[0].size(), ab.launches[0].size());
  for (std::size_t i = 0; i < ab.launches[0].size(); ++i)
    EXPECT_EQ(abc.launches[0][i].r.va, ab.launches[0][i].r.va);
}

TEST(Generators, TwoDConvInitAbWritesBOnTheHostToo) {
  TempDir dir;
  const Decoded a = decode(generate_to(dir, "2dconv", 1 << 20, {{"iters", "1"}}, 1, "a.uvt"));
  const Decoded ab =
      decode(generate_to(dir, "2dconv", 1 << 20, {{"iters", "1"}, {"init", "ab"}}, 1, "ab.uvt"));
  auto cpu_writes = [](const Decoded& d) {
    std::vector<std::pair<Addr, std::uint64_t>> v;
    for (const auto& h : d.host)
      if (h.type == HostEventType::CpuAccess && h.kind == AccessKind::Write)
        v.emplace_back(h.va, h.size);
    return v;
  };
  const auto& al = ab.meta.allocations;
  ASSERT_EQ(al.size(), 2u);
  // N = 352 (the largest multiple of 32 with 2*N*N*4 <= 1 MiB): each array 352 * 352 * 4 bytes.
  EXPECT_EQ(al[0].size, 352u * 352 * 4);
  using W = std::vector<std::pair<Addr, std::uint64_t>>;
  EXPECT_EQ(cpu_writes(a), (W{{al[0].base, al[0].size}}));
  EXPECT_EQ(cpu_writes(ab), (W{{al[0].base, al[0].size}, {al[1].base, al[1].size}}));
  EXPECT_EQ(ab.meta.params["init"], "ab");
  // The kernel's records do not change.
  ASSERT_EQ(ab.launches.size(), 1u);
  ASSERT_EQ(ab.launches[0].size(), a.launches[0].size());
  for (std::size_t i = 0; i < a.launches[0].size(); ++i)
    EXPECT_EQ(ab.launches[0][i].r.va, a.launches[0][i].r.va);
}

TEST(Generators, FloydWarshallBlockedSweepsTheMatrixOncePerSixteenVertices) {
  TempDir dir;
  // N = 64: four 16-vertex blocks; passes = 0 runs all of them (the artifact's loop over k).
  const Decoded d = decode(
      generate_to(dir, "floyd-warshall", 64 * 64 * 4, {{"variant", "blocked"}, {"passes", "0"}}));
  EXPECT_EQ(d.meta.params["n"], 64);
  EXPECT_EQ(d.meta.params["passes"], 4);
  ASSERT_EQ(d.meta.allocations.size(), 1u);
  const Addr base = d.meta.allocations[0].base;
  // The host writes the whole matrix (memcpy into the managed buffer), once.
  std::vector<std::pair<Addr, std::uint64_t>> writes;
  for (const auto& h : d.host)
    if (h.type == HostEventType::CpuAccess && h.kind == AccessKind::Write)
      writes.emplace_back(h.va, h.size);
  EXPECT_EQ(writes, (std::vector<std::pair<Addr, std::uint64_t>>{{base, 64u * 64 * 4}}));
  ASSERT_EQ(d.launches.size(), 12u);
  // Element (row, col) of the matrix.
  auto el = [&](std::uint64_t row, std::uint64_t col) { return base + (row * 64 + col) * 4; };
  auto recs_of = [&](std::size_t launch, std::uint64_t tb, std::uint32_t warp) {
    std::vector<AccessRecord> v;
    for (const Rec& r : d.launches[launch])
      if (r.tb == tb && r.warp == warp) v.push_back(r.r);
    return v;
  };
  // k = 1, phase 3, block (i = 2, j = 3), warp 0 (threadIdx.y 0-1): C = tile (2, 3), A = tile
  // (2, 1), B = tile (1, 3), then the store of C after block_calc. The gaps are the Work the
  // source does (compute_cost.h): the early-return test and the index (5 + 8 slots), an index
  // (8) for each further load, and before the store the three STS (12), block_calc's barriers
  // (2) and 16 unrolled steps (each: the 8-way conflicted LDS of A and of C, 32 slots each, the
  // LDS of B, 4, the add, the compare and the barrier, 4), the LDS of C (4), the address (2),
  // and the 16 predicated stores: 1 slot where no lane's path improves, 4 per pass where some do.
  const std::uint32_t fixed = 12 + 2 + 16 * (32 + 32 + 4 + 4) + 4 + 2;
  const auto p3 = recs_of(3 * 1 + 2, 2 * 4 + 3, 0);
  ASSERT_EQ(p3.size(), 4u);
  EXPECT_EQ(p3[0].va, el(32, 48));
  EXPECT_EQ(p3[1].va, el(32, 16));
  EXPECT_EQ(p3[2].va, el(16, 48));
  EXPECT_EQ(p3[3].va, el(32, 48));
  EXPECT_EQ(p3[3].kind, AccessKind::Write);
  EXPECT_EQ((std::vector<std::uint32_t>{p3[0].gap_cycles, p3[1].gap_cycles, p3[2].gap_cycles}),
            (std::vector<std::uint32_t>{13, 8, 8}));
  EXPECT_GE(p3[3].gap_cycles, fixed + 16);
  EXPECT_LE(p3[3].gap_cycles, fixed + 16 * 8 * 4);  // at most 8 passes: a column's even rows
  // Paths improve less and less as k grows: the stores of the first sweep's phase 3 cost more
  // than those of the last, and at least one step of the last stores nothing.
  auto store_slots = [&](std::size_t launch) {
    std::uint64_t sum = 0, idle_min = ~std::uint64_t{0};
    for (const Rec& r : d.launches[launch]) {
      if (r.r.kind != AccessKind::Write) continue;
      EXPECT_GE(r.r.gap_cycles, fixed + 16);
      sum += r.r.gap_cycles - fixed;
      idle_min = std::min<std::uint64_t>(idle_min, r.r.gap_cycles - fixed);
    }
    return std::pair{sum, idle_min};
  };
  const auto first = store_slots(2), last = store_slots(11);
  EXPECT_GT(first.first, last.first);
  EXPECT_LT(last.second, 16u * 4);
  // Block (k, k) of phase 3 and block k of phase 2 return at once.
  EXPECT_TRUE(recs_of(3 * 1 + 2, 1 * 4 + 1, 0).empty());
  EXPECT_TRUE(recs_of(3 * 1 + 1, 1, 0).empty());
  // k = 1, phase 2, block i = 3: tile (3, 1) through (1, 1), then tile (1, 3) through it.
  const auto p2 = recs_of(3 * 1 + 1, 3, 0);
  ASSERT_EQ(p2.size(), 6u);
  const Addr want[] = {el(48, 16), el(16, 16), el(48, 16), el(16, 48), el(16, 16), el(16, 48)};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(p2[i].va, want[i]) << i;
  // Phase 1 of k = 2: tile (2, 2), loaded and stored.
  const auto p1 = recs_of(3 * 2, 0, 7);
  ASSERT_EQ(p1.size(), 2u);
  EXPECT_EQ(p1[0].va, el(32 + 14, 32));
  EXPECT_EQ(p1[1].kind, AccessKind::Write);
}

TEST(Generators, Vecadd32ThreadsIsAllenGeVectorAdd) {
  TempDir dir;
  const Decoded d = decode(generate_to(dir, "vecadd", 64 << 20, {{"threads", "32"}}));
  EXPECT_EQ(d.meta.kernels[0].name, "vecadd");
  EXPECT_EQ(d.meta.kernels[0].grid, (trace::Dim3{1, 1, 1}));
  EXPECT_EQ(d.meta.kernels[0].block, (trace::Dim3{32, 1, 1}));
  EXPECT_EQ(d.meta.params["threads"], 32);
  EXPECT_EQ(d.meta.params["footprint"], 64 << 20);
  ASSERT_EQ(d.meta.allocations.size(), 3u);
  for (const auto& a : d.meta.allocations) EXPECT_EQ(a.size, 32u * 4096);
  expect_layout(d.meta);
  // a and b are CPU-initialised, c is not.
  ASSERT_EQ(d.host.size(), 4u);
  EXPECT_EQ(d.host[0].va, d.meta.allocations[0].base);
  EXPECT_EQ(d.host[1].va, d.meta.allocations[1].base);
  const auto& recs = d.launches[0];
  ASSERT_EQ(recs.size(), 96u);
  for (std::size_t i = 0; i < 96; ++i) {
    const std::size_t array = i / 32, lane = i % 32;
    EXPECT_EQ(recs[i].r.va, d.meta.allocations[array].base + lane * 4096);
    EXPECT_EQ(recs[i].r.kind, array == 2 ? AccessKind::Write : AccessKind::Read);
    // a[i] after the index (5), guard (3) and both load addresses (4); b[i] back to back; c[i]
    // after the FADD (1) and its address (2).
    const std::uint32_t gap = i == 0 ? 12 : i == 64 ? 3 : 0;
    EXPECT_EQ(recs[i].r.gap_cycles, gap) << i;
  }
  // Default: footprint/3/4K threads.
  const Decoded def = decode(generate_to(dir, "vecadd", 12 << 20, {}, 1, "d.uvt"));
  EXPECT_EQ(def.meta.params["threads"], 1024);
  EXPECT_EQ(def.launches[0].size(), 3u * 1024);
}

TEST(Generators, TouchMicroTest) {
  TempDir dir;
  const Decoded d = decode(generate_to(
      dir, "touch", 0,
      {{"size", "2240K"}, {"offsets", "0K,64K,128K,256K,512K,1024K,2236K"}, {"delay_us", "500"}}));
  ASSERT_EQ(d.meta.allocations.size(), 1u);
  EXPECT_EQ(d.meta.allocations[0].name, "buf");
  EXPECT_EQ(d.meta.allocations[0].size, 2240u * 1024);
  EXPECT_EQ(d.meta.kernels[0].name, "touch");
  EXPECT_EQ(d.meta.kernels[0].threadblocks(), 1u);
  EXPECT_EQ(d.meta.kernels[0].block.count(), 1u);
  EXPECT_EQ(d.meta.params["clock_mhz"], 1500);
  EXPECT_EQ(d.meta.params["delay_us"], 500);
  EXPECT_EQ(d.meta.params["offsets"],
            (nlohmann::json{0, 65536, 131072, 262144, 524288, 1048576, 2236 * 1024}));
  ASSERT_EQ(d.host.size(), 3u);
  EXPECT_EQ(d.host[0].type, HostEventType::CpuAccess);
  EXPECT_EQ(d.host[0].size, 2240u * 1024);
  const std::uint64_t offs[] = {0, 64, 128, 256, 512, 1024, 2236};
  ASSERT_EQ(d.launches[0].size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(d.launches[0][i].r.va, kFirstAllocationBase + offs[i] * 1024);
    EXPECT_EQ(d.launches[0][i].r.bytes, 4u);
    // The first read after its address (2 slots), the others after the 500 us spin-wait.
    EXPECT_EQ(d.launches[0][i].r.gap_cycles, i == 0 ? 2u : 750000u);
  }
  EXPECT_EQ(
      error_of([&] {
        generate("touch", 0, {{"offsets", "0,4K"}, {"delay_us", "10000000"}}, 1, dir.file("x.uvt"));
      }),
      "--param delay_us: delay_us * clock_mhz = 15000000000 cycles does not fit the 32-bit "
      "gap field");
}

}  // namespace
}  // namespace uvmsim::gen

namespace uvmsim::test {
namespace {

TEST(StreamGenerator, GridStrideCoversEveryElementOnce) {
  // grid=2 blocks of 64 threads over 1024 floats: each warp loops 8 times, and the trace holds
  // exactly the same (array, element-run) accesses as the one-element-per-thread launch.
  TempDir d;
  const auto one = d.file("one.uvt"), strided = d.file("strided.uvt");
  cli_ok({"gen", "stream", "--footprint", "12K", "--param", "block=64", "-o", one});
  cli_ok({"gen", "stream", "--footprint", "12K", "--param", "block=64", "--param", "grid=2", "-o",
          strided});
  auto records = [](const std::string& path) {
    trace::TraceReader r(path);
    std::multiset<std::pair<Addr, int>> out;
    auto ls = r.launch(0);
    trace::ThreadblockView tb;
    std::vector<trace::WarpStream> ws;
    std::size_t per_warp_max = 0;
    while (ls.next(tb)) {
      tb.warp_streams(ws);
      for (auto& w : ws) {
        std::size_t n = 0;
        trace::AccessRecord rec;
        while (w.next(rec)) out.insert({rec.va, static_cast<int>(rec.kind)}), ++n;
        per_warp_max = std::max(per_warp_max, n);
      }
      ls.release(tb);
    }
    return std::make_pair(out, per_warp_max);
  };
  const auto [a, a_max] = records(one);
  const auto [b, b_max] = records(strided);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 3u * 1024 / 32);
  EXPECT_EQ(a_max, 3u);
  EXPECT_EQ(b_max, 3u * 8);
}

}  // namespace
}  // namespace uvmsim::test
