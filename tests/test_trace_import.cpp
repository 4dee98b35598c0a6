// `uvmsim trace import`: the access-list, NVBit mem_trace and Accel-Sim importers on the sample
// inputs in tests/data/import (exact records, host events and allocations), the regrouping in
// bounded memory (spilled runs give the same file as an in-memory import), error reporting, and
// robustness against truncated and corrupted inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "tests/test_util.h"
#include "traces/import/accelsim.h"
#include "traces/import/import_builder.h"
#include "traces/import/line_reader.h"
#include "traces/import/nvbit.h"
#include "traces/import/range_inference.h"
#include "traces/import/sass.h"
#include "traces/import/text_format.h"
#include "traces/import/tokens.h"
#include "traces/trace.h"

namespace uvmsim {
namespace {

using namespace trace;
using namespace trace::import;
using test::cli;
using test::cli_ok;
using test::TempDir;

const std::string kData = std::string(UVMSIM_SOURCE_DIR) + "/tests/data/import/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// One decoded record with where it is: launch, threadblock, warp.
struct Rec {
  std::uint32_t launch;
  std::uint64_t tb;
  std::uint32_t warp;
  AccessKind kind;
  Addr va;
  std::uint32_t bytes, ref, gap, repeat;
  bool operator==(const Rec&) const = default;
};

std::ostream& operator<<(std::ostream& o, const Rec& r) {
  return o << "{L" << r.launch << " tb" << r.tb << " w" << r.warp << " " << to_string(r.kind)
           << " 0x" << std::hex << r.va << std::dec << " b" << r.bytes << " ref" << r.ref << " gap"
           << r.gap << " x" << r.repeat << "}";
}

std::vector<Rec> records(const std::string& path) {
  TraceReader r(path);
  std::vector<Rec> out;
  std::vector<WarpStream> warps;
  for (std::uint32_t l = 0; l < r.launches().size(); ++l) {
    LaunchStream s = r.launch(l);
    ThreadblockView tb;
    while (s.next(tb)) {
      tb.warp_streams(warps);
      for (std::uint32_t w = 0; w < warps.size(); ++w) {
        AccessRecord a;
        while (warps[w].next(a)) {
          out.push_back({l, tb.tb_id, w, a.kind, a.va, a.bytes, a.ref_id, a.gap_cycles, a.repeat});
        }
      }
      s.release(tb);
    }
  }
  return out;
}

std::vector<HostEvent> host_events(const std::string& path) {
  TraceReader r(path);
  std::vector<HostEvent> out;
  HostEvent ev;
  while (r.next_host_event(ev)) out.push_back(ev);
  return out;
}

HostEvent cpu(AccessKind kind, Addr va, std::uint64_t size) {
  HostEvent e;
  e.type = HostEventType::CpuAccess;
  e.kind = kind;
  e.va = va;
  e.size = size;
  return e;
}

HostEvent launch_ev(std::uint32_t kernel, std::uint32_t index, std::int32_t iteration = -1) {
  HostEvent e;
  e.type = HostEventType::KernelLaunch;
  e.kernel_id = kernel;
  e.launch_index = index;
  e.iteration = iteration;
  return e;
}

HostEvent sync_ev() {
  HostEvent e;
  e.type = HostEventType::Synchronize;
  return e;
}

constexpr AccessKind R = AccessKind::Read, W = AccessKind::Write, A = AccessKind::Atomic;

/// Imports with the API (no CLI): `format` text or nvbit, from a string.
ImportReport import_string(const std::string& format, const std::string& text,
                           const std::string& out, std::size_t memory = 256 << 20,
                           std::size_t max_runs = 128) {
  ImportOptions o;
  o.tmpdir = std::filesystem::path(out).parent_path();
  o.memory_bytes = memory;
  o.max_runs = max_runs;
  ImportBuilder b(o);
  b.metadata().workload = "t";
  std::istringstream in(text);
  if (format == "text") {
    import_text(in, "in.txt", b);
  } else {
    import_nvbit(in, "in.log", b);
  }
  return b.write(out);
}

/// The UserError message of importing `text`, or "" if it imports.
std::string import_error(const std::string& format, const std::string& text) {
  TempDir dir;
  return test::error_of([&] { import_string(format, text, dir.file("t.uvt")); });
}

// ---- building blocks ----------------------------------------------------------------------------

TEST(TraceImportParts, ClassifySass) {
  const auto c = [](const char* op) { return classify_sass(op); };
  EXPECT_EQ(c("LDG.E.64").space, MemSpace::Global);
  EXPECT_EQ(c("LDG.E.64").kind, AccessKind::Read);
  EXPECT_EQ(c("LDG.E.64").bytes, 8u);
  EXPECT_EQ(c("LDG.E.128.CONSTANT").bytes, 16u);
  EXPECT_EQ(c("LDG.E").bytes, 4u);
  EXPECT_EQ(c("LD.E.U8").bytes, 1u);
  EXPECT_EQ(c("STG.E.S16").kind, AccessKind::Write);
  EXPECT_EQ(c("STG.E.S16").bytes, 2u);
  EXPECT_EQ(c("ATOMG.E.ADD.F64.RN").kind, AccessKind::Atomic);
  EXPECT_EQ(c("ATOMG.E.ADD.F64.RN").bytes, 8u);
  EXPECT_EQ(c("RED.E.ADD.STRONG.GPU").kind, AccessKind::Atomic);
  EXPECT_EQ(c("LDGSTS.E.128").space, MemSpace::Global);
  EXPECT_EQ(c("STS.64").space, MemSpace::Shared);
  EXPECT_EQ(c("ATOMS.ADD").space, MemSpace::Shared);
  EXPECT_EQ(c("LDL.64").space, MemSpace::Local);
  EXPECT_EQ(c("LDC.64").space, MemSpace::Constant);
  EXPECT_EQ(c("FADD").space, MemSpace::None);
  EXPECT_EQ(c("LDGX").space, MemSpace::None);  // a prefix of a known opcode is not that opcode
}

TEST(TraceImportParts, Utf8) {
  EXPECT_TRUE(valid_utf8("vecAdd(double*, int)"));
  EXPECT_TRUE(valid_utf8("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // été € 😀
  EXPECT_FALSE(valid_utf8("k\xff"));
  EXPECT_FALSE(valid_utf8("\xc3"));              // truncated sequence
  EXPECT_FALSE(valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
}

TEST(TraceImportParts, RangeInferenceSplitsOnLargeGaps) {
  RangeInference r;
  r.add(0x7f0000000000, 256);  // array a: 1 KiB at a 2 MB boundary
  r.add(0x7f0000000300, 256);
  r.add(0x7f0000200000, 4);      // array b, 2 MB further: its own range
  r.add(0x7f00003ff000, 8);      // b continues into the next block ...
  r.add(0x7f0000400010, 8);      // ... across the boundary: one range
  r.add(0x7f0000900000 - 4, 8);  // an access straddling a 2 MB boundary
  const auto v = r.ranges();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].base, 0x7f0000000000u);
  EXPECT_EQ(v[0].size, 4096u);
  EXPECT_EQ(v[1].base, 0x7f0000200000u);
  EXPECT_EQ(v[1].size, 0x201000u);
  EXPECT_EQ(v[2].base, 0x7f00008ff000u);
  EXPECT_EQ(v[2].size, 0x2000u);
  EXPECT_EQ(v[2].name, "inferred2");
  EXPECT_EQ(v[2].id, 2u);
  EXPECT_TRUE(v[2].managed);
}

TEST(TraceImportParts, LineReader) {
  std::istringstream in("a b\r\n\nlast");
  LineReader r(in, "x.txt");
  std::string_view line;
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "a b");
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "");
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "last");
  EXPECT_EQ(r.line_number(), 3u);
  EXPECT_EQ(r.bytes_consumed(), 10u);
  EXPECT_FALSE(r.next(line));

