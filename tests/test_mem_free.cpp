// cudaFree in traces (issue 18 #11): the MemFree host event releases an allocation's GPU chunks
// and host pages without a copy-back (uvm_va_range_destroy), its chunks serve later allocations
// without evictions or PMA calls, the eviction policies forget it, and a trace that uses freed
// memory is rejected. Also the text importer's `free` line and the generators that free.
#include <gtest/gtest.h>

#include "placement_test_util.h"

namespace uvmsim::test {
namespace {

constexpr std::uint64_t M = 1 << 20;

/// X (4 MB) and Y (4 MB); GPU memory for two chunks. The kernel reads all of X, X is freed (or
/// not), then the kernel reads all of Y.
std::string x_then_y(const TempDir& d, bool free_x, bool touch_x_again = false) {
  const auto t = d.file(free_x ? "free.uvt" : "keep.uvt");
  Program p({{"X", 4 * M}, {"Y", 4 * M}});
  p.open(t);
  p.walk(0, {{0, 0, 4 * M}});
  if (free_x) {
    trace::HostEvent f;
    f.type = trace::HostEventType::MemFree;
    f.va = p.base(0);
    p.w->host_event(f);
  }
  p.walk(0, {{1, 0, 4 * M}});
  if (touch_x_again) p.walk(0, {{0, 0, 4096}});
  p.finish();
  return t;
}

TEST(MemFree, ReleasesChunksWithoutCopyBack) {
  TempDir d;
  const auto keep = run_sim(x_then_y(d, false), {"engine.prefetch=none"}, 4 * M);
  const auto free = run_sim(x_then_y(d, true), {"engine.prefetch=none"}, 4 * M);
  // Without the free, Y's blocks evict X's and copy its 4 MB back.
  EXPECT_EQ(num(keep["evictions"]), 2u);
  EXPECT_EQ(num(keep["dtoh_bytes_by_cause"]["eviction"]), 4 * M);
  EXPECT_EQ(num(keep["driver"]["frees"]), 0u);
  // With it, X's chunks go back to the free list: no eviction, nothing copied, no PMA call.
  EXPECT_EQ(num(free["evictions"]), 0u);
  EXPECT_EQ(num(free["dtoh_bytes"]), 0u);
  EXPECT_EQ(num(free["driver"]["frees"]), 1u);
  EXPECT_EQ(num(free["driver"]["freed_gpu_pages"]), 1024u);
  EXPECT_EQ(num(free["driver"]["freed_cpu_pages"]), 0u);  // X never had host pages
  EXPECT_EQ(num(free["driver"]["chunk_allocations"]), 4u);
  EXPECT_EQ(num(free["driver"]["pma_calls"]), 1u);
  // The free itself: the host waits for the device, then cost.block_ns per block (2 blocks).
  EXPECT_EQ(num(free["accesses"]), num(keep["accesses"]));
}

TEST(MemFree, EvictionPoliciesForgetTheFreedChunks) {
  // Every policy hears on_freed (by default as an eviction): none may return X's blocks as a
  // victim later. A third allocation needs a victim after the free.
  TempDir d;
  const auto t = d.file("p.uvt");
  Program p({{"X", 4 * M}, {"Y", 4 * M}, {"Z", 2 * M}});
  p.open(t);
  p.walk(0, {{0, 0, 2 * M}, {1, 0, 2 * M}});  // X's first block, Y's first block
  trace::HostEvent f;
  f.type = trace::HostEventType::MemFree;
  f.va = p.base(0);
  p.w->host_event(f);
  p.walk(0, {{1, 2 * M, 2 * M}, {2, 0, 2 * M}});  // Y's second block takes X's chunk; Z evicts
  p.finish();
  for (const char* e : {"driver", "lru", "lfu", "cp", "tournament", "leu", "mru", "random"}) {
    SCOPED_TRACE(e);
    nlohmann::json s;
    ASSERT_NO_THROW(
        s = run_sim(t, {std::string("engine.eviction=") + e, "engine.prefetch=none"}, 4 * M));
    EXPECT_EQ(num(s["evictions"]), 1u);
    EXPECT_EQ(num(s["driver"]["freed_gpu_pages"]), 512u);
  }
}

TEST(MemFree, UsingFreedMemoryIsAnError) {
  TempDir d;
  const auto t = x_then_y(d, true, true);
  EXPECT_EQ(error_of([&] { run_sim(t, {}, 4 * M); }),
            t + ": launch 2: accesses allocation 'X' after its MemFree (cudaFree)");
}

TEST(MemFree, HostEventErrorsNameTheEvent) {
  TempDir d;
  auto make = [&](const std::string& name, const std::vector<trace::HostEvent>& events) {
    const auto t = d.file(name);
    Program p({{"X", 2 * M}});
    p.open(t);
    for (const auto& e : events) p.w->host_event(e);
    p.finish();
    return t;
  };
  trace::HostEvent f;
  f.type = trace::HostEventType::MemFree;
  f.va = kPlaceBase + 4096;
  const auto not_base = make("nb.uvt", {f});
  EXPECT_EQ(error_of([&] { run_sim(not_base, {}, 4 * M); }),
            not_base + ": host event MemFree: va 0x7f0000001000 is not the base of an allocation");
  f.va = kPlaceBase;
  const auto twice = make("tw.uvt", {f, f});
  EXPECT_EQ(error_of([&] { run_sim(twice, {}, 4 * M); }),
            twice + ": host event MemFree: allocation 'X' freed twice");
  trace::HostEvent cpu;
  cpu.type = trace::HostEventType::CpuAccess;
  cpu.va = kPlaceBase + 8192;
  cpu.size = 4096;
  cpu.kind = AccessKind::Write;
  const auto after = make("af.uvt", {cpu, f, cpu});
  EXPECT_EQ(error_of([&] { run_sim(after, {}, 4 * M); }),
            after + ": host event CpuAccess: touches allocation 'X' after its MemFree (cudaFree)");
  // Freeing what the CPU touched releases its host pages.
  const auto ok = make("ok.uvt", {cpu, f});
  const auto s = run_sim(ok, {}, 4 * M);
  EXPECT_EQ(num(s["driver"]["freed_cpu_pages"]), 1u);
  EXPECT_EQ(num(s["driver"]["frees"]), 1u);
}

TEST(MemFree, TextImportAndTraceVersion) {
  TempDir d;
  const auto in = d.file("a.accesses");
  {
    std::ofstream f(in);
    f << "uvmsim-access-list 1\n"
         "alloc 0x7f0000000000 2M managed x\n"
         "alloc 0x7f0000400000 2M managed y\n"
         "kernel k 1 32\n"
         "launch k\n"
         "0 0 r 0x7f0000000000 128 0x10\n"
         "free 0x7f0000000000\n"
         "launch k\n"
         "0 0 r 0x7f0000400000 128 0x10\n";
  }
  const auto t = d.file("a.uvt");
  cli_ok({"trace", "import", "text", in, "-o", t});
  const auto info = nlohmann::json::parse(cli_ok({"trace", "info", t, "--json"}).out);
  EXPECT_EQ(info["format_version"], 2);
  EXPECT_EQ(info["host_events"]["MemFree"], 1);
  const auto dump = cli_ok({"trace", "dump", t, "--host-only"}).out;
  EXPECT_NE(dump.find("MemFree va=0x7f0000000000"), std::string::npos) << dump;
  const auto s = run_sim(t, {}, 2 * M);  // one chunk: y takes x's
  EXPECT_EQ(num(s["evictions"]), 0u);
  EXPECT_EQ(num(s["driver"]["frees"]), 1u);
  // A malformed line names the field.
  {
    std::ofstream f(in);
    f << "uvmsim-access-list 1\nfree\n";
  }
  const auto bad = cli({"trace", "import", "text", in, "-o", d.file("b.uvt")});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find(in + ":2: free.address:"), std::string::npos) << bad.err;
}

TEST(MemFree, GeneratorsFreeWhereTheProgramDoes) {
  TempDir d;
  const auto t = d.file("k.uvt");
  cli_ok({"gen", "kmeans", "--footprint", "2M", "--param", "iters=2", "-o", t});
  const auto info = nlohmann::json::parse(cli_ok({"trace", "info", t, "--json"}).out);
  EXPECT_EQ(info["format_version"], 2);
  EXPECT_EQ(info["host_events"]["MemFree"], 4);  // deallocateMemory() after the last iteration
  const auto s = run_sim(t, {});
  EXPECT_EQ(num(s["driver"]["frees"]), 4u);
  EXPECT_EQ(num(s["evictions"]), 0u);
  // A generator whose program frees at exit only stays version 1.
  const auto v = d.file("v.uvt");
  cli_ok({"gen", "vecadd", "--param", "threads=64", "-o", v});
  EXPECT_EQ(nlohmann::json::parse(cli_ok({"trace", "info", v, "--json"}).out)["format_version"], 1);
}

}  // namespace
}  // namespace uvmsim::test
