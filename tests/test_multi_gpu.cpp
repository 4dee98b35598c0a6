// Several GPUs in one run (issue 17): system.gpus nodes, each with its own fault buffer, access
// counters, memory, host link and driver bottom half; kernels on different GPUs run concurrently
// (a launch is asynchronous, the host waits for a GPU at its next launch there); a page moves
// between GPUs through host memory, as the driver stages a copy between GPUs without peer
// access; read duplicates spread across GPUs and a write invalidates them; host operations reach
// every GPU's copy. Expected values are worked out from the model's rules before the run.
#include <gtest/gtest.h>

#include <fstream>

#include "placement_test_util.h"
#include "policies/registry.h"

namespace uvmsim::test {
namespace {

constexpr std::uint64_t M = 1 << 20;
constexpr std::uint64_t kPages4M = 4 * M / 4096;

/// The statistics of a run without what names the machine or the trace file (configuration,
/// memory, trace and per-GPU sections, each kernel's GPU) or varies between runs (wall time,
/// throughput).
nlohmann::json model_outcome(nlohmann::json j) {
  for (const char* k : {"config", "memory", "trace", "gpus", "wall_seconds", "accesses_per_second",
                        "records_per_second"})
    j.erase(k);
  for (auto& k : j["kernels"]) k.erase("gpu");
  return j;
}

TEST(MultiGpu, AOneDeviceTraceRunsTheSameOnFourGpus) {
  // Only GPU 0 works: the other three nodes exist (their drivers, fault buffers, links) but no
  // event of theirs is ever queued, so every statistic is the one-GPU run's, bit for bit.
  TempDir d;
  const auto t = gen(d, "random", "24M");
  for (const double oversub : {0.0, 50.0}) {
    const auto one = run_sim(t, {}, std::nullopt, oversub);
    const auto four = run_sim(t, {"system.gpus=4"}, std::nullopt, oversub);
    EXPECT_EQ(model_outcome(four), model_outcome(one)) << "oversub " << oversub;
    EXPECT_EQ(four["memory"]["gpus"], 4);
    EXPECT_EQ(four["kernels"][0]["gpu"], 0);
    EXPECT_FALSE(one["kernels"][0].contains("gpu"));
    EXPECT_FALSE(one.contains("gpus"));
    EXPECT_EQ(four["gpus"].size(), 4u);
    EXPECT_EQ(four["gpus"][0]["accesses"], one["accesses"]);
    EXPECT_EQ(four["gpus"][0]["host_link"]["htod_bytes"], one["htod_bytes"]);
    EXPECT_EQ(four["gpus"][0]["host_link"]["dtoh_bytes"], one["dtoh_bytes"]);
    EXPECT_EQ(four["gpus"][0]["evictions"], one["evictions"]);
    EXPECT_EQ(four["gpus"][3]["kernels"], 0);
  }
}

TEST(MultiGpu, KernelsOnTwoGpusRunConcurrently) {
  // GPU 0 reads X while GPU 1 reads Y: the host launches the second kernel one launch overhead
  // after the first (it does not wait for GPU 0), and the two GPUs fault, copy and replay on
  // their own hardware. Run serially (a Synchronize between), the second starts after the first.
  TempDir d;
  auto make = [&](const std::string& name, bool sync_between) {
    const auto path = d.file(name);
    Program p({{"X", 4 * M}, {"Y", 4 * M}}, 2);
    p.open(path);
    p.w->host_event(set_device(0));
    launch(p, 0, 0, 0, 4 * M);
    if (sync_between) p.w->host_event(synchronize());
    p.w->host_event(set_device(1));
    launch(p, 1, 1, 0, 4 * M);
    p.w->host_event(synchronize());
    p.finish();
    return path;
  };
  const auto conc = run_sim(make("conc.uvt", false), {"system.gpus=2"});
  const auto serial = run_sim(make("serial.uvt", true), {"system.gpus=2"});
  for (const auto& j : {conc, serial}) {
    ASSERT_EQ(j["kernels"].size(), 2u);
    EXPECT_EQ(j["kernels"][0]["gpu"], 0);
    EXPECT_EQ(j["kernels"][1]["gpu"], 1);
    EXPECT_EQ(num(j["accesses"]), 2 * kPages4M);
    EXPECT_EQ(num(j["driver"]["zero_filled_pages"]),
              2 * kPages4M);  // first touches: nothing copied
    EXPECT_EQ(num(j["htod_bytes"]), 0u);
    EXPECT_EQ(num(j["kernels"][0]["gpu_faults"]) + num(j["kernels"][1]["gpu_faults"]),
              num(j["gpu_faults"]));
    EXPECT_EQ(num(j["kernels"][0]["fault_batches"]) + num(j["kernels"][1]["fault_batches"]),
              num(j["fault_batches"]));
  }
  const auto& k0 = conc["kernels"][0];
  const auto& k1 = conc["kernels"][1];
  EXPECT_EQ(num(k1["start_ns"]), num(k0["start_ns"]) + 5000);  // gtx1080ti launch_overhead_ns
  EXPECT_LT(num(k1["start_ns"]), num(k0["end_ns"]));
  EXPECT_GE(num(serial["kernels"][1]["start_ns"]), num(serial["kernels"][0]["end_ns"]) + 5000);
  EXPECT_LT(num(conc["sim_time_ns"]), num(serial["sim_time_ns"]));
  // Same work either way, and the same run twice is the same run.
  EXPECT_EQ(conc["gpu_faults"], serial["gpu_faults"]);
  EXPECT_EQ(model_outcome(run_sim(make("conc2.uvt", false), {"system.gpus=2"})),
            model_outcome(conc));
}

TEST(MultiGpu, AGpuReadsWhatAnotherHoldsThroughHostMemory) {
  // GPU 0 first-touches X (zero-filled, nothing copied). GPU 1 then reads it: without peer
  // access each page GPU 0 holds goes to the host on GPU 0's copy engine (peer_staged) and on to
  // GPU 1 (htod). GPU 0 reading it back stages it the other way: 2 x 4 MB each way in all.
  TempDir d;
  const auto path = d.file("pingpong.uvt");
  Program p({{"X", 4 * M}}, 3);
  p.open(path);
  std::uint32_t kernel = 0;
  for (const unsigned g : {0u, 1u, 0u}) {
    p.w->host_event(set_device(g));
    launch(p, kernel++, 0, 0, 4 * M);
    p.w->host_event(synchronize());
  }
  p.finish();
  const auto events = d.file("events.csv");
  const auto j = run_sim(path, {"system.gpus=2"}, std::nullopt, std::nullopt, events);
  EXPECT_EQ(num(j["accesses"]), 3 * kPages4M);
  EXPECT_EQ(num(j["driver"]["zero_filled_pages"]), kPages4M);
  // The event log's staged copies belong to the fault batch of the GPU that asked for them.
  std::uint64_t staged_rows = 0, staged_bytes = 0;
  for (const auto& r : read_events(events)) {
    if (r.cause != "peer_staged") continue;
    ++staged_rows;
    staged_bytes += r.bytes;
    EXPECT_EQ(r.direction, "dtoh");
    EXPECT_GT(r.batch, 0) << r.time_ns;
  }
  EXPECT_GT(staged_rows, 0u);
  EXPECT_EQ(staged_bytes, 2 * 4 * M);
  EXPECT_EQ(num(j["dtoh_bytes_by_cause"]["peer_staged"]), 2 * 4 * M);
  EXPECT_EQ(num(j["dtoh_bytes"]), 2 * 4 * M);  // nothing else goes to the host
  EXPECT_EQ(num(j["htod_bytes"]), 2 * 4 * M);  // every staged page goes on to the other GPU
  EXPECT_EQ(num(j["evictions"]), 0u);
  // Per GPU: GPU 0 ran kernels 0 and 2, GPU 1 kernel 1; each staged 4 MB out over its own host
  // link and took 4 MB in over it.
  ASSERT_EQ(j["gpus"].size(), 2u);
  for (unsigned g = 0; g < 2; ++g) {
    const auto& s = j["gpus"][g];
    EXPECT_EQ(s["gpu"], g);
    EXPECT_EQ(num(s["kernels"]), g == 0 ? 2u : 1u);
    EXPECT_EQ(num(s["accesses"]), (g == 0 ? 2 : 1) * kPages4M);
    EXPECT_EQ(num(s["host_link"]["htod_bytes"]), 4 * M);
    EXPECT_EQ(num(s["host_link"]["dtoh_bytes"]), 4 * M);
    EXPECT_EQ(num(s["host_link"]["peer_staged_bytes"]), 4 * M);
    EXPECT_EQ(num(s["host_link"]["remote_bytes"]), 0u);
    EXPECT_EQ(num(s["evictions"]), 0u);
  }
  EXPECT_EQ(num(j["gpus"][0]["gpu_faults"]) + num(j["gpus"][1]["gpu_faults"]),
            num(j["gpu_faults"]));
  // On one GPU the trace is refused: its second launch runs on GPU 1.
  EXPECT_NE(error_of([&] { run_sim(path, {}); }).find("launch 1 runs on GPU 1"), std::string::npos);
}

TEST(MultiGpu, ReadDuplicatesSpreadAcrossGpusAndAWriteInvalidatesThem) {
  // The CPU writes X (host memory) and advises it read-mostly. GPU 0 and GPU 1 read it: each
  // gets a read-only copy from the host, which keeps its own (4 MB htod each, nothing back).
  // GPU 1 then writes the first page: its copy becomes the only one (GPU 0's and the host's are
  // invalidated, nothing copied). GPU 0 reading that page again takes a duplicate of GPU 1's
  // through the host: one page to the host (peer_staged) and one to GPU 0.
  TempDir d;
  const auto path = d.file("readmostly.uvt");
  Program p({{"X", 4 * M}}, 4);
  p.open(path);
  p.cpu_write(0, 0, 4 * M);
  p.w->host_event(advise(p.base(0), 4 * M, trace::Advice::SetReadMostly, Processor::Cpu));
  std::uint32_t kernel = 0;
  for (const unsigned g : {0u, 1u}) {
    p.w->host_event(set_device(g));
    launch(p, kernel++, 0, 0, 4 * M);
    p.w->host_event(synchronize());
  }
  launch(p, kernel++, 0, 0, 4096, AccessKind::Write);  // GPU 1
  p.w->host_event(synchronize());
  p.w->host_event(set_device(0));
  launch(p, kernel++, 0, 0, 4096);
  p.w->host_event(synchronize());
  p.finish();
  const auto j = run_sim(path, {"system.gpus=2"});
  EXPECT_EQ(num(j["accesses"]), 2 * kPages4M + 2);
  EXPECT_EQ(num(j["htod_bytes"]), 2 * 4 * M + 4096);
  EXPECT_EQ(num(j["dtoh_bytes"]), 4096u);
  EXPECT_EQ(num(j["dtoh_bytes_by_cause"]["peer_staged"]), 4096u);
  EXPECT_EQ(num(j["driver"]["zero_filled_pages"]), 0u);
  // Kernel 3's one read faulted once; kernel 2's write faulted once and moved nothing.
  EXPECT_EQ(num(j["kernels"][2]["gpu_faults"]), 1u);
  EXPECT_EQ(num(j["kernels"][3]["gpu_faults"]), 1u);
}

TEST(MultiGpu, HostOperationsReachEveryGpusCopy) {
  // X's first half is on GPU 0, its second half on GPU 1 (first touches). A prefetch of all of
  // X to GPU 1 stages GPU 0's half through the host (2 MB each way); the CPU reading X then
  // faults every page back from GPU 1 (4 MB, cpu_fault); a prefetch to GPU 0 moves it there
  // from the host (4 MB htod) and cudaFree releases GPU 0's 1024 pages and the host's.
  TempDir d;
  const auto path = d.file("hostops.uvt");
  Program p({{"X", 4 * M}}, 2);
  p.open(path);
  p.w->host_event(set_device(0));
  launch(p, 0, 0, 0, 2 * M);
  p.w->host_event(set_device(1));
  launch(p, 1, 0, 2 * M, 2 * M);
  p.w->host_event(synchronize());
  p.w->host_event(prefetch(p.base(0), 4 * M, gpu_processor(1)));
  trace::HostEvent cpu;
  cpu.type = trace::HostEventType::CpuAccess;
  cpu.va = p.base(0);
  cpu.size = 4 * M;
  cpu.device = Processor::Cpu;
  cpu.kind = AccessKind::Read;
  p.w->host_event(cpu);
  p.w->host_event(prefetch(p.base(0), 4 * M, gpu_processor(0)));
  trace::HostEvent f;
  f.type = trace::HostEventType::MemFree;
  f.va = p.base(0);
  p.w->host_event(f);
  p.finish();
  const auto j = run_sim(path, {"system.gpus=2"});
  EXPECT_EQ(num(j["driver"]["zero_filled_pages"]), kPages4M);
  EXPECT_EQ(num(j["dtoh_bytes_by_cause"]["peer_staged"]), 2 * M);
  EXPECT_EQ(num(j["dtoh_bytes_by_cause"]["cpu_fault"]), 4 * M);
  EXPECT_EQ(num(j["dtoh_bytes"]), 6 * M);
  EXPECT_EQ(num(j["htod_bytes_by_cause"]["user_prefetch"]), 6 * M);
  EXPECT_EQ(num(j["htod_bytes"]), 6 * M);
  EXPECT_EQ(num(j["driver"]["freed_gpu_pages"]), kPages4M);
  EXPECT_EQ(num(j["driver"]["freed_cpu_pages"]), kPages4M);
  EXPECT_EQ(num(j["driver"]["frees"]), 1u);
}

TEST(MultiGpu, TwoGpusServicingOneVaBlockTakeItsLockInTurn) {
  // GPUs 0 and 1 read different halves of one 2 MB block at the same time (single pages move:
  // no prefetch), so no page moves between them, but their bottom halves service the same VA
  // block and the block lock makes one wait for the other (service_fault_batch_block). The same
  // reads on two separate blocks never wait.
  TempDir d;
  auto make = [&](const std::string& name, bool same_block) {
    const auto path = d.file(name);
    Program p({{"X", 2 * M}, {"Y", 2 * M}}, 2);
    p.open(path);
    p.w->host_event(set_device(0));
    launch(p, 0, 0, 0, M);
    p.w->host_event(set_device(1));
    launch(p, 1, same_block ? 0 : 1, same_block ? M : 0, M);
    p.w->host_event(synchronize());
    p.finish();
    return path;
  };
  const auto shared = run_sim(make("shared.uvt", true), {"system.gpus=2", "engine.prefetch=none"});
  const auto apart = run_sim(make("apart.uvt", false), {"system.gpus=2", "engine.prefetch=none"});
  for (const auto& j : {shared, apart}) {
    EXPECT_EQ(num(j["accesses"]), 2 * M / 4096);
    EXPECT_EQ(num(j["driver"]["zero_filled_pages"]), 2 * M / 4096);  // no page moved twice
  }
  const std::uint64_t waits =
      num(shared["gpus"][0]["block_lock_waits"]) + num(shared["gpus"][1]["block_lock_waits"]);
  EXPECT_GT(waits, 0u);
  EXPECT_GT(
      num(shared["gpus"][0]["block_lock_wait_ns"]) + num(shared["gpus"][1]["block_lock_wait_ns"]),
      0u);
  for (unsigned g = 0; g < 2; ++g) {
    EXPECT_EQ(num(apart["gpus"][g]["block_lock_waits"]), 0u);
    EXPECT_EQ(num(apart["gpus"][g]["block_lock_wait_ns"]), 0u);
  }
  // Waiting for the lock costs time: the shared run ends later.
  EXPECT_GT(num(shared["sim_time_ns"]), num(apart["sim_time_ns"]));
}

TEST(MultiGpu, RecordingOptsOrderAndTooManyGpusAreOneLineErrors) {
  TempDir d;
  const auto t = gen(d, "random", "8M");
  const auto r = cli({"run", "--gpu", "gtx1080ti", "--trace", t, "-q", "--set", "system.gpus=2",
                      "--record-order", d.file("order.bin")});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("system.gpus"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const auto bad =
      cli({"run", "--gpu", "gtx1080ti", "--trace", t, "-q", "--set", "system.gpus=17"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("system.gpus"), std::string::npos) << bad.err;
}

TEST(MultiGpu, PingPongBetweenGpusIsDetectedAndPinnedInHostMemory) {
  // GPU 0 and GPU 1 read the same 64 KB at once, over and over (each kernel walks it 80 times):
  // every fault of one GPU takes the pages from the other. The thrashing detector (per process,
  // over both GPUs) sees it, throttles, and once a page has thrashed pin_threshold times pins it;
  // with no peer access the pin is host memory: the page is staged there and mapped remotely.
  TempDir d;
  const auto path = d.file("pingpong.uvt");
  Program p({{"X", 2 * M}}, 2);
  p.open(path);
  constexpr int kPasses = 80;
  for (std::uint32_t g = 0; g < 2; ++g) {
    p.w->host_event(set_device(g));
    p.w->begin_launch(g, -1);
    p.w->begin_block(1);
    for (int pass = 0; pass < kPasses; ++pass)
      for (std::uint64_t o = 0; o < 64 * 1024; o += 4096) {
        trace::AccessRecord r;
        r.va = p.base(0) + o;
        r.bytes = 128;
        r.gap_cycles = 2000;
        p.w->access(0, r);
      }
    p.w->end_block();
  }
  p.w->host_event(synchronize());
  p.finish();
  const auto sets = std::vector<std::string>{"system.gpus=2", "driver.prefetch_enable=false"};
  const auto j = run_sim(path, sets);
  EXPECT_EQ(num(j["accesses"]), 2u * kPasses * 16);
  EXPECT_GT(num(j["dtoh_bytes_by_cause"]["peer_staged"]), 0u);
  EXPECT_GT(num(j["driver"]["thrashing_pages"]), 0u);
  EXPECT_GT(num(j["driver"]["pin_hints"]), 0u);
  EXPECT_GT(num(j["driver"]["remote_maps"]), 0u);
  EXPECT_GT(num(j["remote_accesses"]), 0u);
  EXPECT_GT(num(j["driver"]["throttle_hints"]), 0u);  // throttling first, then pins
  EXPECT_EQ(model_outcome(run_sim(path, sets)), model_outcome(j));
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(MultiGpu, ANodePresetExtendsAGpuPreset) {
  // a100-40gb-x4-nopeer is the a100-40gb preset plus system.gpus = 4: every knob of the GPU
  // preset, its provenance, and the node's own.
  const SimConfig gpu = SimConfig::from_preset("a100-40gb");
  const SimConfig node = SimConfig::from_preset("a100-40gb-x4-nopeer");
  EXPECT_EQ(node.system.gpus, 4u);
  nlohmann::json a = node.to_json(), b = gpu.to_json();
  a.erase("system");
  b.erase("system");
  a["provenance"].erase("system.gpus");
  EXPECT_EQ(a, b);
  EXPECT_EQ(node.provenance["system.gpus"]["kind"], "published");
  const auto listed = nlohmann::json::parse(cli_ok({"gpus", "--json"}).out);
  bool found = false;
  for (const auto& g : listed)
    if (g["name"] == "a100-40gb-x4-nopeer") {
      found = true;
      EXPECT_EQ(g["gpus"], 4);
      EXPECT_EQ(g["num_sms"], 108);
    }
  EXPECT_TRUE(found);
  // A bad "extends" is a one-line error naming the file and the field.
  TempDir d;
  const auto self = d.file("self.json"), num = d.file("num.json"), none = d.file("none.json");
  write_text(self, "{\"extends\": \"" + self + "\"}");
  write_text(num, "{\"extends\": 3}");
  write_text(none, "{\"extends\": \"no-such-gpu\"}");
  EXPECT_EQ(error_of([&] { SimConfig::from_preset(self); }),
            self + ": extends: more than 8 presets deep (a cycle?)");
  EXPECT_EQ(error_of([&] { SimConfig::from_preset(num); }),
            num + ": extends: expected the name of the preset this one extends");
  const std::string unknown = error_of([&] { SimConfig::from_preset(none); });
  EXPECT_TRUE(unknown.starts_with(none + ": extends: unknown preset 'no-such-gpu' (known: "))
      << unknown;
  // A base that exists but is no preset is this file's error too (found by fuzzing).
  const auto notjson = d.file("notjson.json"), bad = d.file("bad.json");
  write_text(notjson, "{\"extends\": \"" + bad + "\"}");
  write_text(bad, "not json");
  const std::string broken = error_of([&] { SimConfig::from_preset(notjson); });
  EXPECT_TRUE(broken.starts_with(notjson + ": extends: " + bad)) << broken;
  // A name no file system takes (found by fuzzing), here and on the command line.
  const std::string longname(5000, 'x');
  const auto toolong = d.file("toolong.json");
  write_text(toolong, "{\"extends\": \"" + longname + "\"}");
  EXPECT_TRUE(error_of([&] {
                SimConfig::from_preset(toolong);
              }).starts_with(toolong + ": extends: unknown preset 'xxx"));
  EXPECT_TRUE(error_of([&] {
                SimConfig::from_preset(longname);
              }).starts_with("--gpu: unknown preset 'xxx"));
}

TEST(MultiGpu, EveryPolicyRunsAFourGpuProgramToTheEnd) {
  // Four GPUs share two allocations in two rounds of concurrent kernels (reads and writes,
  // one allocation read-mostly), with user prefetches, a CPU write and a free in between, at
  // 50 % oversubscription per GPU, with and without peer access: every eviction and placement
  // policy completes every access
  // (single pages move: with whole-block prefetching, kernels writing the same blocks at once
  // can livelock, docs/multi-gpu.md).
  TempDir d;
  const auto path = d.file("mix.uvt");
  Program p({{"X", 8 * M}, {"Y", 8 * M}, {"Z", 4 * M}}, 8);
  p.open(path);
  p.w->host_event(advise(p.base(1), 8 * M, trace::Advice::SetReadMostly, Processor::Cpu));
  std::uint64_t records = 0;
  for (std::uint32_t round = 0; round < 2; ++round) {
    for (std::uint32_t g = 0; g < 4; ++g) {
      p.w->host_event(set_device(g));
      const std::uint32_t alloc = (g + round) % 2;
      const std::uint64_t off = (g % 2) * 4 * M;
      launch(p, round * 4 + g, alloc, off, 4 * M, g == 3 ? AccessKind::Write : AccessKind::Read);
      records += kPages4M;
    }
    p.w->host_event(prefetch(p.base(0), 2 * M, gpu_processor(1 + round)));
    p.cpu_write(1, 0, 64 * 1024);
    p.w->host_event(synchronize());
  }
  trace::HostEvent f;
  f.type = trace::HostEventType::MemFree;
  f.va = p.base(2);
  p.w->host_event(f);
  p.finish();
  auto check = [&](const std::vector<std::string>& sets, const std::string& what) {
    std::vector<std::string> all = {"system.gpus=4", "engine.prefetch=none"};
    all.insert(all.end(), sets.begin(), sets.end());
    const auto j = run_sim(path, all, std::nullopt, 50.0);
    EXPECT_EQ(num(j["accesses"]), records) << what;
    EXPECT_FALSE(j["truncated"].get<bool>()) << what;
    std::uint64_t sum = 0;
    for (const auto& g : j["gpus"]) sum += num(g["accesses"]);
    EXPECT_EQ(sum, records) << what;
    // Pages move between GPUs (staged through the host, or over the peer links), except under
    // `host`, which keeps everything in host memory.
    std::uint64_t peer_copies = 0;
    if (j.contains("peer_links"))
      for (const auto& l : j["peer_links"]) peer_copies += num(l["copy_bytes"]);
    if (what.starts_with("host"))
      EXPECT_EQ(num(j["remote_accesses"]), records) << what;
    else if (j.contains("peer_links"))
      EXPECT_GT(peer_copies, 0u) << what;
    else
      EXPECT_GT(num(j["dtoh_bytes_by_cause"]["peer_staged"]), 0u) << what;
  };
  for (const char* peer : {"none", "pcie", "nvlink"}) {
    const std::string ps = std::string("system.peer=") + peer;
    const std::string tag = std::string(peer) == "none" ? "" : std::string(" ") + peer;
    for (const auto& e : EvictionRegistry::all())
      check({"engine.eviction=" + e.name, ps}, e.name + tag);
    for (const auto& e : PlacementRegistry::all())
      check({"engine.placement=" + e.name, ps}, e.name + tag);
  }
}

}  // namespace
}  // namespace uvmsim::test