  // Lines spanning the reader's 1 MiB blocks come back whole.
  std::string big;
  for (int i = 0; i < 300000; ++i) big += std::to_string(i) + "\n";
  std::istringstream in2(big);
  LineReader r2(in2, "big.txt");
  int n = 0;
  while (r2.next(line)) {
    ASSERT_EQ(line, std::to_string(n)) << "line " << n;
    ++n;
  }
  EXPECT_EQ(n, 300000);

  std::istringstream in3("ok\n" + std::string(5000, 'x') + "\n");
  LineReader r3(in3, "bin.dat", 4096);
  ASSERT_TRUE(r3.next(line));
  EXPECT_EQ(test::error_of([&] { r3.next(line); }),
            "bin.dat:2: line: longer than 4096 bytes (not a text trace, or a corrupt one)");
}

// ---- the access list -------------------------------------------------------------------------

TEST(TraceImportText, SampleGivesExactTrace) {
  TempDir dir;
  const std::string out = dir.file("saxpy.uvt");
  const auto r = cli_ok(
      {"trace", "import", "text", kData + "saxpy.accesses", "-o", out, "--progress", "none"});
  EXPECT_NE(r.out.find("allocations: 3 (declared), kernels: 2, launches: 3, host events: 10"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("access records: 18 imported, 17 written (17 accesses)"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.err, "");

  TraceReader tr(out);
  const Metadata& m = tr.metadata();
  EXPECT_EQ(m.workload, "saxpy");
  EXPECT_EQ(m.captured_gpu, "NVIDIA TITAN V");
  EXPECT_EQ(m.extra["importer"], "uvmsim trace import text");
  EXPECT_EQ(m.extra["allocations"], "declared");
  ASSERT_EQ(m.allocations.size(), 3u);
  EXPECT_EQ(m.allocations[0], (Allocation{0, "x", 0x7f0000000000, 1024, true, false}));
  EXPECT_EQ(m.allocations[1], (Allocation{1, "y", 0x7f0000200000, 1024, true, false}));
  EXPECT_EQ(m.allocations[2], (Allocation{2, "scratch", 0x7f0000400000, 4096, false, false}));
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].name, "saxpy");
  EXPECT_EQ(m.kernels[0].grid, (Dim3{2, 1, 1}));
  EXPECT_EQ(m.kernels[0].block, (Dim3{64, 1, 1}));
  EXPECT_EQ(m.kernels[0].regs_per_thread, 16u);
  EXPECT_EQ(m.kernels[1].name, "scale");
  EXPECT_EQ(m.kernels[1].shared_mem_bytes, 1024u);

  HostEvent advise;
  advise.type = HostEventType::MemAdvise;
  advise.va = 0x7f0000000000;
  advise.size = 1024;
  advise.advice = Advice::SetReadMostly;
  HostEvent prefetch;
  prefetch.type = HostEventType::MemPrefetch;
  prefetch.va = 0x7f0000200000;
  prefetch.size = 1024;
  const std::vector<HostEvent> expected_host = {cpu(W, 0x7f0000000000, 1024),
                                                cpu(W, 0x7f0000200000, 1024),
                                                advise,
                                                prefetch,
                                                launch_ev(0, 0),
                                                sync_ev(),
                                                launch_ev(1, 1, 0),
                                                launch_ev(1, 2, 1),
                                                sync_ev(),
                                                cpu(R, 0x7f0000200000, 1024)};
  EXPECT_EQ(host_events(out), expected_host);

  // Blocks and warps regrouped; cycles became gaps (0 for a warp's first access); the store
  // printed as two half-warp lines (same pc, cycle and page) is one 128-byte record; ref ids are
  // per (kernel, pc), shared by both launches of `scale`.
  const std::vector<Rec> expected = {
      {0, 0, 0, R, 0x7f0000000000, 128, 0, 0, 1},   {0, 0, 0, R, 0x7f0000200000, 128, 1, 40, 1},
      {0, 0, 0, W, 0x7f0000200000, 128, 2, 360, 1}, {0, 0, 1, R, 0x7f0000000080, 128, 0, 0, 1},
      {0, 0, 1, R, 0x7f0000200080, 128, 1, 40, 1},  {0, 0, 1, W, 0x7f0000200080, 128, 2, 366, 1},
      {0, 1, 0, R, 0x7f0000000100, 128, 0, 0, 1},   {0, 1, 0, R, 0x7f0000200100, 128, 1, 50, 1},
      {0, 1, 0, W, 0x7f0000200100, 128, 2, 348, 1}, {0, 1, 1, R, 0x7f0000000180, 128, 0, 0, 1},
      {0, 1, 1, R, 0x7f0000200180, 128, 1, 46, 1},  {0, 1, 1, W, 0x7f0000200180, 128, 2, 368, 1},
      {1, 0, 0, R, 0x7f0000200000, 128, 3, 0, 1},   {1, 0, 0, W, 0x7f0000200000, 128, 4, 20, 1},
      {1, 0, 0, R, 0x7f0000400000, 4, 3, 10, 1},    {2, 0, 0, R, 0x7f0000200000, 128, 3, 0, 1},
      {2, 0, 0, W, 0x7f0000200000, 128, 4, 5, 1}};
  EXPECT_EQ(records(out), expected);
}

