// The driver's placement actions (PolicyEngine, models/driver/placement_actions.cpp; SUV §V-D),
// each driven by a scripted test policy on hand-written traces: what state they set, which data
// they move, which costs they charge, and that eviction policies never see pinned or reserved
// chunks.
#include <gtest/gtest.h>

#include <set>

#include "placement_test_util.h"
#include "policies/policy.h"
#include "policies/registry.h"
#include "state/placement_state.h"

namespace uvmsim::test {
namespace {

/// Runs the actions of its `script` knob (a JSON array) at program-structure hooks:
///   {"when": "start" | "end" | "fault", "launch": N (optional: every launch), "op": NAME,
///    "alloc": ID, "offset": BYTES (default 0), "size": BYTES (default: the allocation),
///    "bytes": reservation size}
/// "fault" runs once, at the first serviced GPU fault (during a kernel).
class ScriptedPlacement final : public PlacementPolicy {
 public:
  explicit ScriptedPlacement(const PolicyContext& ctx)
      : engine_(ctx.engine()),
        va_(ctx.va_space),
        script_(nlohmann::json::parse(ctx.params["script"].get<std::string>())) {}
  Decision place(const VaBlock& b, unsigned, AccessKind, Tick) override {
    return b.preferred == PreferredLocation::Cpu ? Decision::MapRemote : Decision::MigrateToGpu;
  }
  void on_kernel_start(const KernelEvent& k) override { run("start", k.launch_index); }
  void on_kernel_end(const KernelEvent& k) override { run("end", k.launch_index); }
  void on_page_fault(const VaBlock&, unsigned, Tick) override {
    if (!fault_done_) {
      fault_done_ = true;
      run("fault", 0);
    }
  }
  void report(nlohmann::json& out) const override { out["results"] = results_; }

