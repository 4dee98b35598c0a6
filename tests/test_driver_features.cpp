// Driver features exercised with hand-written traces: replay policies, user prefetch, advice
// (preferred location, accessed-by, read-mostly), access-counter migration, thrashing
// mitigation, CPU faults and the dirty-only eviction what-if.
#include <gtest/gtest.h>

#include "core/config.h"
#include "sim/simulator.h"
#include "test_util.h"
#include "traces/trace.h"

namespace uvmsim::test {
namespace {

constexpr Addr kBase = 0x7f0000000000;

/// A trace with one managed allocation of `bytes` and a kernel of `blocks` x 32 threads whose
/// warp w reads/writes pages [w*pages_per_warp, ...) of the allocation, `passes` times.
struct TraceBuilder {
  trace::Metadata meta;
  std::unique_ptr<trace::TraceWriter> w;
  std::uint64_t bytes;

  TraceBuilder(const std::string& path, std::uint64_t bytes_, std::uint32_t blocks = 1)
      : bytes(bytes_) {
    meta.workload = "handwritten";
    meta.allocations.push_back({0, "buf", kBase, bytes, true, false});
    trace::KernelInfo k;
    k.id = 0;
    k.name = "sweep";
    k.grid = {blocks, 1, 1};
    k.block = {32, 1, 1};
    meta.kernels.push_back(k);
    w = std::make_unique<trace::TraceWriter>(path, meta);
  }
  void host(trace::HostEventType t, Addr va, std::uint64_t size, Processor dev = Processor::Gpu,
            trace::Advice a = trace::Advice::SetPreferredLocation,
            AccessKind kind = AccessKind::Read) {
    trace::HostEvent e;
    e.type = t;
    e.va = va;
    e.size = size;
    e.device = dev;
    e.advice = a;
    e.kind = kind;
    w->host_event(e);
  }
  /// One launch: each of `blocks` threadblocks has one warp reading every `stride` bytes of its
  /// slice of the allocation, `repeat` times per address.
  void sweep(std::uint32_t blocks, AccessKind kind, std::uint64_t stride = 4096,
             std::uint32_t repeat = 1, std::int32_t iteration = -1) {
    w->begin_launch(0, iteration);
    const std::uint64_t slice = bytes / blocks;
    for (std::uint32_t b = 0; b < blocks; ++b) {
      w->begin_block(1);
      for (std::uint64_t off = 0; off < slice; off += stride) {
        trace::AccessRecord r;
        r.va = kBase + b * slice + off;
        r.kind = kind;
        r.bytes = 128;
        r.gap_cycles = 10;
        r.repeat = repeat;
        w->access(0, r);
      }
      w->end_block();
    }
  }
  void finish() { w->finish(); }
};

nlohmann::json simulate(const std::string& trace, std::vector<std::string> sets,
                        std::optional<double> oversub = std::nullopt) {
  SimConfig cfg = SimConfig::from_preset("gtx1080ti");
  for (const auto& s : sets) cfg.set_from_string(s);
  RunOptions o;
  o.trace = trace;
  o.oversub_pct = oversub;
  Simulator sim(cfg, o);
  sim.run();
  return sim.to_json();
}

std::uint64_t u(const nlohmann::json& j) { return j.get<std::uint64_t>(); }

TEST(DriverFeatures, ReplayPolicies) {
  TempDir d;
  const auto t = d.file("v.uvt");
  cli_ok({"gen", "vecadd", "--param", "threads=256", "-o", t});
  std::map<std::string, nlohmann::json> r;
  for (const char* p : {"block", "batch", "batch_flush", "once"})
    r[p] = simulate(t, {std::string("driver.replay_policy=") + p, "engine.prefetch=none"});
  for (auto& [p, s] : r) {
    EXPECT_EQ(u(s["accesses"]), 3u * 256) << p;
    EXPECT_EQ(u(s["htod_bytes_by_cause"]["demand"]), 2u * 256 * 4096) << p;  // a and b
  }
  // Only BATCH_FLUSH discards unfetched entries.
  EXPECT_EQ(u(r["batch"]["faults"]["flushed"]), 0u);
  EXPECT_EQ(u(r["block"]["faults"]["flushed"]), 0u);
  EXPECT_EQ(u(r["once"]["faults"]["flushed"]), 0u);
  // BLOCK replays after every VA block, ONCE once per bottom half, BATCH per batch.
  EXPECT_EQ(u(r["block"]["driver"]["replays"]), u(r["block"]["driver"]["va_blocks_serviced"]));
  EXPECT_EQ(u(r["once"]["driver"]["replays"]), u(r["once"]["driver"]["bottom_halves"]));
  EXPECT_EQ(u(r["batch"]["driver"]["replays"]), u(r["batch"]["fault_batches"]));
  EXPECT_EQ(u(r["batch_flush"]["driver"]["replays"]), u(r["batch_flush"]["fault_batches"]));
}

TEST(DriverFeatures, BatchWithoutFlushServicesStaleEntries) {
  // Many SMs fault at once: with BATCH the entries beyond a batch stay in the buffer and are
  // fetched later, after the replay already re-raised them, so the driver sees pages it has
  // already serviced. BATCH_FLUSH discards them instead.
  TempDir d;
  const auto t = d.file("r.uvt");
  cli_ok({"gen", "regular", "--footprint", "64M", "-o", t});
  const auto batch = simulate(t, {"driver.replay_policy=batch"});
  const auto flush = simulate(t, {});
  EXPECT_GT(u(batch["faults"]["already_resident"]), 0u);
  EXPECT_EQ(u(batch["faults"]["flushed"]), 0u);
  EXPECT_GT(u(flush["faults"]["flushed"]), 0u);
  EXPECT_LT(u(flush["faults"]["already_resident"]), u(batch["faults"]["already_resident"]));
}

TEST(DriverFeatures, ThePushesInFlightAreBoundedByTheChannelsGpfifoEntries) {
  // Under BATCH the bottom half does not wait for a batch's copies, so it would push copies ever
  // further ahead of the copy engines; with every GPFIFO entry of the engine's two channels
  // held, it waits for the oldest push to complete (channel_reserve_in_pool).
  TempDir d;
  const auto t = d.file("r.uvt");
  cli_ok({"gen", "regular", "--footprint", "64M", "--param", "init=cpu", "-o", t});
  const auto bounded = simulate(t, {"driver.replay_policy=batch", "driver.gpfifo_entries=32"});
  const auto loose = simulate(t, {"driver.replay_policy=batch", "driver.gpfifo_entries=1048576"});
  EXPECT_GT(u(bounded["driver"]["channel_full_waits"]), 0u);
  EXPECT_GT(bounded["driver"]["channel_full_wait_ns"].get<double>(), 0.0);
  EXPECT_EQ(u(loose["driver"]["channel_full_waits"]), 0u);
  EXPECT_EQ(loose["driver"]["channel_full_wait_ns"].get<double>(), 0.0);
  // Waiting moves the driver's work later; every access still completes.
  EXPECT_EQ(u(bounded["accesses"]), u(loose["accesses"]));
  EXPECT_GT(u(bounded["sim_time_ns"]), u(loose["sim_time_ns"]));
  // The driver's default (BATCH_FLUSH, 1024 entries) waits for each batch's copies and never
  // fills the channels.
  EXPECT_EQ(u(simulate(t, {})["driver"]["channel_full_waits"]), 0u);
}

TEST(DriverFeatures, BatchFlushReadsTheEntriesItDiscards) {
  // fault_buffer_flush_locked waits for and clears every entry it discards before it pushes the
  // replay: each costs cost.fault_entry_ns of the bottom half's time, and the replay waits for it.
  TempDir d;
  const auto t = d.file("r.uvt");
  cli_ok({"gen", "regular", "--footprint", "64M", "-o", t});
  const auto j = simulate(t, {"cost.fault_entry_ns=40"});
  const std::uint64_t flushed = u(j["faults"]["flushed"]);
  EXPECT_GT(flushed, 0u);
  EXPECT_DOUBLE_EQ(j["driver"]["flush_time_ns"].get<double>(), 40.0 * flushed);
  const auto free_flush = simulate(t, {"cost.fault_entry_ns=0"});
  EXPECT_DOUBLE_EQ(free_flush["driver"]["flush_time_ns"].get<double>(), 0.0);
  // Other replay policies never flush.
  const auto batch = simulate(t, {"cost.fault_entry_ns=40", "driver.replay_policy=batch"});
  EXPECT_DOUBLE_EQ(batch["driver"]["flush_time_ns"].get<double>(), 0.0);
}

TEST(DriverFeatures, EvictionWaitsForTheVictimsIncomingCopies) {
  // Fuzzing defect 10: prefetching 3 blocks into room for 2 evicts the first block while its own
  // 2 MB copy in is still queued on the HtoD engine. The driver orders the copy-back after the
  // block's tracker, so it is set up when the copy in ends, never before.
  TempDir d;
  const auto t = d.file("p.uvt");
  TraceBuilder b(t, 6 << 20);
  b.host(trace::HostEventType::CpuAccess, kBase, 6 << 20, Processor::Cpu,
         trace::Advice::SetPreferredLocation, AccessKind::Write);
  b.host(trace::HostEventType::MemPrefetch, kBase, 6 << 20, Processor::Gpu);
  b.finish();
  const auto ev = d.file("e.csv");
  SimConfig cfg = SimConfig::from_preset("gtx1080ti");
  cfg.set_from_string("hbm.capacity=4M");
  // Without the per-page unmap cost the eviction's host work ends before the copy in does, so
  // the wait for the victim's data is what decides when the copy-back starts.
  cfg.set_from_string("cost.eviction_page_ns=0");
  RunOptions o;
  o.trace = t;
  o.events_out = ev;
  Simulator sim(cfg, o);
  sim.run();
  EXPECT_EQ(sim.stats().evictions, 1u);
  double first_in_end = -1, eviction_start = -1;
  for (const auto& r : read_events(ev)) {
    if (r.event != "migration") continue;
    if (r.direction == "htod" && r.va < kBase + (2u << 20))
      first_in_end = std::max(first_in_end, r.time_ns + r.duration_ns);
    if (r.direction == "dtoh") {
      EXPECT_EQ(r.va, kBase);
      EXPECT_EQ(r.cause, "eviction");
      EXPECT_LT(eviction_start, 0) << "one copy-back";
      eviction_start = r.time_ns;
    }
  }
  ASSERT_GT(first_in_end, 0);
  // The copy-back's run starts with the engine's per-run set-up (cost.copy_run_ns) after it.
  EXPECT_NEAR(eviction_start, first_in_end + cfg.cost.copy_run_ns, 0.001);
}

/// One warp touching one page after another, each access waiting for the previous one
/// (offsets from kBase; no prefetching, so each fault migrates exactly its 4 KB page).
std::string one_by_one(const TempDir& d, const std::string& name, std::uint64_t bytes,
                       const std::vector<std::uint64_t>& offsets,
                       const std::vector<std::pair<Addr, std::uint64_t>>& prefetch_first = {},
                       const std::vector<std::pair<Addr, std::uint64_t>>& prefetch_between = {}) {
  const auto t = d.file(name);
  TraceBuilder b(t, bytes);
  for (const auto& [va, size] : prefetch_first)
    b.host(trace::HostEventType::MemPrefetch, va, size, Processor::Gpu);
  for (std::size_t half = 0; half < 2; ++half) {
    if (half == 1)
      for (const auto& [va, size] : prefetch_between)
        b.host(trace::HostEventType::MemPrefetch, va, size, Processor::Gpu);
    b.w->begin_launch(0);
    b.w->begin_block(1);
    const std::size_t mid = offsets.size() / 2;
    for (std::size_t i = half ? mid : 0; i < (half ? offsets.size() : mid); ++i) {
      trace::AccessRecord r;
      r.va = kBase + offsets[i];
      r.bytes = 4;
      r.gap_cycles = 10;  // depends on the previous access: one fault at a time
      b.w->access(0, r);
    }
    b.w->end_block();
  }
  b.finish();
  return t;
}

TEST(DriverFeatures, MigrationIntoAResidentBlockMovesItsChunkToTheTail) {
  // Issue 18: uvm_va_block_make_resident_finish ends with block_mark_memory_used, so a page
  // migrating into block A (already resident) moves A's root chunk behind B's on the USED list.
  // GPU memory holds two chunks; the warp touches A, B, A again (another page), then C and A a
  // third time. C evicts B (one 4 KB page copied back) and A stays. Keeping the allocation order
  // (A before B, the model before this fix) evicted A (two pages), then B for A's third page.
  TempDir d;
  constexpr std::uint64_t M = 1 << 20;
  const auto t = one_by_one(d, "a.uvt", 6 * M, {0, 2 * M, 100 * 4096, 4 * M, 200 * 4096});
  const auto s = simulate(t, {"engine.prefetch=none", "hbm.capacity=4M"});
  EXPECT_EQ(u(s["evictions"]), 1u);
  EXPECT_EQ(u(s["dtoh_bytes_by_cause"]["eviction"]), 4096u);
  EXPECT_EQ(u(s["gpu_faults"]), 5u);
}

TEST(DriverFeatures, UserPrefetchOfAResidentBlockMarksItUsed) {
  // cudaMemPrefetchAsync ends in uvm_va_block_make_resident too: A, fully resident already, is
  // marked used although nothing moves, so C evicts B (one page) rather than A (2 MB).
  TempDir d;
  constexpr std::uint64_t M = 1 << 20;
  const auto t = one_by_one(d, "p.uvt", 6 * M, {2 * M, 4 * M}, {{kBase, 2 * M}}, {{kBase, 2 * M}});
  const auto s = simulate(t, {"engine.prefetch=none", "hbm.capacity=4M"});
  EXPECT_EQ(u(s["evictions"]), 1u);
  EXPECT_EQ(u(s["dtoh_bytes_by_cause"]["eviction"]), 4096u);
}

TEST(DriverFeatures, UserspacePolicyMessagesCostDriverTime) {
  // Issue 18 #9: an ObservUVM policy runs in userspace; every event relayed to it and every
  // decision taken from it crosses the eBPF layer (§V-B). On the trace above with `lru`
  // (observation off): 5 onPageFault, 1 setEvictionRegion, 1 onEviction = 7 messages.
  TempDir d;
  constexpr std::uint64_t M = 1 << 20;
  const auto t = one_by_one(d, "a.uvt", 6 * M, {0, 2 * M, 100 * 4096, 4 * M, 200 * 4096});
  const std::vector<std::string> lru = {"engine.prefetch=none", "hbm.capacity=4M",
                                        "engine.eviction=lru", "policy.lru.observe=false"};
  auto with = [&](std::vector<std::string> sets, const std::string& extra) {
    sets.push_back(extra);
    return simulate(t, sets);
  };
  const auto costly = with(lru, "cost.userspace_message_ns=1000");
  const auto free = with(lru, "cost.userspace_message_ns=0");
  EXPECT_EQ(u(costly["driver"]["policy_messages"]), 7u);
  EXPECT_DOUBLE_EQ(costly["driver"]["policy_time_ns"].get<double>(), 7000.0);
  EXPECT_DOUBLE_EQ(free["driver"]["policy_time_ns"].get<double>(), 0.0);
  // Charged on the driver's clock, they delay a replay where that clock is what the batch waits
  // for: batches 3 and 5 (+1 us each, their onPageFault); batch 4 ends when C's new chunk has
  // been zeroed after the victim's copy-back, which the setEvictionRegion message delays (+1 us);
  // in batches 1 and 2 the zero-fill of the new chunks hides the messages.
  EXPECT_DOUBLE_EQ(costly["sim_time_ns"].get<double>() - free["sim_time_ns"].get<double>(), 3000.0);
  // The driver's own policies live in the kernel: no messages.
  const auto driver =
      simulate(t, {"engine.prefetch=none", "hbm.capacity=4M", "cost.userspace_message_ns=1000"});
  EXPECT_EQ(u(driver["driver"]["policy_messages"]), 0u);
}

TEST(DriverFeatures, LeuChargesItsHostComputationAtTheEviction) {
  // LEU's RIMM host ranks chunks by the priorities of their blocks and folds the sampler's
  // reports into the Ref RIT (§3.3); both are charged where the victim is chosen. The warp
  // reads two pages of one 64 KB LEU block in A and in B (a reuse each, so the reference has a
  // distribution), A's page 100, then C, which needs a victim.
  TempDir d;
  constexpr std::uint64_t M = 1 << 20;
  const auto t = one_by_one(d, "a.uvt", 6 * M, {0, 4096, 2 * M, 2 * M + 4096, 100 * 4096, 4 * M});
  const std::vector<std::string> base = {"engine.prefetch=none", "hbm.capacity=4M",
                                         "engine.eviction=leu"};
  auto with = [&](const std::string& a, const std::string& b) {
    auto sets = base;
    sets.push_back(a);
    sets.push_back(b);
    return simulate(t, sets);
  };
  const auto rank = with("policy.leu.priority_ns=100", "policy.leu.sample_ns=0");
  const std::uint64_t evals = u(rank["policies"]["eviction"]["priority_evaluations"]);
  EXPECT_GT(evals, 0u);
  EXPECT_DOUBLE_EQ(rank["driver"]["policy_time_ns"].get<double>(), 100.0 * evals);
  // Five accesses completed (all sampled) before the sixth one's fault needs a victim.
  const auto samples = with("policy.leu.priority_ns=0", "policy.leu.sample_ns=10");
  EXPECT_DOUBLE_EQ(samples["driver"]["policy_time_ns"].get<double>(), 50.0);
  EXPECT_EQ(u(samples["evictions"]), 1u);
}

TEST(DriverFeatures, UserPrefetchAvoidsFaults) {
  TempDir d;
  const auto t = d.file("p.uvt");
  TraceBuilder b(t, 4 << 20, 4);
  b.host(trace::HostEventType::CpuAccess, kBase, 4 << 20, Processor::Cpu,
         trace::Advice::SetPreferredLocation, AccessKind::Write);
  b.host(trace::HostEventType::MemPrefetch, kBase, 4 << 20, Processor::Gpu);
  b.sweep(4, AccessKind::Read);
  b.host(trace::HostEventType::MemPrefetch, kBase, 2 << 20, Processor::Cpu);
  b.finish();
  const auto s = simulate(t, {});
  EXPECT_EQ(u(s["gpu_faults"]), 0u);
  EXPECT_EQ(u(s["htod_bytes_by_cause"]["user_prefetch"]), 4u << 20);
  EXPECT_EQ(u(s["htod_bytes"]), 4u << 20);
  EXPECT_EQ(u(s["dtoh_bytes_by_cause"]["user_prefetch"]), 2u << 20);
  EXPECT_EQ(u(s["driver"]["cpu_first_touch_pages"]), 1024u);
}

TEST(DriverFeatures, CpuFaultsMovePageAndPrefetchBack) {
  // The GPU writes a CPU-initialised 2 MB buffer, then the CPU reads it back: each CPU fault
  // moves 4 KB + 60 KB (calibration-facts.md), then the tree grows as on the GPU.
  TempDir d;
  const auto t = d.file("c.uvt");
  TraceBuilder b(t, 2 << 20);
  b.host(trace::HostEventType::CpuAccess, kBase, 2 << 20, Processor::Cpu,
         trace::Advice::SetPreferredLocation, AccessKind::Write);
  b.host(trace::HostEventType::MemPrefetch, kBase, 2 << 20, Processor::Gpu);
  b.sweep(1, AccessKind::Write);
  b.host(trace::HostEventType::Synchronize, 0, 0);
  b.host(trace::HostEventType::CpuAccess, kBase, 64 << 10, Processor::Cpu);
  b.finish();
  const auto ev = d.file("e.csv");
  RunOptions o;
  o.trace = t;
  o.events_out = ev;
  Simulator sim(SimConfig::from_preset("gtx1080ti"), o);
  sim.run();
  EXPECT_EQ(sim.stats().cpu_faults, 1u);
  EXPECT_EQ(sim.stats().dtoh_by_cause[static_cast<int>(DtohCause::CpuFault)], 64u << 10);
  std::vector<std::string> dtoh;
  for (const auto& r : read_events(ev))
    if (r.direction == "dtoh") dtoh.push_back(std::to_string(r.bytes / 1024) + "K:" + r.cause);
  EXPECT_EQ(dtoh, (std::vector<std::string>{"64K:cpu_fault"}));
}

TEST(DriverFeatures, PreferredLocationCpuMapsRemotely) {
  TempDir d;
  const auto t = d.file("r.uvt");
  TraceBuilder b(t, 2 << 20);
  b.host(trace::HostEventType::CpuAccess, kBase, 2 << 20, Processor::Cpu,
         trace::Advice::SetPreferredLocation, AccessKind::Write);
  b.host(trace::HostEventType::MemAdvise, kBase, 2 << 20, Processor::Cpu,
         trace::Advice::SetPreferredLocation);
  b.sweep(1, AccessKind::Read, 4096, 4);
  b.finish();
  const auto s = simulate(t, {});
  EXPECT_EQ(u(s["htod_bytes"]), 0u);
  EXPECT_EQ(u(s["driver"]["remote_maps"]), 512u);  // each page faults once, then maps remotely
  EXPECT_EQ(u(s["remote_accesses"]), 512u * 4);
  EXPECT_EQ(u(s["remote_bytes"]), 512u * 4 * 128);
}

TEST(DriverFeatures, AccessedByReadsRemotelyWithoutFaults) {
  TempDir d;
  const auto t = d.file("a.uvt");
  TraceBuilder b(t, 2 << 20);
  b.host(trace::HostEventType::CpuAccess, kBase, 2 << 20, Processor::Cpu,
         trace::Advice::SetPreferredLocation, AccessKind::Write);
  b.host(trace::HostEventType::MemAdvise, kBase, 2 << 20, Processor::Gpu,
         trace::Advice::SetAccessedBy);
  b.host(trace::HostEventType::MemAdvise, kBase, 2 << 20, Processor::Cpu,
         trace::Advice::SetPreferredLocation);
  b.sweep(1, AccessKind::Read);
  b.finish();
  const auto s = simulate(t, {});
  EXPECT_EQ(u(s["gpu_faults"]), 0u);
  EXPECT_EQ(u(s["remote_accesses"]), 512u);
}

TEST(DriverFeatures, AccessCounterMigrationBringsHotRemoteDataIn) {
  TempDir d;
  const auto t = d.file("ac.uvt");
  TraceBuilder b(t, 2 << 20);
  b.host(trace::HostEventType::CpuAccess, kBase, 2 << 20, Processor::Cpu,
         trace::Advice::SetPreferredLocation, AccessKind::Write);
  b.host(trace::HostEventType::MemAdvise, kBase, 2 << 20, Processor::Gpu,
         trace::Advice::SetAccessedBy);
  for (int i = 0; i < 4; ++i) b.sweep(1, AccessKind::Read, 4096, 8, i);
  b.finish();
  const auto off = simulate(t, {});
  EXPECT_EQ(u(off["htod_bytes"]), 0u);  // ACBM is off by default (x86)
  EXPECT_EQ(u(off["remote_accesses"]), 4u * 512 * 8);
  const auto on = simulate(t, {"access_counters.migration=true", "access_counters.threshold=64"});
  EXPECT_GT(u(on["driver"]["access_counter_notifications"]), 0u);
  EXPECT_GT(u(on["htod_bytes_by_cause"]["access_counter"]), 0u);
  EXPECT_LT(u(on["remote_accesses"]), u(off["remote_accesses"]));
  EXPECT_EQ(u(on["accesses"]), u(off["accesses"]));
}

TEST(DriverFeatures, ReadMostlyDuplicatesAndEvictsForFree) {
  TempDir d;
  const auto t = d.file("rm.uvt");
  TraceBuilder b(t, 8 << 20, 4);
  b.host(trace::HostEventType::CpuAccess, kBase, 8 << 20, Processor::Cpu,
         trace::Advice::SetPreferredLocation, AccessKind::Write);
  b.host(trace::HostEventType::MemAdvise, kBase, 8 << 20, Processor::Gpu,
         trace::Advice::SetReadMostly);
  b.sweep(4, AccessKind::Read);
  b.finish();
  const auto s = simulate(t, {}, 100.0);  // 4 blocks in 2 chunks: they evict each other
  EXPECT_GT(u(s["evictions"]), 0u);
  EXPECT_GE(u(s["htod_bytes"]), 8u << 20);
  EXPECT_EQ(u(s["dtoh_bytes"]), 0u);  // the CPU copy stayed valid: nothing to copy back
}

TEST(DriverFeatures, CpuReadOfReadMostlyPageDuplicates) {
  // The GPU writes a read-mostly 64 KB buffer (it moves there), the CPU reads it, the GPU reads
  // it again. The CPU read duplicates (can_read_duplicate): 16 pages are copied to the host and
  // the GPU keeps its copy, so its second launch does not fault. Without read-mostly the CPU
  // read takes the pages away and the GPU faults them back.
  TempDir d;
  auto make = [&](const std::string& name, bool read_mostly) {
    const auto t = d.file(name);
    TraceBuilder b(t, 64 << 10);
    b.host(trace::HostEventType::CpuAccess, kBase, 64 << 10, Processor::Cpu,
           trace::Advice::SetPreferredLocation, AccessKind::Write);
    if (read_mostly)
      b.host(trace::HostEventType::MemAdvise, kBase, 64 << 10, Processor::Gpu,
             trace::Advice::SetReadMostly);
    b.sweep(1, AccessKind::Write, 4096, 1, 0);
    b.host(trace::HostEventType::Synchronize, 0, 0);
    b.host(trace::HostEventType::CpuAccess, kBase, 64 << 10, Processor::Cpu);
    b.sweep(1, AccessKind::Read, 4096, 1, 1);
    b.finish();
    return t;
  };
  const auto dup = simulate(make("rm.uvt", true), {});
  const auto mv = simulate(make("mv.uvt", false), {});
  EXPECT_EQ(u(dup["driver"]["cpu_read_duplicates"]), 16u);
  EXPECT_EQ(u(dup["dtoh_bytes"]), 64u << 10);
  EXPECT_EQ(u(dup["htod_bytes"]), 64u << 10);  // only the first launch's copy
  EXPECT_EQ(u(mv["driver"]["cpu_read_duplicates"]), 0u);
  EXPECT_EQ(u(mv["dtoh_bytes"]), 64u << 10);
  EXPECT_EQ(u(mv["htod_bytes"]), 2u * (64 << 10));  // faulted back
}

TEST(DriverFeatures, AcbmMigratesOnFaultAndNarrowsNotificationsToOnePage) {
  TempDir d;
  // ACBM on CPU-initialised data without oversubscription: every fault migrates (the driver's
  // block_select_processor_residency), nothing is read remotely.
  const auto t = d.file("a.uvt");
  {
    TraceBuilder b(t, 2 << 20);
    b.host(trace::HostEventType::CpuAccess, kBase, 2 << 20, Processor::Cpu,
           trace::Advice::SetPreferredLocation, AccessKind::Write);
    b.sweep(1, AccessKind::Read);
    b.finish();
  }
  const auto acbm = simulate(t, {"engine.placement=acbm"});
  EXPECT_EQ(u(acbm["htod_bytes"]), 2u << 20);
  EXPECT_EQ(u(acbm["remote_accesses"]), 0u);
  EXPECT_EQ(u(acbm["driver"]["remote_maps"]), 0u);
  // Remote reads through AccessedBy: a full 2 MB block's host copy is one 2 MB chunk, so the
  // notifications migrate their 64 KB sub-regions; a 256 KB range has 64 KB host chunks and
  // each notification migrates the one page at its address (expand_notification_block).
  auto remote = [&](const std::string& name, std::uint64_t bytes, std::vector<std::string> sets) {
    const auto f = d.file(name);
    TraceBuilder b(f, bytes);
    b.host(trace::HostEventType::CpuAccess, kBase, bytes, Processor::Cpu,
           trace::Advice::SetPreferredLocation, AccessKind::Write);
    b.host(trace::HostEventType::MemAdvise, kBase, bytes, Processor::Gpu,
           trace::Advice::SetAccessedBy);
    for (int i = 0; i < 4; ++i) b.sweep(1, AccessKind::Read, 4096, 8, i);
    b.finish();
    sets.push_back("access_counters.migration=true");
    sets.push_back("access_counters.threshold=64");
    return simulate(f, sets);
  };
  const auto full = remote("f.uvt", 2 << 20, {});
  EXPECT_EQ(u(full["driver"]["access_counter_single_page"]), 0u);
  EXPECT_GT(u(full["htod_bytes_by_cause"]["access_counter"]), 64u << 10);
  const auto part = remote("p.uvt", 256 << 10, {});
  EXPECT_GT(u(part["driver"]["access_counter_single_page"]), 0u);
  EXPECT_EQ(u(part["htod_bytes_by_cause"]["access_counter"]), 4096u);
  // Without 2 MB host chunks a full block behaves like the partial one.
  const auto small = remote("s.uvt", 2 << 20, {"driver.cpu_chunk_2m=false"});
  EXPECT_EQ(u(small["htod_bytes_by_cause"]["access_counter"]), 4096u);
}

TEST(DriverFeatures, DirtyOnlyWritebackIsAWhatIf) {
  TempDir d;
  const auto t = d.file("w.uvt");
  cli_ok({"gen", "regular", "--footprint", "32M", "-o", t});  // reads only, zero-filled
  const auto real = simulate(t, {}, 50.0);
  const auto whatif = simulate(t, {"driver.evict_dirty_only=true"}, 50.0);
  EXPECT_GT(u(real["dtoh_bytes_by_cause"]["eviction"]), 0u);  // the driver copies everything
  EXPECT_EQ(u(whatif["dtoh_bytes_by_cause"]["eviction"]), 0u);
  EXPECT_EQ(u(whatif["evictions"]), u(real["evictions"]));
}

TEST(DriverFeatures, CpuGpuPingPongIsThrottledAndPinned) {
  // The GPU and the CPU take turns writing the same 64 KB faster than the 500 us lapse: the
  // thrashing detector flags the pages and mitigates; with it disabled nothing is flagged.
  TempDir d;
  const auto t = d.file("pp.uvt");
  TraceBuilder b(t, 64 << 10);
  b.host(trace::HostEventType::CpuAccess, kBase, 64 << 10, Processor::Cpu,
         trace::Advice::SetPreferredLocation, AccessKind::Write);
  for (int i = 0; i < 30; ++i) {
    b.sweep(1, AccessKind::Write, 4096, 1, i);
    b.host(trace::HostEventType::CpuAccess, kBase, 64 << 10, Processor::Cpu,
           trace::Advice::SetPreferredLocation, AccessKind::Write);
  }
  b.finish();
  const auto on = simulate(t, {});
  const auto off = simulate(t, {"thrashing.enable=false"});

  EXPECT_GT(u(on["driver"]["thrashing_pages"]), 0u);
  EXPECT_GT(u(on["driver"]["throttle_hints"]) + u(on["driver"]["pin_hints"]), 0u);
  EXPECT_EQ(u(off["driver"]["thrashing_pages"]), 0u);
  EXPECT_EQ(u(off["driver"]["throttle_hints"]) + u(off["driver"]["pin_hints"]), 0u);
  EXPECT_EQ(u(on["accesses"]), u(off["accesses"]));
  // Thrashing pages leave the prefetcher: CPU faults come page by page.
  EXPECT_GT(u(on["driver"]["cpu_faults"]), u(off["driver"]["cpu_faults"]));
  // Throttling slows the ping-pong down on purpose.
  EXPECT_GT(on["sim_time_ns"].get<double>(), off["sim_time_ns"].get<double>());
  // Pinning at the first throttling period: the page stays put and the other side maps it
  // remotely, so far less data moves.
  const auto pin = simulate(t, {"thrashing.pin_threshold=1"});
  EXPECT_GT(u(pin["driver"]["pin_hints"]), 0u);
  EXPECT_LT(u(pin["htod_bytes"]) + u(pin["dtoh_bytes"]),
            u(off["htod_bytes"]) + u(off["dtoh_bytes"]));
}

// ---- a coherent host link (NVLink-C2C, system.coherent_host): the CPU maps GPU memory ------

/// The GPU and the CPU take turns writing the same 64 KB (CpuGpuPingPongIsThrottledAndPinned's
/// trace).
std::string ping_pong_trace(const TempDir& d) {
  const auto t = d.file("pp.uvt");
  TraceBuilder b(t, 64 << 10);
  b.host(trace::HostEventType::CpuAccess, kBase, 64 << 10, Processor::Cpu,
         trace::Advice::SetPreferredLocation, AccessKind::Write);
  for (int i = 0; i < 30; ++i) {
    b.sweep(1, AccessKind::Write, 4096, 1, i);
    b.host(trace::HostEventType::CpuAccess, kBase, 64 << 10, Processor::Cpu,
           trace::Advice::SetPreferredLocation, AccessKind::Write);
  }
  b.finish();
  return t;
}

TEST(CoherentHost, CpuGpuPingPongPinsThePagesInGpuMemoryAndTheCpuMapsThem) {
  // get_hint_for_migration_thrashing's fast path: over a coherent link every thrashing
  // processor reaches GPU memory, so a thrashing page is pinned there and the CPU maps it,
  // where over PCIe the GPU is throttled and the pin is in host memory.
  TempDir d;
  const auto t = ping_pong_trace(d);
  const auto c2c = simulate(t, {"system.coherent_host=true"});
  // The pages move GPU, CPU, GPU, CPU (64 KB at a time: the CPU fault prefetches the rest)
  // and are flagged at their fifth migration, the GPU's third fault: per-page history starts
  // at the second migration and three more within the lapse reach thrashing.threshold. From
  // then on the CPU maps each page (one CPU fault each) and nothing moves.
  EXPECT_EQ(u(c2c["htod_bytes"]), 3u * (64 << 10));
  EXPECT_EQ(u(c2c["dtoh_bytes"]), 2u * (64 << 10));
  EXPECT_EQ(u(c2c["gpu_faults"]), 3u);
  EXPECT_EQ(u(c2c["driver"]["cpu_faults"]), 2u + 16);
  EXPECT_EQ(u(c2c["driver"]["cpu_remote_maps"]), 16u);
  EXPECT_EQ(u(c2c["driver"]["thrashing_pages"]), 16u);
  EXPECT_EQ(u(c2c["driver"]["pin_hints"]), 16u);  // the CPU's, one per page
  EXPECT_EQ(u(c2c["driver"]["throttle_hints"]), 0u);
  const auto pcie = simulate(t, {});
  EXPECT_EQ(u(pcie["driver"]["cpu_remote_maps"]), 0u);
  EXPECT_GT(u(pcie["driver"]["throttle_hints"]), 0u);
  EXPECT_GT(u(pcie["dtoh_bytes"]), 10 * u(c2c["dtoh_bytes"]));
  EXPECT_EQ(u(pcie["accesses"]), u(c2c["accesses"]));
}

/// A GPU-written 64 KB buffer whose preferred location is the GPU (advised first, so the GPU's
/// write populates it there), read by the CPU twice, then by the GPU again.
std::string gpu_written_then_cpu_read(const TempDir& d, trace::Advice advice, Processor who) {
  const auto t = d.file("g.uvt");
  TraceBuilder b(t, 64 << 10);
  b.host(trace::HostEventType::MemAdvise, kBase, 64 << 10, who, advice);
  b.sweep(1, AccessKind::Write, 4096, 1, 0);
  b.host(trace::HostEventType::Synchronize, 0, 0);
  b.host(trace::HostEventType::CpuAccess, kBase, 64 << 10, Processor::Cpu);
  b.host(trace::HostEventType::CpuAccess, kBase, 64 << 10, Processor::Cpu);
  b.sweep(1, AccessKind::Read, 4096, 1, 1);
  b.finish();
  return t;
}

TEST(CoherentHost, ACpuFaultOnAPagePreferringTheGpuMapsItInGpuMemory) {
  // block_select_processor_residency: the CPU can map the preferred location, so the page
  // stays there; one CPU fault per page, the second read and the GPU's relaunch do not fault.
  TempDir d;
  const auto t = gpu_written_then_cpu_read(d, trace::Advice::SetPreferredLocation, Processor::Gpu);
  const auto c2c = simulate(t, {"system.coherent_host=true"});
  EXPECT_EQ(u(c2c["dtoh_bytes"]), 0u);
  EXPECT_EQ(u(c2c["htod_bytes"]), 0u);  // zero-filled on the GPU
  EXPECT_EQ(u(c2c["driver"]["cpu_faults"]), 16u);
  EXPECT_EQ(u(c2c["driver"]["cpu_remote_maps"]), 16u);
  EXPECT_EQ(u(c2c["kernels"][1]["gpu_faults"]), 0u);
  // Over PCIe the CPU cannot map it: each page comes back (no prefetch towards the CPU with a
  // preferred GPU) and the GPU faults it in again.
  const auto pcie = simulate(t, {});
  EXPECT_EQ(u(pcie["dtoh_bytes"]), 64u << 10);
  EXPECT_EQ(u(pcie["driver"]["cpu_faults"]), 16u);
  EXPECT_EQ(u(pcie["driver"]["cpu_remote_maps"]), 0u);
  EXPECT_EQ(u(pcie["htod_bytes"]), 64u << 10);
  EXPECT_GT(u(pcie["kernels"][1]["gpu_faults"]), 0u);
}

TEST(CoherentHost, AccessedByTheCpuMapsTheGpuCopyAndWithoutAdviceThePageMoves) {
  TempDir d;
  const auto by =
      simulate(gpu_written_then_cpu_read(d, trace::Advice::SetAccessedBy, Processor::Cpu),
               {"system.coherent_host=true"});
  EXPECT_EQ(u(by["dtoh_bytes"]), 0u);
  EXPECT_EQ(u(by["driver"]["cpu_remote_maps"]), 16u);
  EXPECT_EQ(u(by["driver"]["cpu_faults"]), 16u);
  // No advice (read-mostly off): the CPU fault migrates as over PCIe, 4 KB + the prefetcher's
  // 60 KB, even though the CPU could map the page.
  TempDir d2;
  const auto none =
      simulate(gpu_written_then_cpu_read(d2, trace::Advice::UnsetReadMostly, Processor::Gpu),
               {"system.coherent_host=true"});
  EXPECT_EQ(u(none["dtoh_bytes"]), 64u << 10);
  EXPECT_EQ(u(none["driver"]["cpu_faults"]), 1u);
  EXPECT_EQ(u(none["driver"]["cpu_remote_maps"]), 0u);
}

TEST(CoherentHost, ACpuFirstTouchOfAPagePreferringTheGpuPopulatesGpuMemory) {
  // A page resident nowhere goes to the preferred location when the requester can map it: over
  // a coherent link the CPU's initialisation lands in GPU memory and nothing is copied to the
  // GPU afterwards; over PCIe it lands in host memory and the GPU's faults migrate it.
  TempDir d;
  const auto t = d.file("f.uvt");
  TraceBuilder b(t, 2 << 20);
  b.host(trace::HostEventType::MemAdvise, kBase, 2 << 20, Processor::Gpu,
         trace::Advice::SetPreferredLocation);
  b.host(trace::HostEventType::CpuAccess, kBase, 2 << 20, Processor::Cpu,
         trace::Advice::SetPreferredLocation, AccessKind::Write);
  b.sweep(1, AccessKind::Read);
  b.finish();
  const auto c2c = simulate(t, {"system.coherent_host=true"});
  EXPECT_EQ(u(c2c["driver"]["cpu_first_touch_pages"]), 0u);
  EXPECT_EQ(u(c2c["driver"]["cpu_remote_maps"]), 512u);
  EXPECT_EQ(u(c2c["htod_bytes"]), 0u);
  EXPECT_EQ(u(c2c["gpu_faults"]), 0u);
  const auto pcie = simulate(t, {});
  EXPECT_EQ(u(pcie["driver"]["cpu_first_touch_pages"]), 512u);
  EXPECT_EQ(u(pcie["driver"]["cpu_remote_maps"]), 0u);
  EXPECT_EQ(u(pcie["htod_bytes"]), 2u << 20);
}

TEST(CoherentHost, TheGh200PresetHasACoherentHostLink) {
  EXPECT_TRUE(SimConfig::from_preset("gh200").system.coherent_host);
  EXPECT_FALSE(SimConfig::from_preset("h100-pcie").system.coherent_host);
}

}  // namespace
}  // namespace uvmsim::test