TEST(TraceImportText, DeterministicOutput) {
  TempDir dir;
  for (const char* name : {"a.uvt", "b.uvt"}) {
    cli_ok({"trace", "import", "text", kData + "saxpy.accesses", "-o", dir.file(name), "--progress",
            "none"});
  }
  EXPECT_EQ(read_file(dir.file("a.uvt")), read_file(dir.file("b.uvt")));
}

/// A 40,000-line access list, printed in a shuffled (interleaved) order.
std::string shuffled_list(std::uint64_t seed) {
  std::string s =
      "uvmsim-access-list 1\nalloc 0x7f0000000000 64M managed a\nkernel k 100 256\nlaunch k\n";
  std::vector<std::string> lines;
  // Per warp, 50 accesses in program order (increasing cycle) that the shuffle must keep.
  std::vector<std::vector<std::string>> per_warp;
  for (int tb = 0; tb < 100; ++tb) {
    for (int w = 0; w < 8; ++w) {
      per_warp.emplace_back();
      for (int i = 0; i < 50; ++i) {
        const std::uint64_t va =
            0x7f0000000000 + ((tb * 8 + w) * 50 + i) * std::uint64_t{4096} % (64 << 20);
        per_warp.back().push_back(std::to_string(tb) + " " + std::to_string(w) + " " +
                                  (i % 3 ? "r" : "w") + " " + std::to_string(va) + " 128 " +
                                  std::to_string(i % 4) + " " + std::to_string(i * 10 + tb));
      }
    }
  }
  // Interleave: repeatedly take the next line of a random warp.
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> next(per_warp.size(), 0);
  std::size_t left = per_warp.size() * 50;
  while (left > 0) {
    const std::size_t w = rng() % per_warp.size();
    if (next[w] == 50) continue;
    s += per_warp[w][next[w]++] + "\n";
    --left;
  }
  s += "sync\n";
  return s;
}

TEST(TraceImportText, SpilledRunsGiveTheSameTrace) {
  TempDir dir;
  const std::string text = shuffled_list(7);
  // 64 KiB of memory holds 1024 records: the 40,000 are sorted in 40 runs on disk and merged.
  const auto spilled = import_string("text", text, dir.file("spilled.uvt"), 64 << 10);
  EXPECT_EQ(spilled.spill_runs, 40u);
  EXPECT_GT(spilled.spill_bytes, 0u);
  const auto in_memory = import_string("text", text, dir.file("memory.uvt"));
  EXPECT_EQ(in_memory.spill_runs, 0u);
  EXPECT_EQ(read_file(dir.file("spilled.uvt")), read_file(dir.file("memory.uvt")));
  // At most 8 runs on disk: merged into one each time 8 accumulate, the same trace again.
  const auto merged = import_string("text", text, dir.file("merged.uvt"), 64 << 10, 8);
  EXPECT_EQ(merged.spill_runs, 40u);
  EXPECT_EQ(merged.spill_merges, 5u);
  EXPECT_EQ(read_file(dir.file("merged.uvt")), read_file(dir.file("memory.uvt")));
  // Another interleaving of the same program gives the same trace.
  import_string("text", shuffled_list(8), dir.file("other.uvt"), 64 << 10);
  EXPECT_EQ(read_file(dir.file("other.uvt")), read_file(dir.file("memory.uvt")));

  const auto recs = records(dir.file("spilled.uvt"));
  ASSERT_EQ(recs.size(), 40000u);
  // Program order within each warp: gaps are the cycle steps (10), the first access 0.
  for (std::size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].gap, i % 50 == 0 ? 0u : 10u) << i;
  }
  EXPECT_EQ(recs[49 * 50 + 7].tb, 6u);
  // No temporary files are left behind.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.file(""))) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 4u);
}

TEST(TraceImportText, InfersAllocationsWhenNoneAreDeclared) {
  TempDir dir;
  const auto r = import_string("text",
                               "uvmsim-access-list 1\nkernel k 1 32\nlaunch k\n"
                               "0 0 r 0x7f0000000010 4 0\n0 0 w 0x7f0000003000 4 1\n",
                               dir.file("t.uvt"));
  EXPECT_EQ(r.allocations_source, "inferred");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].substr(0, 59),
            "no allocations given: inferred 1 managed range(s) (16384 by");
  TraceReader tr(dir.file("t.uvt"));
  ASSERT_EQ(tr.metadata().allocations.size(), 1u);
  EXPECT_EQ(tr.metadata().allocations[0],
            (Allocation{0, "inferred0", 0x7f0000000000, 0x4000, true, false}));
}

