// Peer access between the GPUs of a node (system.peer, issue 17): a page another GPU holds is
// copied straight from it over the peer link, pushed on the source GPU's engine; a fault can
// leave a page on a peer and map it there (preferred location, accessed-by, an atomic over
// NVLink); a remote access to a peer's memory crosses the peer link at its bandwidth. Expected
// values are worked out from the model's rules (docs/multi-gpu.md) before the run.
#include <gtest/gtest.h>

#include "models/peer_fabric.h"
#include "models/sim_context.h"
#include "placement_test_util.h"

namespace uvmsim::test {
namespace {

constexpr std::uint64_t M = 1 << 20;
constexpr std::uint64_t kPages4M = 4 * M / 4096;

/// X (4 MB) is touched by the GPUs `order`, one kernel each, synchronised in between; before,
/// `setup` writes host events (advice).
std::string program(const TempDir& d, const std::string& name, const std::vector<unsigned>& order,
                    AccessKind kind = AccessKind::Read,
                    const std::vector<trace::HostEvent>& setup = {}) {
  const auto path = d.file(name);
  Program p({{"X", 4 * M}}, static_cast<std::uint32_t>(order.size()));
  p.open(path);
  for (auto e : setup) {
    if (e.type == trace::HostEventType::MemAdvise) e.va = p.base(0), e.size = 4 * M;
    p.w->host_event(e);
  }
  for (std::uint32_t k = 0; k < order.size(); ++k) {
    p.w->host_event(set_device(order[k]));
    launch(p, k, 0, 0, 4 * M, k == 0 ? AccessKind::Read : kind);  // the first touch reads
    p.w->host_event(synchronize());
  }
  p.finish();
  return path;
}

const nlohmann::json& link(const nlohmann::json& j, unsigned src, unsigned dst) {
  for (const auto& l : j["peer_links"])
    if (l["src"] == src && l["dst"] == dst) return l;
  throw std::runtime_error("no peer link entry");
}

TEST(PeerFabric, RemoteTrafficMovesAtThePeerBandwidthAndCopiesQueueOnTheRoute) {
  SystemConfig sys;
  sys.gpus = 2;
  sys.peer = PeerAccess::Nvlink;
  sys.peer_bandwidth_gbps = 50;  // 50 bytes/ns: 1 KB in 20.48 ns
  std::vector<HostLink> host(2, HostLink{10, 10});
  PeerFabric f(sys, host);
  // Back-to-back 1 KB reads of GPU 0's memory by GPU 1 start one wire time apart: bandwidth.
  EXPECT_EQ(f.wire_time(0, 1, 1024), 20480u);
  EXPECT_EQ(f.remote(0, 1, 0, 1024), 0u);
  EXPECT_EQ(f.remote(0, 1, 0, 1024), 20480u);
  EXPECT_EQ(f.remote(0, 1, 0, 1024), 40960u);
  // The other direction and the other pairs are separate links.
  EXPECT_EQ(f.remote(1, 0, 0, 1024), 0u);
  // A copy run of 2 MB alone takes latency + bytes / bandwidth (the curve), its bytes after the
  // remote traffic queued before it.
  const Tick total = f.curve().time_ps(2 * M);
  EXPECT_EQ(total, ns_to_ps(1000 + 2.0 * M / 50));
  const Tick wire = f.wire_time(1, 0, 2 * M);
  EXPECT_EQ(f.reserve_copy(1, 0, 0, total, 2 * M, 0), total);
  // A second copy on the same route waits for the first one's bytes.
  EXPECT_EQ(f.reserve_copy(1, 0, 0, total, 2 * M, 0), total + wire);
  // Remote traffic issued meanwhile waits for the copies.
  EXPECT_EQ(f.remote(1, 0, total - wire, 1024), total + wire);

  // PCIe peer-to-peer crosses the source's host link to the host and the destination's from
  // it: a host copy holding GPU 0's device-to-host direction for 10 us delays a peer copy out of
  // GPU 0, whose bytes then hold GPU 1's host-to-device direction.
  sys.peer = PeerAccess::Pcie;
  sys.peer_bandwidth_gbps = 5;
  std::vector<HostLink> host2(2, HostLink{10, 10});
  PeerFabric p(sys, host2);
  const Tick busy = host2[0].dtoh.reserve_copy(0, 10'000'000, 0);
  const Tick t2 = p.curve().time_ps(64 * 1024);
  const Tick w2 = p.wire_time(0, 1, 64 * 1024);
  EXPECT_EQ(w2, 6'553'600u);  // 64 KB at the host links' 10 GB/s
  EXPECT_EQ(p.reserve_copy(0, 1, 0, t2, 64 * 1024, 0), busy + w2);
  EXPECT_EQ(host2[1].htod.remote(busy, 64), busy + w2);
}

TEST(MultiGpuPeer, APeerFaultMigratesOverThePeerLink) {
  // GPU 0 first-touches X; GPU 1 reads it, then GPU 0 again. With NVLink every page moves GPU to
  // GPU, pushed on the holder's engine: 4 MB each way, nothing over a host link, each copy run
  // taking latency + bytes / bandwidth (1000 ns + bytes / 25 GB/s: the knobs' defaults).
  TempDir d;
  const auto path = program(d, "pingpong.uvt", {0, 1, 0});
  const auto events = d.file("events.csv");
  const auto j =
      run_sim(path, {"system.gpus=2", "system.peer=nvlink"}, std::nullopt, std::nullopt, events);
  EXPECT_EQ(num(j["accesses"]), 3 * kPages4M);
  EXPECT_EQ(num(j["driver"]["zero_filled_pages"]), kPages4M);
  EXPECT_EQ(num(j["htod_bytes"]), 0u);
  EXPECT_EQ(num(j["dtoh_bytes"]), 0u);
  EXPECT_EQ(num(link(j, 0, 1)["copy_bytes"]), 4 * M);
  EXPECT_EQ(num(link(j, 1, 0)["copy_bytes"]), 4 * M);
  EXPECT_EQ(num(link(j, 0, 1)["remote_bytes"]), 0u);
  for (unsigned g = 0; g < 2; ++g) {
    const auto& s = j["gpus"][g];
    EXPECT_EQ(num(s["peer_link"]["copy_out_bytes"]), 4 * M);
    EXPECT_EQ(num(s["peer_link"]["copy_in_bytes"]), 4 * M);
    EXPECT_EQ(num(s["host_link"]["htod_bytes"]), 0u);
    EXPECT_EQ(num(s["host_link"]["peer_staged_bytes"]), 0u);
  }
  std::uint64_t bytes = 0, rows = 0;
  for (const auto& r : read_events(events)) {
    if (r.event != "migration") continue;
    EXPECT_EQ(r.direction, "dtod");
    EXPECT_GT(r.batch, 0);
    EXPECT_NEAR(r.duration_ns, 1000 + static_cast<double>(r.bytes) / 25, 0.01) << r.bytes;
    bytes += r.bytes;
    ++rows;
  }
  EXPECT_EQ(bytes, 8 * M);
  EXPECT_GT(rows, 0u);

  // Over PCIe peer-to-peer the same pages move the same way, over the host links' directions.
  const auto pcie = run_sim(path, {"system.gpus=2", "system.peer=pcie"});
  EXPECT_EQ(num(link(pcie, 0, 1)["copy_bytes"]), 4 * M);
  EXPECT_EQ(num(pcie["htod_bytes"]) + num(pcie["dtoh_bytes"]), 0u);
  // Without peer access they are staged: twice the copies, all over the host links.
  const auto none = run_sim(path, {"system.gpus=2"});
  EXPECT_EQ(num(none["htod_bytes"]), 8 * M);
  EXPECT_FALSE(none.contains("peer_links"));
  EXPECT_FALSE(none["gpus"][0].contains("peer_link"));
  // One copy instead of two: the peer run is faster.
  EXPECT_LT(num(j["sim_time_ns"]), num(none["sim_time_ns"]));
}

TEST(MultiGpuPeer, APreferredLocationOnAPeerKeepsThePagesThereAndMapsThem) {
  // X prefers GPU 0. GPU 1 touches it first: the pages are populated on GPU 0 (zero-filled, no
  // copy) and GPU 1 maps them there, reading 128 B per page over the link (block_select_
  // processor_residency: resident nowhere -> the preferred location, accessible from GPU 1).
  TempDir d;
  const auto path = program(d, "preferred.uvt", {1, 1}, AccessKind::Read,
                            {advise(0, 0, trace::Advice::SetPreferredLocation, gpu_processor(0))});
  const auto j = run_sim(path, {"system.gpus=2", "system.peer=nvlink"});
  EXPECT_EQ(num(j["driver"]["zero_filled_pages"]), kPages4M);
  EXPECT_EQ(num(link(j, 0, 1)["copy_bytes"]) + num(link(j, 1, 0)["copy_bytes"]), 0u);
  EXPECT_EQ(num(j["gpus"][1]["peer_link"]["maps"]), kPages4M);
  EXPECT_EQ(num(j["gpus"][0]["peer_link"]["maps"]), 0u);
  // Every access of both kernels is remote; the second kernel does not fault.
  EXPECT_EQ(num(link(j, 0, 1)["remote_bytes"]), 2 * kPages4M * 128);
  EXPECT_EQ(num(j["remote_accesses"]), 2 * kPages4M);
  EXPECT_EQ(num(j["kernels"][1]["gpu_faults"]), 0u);
  EXPECT_EQ(num(j["gpus"][1]["peer_link"]["remote_bytes"]), 2 * kPages4M * 128);
  // Without peer access GPU 1 cannot map GPU 0's memory: the pages migrate to it instead.
  const auto none = run_sim(path, {"system.gpus=2"});
  EXPECT_EQ(num(none["remote_accesses"]), 0u);
}

/// GPU 0 first-touches X; X becomes accessed-by GPU 1 (and read-mostly with `read_mostly`);
/// GPU 1 reads X, then (with `then_write`) writes it.
std::string accessed_by_program(const TempDir& d, bool read_mostly, bool then_write) {
  const auto path = d.file(read_mostly ? "accessed_by_rm.uvt" : "accessed_by.uvt");
  Program p({{"X", 4 * M}}, 3);
  p.open(path);
  p.w->host_event(set_device(0));
  launch(p, 0, 0, 0, 4 * M);
  p.w->host_event(synchronize());
  p.w->host_event(advise(p.base(0), 4 * M, trace::Advice::SetAccessedBy, gpu_processor(1)));
  if (read_mostly)
    p.w->host_event(advise(p.base(0), 4 * M, trace::Advice::SetReadMostly, Processor::Cpu));
  p.w->host_event(set_device(1));
  launch(p, 1, 0, 0, 4 * M);
  p.w->host_event(synchronize());
  if (then_write) {
    launch(p, 2, 0, 0, 4 * M, AccessKind::Write);
    p.w->host_event(synchronize());
  }
  p.finish();
  return path;
}

TEST(MultiGpuPeer, AccessedByMapsAPeersCopyWithoutAFault) {
  // The pages stay on GPU 0 and GPU 1 maps them where they are: no fault, no copy, every read
  // over the link.
  TempDir d;
  const auto j =
      run_sim(accessed_by_program(d, false, false), {"system.gpus=2", "system.peer=nvlink"});
  EXPECT_EQ(num(j["kernels"][1]["gpu_faults"]), 0u);
  EXPECT_EQ(num(link(j, 0, 1)["remote_bytes"]), kPages4M * 128);
  EXPECT_EQ(num(link(j, 0, 1)["copy_bytes"]), 0u);
  EXPECT_EQ(num(j["gpus"][1]["peer_link"]["maps"]), 0u);  // no fault made a mapping
}

TEST(MultiGpuPeer, AWriteToAReadMostlyPeerCopyFaultsDespiteAccessedBy) {
  // X read-mostly too: GPU 1's reads still go over the accessed-by mapping, remotely, without a
  // fault. Its writes do not: a peer's copy of a read-mostly page is read-only, so each write
  // faults and the page moves to GPU 1 (4 MB GPU to GPU); no write goes over the link.
  TempDir d;
  const auto j =
      run_sim(accessed_by_program(d, true, true), {"system.gpus=2", "system.peer=nvlink"});
  EXPECT_EQ(num(j["accesses"]), 3 * kPages4M);
  EXPECT_EQ(num(j["kernels"][1]["gpu_faults"]), 0u);
  EXPECT_EQ(num(link(j, 0, 1)["remote_bytes"]), kPages4M * 128);  // kernel 1's reads only
  EXPECT_EQ(num(link(j, 1, 0)["remote_bytes"]), 0u);              // no remote write
  EXPECT_GT(num(j["kernels"][2]["gpu_faults"]), 0u);
  EXPECT_EQ(num(link(j, 0, 1)["copy_bytes"]), 4 * M);
}

TEST(MultiGpuPeer, ReadDuplicatesComeFromAPeerAndAWriteInvalidatesThem) {
  // X is read-mostly. GPU 0 first-touches it (zero-filled); GPU 1 reads it: a duplicate of each
  // page comes from GPU 0 over the link (4 MB) and GPU 0 keeps its copy. GPU 1 then writes X:
  // its copies become the only ones, nothing moves, GPU 0's are invalidated; GPU 0 reading again
  // takes duplicates back from GPU 1.
  TempDir d;
  const auto path = program(d, "readmostly.uvt", {0, 1, 1, 0}, AccessKind::Read,
                            {advise(0, 0, trace::Advice::SetReadMostly, Processor::Cpu)});
  // Kernels: read (GPU 0), read (GPU 1), then reads again; make kernel 2 a write.
  const auto path_w = d.file("readmostly_w.uvt");
  {
    Program p({{"X", 4 * M}}, 4);
    p.open(path_w);
    p.w->host_event(advise(p.base(0), 4 * M, trace::Advice::SetReadMostly, Processor::Cpu));
    const std::vector<std::pair<unsigned, AccessKind>> ks = {{0, AccessKind::Read},
                                                             {1, AccessKind::Read},
                                                             {1, AccessKind::Write},
                                                             {0, AccessKind::Read}};
    std::uint32_t kernel = 0;
    for (const auto& [g, kind] : ks) {
      p.w->host_event(set_device(g));
      launch(p, kernel++, 0, 0, 4 * M, kind);
      p.w->host_event(synchronize());
    }
    p.finish();
  }
  const auto j = run_sim(path_w, {"system.gpus=2", "system.peer=nvlink"});
  EXPECT_EQ(num(j["driver"]["zero_filled_pages"]), kPages4M);
  EXPECT_EQ(num(link(j, 0, 1)["copy_bytes"]), 4 * M);  // kernel 1's duplicates
  EXPECT_EQ(num(link(j, 1, 0)["copy_bytes"]), 4 * M);  // kernel 3's
  EXPECT_EQ(num(j["htod_bytes"]) + num(j["dtoh_bytes"]), 0u);
  EXPECT_EQ(num(j["kernels"][2]["gpu_faults"]), kPages4M);  // each write upgrades in place
  // The read-only run of the same program duplicates once and never moves again.
  const auto r = run_sim(path, {"system.gpus=2", "system.peer=nvlink"});
  EXPECT_EQ(num(link(r, 0, 1)["copy_bytes"]), 4 * M);
  EXPECT_EQ(num(link(r, 1, 0)["copy_bytes"]), 0u);
  EXPECT_EQ(num(r["kernels"][2]["gpu_faults"]) + num(r["kernels"][3]["gpu_faults"]), 0u);
}

TEST(MultiGpuPeer, AnAtomicOverNvlinkStaysRemoteOnlyWithTheDriverParameter) {
  // GPU 0 first-touches X; GPU 1 runs atomics on it. By default (uvm_perf_map_remote_on_native_
  // atomics_fault = 0) the pages migrate to GPU 1; with the parameter they stay on GPU 0 and GPU
  // 1 maps them over NVLink (native atomics); over PCIe the parameter changes nothing.
  TempDir d;
  const auto path = program(d, "atomics.uvt", {0, 1}, AccessKind::Atomic);
  const auto off = run_sim(path, {"system.gpus=2", "system.peer=nvlink"});
  EXPECT_EQ(num(link(off, 0, 1)["copy_bytes"]), 4 * M);
  EXPECT_EQ(num(off["remote_accesses"]), 0u);
  const auto on = run_sim(
      path, {"system.gpus=2", "system.peer=nvlink", "thrashing.map_remote_on_native_atomics=true"});
  EXPECT_EQ(num(link(on, 0, 1)["copy_bytes"]), 0u);
  EXPECT_EQ(num(on["gpus"][1]["peer_link"]["maps"]), kPages4M);
  EXPECT_EQ(num(link(on, 1, 0)["remote_bytes"]), kPages4M * 128);  // atomics send data there
  const auto pcie = run_sim(
      path, {"system.gpus=2", "system.peer=pcie", "thrashing.map_remote_on_native_atomics=true"});
  EXPECT_EQ(num(link(pcie, 0, 1)["copy_bytes"]), 4 * M);
}

TEST(MultiGpuPeer, TheNvlinkNodeRunsAShuffleGpuToGpuFromTheCommandLine) {
  // mgpu-alltoall on the NVLink node preset: every chunk moves GPU to GPU, none over a host
  // link, and the run summary gives each GPU's peer traffic.
  TempDir d;
  const auto t = gen(d, "mgpu-alltoall", "8M");
  const auto stats = d.file("s.json");
  const auto r =
      cli_ok({"run", "--gpu", "a100-40gb-x4-nvlink", "--trace", t, "--stats-out", stats});
  const auto j = read_json(stats);
  EXPECT_EQ(num(j["htod_bytes"]) + num(j["dtoh_bytes"]), 0u);
  ASSERT_EQ(j["peer_links"].size(), 12u);  // 4 x 3 ordered pairs
  std::uint64_t copied = 0;
  for (const auto& l : j["peer_links"]) copied += num(l["copy_bytes"]);
  std::uint64_t out = 0;
  for (const auto& g : j["gpus"]) out += num(g["peer_link"]["copy_out_bytes"]);
  EXPECT_EQ(out, copied);
  EXPECT_GT(copied, 0u);
  EXPECT_NE(r.out.find("(staged 0 B); peer out "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace uvmsim::test
