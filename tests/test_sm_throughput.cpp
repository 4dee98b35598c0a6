// The per-SM issue and LSU throughput model (models/sm_throughput.h): a record costs its 32-byte
// sectors on its SM's LSU, the warps of one SM share the LSU and the issue slots, warps of
// different SMs do not, and a kernel bound by HBM bandwidth takes bytes / bandwidth. The
// end-to-end cases run micro-traces on device (non-managed) memory with a 1 GHz clock and zero
// latencies, so every time below is an exact count of cycles.
#include <gtest/gtest.h>

#include "models/sm_throughput.h"
#include "models/timing.h"
#include "placement_test_util.h"

namespace uvmsim::test {
namespace {

TEST(SmThroughput, SectorsOfARecord) {
  EXPECT_EQ(SmThroughput::sectors(0x1000, 4, 1), 1u);    // one lane
  EXPECT_EQ(SmThroughput::sectors(0x1000, 128, 1), 4u);  // a coalesced warp of floats
  EXPECT_EQ(SmThroughput::sectors(0x1010, 32, 1), 2u);   // straddles a sector boundary
  EXPECT_EQ(SmThroughput::sectors(0x1000, 4, 3), 3u);    // repeats each pay again
  EXPECT_EQ(SmThroughput::sectors(0x1000, 0, 1), 1u);
}

GpuConfig gpu(double slots, double sectors, std::uint32_t sms = 2) {
  GpuConfig g;
  g.num_sms = sms;
  g.issue_slots_per_cycle = slots;
  g.l1_sectors_per_cycle = sectors;
  return g;
}

TEST(SmThroughput, OffCostsNothing) {
  SmThroughput m;
  m.configure(gpu(0, 0), 1000);
  EXPECT_FALSE(m.lsu_bounded());
  EXPECT_EQ(m.lsu(0, 5000, 0x1000, 128, 1), 5000u);
  EXPECT_EQ(m.issue(0, 5000, 10), 15000u);  // one warp: one slot per cycle
  EXPECT_EQ(m.issue(0, 5000, 10), 15000u);
}

TEST(SmThroughput, UncoalescedLoadCostsThirtyTwoSectors) {
  SmThroughput m;
  m.configure(gpu(4, 4), 1000);  // 4 sectors per 1000 ps cycle
  // 32 lanes in 32 pages: 32 one-sector records at t = 0 leave the LSU 8 cycles later.
  Tick t = 0;
  for (int lane = 0; lane < 32; ++lane) t = m.lsu(0, 0, 0x10000 + lane * 4096, 4, 1);
  EXPECT_EQ(t, 8000u);
  // A coalesced 128-byte load on the other SM: 4 sectors, one cycle, unaffected by SM 0.
  EXPECT_EQ(m.lsu(1, 0, 0x20000, 128, 1), 1000u);
  // SM 0's next load queues behind the 32 sectors.
  EXPECT_EQ(m.lsu(0, 2000, 0x20000, 128, 1), 9000u);
}

TEST(SmThroughput, AHugeRecordSaturatesInsteadOfOverflowing) {
  // 2^32-1 repeats of 2^32-1 bytes: ~2^59 sectors, ~2.9e20 ps at 1000 ps / 4 sectors, beyond a
  // Tick (converting it was undefined behaviour, found by the uvt_run fuzz target).
  SmThroughput m;
  m.configure(gpu(4, 4), 1000);
  const std::uint32_t most = ~std::uint32_t{0};
  EXPECT_EQ(m.lsu(0, 5, 0, most, most), 5 + kMaxDuration);
  EXPECT_EQ(duration_ticks(2.9e20), kMaxDuration);
  EXPECT_EQ(duration_ticks(1234.9), 1234u);
  BandwidthServer hbm;
  hbm.configure(1.0, 100);  // 1 GB/s: 1000 ps per byte, 100 ns latency
  EXPECT_EQ(hbm.access(0, ~std::uint64_t{0}), kMaxDuration + 100 * kPsPerNs);
}

TEST(SmThroughput, WarpsOfOneSmShareTheIssueSlots) {
  SmThroughput m;
  m.configure(gpu(4, 0), 1000);
  // Eight warps each ready at 0 with 100 slots of work: the first four are bound by their own
  // one-per-cycle issue (100 cycles), the last by the SM's 4 per cycle (800 / 4 = 200 cycles).
  std::vector<Tick> done;
  for (int w = 0; w < 8; ++w) done.push_back(m.issue(0, 0, 100));
  EXPECT_EQ(done[0], 100000u);
  EXPECT_EQ(done[3], 100000u);
  EXPECT_EQ(done[4], 125000u);
  EXPECT_EQ(done[7], 200000u);
  EXPECT_EQ(m.issue(1, 0, 100), 100000u);  // another SM is free
}

/// A kernel of `tbs` threadblocks of `warps` warps over device memory; every warp issues
/// `instrs` warp instructions, each `lanes` records of `bytes` bytes in distinct pages (the
/// first with a compute gap of `gap` slots).
std::string device_trace(const TempDir& d, std::uint32_t tbs, std::uint32_t warps,
                         std::uint32_t instrs, std::uint32_t lanes, std::uint32_t bytes,
                         std::uint32_t gap = 0) {
  trace::Metadata meta;
  meta.workload = "sm-throughput-test";
  meta.allocations.push_back({0, "dev", kPlaceBase, 64 << 20, false, false});
  trace::KernelInfo ki;
  ki.id = 0;
  ki.name = "k";
  ki.grid = {tbs, 1, 1};
  ki.block = {32 * warps, 1, 1};
  meta.kernels.push_back(ki);
  const auto path = d.file("k.uvt");
  trace::TraceWriter w(path, meta);
  w.begin_launch(0, -1);
  for (std::uint32_t tb = 0; tb < tbs; ++tb) {
    w.begin_block(warps);
    for (std::uint32_t wi = 0; wi < warps; ++wi)
      for (std::uint32_t i = 0; i < instrs; ++i)
        for (std::uint32_t l = 0; l < lanes; ++l) {
          trace::AccessRecord r;
          r.va = kPlaceBase + (std::uint64_t{l} * 4096) + i * 128;
          r.bytes = bytes;
          r.gap_cycles = l == 0 ? gap : 0;
          w.access(wi, r);
        }
    w.end_block();
  }
  w.finish();
  return path;
}

/// Kernel time in ns on a 1 GHz GPU whose only costs are the ones under test (the presets bound
/// both servers; here they are off unless the test sets them).
std::uint64_t kernel_ns(const std::string& t, std::vector<std::string> sets) {
  for (const char* s :
       {"gpu.clock_mhz=1000", "tlb.l1_latency_cycles=0", "hbm.latency_ns=0",
        "hbm.bandwidth_gbps=1000000", "gpu.issue_slots_per_cycle=0", "gpu.l1_sectors_per_cycle=0"})
    sets.insert(sets.begin(), s);
  const auto j = run_sim(t, sets);
  return num(j["kernels"][0]["time_ns"]);
}

TEST(SmThroughputRun, UncoalescedWarpLoadTakesThirtyTwoSectorsTime) {
  TempDir d;
  const auto one = device_trace(d, 1, 1, 1, 32, 4);
  EXPECT_EQ(kernel_ns(one, {"gpu.l1_sectors_per_cycle=1"}), 32u);
  EXPECT_EQ(kernel_ns(one, {"gpu.l1_sectors_per_cycle=4"}), 8u);
  EXPECT_EQ(kernel_ns(one, {}), 0u);  // off: no LSU cost, as before the model
}

TEST(SmThroughputRun, CoalescedLoadTakesFourSectorsTime) {
  TempDir d;
  EXPECT_EQ(kernel_ns(device_trace(d, 1, 1, 10, 1, 128), {"gpu.l1_sectors_per_cycle=1"}), 40u);
}

TEST(SmThroughputRun, WarpsOfOneSmShareTheLsuOtherSmsDoNot) {
  TempDir d;
  // Four warps in one threadblock (one SM): 4 x 32 sectors one after another.
  EXPECT_EQ(kernel_ns(device_trace(d, 1, 4, 1, 32, 4), {"gpu.l1_sectors_per_cycle=1"}), 128u);
  // Four threadblocks of one warp go to four SMs: they load in parallel.
  EXPECT_EQ(kernel_ns(device_trace(d, 4, 1, 1, 32, 4), {"gpu.l1_sectors_per_cycle=1"}), 32u);
}

TEST(SmThroughputRun, ComputeGapsShareTheIssueSlots) {
  TempDir d;
  // Eight warps on one SM, each 100 slots then a one-sector load: 800 slots at 4 per cycle.
  const auto t = device_trace(d, 1, 8, 1, 1, 4, 100);
  EXPECT_EQ(kernel_ns(t, {}), 100u);
  EXPECT_EQ(kernel_ns(t, {"gpu.issue_slots_per_cycle=4"}), 200u);
}

TEST(SmThroughputRun, HbmBoundKernelTakesBytesOverBandwidth) {
  TempDir d;
  // 4 warps x 16 instructions x 32 lanes x 128 bytes = 256 KiB at 1 GB/s = 1 byte/ns, with an
  // LSU fast enough not to matter.
  const auto t = device_trace(d, 4, 1, 16, 32, 128);
  EXPECT_EQ(kernel_ns(t, {"gpu.l1_sectors_per_cycle=1024", "hbm.bandwidth_gbps=1"}), 262144u);
}

}  // namespace
}  // namespace uvmsim::test