TEST(TraceImportText, SystemAllocationKind) {
  // `alloc BASE SIZE system`: malloc/mmap memory (docs/platforms.md), pageable, kind recorded.
  TempDir dir;
  import_string("text",
                "uvmsim-access-list 1\nalloc 0x7f0000000000 64K system s\nkernel k 1 32\n"
                "launch k\n0 0 r 0x7f0000000010 4 0\n",
                dir.file("t.uvt"));
  TraceReader tr(dir.file("t.uvt"));
  ASSERT_EQ(tr.metadata().allocations.size(), 1u);
  Allocation want{0, "s", 0x7f0000000000, 0x10000, true, false};
  want.system = true;
  EXPECT_EQ(tr.metadata().allocations[0], want);
}

TEST(TraceImportText, WarnsAboutAccessesOutsideAllocationsAndBackwardCycles) {
  TempDir dir;
  const auto r = import_string("text",
                               "uvmsim-access-list 1\nalloc 0x10000 4K\nkernel k 1 32\nlaunch k\n"
                               "0 0 r 0x10000 4 0 100\n0 0 r 0x90000 4 0 90\n",
                               dir.file("t.uvt"));
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_EQ(r.warnings[0],
            "1 access records lie outside every allocation (simulated as device memory, which "
            "never faults)");
  EXPECT_EQ(r.warnings[1],
            "1 accesses whose cycle is earlier than their warp's previous access (gap 0)");
  EXPECT_EQ(records(dir.file("t.uvt"))[1].gap, 0u);
}

TEST(TraceImportText, ErrorsNameFileLineAndField) {
  const std::string h = "uvmsim-access-list 1\n";
  const std::string k = h + "alloc 0x10000 64K managed a\nkernel k 2 64\n";
  const std::string l = k + "launch k\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "in.txt: header: empty input (expected 'uvmsim-access-list 1')"},
      {"# only a comment\nalloc 1 2\n",
       "in.txt:2: header: expected 'uvmsim-access-list 1' as the first line (not a uvmsim access "
       "list)"},
      {"uvmsim-access-list 2\n",
       "in.txt:1: header.version: unsupported access-list version 2 (this build of uvmsim reads "
       "version 1)"},
      {h + "frob 1\n",
       "in.txt:2: directive: unknown directive 'frob' (alloc, kernel, launch, prefetch, advise, "
       "sync, cpu, free, workload, gpu, or an access line starting with its threadblock)"},
      {h + "alloc 0x10000 12Q\n",
       "in.txt:2: alloc.size: invalid size '12Q' (bytes, K/M/G/T suffix, or 0x hex)"},
      {h + "alloc 0x10000 0\n", "in.txt:2: alloc: size must be positive"},
      {k + "alloc 0x18000 4K\n", "in.txt:4: alloc: range overlaps allocation 0 'a'"},
      {h + "alloc 0x10000 4K pinned\n",
       "in.txt:2: alloc.kind: expected managed, device, host-pinned or system, got 'pinned'"},
      {h + "kernel k 2 2048\n",
       "in.txt:2: kernel: block 2048,1,1 has more than 1024 threads (CUDA's limit)"},
      {h + "kernel k 2147483647,65535,65535 32\n",
       "in.txt:2: kernel: grid 2147483647,65535,65535 has 9223090559730712575 threadblocks, more "
       "than the importer's limit of 4294967296"},
      {h + "kernel k 0 32\n",
       "in.txt:2: kernel.grid: invalid dimensions '0' (X[,Y[,Z]], positive)"},
      {h + "kernel k\xff 1 32\n", "in.txt:2: kernel.name: not valid UTF-8"},
      {h + "workload w\xc3\n", "in.txt:2: workload: not valid UTF-8"},
      {h + "kernel k 1 32 regs=x\n",
       "in.txt:2: kernel.regs: invalid number 'x' (decimal, or hex with 0x)"},
      {k + "launch q\n", "in.txt:4: launch.kernel: kernel 'q' is not declared by a kernel line"},
      {k + "0 0 r 0x10000 4 0\n", "in.txt:4: access: access line before the first launch line"},
      {l + "2 0 r 0x10000 4 0\n",
       "in.txt:5: access.tb: threadblock 2 outside the grid (2 threadblocks)"},
      {l + "0,1,0 0 r 0x10000 4 0\n",
       "in.txt:5: access.tb: threadblock 0,1,0 outside the grid 2,1,1"},
      {l + "0 2 r 0x10000 4 0\n", "in.txt:5: access.warp: warp 2 outside the block (2 warps)"},
      {l + "0 0 x 0x10000 4 0\n", "in.txt:5: access.kind: unknown kind 'x' (r, w, a or p)"},
      {l + "0 0 r 0x10000 0 0\n", "in.txt:5: access.bytes: out of range (1..2^32-1)"},
      {l + "0 0 r 0x10000\n", "in.txt:5: access.bytes: missing"},
      {l + "0 0 r 0x1000g 4 0\n",
       "in.txt:5: access.address: invalid number '0x1000g' (decimal, or hex with 0x)"},
      {l + "0 0 r 0x10000 4 0 5 6\n", "in.txt:5: access: unexpected '6'"},
      {l + "0 0 r 0x10000 4 0 99999999999999999999\n",
       "in.txt:5: access.cycle: invalid number '99999999999999999999' (decimal, or hex with 0x)"},
      {h + "advise 0x10000 4K set-readmostly gpu\n",
       "in.txt:2: advise.advice: unknown advice 'set-readmostly' (set-preferred-location, "
       "unset-preferred-location, set-accessed-by, unset-accessed-by, set-read-mostly, "
       "unset-read-mostly)"},
      {h + "prefetch 0x10000 4K gpu16\n",
       "in.txt:2: prefetch.destination: expected gpu, gpu0 ... gpu15 or cpu, got 'gpu16'"},
      {h + "prefetch 0x10000 4K host\n",
       "in.txt:2: prefetch.destination: expected gpu, gpu0 ... gpu15 or cpu, got 'host'"},
      {h + "cpu prefetch 0x10000 4K\n",
       "in.txt:2: cpu.kind: unknown kind 'prefetch' (read, write or atomic)"},
      {h + "sync now\n", "in.txt:2: sync: unexpected 'now'"},
  };
  for (const auto& [text, msg] : cases) EXPECT_EQ(import_error("text", text), msg) << text;
}

