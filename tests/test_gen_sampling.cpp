// Generation at GB scale (issue 16): the k-sampling option of the O(N^3) generators keeps the
// page-level behaviour (docs/generators.md#reduced-fidelity-k-sampling), and the faster writer
// path (eager encoding, background compression) writes the same bytes.
#include <gtest/gtest.h>

#include <algorithm>

#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "tests/test_util.h"
#include "traces/generators/generator.h"
#include "traces/trace.h"
#include "traces/trace_codec.h"

namespace uvmsim::gen {
namespace {

using test::TempDir;
using trace::AccessRecord;

std::vector<std::uint8_t> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// What a trace does at page level, per warp and overall.
struct PageView {
  std::uint64_t records = 0;
  std::uint64_t accesses = 0;     // records expanded by their repeat counts
  std::set<Addr> pages;           // touched 4 KB pages
  std::vector<Addr> first_touch;  // pages in order of first touch (program order)
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::uint64_t> gap_sum;  // per (tb, warp)
};

PageView view(const std::string& path) {
  trace::TraceReader reader(path);
  PageView v;
  std::vector<trace::WarpStream> warps;
  for (std::uint32_t l = 0; l < reader.launches().size(); ++l) {
    trace::LaunchStream s = reader.launch(l);
    trace::ThreadblockView tb;
    while (s.next(tb)) {
      tb.warp_streams(warps);
      AccessRecord r;
      for (std::uint32_t w = 0; w < warps.size(); ++w) {
        std::uint64_t& gaps = v.gap_sum[{tb.tb_id, w}];
        while (warps[w].next(r)) {
          ++v.records;
          v.accesses += r.repeat;
          gaps += std::uint64_t{r.gap_cycles} * r.repeat;
          const Addr page = r.va >> kPageShift;
          if (v.pages.insert(page).second) v.first_touch.push_back(page);
        }
      }
      s.release(tb);
    }
  }
  return v;
}

std::string gen_to(const TempDir& dir, const std::string& name, std::uint64_t footprint,
                   const ParamMap& params, const std::string& file) {
  const std::string path = dir.file(file);
  generate(name, footprint, params, 1, path);
  return path;
}

/// Runs of a k loop of `steps` steps with ksample `s` and phase `phase`: step 0 alone, then a
/// run from step 1 and one from every later step k with (k + phase) % s == 0.
std::uint64_t runs(std::uint64_t steps, std::uint64_t phase, std::uint64_t s) {
  std::uint64_t r = 1 + (steps > 1 ? 1 : 0);
  for (std::uint64_t k = 2; k < steps; ++k) r += (k + phase) % s == 0 ? 1 : 0;
  return r;
}

// gemm at N = 256: B rows are 1 KB, four to a page, so a warp that writes every 8th step touches
// every other page of B; the phases of the other warps cover the rest.
TEST(GenSampling, GemmKeepsEveryPageAccessAndTheComputeOfEveryWarp) {
  TempDir dir;
  const std::uint64_t n = 256, fp = 3 * n * n * 4;
  const PageView full = view(gen_to(dir, "gemm", fp, {}, "full.uvt"));
  // 2048 warps, each: read C, 2 records per k step, write C.
  EXPECT_EQ(full.records, 2048u * (2 + 2 * 256));
  EXPECT_EQ(full.accesses, full.records);
  EXPECT_EQ(full.pages.size(), 3u * 64);  // A, B and C: 256 KiB each
  for (const std::uint64_t s : {2u, 8u, 32u}) {
    const PageView sampled =
        view(gen_to(dir, "gemm", fp, {{"ksample", std::to_string(s)}}, "s.uvt"));
    // Warp (block column bx, row i) has phase (bx + i) % s; per run a record of A and of B.
    std::uint64_t want = 0;
    for (std::uint64_t bx = 0; bx < n / 32; ++bx) {
      for (std::uint64_t i = 0; i < n; ++i) want += 2 + 2 * runs(n, (bx + i) % s, s);
    }
    EXPECT_EQ(sampled.records, want) << s;
    EXPECT_LT(sampled.records, full.records / s + 2048 * 6) << s;
    EXPECT_EQ(sampled.accesses, full.accesses) << s;
    EXPECT_EQ(sampled.pages, full.pages) << s;
    // A run's record repeats its step's work: every warp computes as much as in the full trace.
    EXPECT_EQ(sampled.gap_sum, full.gap_sum) << s;
  }
  // The exact count at s = 8 (docs/generators.md): 2048 warps, 68 or 70 records each.
  EXPECT_EQ(view(gen_to(dir, "gemm", fp, {{"ksample", "8"}}, "s8.uvt")).records, 142'336u);
}

// sgemm samples k-slices of 8: the accesses and every warp's compute stay exactly those of the
// full trace (a slice's instructions never straddle a page: 512 B of A and 32 B columns of B at
// aligned offsets), the pages are a subset (a block reads only its runs' first slices of A, and
// at this size few blocks share a page of A).
TEST(GenSampling, SgemmKeepsTheAccessesAndTheComputeOfEveryWarp) {
  TempDir dir;
  const std::uint64_t n = 256, fp = 3 * n * n * 4;
  const PageView full = view(gen_to(dir, "sgemm", fp, {}, "full.uvt"));
  for (const std::uint64_t s : {4u, 32u}) {
    const PageView sampled =
        view(gen_to(dir, "sgemm", fp, {{"ksample", std::to_string(s)}}, "s.uvt"));
    // 4 blocks of 8 warps; per run of slices 1 record of A and 4 of B; 5 records of C.
    std::uint64_t want = 0;
    for (std::uint64_t b = 0; b < 4; ++b) want += 8 * (5 * runs(n / 8, (b % 2 + b / 2) % s, s) + 5);
    EXPECT_EQ(sampled.records, want) << s;
    EXPECT_EQ(sampled.accesses, full.accesses) << s;
    EXPECT_EQ(sampled.gap_sum, full.gap_sum) << s;
    EXPECT_TRUE(std::includes(full.pages.begin(), full.pages.end(), sampled.pages.begin(),
                              sampled.pages.end()))
        << s;
  }
}

TEST(GenSampling, HellingerKeepsEveryPageAndAccess) {
  TempDir dir;
  const std::uint64_t n = 256, fp = 3 * n * n * 4;
  const PageView full = view(gen_to(dir, "hellinger", fp, {}, "full.uvt"));
  // 2048 warps of 2 rows x 16 columns. Rows are 1 KB apart and a warp's first row is even, so
  // a[i][k] and a[i+1][k] always share a page, as do its two rows of c: per k step one record
  // of A and one of B, then the store.
  EXPECT_EQ(full.records, 2048u * (2 * 256 + 1));
  const PageView s8 = view(gen_to(dir, "hellinger", fp, {{"ksample", "8"}}, "s8.uvt"));
  std::uint64_t want = 0;  // phase (block column + warp row) % 8
  for (std::uint64_t bx = 0; bx < n / 16; ++bx) {
    for (std::uint64_t wy = 0; wy < n / 2; ++wy) want += 1 + 2 * runs(n, (bx + wy) % 8, 8);
  }
  EXPECT_EQ(s8.records, want);
  EXPECT_EQ(s8.accesses, full.accesses);
  EXPECT_EQ(s8.pages, full.pages);
  EXPECT_EQ(s8.gap_sum, full.gap_sum);
}

TEST(GenSampling, TiledKernelsKeepEveryPageAndAccess) {
  TempDir dir;
  const std::uint64_t fp = 3 * 256 * 256 * 4;  // N = 256 with 8x8 tiles: 32 steps per block
  for (const char* name : {"mm-tiled", "syrk", "syr2k"}) {
    const PageView full = view(gen_to(dir, name, fp, {{"tile", "8"}}, "full.uvt"));
    const PageView s4 = view(gen_to(dir, name, fp, {{"tile", "8"}, {"ksample", "4"}}, "s4.uvt"));
    EXPECT_EQ(s4.pages, full.pages) << name;
    // syrk and syr2k size N by two matrices: N = 312, rows of 1248 bytes, so a warp's 4 tile
    // rows straddle a page boundary in some steps (two records) and not in others; a run
    // repeats its first step's split. Instructions (and so compute, checked below) are exact.
    EXPECT_NEAR(static_cast<double>(s4.accesses), static_cast<double>(full.accesses),
                static_cast<double>(full.accesses) * 1e-3)
        << name;
    EXPECT_EQ(s4.gap_sum, full.gap_sum) << name;
    EXPECT_LT(s4.records * 2, full.records) << name;  // loads drop ~4x; the stores of C stay
  }
  // mm-tiled: 32 x 32 blocks of two warps, each warp 4 rows of 8 floats of a tile; the 4 rows
  // (1 KB apart, starting at a multiple of 4) lie in one page. Per step (or run) one record per
  // operand, then the store of C.
  const PageView full = view(gen_to(dir, "mm-tiled", fp, {{"tile", "8"}}, "f.uvt"));
  EXPECT_EQ(full.records, 2048u * (2 * 32 + 1));
  EXPECT_EQ(full.accesses, full.records);
  const PageView s4 = view(gen_to(dir, "mm-tiled", fp, {{"tile", "8"}, {"ksample", "4"}}, "g.uvt"));
  std::uint64_t want = 0;  // phase (block column + block row) % 4, two warps per block
  for (std::uint64_t bx = 0; bx < 32; ++bx) {
    for (std::uint64_t by = 0; by < 32; ++by) want += 2 * (1 + 2 * runs(32, (bx + by) % 4, 4));
  }
  EXPECT_EQ(s4.records, want);
  EXPECT_EQ(s4.accesses, full.accesses);  // page-aligned rows: every step is one page
}

TEST(GenSampling, OneIsFullFidelity) {
  TempDir dir;
  const std::uint64_t fp = 3 * 128 * 128 * 4;
  for (const char* name : {"gemm", "hellinger", "mm-tiled", "syrk", "syr2k", "sgemm"}) {
    EXPECT_EQ(bytes_of(gen_to(dir, name, fp, {}, "a.uvt")),
              bytes_of(gen_to(dir, name, fp, {{"ksample", "1"}}, "b.uvt")))
        << name;
  }
}

TEST(GenSampling, BadValuesNameTheParam) {
  TempDir dir;
  const std::string out = dir.file("x.uvt");
  for (const char* bad : {"0", "33", "-1", "two", ""}) {
    EXPECT_EQ(test::error_of([&] {
                generate("gemm", 1 << 20, {{"ksample", bad}}, 1, out);
              }),
              std::string("--param ksample: expected an integer in [1, 32], got '") + bad + "'");
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  // On the command line a bad parameter is a usage error: one line, exit status 2.
  const auto r = test::cli({"gen", "hellinger", "--param", "ksample=64", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "uvmsim gen: error: --param ksample: expected an integer in [1, 32], got '64'\n");
  // Generators without the k loop do not take it.
  EXPECT_EQ(test::cli({"gen", "mvt", "--param", "ksample=2", "-o", out}).code, 2);
}

TEST(GenSampling, HelpOfOneGeneratorListsItsParams) {
  const auto r = test::cli_ok({"gen", "gemm", "--help"});
  EXPECT_NE(r.out.find("--param ksample=1  reduced fidelity"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  mvt "), std::string::npos) << r.out;  // only the named generator
  for (const char* name : {"gemm", "hellinger", "mm-tiled", "syrk", "syr2k", "sgemm"}) {
    const Generator* g = find_generator(name);
    ASSERT_NE(g, nullptr);
    bool has = false;
    for (const ParamSpec& p : g->params) has |= p.name == "ksample" && !p.doc.empty();
    EXPECT_TRUE(has) << name;
  }
}

// The writer's fast paths must not change a byte: synchronous and background compression give
// the same file, with many small chunks so that the compression thread is really used.
TEST(GenWriter, BackgroundCompressionWritesTheSameBytes) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::uint64_t>> cases = {
      {"gemm", 3 * 128 * 128 * 4},
      {"hellinger", 3 * 128 * 128 * 4},
      {"mvt", 4 << 20},
      {"stream", 4 << 20},
      {"bfs", 4 << 20},
      {"random", 16 << 20}};
  trace::WriterOptions opts;
  opts.chunk_raw_bytes = 4096;
  for (const auto& [name, fp] : cases) {
    trace::codec::set_background_compression(false);
    generate(name, fp, {}, 3, dir.file("s.uvt"), opts);
    trace::codec::set_background_compression(true);
    generate(name, fp, {}, 3, dir.file("a.uvt"), opts);
    const auto s = bytes_of(dir.file("s.uvt"));
    EXPECT_GT(s.size(), 4096u) << name;
    EXPECT_EQ(s, bytes_of(dir.file("a.uvt"))) << name;
  }
}

TEST(GenWriter, WarpInstructionGroupsLanesByPageInFirstTouchOrder) {
  TempDir dir;
  trace::Metadata meta;
  meta.workload = "t";
  place_allocations(meta, {{"a", 1 << 20}});
  trace::KernelInfo k;
  k.name = "k";
  k.block = {32, 1, 1};
  meta.kernels.push_back(k);
  const Addr b = meta.allocations[0].base;
  {
    trace::TraceWriter w(dir.file("w.uvt"), meta);
    w.begin_launch(0);
    w.begin_block(1);
    // Lanes alternate between pages 0 and 2, then visit page 1, then page 0 again.
    std::vector<Addr> va;
    for (int l = 0; l < 20; ++l) va.push_back(b + (l % 2 ? 2 * 4096 : 0) + 4 * l);
    for (int l = 20; l < 30; ++l) va.push_back(b + 4096 + 4 * l);
    va.push_back(b + 8);
    va.push_back(b + 3 * 4096);
    warp_instruction(w, 0, va, 4, AccessKind::Read, 7, 5);
    // A broadcast (all lanes at one address) and a coalesced access: one record each.
    warp_instruction(w, 0, std::vector<Addr>(32, b + 100), 4, AccessKind::Write, 8, 0);
    w.end_block();
    w.finish();
  }
  trace::TraceReader r(dir.file("w.uvt"));
  trace::LaunchStream s = r.launch(0);
  trace::ThreadblockView tb;
  ASSERT_TRUE(s.next(tb));
  std::vector<trace::WarpStream> warps;
  tb.warp_streams(warps);
  std::vector<AccessRecord> got;
  AccessRecord rec;
  while (warps[0].next(rec)) got.push_back(rec);
  ASSERT_EQ(got.size(), 5u);
  const std::vector<std::pair<Addr, std::uint32_t>> want = {
      {b, 11 * 4}, {b + 2 * 4096 + 4, 10 * 4}, {b + 4096 + 80, 10 * 4}, {b + 3 * 4096, 4}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].va, want[i].first) << i;
    EXPECT_EQ(got[i].bytes, want[i].second) << i;
    EXPECT_EQ(got[i].gap_cycles, i == 0 ? 5u : 0u) << i;
    EXPECT_EQ(got[i].ref_id, 7u);
  }
  EXPECT_EQ(got[4].va, b + 100);
  EXPECT_EQ(got[4].bytes, 128u);
  EXPECT_EQ(got[4].kind, AccessKind::Write);
}

// A failure of the compression thread (here: the disk is full) reaches the writer's caller.
TEST(GenWriter, BackgroundWriteErrorsReachTheCaller) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  trace::Metadata meta;
  meta.workload = "t";
  place_allocations(meta, {{"a", 64 << 20}});
  trace::KernelInfo k;
  k.name = "k";
  k.grid = {4096, 1, 1};
  k.block = {32, 1, 1};
  meta.kernels.push_back(k);
  trace::WriterOptions opts;
  opts.chunk_raw_bytes = 1024;
  const Addr b = meta.allocations[0].base;
  const auto write = [&] {
    trace::TraceWriter w("/dev/full", meta, opts);
    w.begin_launch(0);
    for (std::uint64_t tb = 0; tb < 4096; ++tb) {
      w.begin_block(1);
      for (std::uint64_t p = 0; p < 4; ++p) {
        AccessRecord r;
        r.va = b + (tb * 4 + p) * 4096;
        r.gap_cycles = static_cast<std::uint32_t>(tb);
        w.access(0, r);
      }
      w.end_block();
    }
    w.finish();
  };
  EXPECT_THROW(write(), UserError);
}

}  // namespace
}  // namespace uvmsim::gen
