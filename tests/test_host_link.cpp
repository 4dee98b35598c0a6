// The host link shared by copy-engine runs and remote (zero-copy) traffic (models/host_link.h,
// issue 18 #8): exact times on hand-made schedules, then a micro-trace where a kernel's remote
// reads meet the migrations of its faults.
#include <gtest/gtest.h>

#include "core/config.h"
#include "models/host_link.h"
#include "models/timing.h"
#include "sim/simulator.h"
#include "test_util.h"
#include "traces/trace.h"

namespace uvmsim::test {
namespace {

constexpr Tick kNs = 1000;  // ps

TEST(HostLink, RemoteTrafficAloneIsABandwidthServer) {
  LinkDirection l;
  l.configure(1.0);  // 1 byte per ns
  EXPECT_EQ(l.wire_time(64), 64 * kNs);
  EXPECT_EQ(l.remote(100 * kNs, 64), 100 * kNs);
  EXPECT_EQ(l.remote(120 * kNs, 64), 164 * kNs);  // queued behind the first
  EXPECT_EQ(l.remote(500 * kNs, 32), 500 * kNs);
}

TEST(HostLink, RemoteTrafficWaitsForReservedCopiesOrUsesTheGapsBetweenThem) {
  LinkDirection l;
  l.configure(1.0);
  // Two copies reserved ahead of time: [1000, 2000) and [2100, 3000) ns.
  EXPECT_EQ(l.reserve_copy(1000 * kNs, 1000 * kNs, 0), 2000 * kNs);
  EXPECT_EQ(l.reserve_copy(2100 * kNs, 900 * kNs, 0), 3000 * kNs);
  // Before the first copy there is room for 500 bytes issued at 400 ns.
  EXPECT_EQ(l.remote(400 * kNs, 500), 400 * kNs);
  // 200 bytes at 950 ns do not fit before 1000: after the first copy, at 2000 (gap of 100 ns
  // too short), so after the second one.
  EXPECT_EQ(l.remote(950 * kNs, 200), 3000 * kNs);
  // 50 bytes issued at 1500: behind the 200 queued before them (remote traffic is FIFO).
  EXPECT_EQ(l.remote(1500 * kNs, 50), 3200 * kNs);
}

TEST(HostLink, QueuedRemoteTrafficDelaysALaterCopy) {
  LinkDirection l;
  l.configure(2.0);                 // 2 bytes per ns
  EXPECT_EQ(l.remote(0, 4000), 0);  // through at 2000 ns
  // A copy whose bytes are ready at 1500 ns starts when the remote bytes are through.
  EXPECT_EQ(l.reserve_copy(1500 * kNs, 300 * kNs, 0), 2300 * kNs);
}

TEST(HostLink, CopyEnginePaysItsCurveAloneAndItsWirePartShared) {
  // A 64 KB run: curve 3412 ns at 24.2 GB/s wire time 2708.1 ns, fixed part 703.9 ns.
  TransferCurve c;
  c.points = {{65536, 3412.0}};
  LinkDirection l;
  l.configure(24.2);
  CopyEngine ce;
  ce.configure(&c, 2000 * kNs);
  Tick begin = 0;
  const Tick wire = l.wire_time(65536);
  EXPECT_EQ(wire, 2708099u);
  // Alone: set-up + curve, exactly as calibrated.
  EXPECT_EQ(ce.submit(0, 65536, begin, l, 0), 2000 * kNs + 3412 * kNs);
  EXPECT_EQ(begin, 2000 * kNs);
  // Remote reads issued during the run's bytes (2703.9 - 5412 ns) wait for them.
  EXPECT_EQ(l.remote(5000 * kNs, 64), 5412 * kNs);
  // 16 KB of remote reads issued at 6000 ns hold the wire until 6677.0 ns; the next run (engine
  // free at 5412, set-up to 7412, bytes ready at 7412 + 703.9) is not delayed.
  EXPECT_EQ(l.remote(6000 * kNs, 16384), 6000 * kNs);
  EXPECT_EQ(ce.submit(0, 65536, begin, l, 0), 7412 * kNs + 3412 * kNs);
  // 512 KB of remote reads at 11000 ns hold the wire for 21665 ns: the next run's bytes wait.
  EXPECT_EQ(l.remote(11000 * kNs, 512 * 1024), 11000 * kNs);
  const Tick remote_end = 11000 * kNs + l.wire_time(512 * 1024);
  EXPECT_EQ(ce.submit(0, 65536, begin, l, 0), remote_end + wire);
}

TEST(HostLink, APushWaitsForAFreeGpfifoEntry) {
  // Room for 3 pushes in flight: the 4th may begin once the 1st has completed, the 5th once
  // the 2nd has; without a bound (0) a push never waits.
  TransferCurve c;
  c.points = {{65536, 3412.0}};
  LinkDirection l;
  l.configure(24.2);
  CopyEngine ce;
  ce.configure(&c, 2000 * kNs, 3);
  Tick begin = 0;
  std::vector<Tick> done;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ce.push_slot_free(), 0u);
    done.push_back(ce.submit(0, 65536, begin, l, 0));
    ce.record_push(done.back());
  }
  EXPECT_EQ(done, (std::vector<Tick>{5412 * kNs, 10824 * kNs, 16236 * kNs}));
  EXPECT_EQ(ce.push_slot_free(), 5412 * kNs);
  ce.record_push(ce.submit(ce.push_slot_free(), 65536, begin, l, 0));
  EXPECT_EQ(ce.push_slot_free(), 10824 * kNs);
  CopyEngine unbounded;
  unbounded.configure(&c, 2000 * kNs);
  for (int i = 0; i < 5; ++i) {
    unbounded.record_push(unbounded.submit(0, 65536, begin, l, 0));
    EXPECT_EQ(unbounded.push_slot_free(), 0u);
  }
}