TEST(TraceImportText, CliErrorsAndExitCodes) {
  TempDir dir;
  const std::string out = dir.file("o.uvt");
  write_file(dir.file("bad.txt"), "uvmsim-access-list 1\nkernel k 1 32\nlaunch k\n0 5 r 0 4 0\n");
  auto r = cli({"trace", "import", "text", dir.file("bad.txt"), "-o", out, "--progress", "none"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "uvmsim trace: error: " + dir.file("bad.txt") +
                       ":4: access.warp: warp 5 outside the block (1 warps)\n");
  // Nothing is written under the output's name, and no partial file is left.
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
  // An existing output survives a failed import.
  write_file(out, "precious");
  r = cli({"trace", "import", "text", dir.file("bad.txt"), "-o", out, "--progress", "none"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(read_file(out), "precious");

  // Usage errors exit 2.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"trace", "import", "pin", "x", "-o", out},
           {"trace", "import", "text", "-o", out},
           {"trace", "import", "text", dir.file("bad.txt")},
           {"trace", "import"},
           {"trace", "import", "text", dir.file("bad.txt"), "-o", out, "--allocations", "a"},
           {"trace", "import", "text", dir.file("bad.txt"), "-o", out, "--frob"}}) {
    r = cli(args);
    EXPECT_EQ(r.code, 2) << args[2] << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  r = cli({"trace", "import", "pin", "x", "-o", out});
  EXPECT_EQ(r.err,
            "uvmsim trace: error: unknown format 'pin' (expected text, nvbit or accelsim) (see "
            "uvmsim trace --help)\n");
  r = cli({"trace", "import", "text", dir.file("missing.txt"), "-o", out});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "uvmsim trace: error: " + dir.file("missing.txt") + ": open: no such file\n");
  r = cli({"trace", "import", "text", dir.file("bad.txt"), "-o", out, "--memory", "12Q"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "uvmsim trace: error: --memory: invalid size '12Q'\n");
  r = cli(
      {"trace", "import", "text", dir.file("bad.txt"), "-o", out, "--tmpdir", dir.file("nowhere")});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "uvmsim trace: error: " + dir.file("nowhere") + ": --tmpdir: no such directory\n");
}

TEST(TraceImportText, Help) {
  auto r = cli_ok({"trace", "import", "--help"});
  EXPECT_NE(r.out.find("usage: uvmsim trace import FORMAT IN... -o OUT.uvt"), std::string::npos);
  for (const char* s : {"text ", "nvbit ", "accelsim ", "--allocations", "--cpu-init", "--memory",
                        "--tmpdir", "--progress"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
  r = cli_ok({"trace", "--help"});
  EXPECT_NE(r.out.find("uvmsim trace import FORMAT IN... -o OUT.uvt"), std::string::npos);
}

// ---- NVBit mem_trace -------------------------------------------------------------------------

TEST(TraceImportNvbit, SampleWithInferredAllocations) {
  TempDir dir;
  const std::string out = dir.file("v.uvt");
  const auto r = cli_ok(
      {"trace", "import", "nvbit", kData + "nvbit_vecadd.txt", "-o", out, "--progress", "none"});
  EXPECT_EQ(r.err,
            "uvmsim trace import: warning: no allocations given: inferred 3 managed range(s) "
            "(16384 bytes) from the touched addresses; extents less than 1 MB apart are merged "
            "and untouched parts are missing (give the real ranges: --allocations FILE, or alloc "
            "lines)\n"
            "uvmsim trace import: warning: 2 warp accesses to shared, local or constant memory "
            "(not UVM memory; dropped)\n");
  TraceReader tr(out);
  const Metadata& m = tr.metadata();
  EXPECT_EQ(m.workload, "nvbit_vecadd");
  ASSERT_EQ(m.allocations.size(), 3u);
  EXPECT_EQ(m.allocations[0], (Allocation{0, "inferred0", 0x7f9a40000000, 4096, true, false}));
  EXPECT_EQ(m.allocations[1], (Allocation{1, "inferred1", 0x7f9a40200000, 4096, true, false}));
  EXPECT_EQ(m.allocations[2], (Allocation{2, "inferred2", 0x7f9a40400000, 8192, true, false}));
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].name, "vecAdd(double*, double*, double*, int)");
  EXPECT_EQ(m.kernels[0].grid, (Dim3{2, 1, 1}));
  EXPECT_EQ(m.kernels[0].block, (Dim3{64, 1, 1}));
  EXPECT_EQ(m.kernels[0].regs_per_thread, 16u);
  EXPECT_EQ(m.kernels[1].shared_mem_bytes, 256u);
  EXPECT_EQ(host_events(out), (std::vector<HostEvent>{launch_ev(0, 0), launch_ev(1, 1)}));

  // Warp slots 2, 3 (CTA 0) and 6, 7 (CTA 1) become warps 0, 1; 32 lanes x 8 bytes in one page
  // are one 256-byte record; refs are per (kernel, opcode) as mem_trace prints no PC, so the
  // loads of a and b share one. The scale kernel: 24 active lanes (the rest print 0), the
  // shared-memory STS/LDS dropped, an atomic of 32 lanes on one word.
  const std::vector<Rec> expected = {
      {0, 0, 0, R, 0x7f9a40000000, 256, 0, 0, 1}, {0, 0, 0, R, 0x7f9a40200000, 256, 0, 0, 1},
      {0, 0, 0, W, 0x7f9a40400000, 256, 1, 0, 1}, {0, 0, 1, R, 0x7f9a40000100, 256, 0, 0, 1},
      {0, 0, 1, R, 0x7f9a40200100, 256, 0, 0, 1}, {0, 0, 1, W, 0x7f9a40400100, 256, 1, 0, 1},
      {0, 1, 0, R, 0x7f9a40000200, 256, 0, 0, 1}, {0, 1, 0, R, 0x7f9a40200200, 256, 0, 0, 1},
      {0, 1, 0, W, 0x7f9a40400200, 256, 1, 0, 1}, {0, 1, 1, R, 0x7f9a40000300, 256, 0, 0, 1},
      {0, 1, 1, R, 0x7f9a40200300, 256, 0, 0, 1}, {0, 1, 1, W, 0x7f9a40400300, 256, 1, 0, 1},
      {1, 0, 0, R, 0x7f9a40400000, 192, 2, 0, 1}, {1, 0, 0, W, 0x7f9a40400000, 192, 3, 0, 1},
      {1, 0, 0, A, 0x7f9a40401000, 128, 4, 0, 1}};
  EXPECT_EQ(records(out), expected);
}

TEST(TraceImportNvbit, SideFileAndCpuInit) {
  TempDir dir;
  const std::string out = dir.file("v.uvt");
  const auto r = cli_ok({"trace", "import", "nvbit", kData + "nvbit_vecadd.txt", "-o", out,
                         "--allocations", kData + "nvbit_vecadd.allocs", "--cpu-init", "--workload",
                         "vecadd", "--progress", "none"});
  EXPECT_EQ(r.err,
            "uvmsim trace import: warning: 2 warp accesses to shared, local or constant memory "
            "(not UVM memory; dropped)\n");
  TraceReader tr(out);
  EXPECT_EQ(tr.metadata().workload, "vecadd");
  EXPECT_EQ(tr.metadata().extra["allocations"], kData + "nvbit_vecadd.allocs");
  ASSERT_EQ(tr.metadata().allocations.size(), 3u);
  EXPECT_EQ(tr.metadata().allocations[2], (Allocation{2, "c", 0x7f9a40400000, 8192, true, false}));
  EXPECT_EQ(host_events(out), (std::vector<HostEvent>{
                                  cpu(W, 0x7f9a40000000, 1024), cpu(W, 0x7f9a40200000, 1024),
                                  cpu(W, 0x7f9a40400000, 8192), launch_ev(0, 0), launch_ev(1, 1)}));
  EXPECT_EQ(records(out).size(), 15u);
}

const std::string kLaunch =
    "MEMTRACE: CTX 0x0000000000000001 - LAUNCH - Kernel pc 0x0000000000001000 - Kernel name k - "
    "grid launch id 0 - grid size 2,1,1 - block size 64,1,1 - nregs 8 - shmem 0 - cuda stream id "
    "0\n";

std::string nv_access(const std::string& fields, const std::string& addrs) {
  return "MEMTRACE: CTX 0x0000000000000001 - " + fields + " - " + addrs + "\n";
}

TEST(TraceImportNvbit, OlderFormatWithoutGridLaunchIdAndWarpFolding) {
  TempDir dir;
  // Older mem_trace versions print "CTA x,y,z - warp W - OPCODE - addrs" without CTX and grid
  // launch id: the accesses belong to the latest launch. CTA 1 shows three warp slots, one more
  // than its two warps: the extra one is folded onto warp 0.
  const std::string text = kLaunch + "MEMTRACE: CTA 1,0,0 - warp 9 - LDG.E - 0x10000 0x10004\n" +
                           "MEMTRACE: CTA 1,0,0 - warp 3 - LDG.E - 0x20000\n" +
                           "MEMTRACE: CTA 1,0,0 - warp 12 - STG.E - 0x30000\n";
  const auto r = import_string("nvbit", text, dir.file("t.uvt"));
  const std::vector<Rec> expected = {{0, 1, 0, R, 0x20000, 4, 0, 0, 1},
                                     {0, 1, 0, W, 0x30000, 4, 1, 0, 1},
                                     {0, 1, 1, R, 0x10000, 8, 0, 0, 1}};
  EXPECT_EQ(records(dir.file("t.uvt")), expected);
  EXPECT_EQ(r.warnings.back(),
            "1 threadblocks with more warp ids than warps per block (extra ids folded onto warps "
            "0, 1, ...)");
}

TEST(TraceImportNvbit, ErrorsNameFileLineAndField) {
  const std::string addr = "0x0000000000010000";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {nv_access("grid_launch_id 0 - CTA 0,0,0 - warp 0 - LDG.E", addr),
       "in.log:1: access.grid_launch_id: grid launch 0 has no LAUNCH line before it"},
      {"MEMTRACE: CTA 0,0,0 - warp 0 - LDG.E - 0x10\n",
       "in.log:1: access: access line before any LAUNCH line"},
      {kLaunch + nv_access("grid_launch_id 0 - CTA 2,0,0 - warp 0 - LDG.E", addr),
       "in.log:2: access.cta: CTA 2,0,0 outside the launch's grid"},
      {kLaunch + nv_access("grid_launch_id 0 - CTA 0,0 - warp 0 - LDG.E", addr),
       "in.log:2: access.cta: invalid CTA '0,0' (x,y,z)"},
      {kLaunch + nv_access("grid_launch_id 0 - CTA 0,0,0 - warp x - LDG.E", addr),
       "in.log:2: access.warp: invalid warp 'x'"},
      {kLaunch + nv_access("grid_launch_id 0 - CTA 0,0,0 - warp 0 - LDG.E", "0x10 0xzz"),
       "in.log:2: access.addresses: invalid address '0xzz'"},
      {kLaunch + nv_access(
                     "grid_launch_id 0 - CTA 0,0,0 - warp 0 - LDG.E",
                     std::string(33 * 5, ' ').replace(0, 0, "") +
                         [] {
                           std::string s;
                           for (int i = 0; i < 33; ++i) s += "0x10 ";
                           return s;
                         }()),
       "in.log:2: access.addresses: more than 32 addresses"},
      {"MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x1 - Kernel name k - grid size 2,1 - "
       "nregs 8\n",
       "in.log:1: launch: no 'block size' field"},
      {"MEMTRACE: CTX 0x1 - LAUNCH - Kernel name k - grid size 2,1,1 - block size 2048,1,1\n",
       "in.log:1: kernel: block 2048,1,1 has more than 1024 threads (CUDA's limit)"},
      {kLaunch + "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 0,0,0 - warp 0 - LDG.E - 0x10000 0x1",
       ""},  // a complete last line without its newline is fine
      {kLaunch + "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 0,0",
       "in.log:2: access: expected 'CTA x,y,z - warp W - OPCODE - addresses'"},  // truncated
  };
  for (const auto& [text, msg] : cases) EXPECT_EQ(import_error("nvbit", text), msg) << text;
}

