// System-allocated memory on an ATS platform (Grace Hopper, driver.ats; docs/platforms.md):
// first-touch placement, remote reads over NVLink-C2C at the link model's bandwidth, OS pages of
// 4 KB or 64 KB, no eviction under oversubscription, and access-counter migration at the
// configured threshold. Exact values on micro-traces run on the gh200 preset.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/config.h"
#include "placement_test_util.h"
#include "sim/simulator.h"
#include "test_util.h"
#include "traces/trace.h"

namespace uvmsim::test {
namespace {

constexpr Addr kBase = 0x7f0000000000;
constexpr std::uint64_t kMB = 1 << 20;

struct MicroTrace {
  std::uint64_t size = 2 * kMB;
  bool system = true;
  bool cpu_init = false;  ///< a CpuAccess (write) of the whole allocation before the kernel
  std::uint32_t blocks = 1;
  /// Writes threadblock `tb`'s records (warp 0).
  std::function<void(trace::TraceWriter&, std::uint32_t tb)> body;
};

std::string write_trace(const TempDir& d, const std::string& name, const MicroTrace& m) {
  trace::Metadata meta;
  meta.workload = "system-memory";
  trace::Allocation a;
  a.id = 0;
  a.name = "A";
  a.base = kBase;
  a.size = m.size;
  a.system = m.system;
  meta.allocations = {a};
  trace::KernelInfo k;
  k.name = "k";
  k.grid = {m.blocks, 1, 1};
  k.block = {32, 1, 1};
  meta.kernels = {k};
  const auto path = d.file(name);
  trace::TraceWriter w(path, meta);
  if (m.cpu_init) {
    trace::HostEvent e;
    e.type = trace::HostEventType::CpuAccess;
    e.va = kBase;
    e.size = m.size;
    e.kind = AccessKind::Write;
    w.host_event(e);
  }
  w.begin_launch(0);
  for (std::uint32_t tb = 0; tb < m.blocks; ++tb) {
    w.begin_block(1);
    m.body(w, tb);
    w.end_block();
  }
  w.finish();
  return path;
}

trace::AccessRecord read_at(Addr va, std::uint32_t bytes = 4, std::uint32_t gap = 10) {
  trace::AccessRecord r;
  r.va = va;
  r.bytes = bytes;
  r.gap_cycles = gap;
  return r;
}

nlohmann::json run(const std::string& trace, const std::vector<std::string>& sets = {}) {
  return run_preset("gh200", trace, sets);
}

/// One warp touches every 4 KB page of the allocation once, in order.
void page_by_page(trace::TraceWriter& w, std::uint64_t size) {
  for (Addr va = kBase; va < kBase + size; va += 4096) w.access(0, read_at(va));
}

TEST(SystemMemory, CpuInitialisedPagesAreReadRemotelyWithoutFaultsOrCopies) {
  // The CPU's first touch puts every OS page in host memory, where the GPU maps it through the
  // shared page table: 512 reads, 512 remote accesses of one 64-byte line each, no fault.
  TempDir d;
  MicroTrace m;
  m.cpu_init = true;
  m.body = [&](trace::TraceWriter& w, std::uint32_t) { page_by_page(w, m.size); };
  const auto s = run(write_trace(d, "cpu.uvt", m), {"access_counters.migration=false"});
  EXPECT_EQ(s["gpu_faults"], 0);
  EXPECT_EQ(s["remote_accesses"], 512);
  EXPECT_EQ(s["remote_bytes"], 512 * 64);
  EXPECT_EQ(s["htod_bytes"], 0);
  EXPECT_EQ(s["system_memory"]["cpu_first_touch_pages"], 512);
  EXPECT_EQ(s["system_memory"]["gpu_first_touch_pages"], 0);
}

/// 256 warps stream 64 MB of CPU-initialised memory in 4 KB accesses of `kind`.
std::string remote_stream(const TempDir& d, const std::string& name, AccessKind kind) {
  MicroTrace m;
  m.size = 64 * kMB;
  m.cpu_init = true;
  m.blocks = 256;
  m.body = [&](trace::TraceWriter& w, std::uint32_t tb) {
    const std::uint64_t slice = m.size / m.blocks;
    for (std::uint64_t off = 0; off < slice; off += 4096) {
      trace::AccessRecord r = read_at(kBase + tb * slice + off, 4096, 0);
      r.kind = kind;
      w.access(0, r);
    }
  };
  return write_trace(d, name, m);
}

/// The kernel's bytes per ns (GB/s) when it moves all 64 MB of remote_stream's trace.
double stream_gbps(const nlohmann::json& s) {
  return static_cast<double>(64 * kMB) / s["kernels"][0]["time_ns"].get<double>();
}

TEST(SystemMemory, RemoteReadBandwidthIsTheLinkModel) {
  // The C2C direction host to device is the bottleneck, so the kernel moves the bytes at the
  // preset's 375 GB/s.
  TempDir d;
  const auto s =
      run(remote_stream(d, "bw.uvt", AccessKind::Read), {"access_counters.migration=false"});
  EXPECT_EQ(s["remote_bytes"], 64 * kMB);
  EXPECT_EQ(s["gpu_faults"], 0);
  EXPECT_NEAR(stream_gbps(s), 375.0, 375.0 * 0.03) << s["kernels"][0]["time_ns"];
}

TEST(SystemMemory, RemoteWritesMoveAtTheDeviceToHostBandwidth) {
  // The same stream written instead of read: the bytes go device to host, measured slower over
  // C2C (297 GB/s, link.dtoh_bandwidth_gbps) than host to device.
  TempDir d;
  const auto t = remote_stream(d, "wbw.uvt", AccessKind::Write);
  auto gbps = [&](const std::vector<std::string>& sets) {
    const auto s = run(t, sets);
    EXPECT_EQ(s["remote_bytes_by_kind"]["write"], 64 * kMB);
    return stream_gbps(s);
  };
  EXPECT_NEAR(gbps({"access_counters.migration=false"}), 297.0, 297.0 * 0.03);
  // A symmetric link (the knob at 0) writes at link.bandwidth_gbps.
  EXPECT_NEAR(gbps({"access_counters.migration=false", "link.dtoh_bandwidth_gbps=0"}), 375.0,
              375.0 * 0.03);
}

TEST(SystemMemory, GpuFirstTouchPopulatesGpuMemoryWithoutCopiesOneOsPageAtATime) {
  // No CPU touch: the GPU's first touch faults and the OS populates the page in GPU memory,
  // zero-filled, nothing copied. One warp walks the 2 MB page by page (no prefetching): with
  // 64 KB OS pages every 16th page faults, with 4 KB pages every page does.
  TempDir d;
  MicroTrace m;
  m.body = [&](trace::TraceWriter& w, std::uint32_t) { page_by_page(w, m.size); };
  const auto t = write_trace(d, "gpu.uvt", m);
  const auto s64 = run(t, {"engine.prefetch=none"});
  const auto s4 = run(t, {"engine.prefetch=none", "driver.system_page_size=4K"});
  for (const auto* s : {&s64, &s4}) {
    EXPECT_EQ((*s)["htod_bytes"], 0);
    EXPECT_EQ((*s)["remote_accesses"], 0);
    EXPECT_EQ((*s)["system_memory"]["gpu_first_touch_pages"], 512);
    EXPECT_EQ((*s)["system_memory"]["max_gpu_pages"], 512);
    EXPECT_EQ((*s)["evictions"], 0);
  }
  EXPECT_EQ(s64["faults"]["serviced"], 32);
  EXPECT_EQ(s4["faults"]["serviced"], 512);
  // Each OS page costs the driver cost.system_page_fault_ns (2 us) besides its fault's batch.
  EXPECT_GT(s4["sim_time_ns"].get<double>(), s64["sim_time_ns"].get<double>() + 480 * 2000.0);
}

TEST(SystemMemory, WithoutAtsSystemMemoryMigratesLikeManagedMemory) {
  // driver.ats = false (x86 + PCIe, HMM): the same trace is serviced by UVM's managed path.
  TempDir d;
  MicroTrace sys, managed;
  sys.cpu_init = managed.cpu_init = true;
  managed.system = false;
  sys.body =
      managed.body = [&](trace::TraceWriter& w, std::uint32_t) { page_by_page(w, sys.size); };
  const auto a = run(write_trace(d, "s.uvt", sys), {"driver.ats=false"});
  const auto b = run(write_trace(d, "m.uvt", managed), {"driver.ats=false"});
  EXPECT_EQ(a["htod_bytes"], 2 * kMB);
  EXPECT_EQ(a["sim_time_ns"], b["sim_time_ns"]);
  EXPECT_EQ(a["gpu_faults"], b["gpu_faults"]);
  EXPECT_EQ(a["remote_accesses"], 0);
}

TEST(SystemMemory, OversubscribedFirstTouchFallsBackToHostMemoryAndNothingIsEvicted) {
  // 8 MB touched by the GPU with 4 MB of GPU memory: the first 4 MB (1024 pages) are placed in
  // GPU memory, the rest in host memory where the GPU reads them remotely. Managed memory on the
  // same GPU evicts instead.
  TempDir d;
  MicroTrace m;
  m.size = 8 * kMB;
  m.body = [&](trace::TraceWriter& w, std::uint32_t) {
    for (int pass = 0; pass < 2; ++pass) page_by_page(w, m.size);
  };
  const std::vector<std::string> small = {"hbm.capacity=4194304", "engine.prefetch=none"};
  const auto s = run(write_trace(d, "over.uvt", m), small);
  EXPECT_EQ(s["evictions"], 0);
  EXPECT_EQ(s["htod_bytes"], 0);
  EXPECT_EQ(s["system_memory"]["gpu_first_touch_pages"], 1024);
  EXPECT_EQ(s["system_memory"]["host_fallback_pages"], 1024);
  EXPECT_EQ(s["system_memory"]["max_gpu_pages"], 1024);
  EXPECT_EQ(s["remote_accesses"], 2048);  // the host half, read on both passes
  MicroTrace managed = m;
  managed.system = false;
  const auto g = run(write_trace(d, "managed.uvt", managed), small);
  EXPECT_GT(g["evictions"].get<std::uint64_t>(), 0u);
}

TEST(SystemMemory, AccessCountersMigrateAHotHostRegionAtTheThreshold) {
  // CPU-initialised pages read remotely: the counter of their 2 MB region notifies at the 256th
  // access (access_counters.threshold) and the driver moves the notified 64 KB sub-region (16
  // pages) to GPU memory; 255 reads move nothing.
  TempDir d;
  auto hot = [&](std::uint32_t reads) {
    MicroTrace m;
    m.cpu_init = true;
    m.body = [reads](trace::TraceWriter& w, std::uint32_t) {
      // Pages 0 and 1 in turn (one 64 KB sub-region), so that the writer folds no two reads.
      for (std::uint32_t i = 0; i < reads; ++i) w.access(0, read_at(kBase + (i % 2) * 4096, 4, 20));
    };
    return run(write_trace(d, "hot" + std::to_string(reads) + ".uvt", m), {"engine.prefetch=none"});
  };
  const auto below = hot(255), at = hot(256), after = hot(2000);
  EXPECT_EQ(below["system_memory"]["migrated_pages"], 0);
  EXPECT_EQ(below["htod_bytes"], 0);
  EXPECT_EQ(at["system_memory"]["migrated_pages"], 16);
  EXPECT_EQ(at["htod_bytes"], 65536);
  EXPECT_EQ(at["htod_bytes_by_cause"]["access_counter"], 65536);
  // Once the sub-region is local, the remaining reads stop crossing the link.
  EXPECT_EQ(after["system_memory"]["migrated_pages"], 16);
  EXPECT_LT(after["remote_accesses"].get<std::uint64_t>(), 2000u);
}

TEST(SystemMemory, GenParamAllocSystemMarksEveryManagedAllocation) {
  TempDir d;
  const auto t = d.file("v.uvt");
  cli_ok({"gen", "vecadd", "--footprint", "3M", "--param", "alloc=system", "-o", t});
  trace::TraceReader r(t);
  ASSERT_FALSE(r.metadata().allocations.empty());
  for (const auto& a : r.metadata().allocations) EXPECT_TRUE(a.system) << a.name;
  EXPECT_EQ(r.metadata().params["alloc"], "system");
  const auto bad = cli({"gen", "vecadd", "--param", "alloc=heap", "-o", d.file("x.uvt")});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--param alloc: 'heap' is not one of managed, system"), std::string::npos)
      << bad.err;
}

TEST(SystemMemory, MetadataRejectsSystemMemoryThatIsNotPageable) {
  trace::Metadata m;
  m.workload = "x";
  trace::Allocation a;
  a.name = "A";
  a.base = kBase;
  a.size = 4096;
  a.managed = false;
  a.system = true;
  m.allocations = {a};
  EXPECT_EQ(error_of([&] { (void)trace::Metadata::from_json(m.to_json(), "t.uvt"); }),
            "t.uvt: metadata.allocations[0].system: requires managed = true (system memory is "
            "pageable)");
}

}  // namespace
}  // namespace uvmsim::test