 private:
  void run(const std::string& when, std::uint32_t launch) {
    for (const auto& a : script_) {
      if (a["when"] != when) continue;
      if (a.contains("launch") && a["launch"].get<std::uint32_t>() != launch) continue;
      const VaRange* r = nullptr;
      for (const auto& x : va_.ranges())
        if (x.alloc_id == a["alloc"].get<std::uint32_t>()) r = &x;
      const Addr va = r->base + a.value("offset", std::uint64_t{0});
      const std::uint64_t size = a.value("size", r->size);
      const std::string op = a["op"];
      if (op == "pin_gpu") results_.push_back(engine_.pin_on_gpu(va, size));
      if (op == "unpin_gpu") engine_.unpin_on_gpu(va, size);
      if (op == "pin_host") engine_.pin_on_host(va, size);
      if (op == "unpin_host") engine_.unpin_on_host(va, size);
      if (op == "reserve")
        results_.push_back(engine_.reserve_on_demand(va, size, a["bytes"].get<std::uint64_t>()));
      if (op == "unreserve") engine_.release_reservation(va, size);
      if (op == "release") engine_.release_range(va, size);
      if (op == "prefetch_gpu") engine_.prefetch_range(va, size, Processor::Gpu);
      if (op == "prefetch_cpu") engine_.prefetch_range(va, size, Processor::Cpu);
      if (op == "acm_on") engine_.set_access_counter_migration(va, size, true);
      if (op == "acm_off") engine_.set_access_counter_migration(va, size, false);
      if (op == "no_migrate") engine_.set_no_migrate(va, size, true);
      if (op == "migrate") engine_.set_no_migrate(va, size, false);
      if (op == "prefer_cpu") engine_.set_preferred_location(va, size, PreferredLocation::Cpu);
      if (op == "prefer_none") engine_.set_preferred_location(va, size, PreferredLocation::None);
    }
  }
  PolicyEngine& engine_;
  const VaSpace& va_;
  nlohmann::json script_;
  nlohmann::json results_ = nlohmann::json::array();
  bool fault_done_ = false;
};

UVMSIM_REGISTER_PLACEMENT("test-script", "test only: runs placement actions from a script",
                          ScriptedPlacement, Knob::text("script", "[]", "JSON array of actions"));

std::string script_set(const nlohmann::json& s) {
  return "policy.test-script.script=" + nlohmann::json(s.dump()).dump();
}

std::vector<std::string> with_script(const nlohmann::json& s, std::vector<std::string> more = {}) {
  more.push_back("engine.placement=test-script");
  more.push_back(script_set(s));
  return more;
}

constexpr std::uint64_t kMB = 1 << 20;

/// Evictions in the event log whose address lies in [lo, hi).
std::uint64_t evictions_in(const std::vector<CsvRow>& rows, Addr lo, Addr hi) {
  std::uint64_t n = 0;
  for (const auto& r : rows)
    if (r.event == "eviction" && r.va >= lo && r.va < hi) ++n;
  return n;
}

/// One allocation "buf" of `bytes`, its first `init` bytes written by the CPU, walked `walks`
/// times page by page.
std::string buffer_trace(const TempDir& d, std::uint64_t bytes, std::uint64_t init, int walks) {
  Program p({{"buf", bytes}});
  const auto t = d.file("buf.uvt");
  p.open(t);
  if (init) p.cpu_write(0, 0, init);
  for (int i = 0; i < walks; ++i) p.walk(0, {{0, 0, bytes}});
  p.finish();
  return t;
}

/// 8 MB buffer (4 blocks), CPU-initialised, walked twice (tests pin block 0 with 2 chunks).
std::string pinned_buffer_trace(const TempDir& d) { return buffer_trace(d, 8 * kMB, 8 * kMB, 2); }

TEST(PlacementActions, PinOnGpuIsNeverEvicted) {
  TempDir d;
  const auto t = pinned_buffer_trace(d);
  const auto ev = d.file("e.csv");
  const auto s = run_sim(
      t,
      with_script(
          {{{"when", "start"}, {"launch", 0}, {"op", "pin_gpu"}, {"alloc", 0}, {"size", 2 * kMB}}}),
      4 * kMB, std::nullopt, ev);
  // The pin migrated block 0 (copy engines, cause "placement") and pinned its 512 pages.
  EXPECT_EQ(num(s["htod_bytes_by_cause"]["placement"]), 2 * kMB);
  EXPECT_EQ(num(s["placement"]["gpu_pinned_pages"]), 512u);
  EXPECT_EQ(num(s["placement"]["max_pinned_chunks"]), 1u);
  EXPECT_EQ(s["policies"]["placement"]["results"], nlohmann::json::array({2 * kMB}));
  // Blocks 1..3 share the one remaining chunk: each of the 2 x 3 block visits but the first
  // evicts the previous one; block 0 never faults and is never evicted.
  EXPECT_EQ(num(s["evictions"]), 5u);
  const auto rows = read_events(ev);
  EXPECT_EQ(evictions_in(rows, kPlaceBase, kPlaceBase + 2 * kMB), 0u);
  for (const auto& r : rows) {
    if (r.event == "migration" && r.va < kPlaceBase + 2 * kMB) {
      EXPECT_EQ(r.cause, "placement");
    }
  }
}

TEST(PlacementActions, EvictionPoliciesNeverSeePinnedChunks) {
  TempDir d;
  const auto t = pinned_buffer_trace(d);
  std::set<std::string> names;
  for (const auto& e : EvictionRegistry::all()) names.insert(e.name);
  ASSERT_GE(names.size(), 1u);
  for (const auto& name : names) {
    const auto ev = d.file(name + ".csv");
    const auto s = run_sim(t,
                           with_script({{{"when", "start"},
                                         {"launch", 0},
                                         {"op", "pin_gpu"},
                                         {"alloc", 0},
                                         {"size", 2 * kMB}}},
                                       {"engine.eviction=" + name}),
                           4 * kMB, std::nullopt, ev);
    EXPECT_EQ(evictions_in(read_events(ev), kPlaceBase, kPlaceBase + 2 * kMB), 0u) << name;
    EXPECT_EQ(num(s["evictions"]), 5u) << name;  // one free chunk for three blocks, twice
  }
}

TEST(PlacementActions, PinOnHostMapsRemotelyAndFirstTouchesOnHost) {
  TempDir d;
  // block 0 initialised by the CPU, block 1 untouched
  const auto t = buffer_trace(d, 4 * kMB, 2 * kMB, 1);
  const auto s = run_sim(t, with_script({{{"when", "start"}, {"op", "pin_host"}, {"alloc", 0}}}));
  EXPECT_EQ(num(s["gpu_faults"]), 0u);
  EXPECT_EQ(num(s["htod_bytes"]), 0u);
  EXPECT_EQ(num(s["dtoh_bytes"]), 0u);
  EXPECT_EQ(num(s["remote_accesses"]), 1024u);
  EXPECT_EQ(num(s["placement"]["host_pinned_pages"]), 1024u);
  EXPECT_EQ(num(s["placement"]["host_memset_pages"]), 512u);
  // One call + 2 blocks + the memset of 2 MB + 1024 pages mapped: the launch waits for it.
  const auto& c = s["config"]["cost"];
  const double expect_ns = c["placement_call_ns"].get<double>() + 2 * c["block_ns"].get<double>() +
                           2.0 * kMB / c["host_memset_gbps"].get<double>() +
                           1024 * c["page_ns"].get<double>();
  EXPECT_NEAR(s["placement"]["host_time_ns"].get<double>(), expect_ns, 1.0);  // integer ns
}

TEST(PlacementActions, PinOnHostMovesGpuPagesBack) {
  TempDir d;
  const auto t = buffer_trace(d, 4 * kMB, 4 * kMB, 2);
  const auto s = run_sim(
      t, with_script({{{"when", "start"}, {"launch", 1}, {"op", "pin_host"}, {"alloc", 0}}}));
  EXPECT_EQ(num(s["dtoh_bytes_by_cause"]["placement"]), 4 * kMB);
  EXPECT_EQ(num(s["kernels"][1]["gpu_faults"]), 0u);
  EXPECT_EQ(num(s["remote_accesses"]), 1024u);  // the second walk, over the link
  EXPECT_EQ(num(s["placement"]["host_memset_pages"]), 0u);
}

TEST(PlacementActions, UnpinOnHostLetsFaultsMigrate) {
  TempDir d;
  const auto t = buffer_trace(d, 2 * kMB, 2 * kMB, 2);
  const auto s = run_sim(
      t, with_script({{{"when", "start"}, {"launch", 0}, {"op", "pin_host"}, {"alloc", 0}},
                      {{"when", "end"}, {"launch", 0}, {"op", "unpin_host"}, {"alloc", 0}}}));
  EXPECT_EQ(num(s["kernels"][0]["gpu_faults"]), 0u);
  EXPECT_GT(num(s["kernels"][1]["gpu_faults"]), 0u);
  EXPECT_EQ(num(s["htod_bytes"]), 2 * kMB);  // the whole block migrates on the second walk
  EXPECT_EQ(num(s["remote_accesses"]), 512u);
}

/// A (8 MB) and B (4 MB), both CPU-initialised; each launch walks B then A; 4 chunks of HBM.
std::string two_structures_trace(const TempDir& d) {
  Program p({{"A", 8 * kMB}, {"B", 4 * kMB}});
  const auto t = d.file("r.uvt");
  p.open(t);
  p.cpu_write(0, 0, 8 * kMB);
  p.cpu_write(1, 0, 4 * kMB);
  p.walk(0, {{1, 0, 4 * kMB}, {0, 0, 8 * kMB}});
  p.walk(0, {{1, 0, 4 * kMB}, {0, 0, 8 * kMB}});
  p.finish();
  return t;
}

TEST(PlacementActions, ReservationOnlyEvictsWithinItself) {
  TempDir d;
  const auto t = two_structures_trace(d);
  const Addr b_lo = kPlaceBase + 10 * kMB, b_hi = b_lo + 4 * kMB;
  // Driver default: A's four blocks push B out of the four chunks, B then pushes A out.
  const auto ev0 = d.file("d.csv");
  const auto base = run_sim(t, {}, 8 * kMB, std::nullopt, ev0);
  EXPECT_EQ(num(base["evictions"]), 8u);
  EXPECT_EQ(evictions_in(read_events(ev0), b_lo, b_hi), 4u);
  // A in a one-chunk reservation: it evicts only its own chunks (3 in the first walk, 4 in the
  // second), B stays resident and never faults again.
  const auto ev = d.file("r.csv");
  const auto s = run_sim(t,
                         with_script({{{"when", "start"},
                                       {"launch", 0},
                                       {"op", "reserve"},
                                       {"alloc", 0},
                                       {"bytes", 2 * kMB}}}),
                         8 * kMB, std::nullopt, ev);
  EXPECT_EQ(s["policies"]["placement"]["results"], nlohmann::json::array({1}));
  EXPECT_EQ(num(s["evictions"]), 7u);
  EXPECT_EQ(num(s["placement"]["reservation_evictions"]), 7u);
  EXPECT_EQ(evictions_in(read_events(ev), b_lo, b_hi), 0u);
  EXPECT_EQ(num(s["placement"]["reservations"]), 1u);
}

TEST(PlacementActions, EmptyReservationServesRemotely) {
  TempDir d;
  const auto t = two_structures_trace(d);
  const auto s = run_sim(
      t,
      with_script(
          {{{"when", "start"}, {"launch", 0}, {"op", "reserve"}, {"alloc", 0}, {"bytes", 0}}}),
      8 * kMB);
  // No chunk may ever be had for A: its faulted pages are mapped remotely, one per page.
  EXPECT_EQ(num(s["placement"]["no_chunk_remote_maps"]), 2048u);
  EXPECT_EQ(num(s["evictions"]), 0u);
  EXPECT_EQ(num(s["htod_bytes"]), 4 * kMB);  // only B migrates
}

TEST(PlacementActions, ReleaseRangeEvictsAndUnpins) {
  TempDir d;
  const auto t = pinned_buffer_trace(d);
  const auto s = run_sim(
      t,
      with_script(
          {{{"when", "start"}, {"launch", 0}, {"op", "pin_gpu"}, {"alloc", 0}, {"size", 2 * kMB}},
           {{"when", "end"}, {"launch", 0}, {"op", "release"}, {"alloc", 0}, {"size", 2 * kMB}}}),
      4 * kMB);
  EXPECT_EQ(num(s["dtoh_bytes_by_cause"]["placement"]), 2 * kMB);
  EXPECT_EQ(num(s["placement"]["released_pages"]), 512u);
  // Unpinned, block 0 faults back in the second walk.
  EXPECT_GT(num(s["kernels"][1]["gpu_faults"]), 0u);
}

TEST(PlacementActions, UnpinnedPagesBecomeEvictable) {
  TempDir d;
  const auto t = pinned_buffer_trace(d);
  const auto ev = d.file("u.csv");
  const auto s = run_sim(
      t,
      with_script(
          {{{"when", "start"}, {"launch", 0}, {"op", "pin_gpu"}, {"alloc", 0}, {"size", 2 * kMB}},
           {{"when", "end"}, {"launch", 0}, {"op", "unpin_gpu"}, {"alloc", 0}}}),
      4 * kMB, std::nullopt, ev);
  EXPECT_EQ(num(s["dtoh_bytes_by_cause"]["placement"]), 0u);  // unpinning moves nothing
  EXPECT_GT(evictions_in(read_events(ev), kPlaceBase, kPlaceBase + 2 * kMB), 0u);
}

TEST(PlacementActions, PinStopsWhenMemoryIsPinnedOrReserved) {
  TempDir d;
  const auto t = pinned_buffer_trace(d);
  // Two chunks: a one-chunk reservation leaves one chunk a pin may take.
  const auto s = run_sim(
      t,
      with_script(
          {{{"when", "start"},
            {"launch", 0},
            {"op", "reserve"},
            {"alloc", 0},
            {"offset", 6 * kMB},
            {"size", 2 * kMB},
            {"bytes", 2 * kMB}},
           {{"when", "start"}, {"launch", 0}, {"op", "pin_gpu"}, {"alloc", 0}, {"size", 6 * kMB}}}),
      4 * kMB);
  EXPECT_EQ(s["policies"]["placement"]["results"], nlohmann::json::array({1, 2 * kMB}));
  EXPECT_EQ(num(s["placement"]["gpu_pinned_pages"]), 512u);
  // Blocks 1 and 2 can take no chunk: served remotely; block 3 uses its reservation.
  EXPECT_EQ(num(s["placement"]["no_chunk_remote_maps"]), 1024u);
  EXPECT_EQ(num(s["evictions"]), 0u);
}

TEST(PlacementActions, AccessCounterMigrationOnlyForChosenRanges) {
  TempDir d;
  Program p({{"X", 2 * kMB}, {"Y", 2 * kMB}});
  const auto t = d.file("a.uvt");
  p.open(t);
  p.cpu_write(0, 0, 2 * kMB);
  p.cpu_write(1, 0, 2 * kMB);
  p.walk(0, {{0, 0, 2 * kMB}, {1, 0, 2 * kMB}}, 4);
  p.walk(0, {{0, 0, 2 * kMB}, {1, 0, 2 * kMB}}, 4);
  p.finish();
  const auto ev = d.file("a.csv");
  const auto s =
      run_sim(t,
              with_script({{{"when", "start"}, {"launch", 0}, {"op", "acm_on"}, {"alloc", 0}}},
                          {"access_counters.threshold=64"}),
              std::nullopt, std::nullopt, ev);
  // X is remote-mapped and migrates on counter notifications; only Y faults.
  EXPECT_GT(num(s["htod_bytes_by_cause"]["access_counter"]), 0u);
  EXPECT_GT(num(s["remote_accesses"]), 0u);
  const Addr y = kPlaceBase + 4 * kMB;
  for (const auto& r : read_events(ev)) {
    if (r.event != "migration") continue;
    if (r.cause == "demand") {
      EXPECT_GE(r.va, y);
    } else if (r.cause == "access_counter") {
      EXPECT_LT(r.va, y);
    }
  }
  // Marked no-migrate as well, X's notifications are ignored: it stays remote.
  const auto nm = run_sim(
      t, with_script({{{"when", "start"}, {"launch", 0}, {"op", "acm_on"}, {"alloc", 0}},
                      {{"when", "start"}, {"launch", 0}, {"op", "no_migrate"}, {"alloc", 0}}},
                     {"access_counters.threshold=64"}));
  EXPECT_EQ(num(nm["htod_bytes_by_cause"]["access_counter"]), 0u);
  EXPECT_GT(num(nm["placement"]["notifications_ignored"]), 0u);
  EXPECT_EQ(num(nm["remote_accesses"]), 2u * 512 * 4);  // every access to X, both walks
}

TEST(PlacementActions, NoMigrateFaultsMapRemotely) {
  TempDir d;
  const auto t = buffer_trace(d, 2 * kMB, 2 * kMB, 1);
  const auto s = run_sim(t, with_script({{{"when", "start"}, {"op", "no_migrate"}, {"alloc", 0}}}));
  EXPECT_EQ(num(s["htod_bytes"]), 0u);
  EXPECT_EQ(num(s["placement"]["no_migrate_remote_maps"]), 512u);
  EXPECT_EQ(num(s["remote_accesses"]), 512u);
}

TEST(PlacementActions, PreferredLocationFollowsMemAdvise) {
  TempDir d;
  const auto t = buffer_trace(d, 2 * kMB, 2 * kMB, 2);
  const auto s = run_sim(
      t, with_script({{{"when", "start"}, {"launch", 0}, {"op", "prefer_cpu"}, {"alloc", 0}},
                      {{"when", "start"}, {"launch", 1}, {"op", "prefer_none"}, {"alloc", 0}}}));
  // Preferred location CPU: faults map the host copy; unset again, they migrate.
  EXPECT_EQ(num(s["driver"]["remote_maps"]), 512u);
  EXPECT_EQ(num(s["htod_bytes"]), 2 * kMB);
  EXPECT_GT(num(s["kernels"][1]["gpu_faults"]), 0u);
}

TEST(PlacementActions, PrefetchRangeBothWays) {
  TempDir d;
  const auto t = buffer_trace(d, 4 * kMB, 4 * kMB, 2);
  const auto s = run_sim(
      t, with_script({{{"when", "start"}, {"launch", 0}, {"op", "prefetch_gpu"}, {"alloc", 0}},
                      {{"when", "end"},
                       {"launch", 0},
                       {"op", "prefetch_cpu"},
                       {"alloc", 0},
                       {"size", 2 * kMB}}}));
  EXPECT_EQ(num(s["kernels"][0]["gpu_faults"]), 0u);
  EXPECT_EQ(num(s["htod_bytes_by_cause"]["placement"]), 4 * kMB);
  EXPECT_EQ(num(s["dtoh_bytes_by_cause"]["placement"]), 2 * kMB);
  EXPECT_GT(num(s["kernels"][1]["gpu_faults"]), 0u);  // the first block faults back
}

TEST(PlacementActions, ActionDuringKernelRunsOnTheServiceThread) {
  TempDir d;
  Program p({{"A", 2 * kMB}, {"B", 2 * kMB}});
  const auto t = d.file("k.uvt");
  p.open(t);
  p.cpu_write(0, 0, 2 * kMB);
  p.cpu_write(1, 0, 2 * kMB);
  p.walk(0, {{0, 0, 2 * kMB}, {1, 0, 2 * kMB}});
  p.finish();
  // At A's first fault, B is pinned on the host: queued, applied before B is reached.
  const auto s = run_sim(t, with_script({{{"when", "fault"}, {"op", "pin_host"}, {"alloc", 1}}}));
  EXPECT_EQ(num(s["placement"]["actions"]), 1u);
  EXPECT_EQ(num(s["placement"]["host_pinned_pages"]), 512u);
  EXPECT_EQ(num(s["remote_accesses"]), 512u);
  EXPECT_EQ(num(s["htod_bytes"]), 2 * kMB);  // A only
}

TEST(PlacementActions, NoOpActionsCostNothingAndRunsAreDeterministic) {
  TempDir d;
  const auto t = pinned_buffer_trace(d);
  const nlohmann::json script = {
      {{"when", "start"}, {"op", "pin_gpu"}, {"alloc", 0}, {"size", 2 * kMB}},
      {{"when", "start"}, {"op", "no_migrate"}, {"alloc", 0}, {"offset", 2 * kMB}, {"size", 0}}};
  auto a = run_sim(t, with_script(script), 4 * kMB);
  auto b = run_sim(t, with_script(script), 4 * kMB);
  // The pin repeated at launch 1 changes nothing: one action in total.
  EXPECT_EQ(num(a["placement"]["actions"]), 1u);
  a.erase("wall_seconds");
  b.erase("wall_seconds");
  a.erase("accesses_per_second");
  b.erase("accesses_per_second");
  EXPECT_EQ(a, b);
}

TEST(PlacementState, ChunkSourcesFollowThePartition) {
  VaSpace va;
  std::vector<trace::Allocation> allocs = {{0, "a", kPlaceBase, 8 * kMB, true, false}};
  va.build(allocs, false);
  auto& blocks = va.blocks();
  PlacementState ps;
  ps.configure(blocks.size(), 3);
  ps.activate();
  using S = PlacementState::Source;
  // General pool, memory free: a free chunk.
  EXPECT_EQ(ps.chunk_source(blocks[0], 0, blocks).kind, S::Free);
  // A one-chunk reservation for block 3 caps the general pool at 2 chunks.
  const std::uint32_t r = ps.create_reservation(1);
  ps.join_reservation(blocks[3], r);
  ps.refresh(blocks[3]);
  EXPECT_EQ(ps.general_cap(), 2u);
  blocks[0].gpu(0).has_chunk = blocks[1].gpu(0).has_chunk = true;
  ps.refresh(blocks[0]);
  ps.refresh(blocks[1]);
  // The general pool is full: block 2 takes the eviction policy's victim; block 3 a free chunk.
  EXPECT_EQ(ps.chunk_source(blocks[2], 2, blocks).kind, S::PolicyVictim);
  EXPECT_EQ(ps.chunk_source(blocks[3], 2, blocks).kind, S::Free);
  // Pin block 0: a pinned chunk, withheld; the general pool shrinks to one chunk.
  BlockPlacement& bp = ps.block(0);
  bp.gpu_pinned.set(0);
  EXPECT_FALSE(ps.refresh(blocks[0]));
  EXPECT_TRUE(ps.withheld(0));
  EXPECT_EQ(ps.pinned_chunks(), 1u);
  EXPECT_EQ(ps.general_cap(), 1u);
  // A further pin may not take the chunk owed to the reservation.
  ps.block(2).gpu_pinned.set(0);
  ps.refresh(blocks[2]);
  EXPECT_EQ(ps.chunk_source(blocks[2], 2, blocks).kind, S::PolicyVictim);  // block 1 is general
  blocks[1].gpu(0).has_chunk = false;
  ps.refresh(blocks[1]);
  EXPECT_EQ(ps.chunk_source(blocks[2], 1, blocks).kind, S::Free);
  // The reservation at its quota evicts its own chunk; leaving it returns the quota.
  blocks[3].gpu(0).has_chunk = true;
  ps.refresh(blocks[3]);
  EXPECT_EQ(ps.reservation(r)->used, 1u);
  ps.leave_reservation(blocks[3]);
  ps.refresh(blocks[3]);
  EXPECT_EQ(ps.reservation(r), nullptr);
  EXPECT_EQ(ps.reserved_quota(), 0u);
  EXPECT_FALSE(ps.withheld(3));
}

}  // namespace
}  // namespace uvmsim::test