// ---- Accel-Sim ---------------------------------------------------------------------------------

TEST(TraceImportAccelsim, CommandListWithSideFile) {
  TempDir dir;
  const std::string out = dir.file("a.uvt");
  const auto r =
      cli_ok({"trace", "import", "accelsim", kData + "accelsim/kernelslist.g", "-o", out,
              "--allocations", kData + "accelsim/allocations.txt", "--progress", "none"});
  EXPECT_EQ(r.err,
            "uvmsim trace import: warning: 1 warp accesses to shared, local or constant memory "
            "(not UVM memory; dropped)\n");
  TraceReader tr(out);
  const Metadata& m = tr.metadata();
  ASSERT_EQ(m.allocations.size(), 3u);
  EXPECT_EQ(m.allocations[2], (Allocation{2, "c", 0x7f3a00400000, 65536, true, false}));
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].name, "_Z6vecAddPfS_S_i");
  EXPECT_EQ(m.kernels[0].regs_per_thread, 10u);
  EXPECT_EQ(m.kernels[1].name, "_Z6gatherPfi");
  EXPECT_EQ(m.kernels[1].shared_mem_bytes, 128u);
  // Host-to-device copies are the CPU writing the destination.
  EXPECT_EQ(host_events(out),
            (std::vector<HostEvent>{cpu(W, 0x7f3a00000000, 512), cpu(W, 0x7f3a00200000, 512),
                                    launch_ev(0, 0), launch_ev(1, 1)}));

  const auto recs = records(out);
  ASSERT_EQ(recs.size(), 29u);
  // vecAdd: five non-memory instructions before the first load (gap 5), FADD before the store.
  const std::vector<Rec> warp0 = {{0, 0, 0, R, 0x7f3a00000000, 128, 0, 5, 1},
                                  {0, 0, 0, R, 0x7f3a00200000, 128, 1, 0, 1},
                                  {0, 0, 0, W, 0x7f3a00400000, 128, 2, 1, 1}};
  EXPECT_EQ(std::vector<Rec>(recs.begin(), recs.begin() + 3), warp0);
  EXPECT_EQ(recs[11], (Rec{0, 1, 1, W, 0x7f3a00400180, 128, 2, 1, 1}));
  // gather: base + deltas put two lanes on each of 16 pages; the shared store is dropped but
  // counts as an instruction, so the half-warp store (mask 0000ffff, base + stride) has gap 3;
  // the predicated-off store has no access.
  for (int p = 0; p < 16; ++p) {
    EXPECT_EQ(recs[12 + p],
              (Rec{1, 0, 0, R, Addr{0x7f3a00400000} + 0x1000u * p, 8, 3, p == 0 ? 1u : 0u, 1}))
        << p;
  }
  EXPECT_EQ(recs[28], (Rec{1, 0, 0, W, 0x7f3a00400100, 64, 4, 3, 1}));
}