/// R (2 MB, host-resident, read remotely: accessed-by GPU, preferred location CPU) and M (2 MB,
/// host-resident, migrates on faults). Threadblock 0 reads 4 KB of R 600 times, each read after
/// the previous one; threadblock 1 faults M in page by page.
std::string remote_and_migrations(const TempDir& d, const std::string& name, bool reads,
                                  bool faults) {
  constexpr Addr kR = 0x7f0000000000, kM = 0x7f0000400000;
  trace::Metadata meta;
  meta.workload = "link";
  meta.allocations = {{0, "R", kR, 2 << 20, true, false}, {1, "M", kM, 2 << 20, true, false}};
  trace::KernelInfo k;
  k.name = "k";
  k.grid = {2, 1, 1};
  k.block = {32, 1, 1};
  meta.kernels = {k};
  const auto t = d.file(name);
  trace::TraceWriter w(t, meta);
  auto host = [&](trace::HostEventType type, Addr va, trace::Advice a, Processor dev) {
    trace::HostEvent e;
    e.type = type;
    e.va = va;
    e.size = 2 << 20;
    e.advice = a;
    e.device = dev;
    e.kind = AccessKind::Write;
    w.host_event(e);
  };
  using trace::Advice;
  using trace::HostEventType;
  host(HostEventType::CpuAccess, kR, Advice::SetPreferredLocation, Processor::Cpu);
  host(HostEventType::MemAdvise, kR, Advice::SetAccessedBy, Processor::Gpu);
  host(HostEventType::MemAdvise, kR, Advice::SetPreferredLocation, Processor::Cpu);
  host(HostEventType::CpuAccess, kM, Advice::SetPreferredLocation, Processor::Cpu);
  w.begin_launch(0);
  for (int tb = 0; tb < 2; ++tb) {
    w.begin_block(1);
    for (std::uint64_t i = 0; i < (tb == 0 ? 600u : 512u); ++i) {
      if (tb == 0 ? !reads : !faults) break;
      trace::AccessRecord r;
      r.va = tb == 0 ? kR + (i % 64) * 32768 : kM + i * 4096;
      r.ref_id = static_cast<std::uint32_t>(tb);
      r.bytes = tb == 0 ? 4096 : 4;
      r.gap_cycles = i ? 10 : 0;
      w.access(0, r);
    }
    w.end_block();
  }
  w.finish();
  return t;
}

TEST(HostLink, RemoteReadsWaitForMigrations) {
  // gtx1080ti: link 12.1 GB/s, remote latency 1.2 us. Alone, the reading warp ends at 1001.866
  // us and the faulting one at 823.987 us (the same as before the link was shared). Together,
  // the reads (host to device) wait for M's 2 MiB of copy runs in the same direction: each run
  // delays the warp by the part of its wire time still to go when the next read arrives,
  // 171.876 us of the runs' 173.3 us (2 MiB at 12.1 GB/s). The copies themselves, committed
  // first, are not delayed.
  TempDir d;
  auto run = [&](bool reads, bool faults) {
    RunOptions o;
    o.trace = remote_and_migrations(
        d, std::string("l") + (reads ? "r" : "") + (faults ? "f" : "") + ".uvt", reads, faults);
    Simulator sim(SimConfig::from_preset("gtx1080ti"), o);
    sim.run();
    return sim.to_json();
  };
  const auto both = run(true, true), reads = run(true, false), faults = run(false, true);
  EXPECT_EQ(both["sim_time_ns"].get<double>(), 1173742.0);
  EXPECT_EQ(reads["sim_time_ns"].get<double>(), 1001866.0);
  EXPECT_EQ(faults["sim_time_ns"].get<double>(), 823987.0);
  EXPECT_EQ(both["remote_accesses"], 600);
  EXPECT_EQ(both["htod_bytes"], 2 << 20);
  EXPECT_EQ(both["fault_batches"], faults["fault_batches"]);
  EXPECT_EQ(both["driver"]["batch_time_ns"], faults["driver"]["batch_time_ns"]);
}

}  // namespace
}  // namespace uvmsim::test