TEST(TraceImportAccelsim, KernelTracesGivenDirectlyAndInferredRanges) {
  TempDir dir;
  const std::string out = dir.file("a.uvt");
  const auto r = cli_ok({"trace", "import", "accelsim", kData + "accelsim/kernel-2.traceg",
                         kData + "accelsim/kernel-1.traceg", "-o", out, "--progress", "none"});
  EXPECT_NE(r.err.find("inferred 3 managed range(s) (73728 bytes)"), std::string::npos) << r.err;
  EXPECT_EQ(host_events(out), (std::vector<HostEvent>{launch_ev(0, 0), launch_ev(1, 1)}));
  TraceReader tr(out);
  EXPECT_EQ(tr.metadata().kernels[0].name, "_Z6gatherPfi");  // in the order given
  EXPECT_EQ(tr.metadata().allocations[2].size, 65536u);
}

/// Imports an Accel-Sim kernel trace given as text.
std::string accelsim_error(const std::string& text) {
  TempDir dir;
  return test::error_of([&] {
    ImportOptions o;
    o.tmpdir = dir.file("");
    ImportBuilder b(o);
    b.metadata().workload = "t";
    std::istringstream in(text);
    AccelsimParser(b).read_kernel(in, "k.traceg");
    b.write(dir.file("t.uvt"));
  });
}

TEST(TraceImportAccelsim, ErrorsNameFileLineAndField) {
  const std::string head =
      "-kernel name = k\n-grid dim = (1,1,1)\n-block dim = (64,1,1)\n"
      "-accelsim tracer version = 4\n\n#traces format = ...\n\n";
  const std::string tb = head + "#BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"-kernel name = k\n-block dim = (64,1,1)\n",
       "k.traceg: header: missing '-grid dim = (X,Y,Z)'"},
      {"hello\n", "k.traceg: header: missing '-kernel name = ...' (not a .traceg file?)"},
      {"-kernel name = k\n-grid dim = (1,x,1)\n",
       "k.traceg:2: header.grid_dim: invalid '(1,x,1)' (expected (X,Y,Z))"},
      {head + "#BEGIN_TB\nthread block = 1,0,0\n",
       "k.traceg:9: tb: thread block 1,0,0 outside the grid"},
      {tb + "insts = 1\n0000 ffffffff 0 LDG.E 0 4 1 0x10 4\n",
       "k.traceg: body: ends inside a threadblock (no #END_TB): truncated file"},
      {tb + "insts = 2\n0000 ffffffff 0 LDG.E 0 4 1 0x10 4\n#END_TB\n",
       "k.traceg:15: warp: warp 0 has 1 instructions, its 'insts =' line says 2"},
      {tb + "insts = 1\n0000 ffffffff 0 LDG.E 0 4 1 0x10 4\n0010 ffffffff 0 EXIT 0 0\n",
       "k.traceg:15: instruction: more instructions than the warp's 'insts = 1'"},
      {head + "#BEGIN_TB\nthread block = 0,0,0\nwarp = 2\n",
       "k.traceg:10: warp: warp 2 outside the block (2 warps)"},
      {tb + "insts = 1\n0000 ffffffff 0 LDG.E 0 4 3 0x10 4\n",
       "k.traceg:14: instruction.address_mode: invalid '3'"},
      {tb + "insts = 1\n0000 0000000f 0 LDG.E 0 4 0 0x10 0x14\n",
       "k.traceg:14: instruction.address: missing (truncated instruction line)"},
      {tb + "insts = 1\n0000 ffffffff 0 LDG.E 0 4 2 0x10 4 4\n",
       "k.traceg:14: instruction.delta: missing (truncated instruction line)"},
      {tb + "insts = 1\n0000 ffffffff 1 LDG.E 0 4 1 0x10 4\n",
       "k.traceg:14: instruction.src_num: missing (truncated instruction line)"},
      {tb + "insts = 1\n0000 1ffffffff 0 LDG.E 0 4 1 0x10 4\n",
       "k.traceg:14: instruction.mask: invalid '1ffffffff'"},
      {head + "warp = 0\n", "k.traceg:8: warp: 'warp' line before 'thread block'"},
      {head + "0000 ffffffff 0 EXIT 0 0\n",
       "k.traceg:8: instruction: instruction line outside a warp"},
  };
  for (const auto& [text, msg] : cases) EXPECT_EQ(accelsim_error(text), msg) << text;
}

TEST(TraceImportAccelsim, CommandListErrors) {
  TempDir dir;
  const auto run = [&](const std::string& list) {
    write_file(dir.file("kernelslist.g"), list);
    return cli({"trace", "import", "accelsim", dir.file("kernelslist.g"), "-o", dir.file("o.uvt"),
                "--progress", "none"});
  };
  const std::string where = "uvmsim trace: error: " + dir.file("kernelslist.g");
  auto r = run("kernel-1.trace\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, where +
                       ":1: kernel: 'kernel-1.trace' is a raw trace: run Accel-Sim's "
                       "post-traces-processing on the kernelslist to get .traceg files and "
                       "kernelslist.g\n");
  r = run("MemcpyHtoD,0x10,x\n");
  EXPECT_EQ(r.err, where + ":1: memcpy.bytes: invalid 'x'\n");
  r = run("launch everything\n");
  EXPECT_EQ(r.err, where +
                       ":1: command: expected MemcpyHtoD,... or kernel-N.traceg, got 'launch "
                       "everything'\n");
  r = run("kernel-9.traceg\n");
  EXPECT_EQ(r.err, "uvmsim trace: error: " + dir.file("kernel-9.traceg") +
                       ": open: cannot open: No such file or directory\n");
}

// ---- robustness: truncated and corrupted inputs ------------------------------------------------

/// Imports `text` as `format`; a UserError is an accepted outcome, anything else fails the test.
void import_any(const std::string& format, const std::string& text, const TempDir& dir) {
  try {
    ImportOptions o;
    o.tmpdir = dir.file("");
    o.memory_bytes = 64 << 10;
    ImportBuilder b(o);
    b.metadata().workload = "t";
    std::istringstream in(text);
    if (format == "text") {
      import_text(in, "in", b);
    } else if (format == "nvbit") {
      import_nvbit(in, "in", b);
    } else {
      AccelsimParser(b).read_kernel(in, "in");
    }
    b.write(dir.file("t.uvt"));
    (void)records(dir.file("t.uvt"));  // whatever was written reads back
  } catch (const UserError&) {
  }
}

TEST(TraceImportRobustness, TruncationsAndByteFlipsAreErrorsOrValidTraces) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {"text", read_file(kData + "saxpy.accesses")},
      {"nvbit", read_file(kData + "nvbit_vecadd.txt")},
      {"accelsim", read_file(kData + "accelsim/kernel-1.traceg")},
      {"accelsim", read_file(kData + "accelsim/kernel-2.traceg")}};
  std::mt19937_64 rng(1);
  for (const auto& [format, text] : inputs) {
    for (std::size_t cut = 0; cut < text.size(); cut += 1 + text.size() / 97) {
      SCOPED_TRACE(format + " cut at " + std::to_string(cut));
      import_any(format, text.substr(0, cut), dir);
    }
    for (int i = 0; i < 400; ++i) {
      std::string t = text;
      for (int f = 0; f < 3; ++f) t[rng() % t.size()] = static_cast<char>(rng() % 256);
      SCOPED_TRACE(format + " flip " + std::to_string(i));
      import_any(format, t, dir);
    }
  }
}

}  // namespace
}  // namespace uvmsim
