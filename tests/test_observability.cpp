// The sampled-observability mechanism and the policy engine inside whole simulations: an exact
// observation lifecycle on a hand-written trace, its costs in the statistics, the events the
// engine relays to policies (kernel and iteration boundaries, threadblock ends, per-access
// notifications with reference ids), region prefetches, ACBM, determinism, and the command line.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "core/config.h"
#include "models/observability.h"
#include "placement_test_util.h"
#include "policies/policy.h"
#include "policies/registry.h"
#include "sim/simulator.h"
#include "test_util.h"
#include "traces/trace.h"

namespace uvmsim::test {
namespace {

constexpr Addr kBase = 0x7f0000000000;

/// A trace over one managed allocation of `blocks` 2 MB blocks; each launch is one threadblock
/// of one warp reading the given (block, page) pairs in order, `gap` cycles apart.
struct Launch {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> reads;
  std::int32_t iteration = -1;
};
void write_trace(const std::string& path, std::uint32_t blocks, const std::vector<Launch>& launches,
                 std::uint32_t gap = 2000) {
  trace::Metadata meta;
  meta.workload = "handwritten";
  meta.allocations.push_back({0, "buf", kBase, std::uint64_t{blocks} << 21, true, false});
  trace::KernelInfo k;
  k.name = "reads";
  k.grid = {1, 1, 1};
  k.block = {32, 1, 1};
  meta.kernels.push_back(k);
  trace::TraceWriter w(path, meta);
  for (const auto& l : launches) {
    w.begin_launch(0, l.iteration);
    w.begin_block(1);
    for (auto [b, p] : l.reads) {
      trace::AccessRecord r;
      r.va = kBase + (Addr{b} << 21) + (Addr{p} << 12);
      r.gap_cycles = gap;
      r.ref_id = b;
      w.access(0, r);
    }
    w.end_block();
    trace::HostEvent sync;
    sync.type = trace::HostEventType::Synchronize;
    w.host_event(sync);
  }
  w.finish();
}

nlohmann::json simulate(const std::string& trace, const std::vector<std::string>& sets,
                        std::optional<double> oversub = std::nullopt,
                        std::optional<std::uint64_t> hbm = std::nullopt) {
  return run_sim(trace, sets, hbm, oversub);
}

std::uint64_t u(const nlohmann::json& j) { return j.get<std::uint64_t>(); }

TEST(ObservabilityModel, BudgetsSamplesNotificationsAndAdaptation) {
  ObservabilityConfig cfg;
  cfg.max_regions = 100;
  cfg.max_feedback_regions = 32;
  cfg.max_regions_pct = 20;
  cfg.adapt_window = 4;
  Observability obs;
  obs.configure(cfg, /*counters=*/5, /*nblocks=*/8, /*capacity_chunks=*/16, /*seed=*/1);
  // 20 % of 16 chunks: 4 regions per purpose, and only 5 hardware counters in all.
  EXPECT_EQ(obs.budget(ObservePurpose::Eviction), 4u);
  EXPECT_EQ(obs.budget(ObservePurpose::Feedback), 4u);
  trace::Allocation a{0, "buf", kBase, std::uint64_t{8} << 21, true, false};
  VaSpace va;
  va.build({a}, true);
  auto& blocks = va.blocks();
  for (auto& b : blocks) {
    b.gpu(0).resident.set_range(0, 512);
    b.gpu(0).count = 512;
  }
  for (std::uint32_t i = 0; i < 4; ++i) {
    const PageMask smp = obs.choose_samples(blocks[i], blocks[i].gpu(0).resident, nullptr);
    EXPECT_EQ(smp.count(), 16u);  // one whole 64 KB page
    EXPECT_TRUE(smp.big_page_full(smp.find_next(0) / 16));
    obs.start(blocks[i], ObservePurpose::Eviction, smp, 0);
  }
  EXPECT_EQ(obs.budget(ObservePurpose::Eviction), 0u);
  EXPECT_EQ(obs.budget(ObservePurpose::Feedback), 1u);  // the fifth counter
  // Samples drawn from given pages only: the 64 KB pages lying wholly in them.
  PageMask from;
  from.set_range(32, 48);
  EXPECT_EQ(obs.choose_samples(blocks[5], blocks[5].gpu(0).resident, &from), from);
  from.set_range(40, 50);  // 48..49 spoil big page 3
  EXPECT_EQ(obs.choose_samples(blocks[5], blocks[5].gpu(0).resident, &from).count(), 16u);
  // A small region's only pages can all be the sample.
  blocks[6].gpu(0).resident.clear();
  blocks[6].gpu(0).resident.set_range(0, 4);
  blocks[6].gpu(0).count = 4;
  EXPECT_EQ(obs.choose_samples(blocks[6], blocks[6].gpu(0).resident, nullptr).count(), 4u);
  // (The hardware counter that watches the samples: AccessCounters.WatchedPages* in
  // test_models.cpp.)
  EXPECT_EQ(obs.end(2).block, 2u);
  EXPECT_EQ(obs.find(2), nullptr);
  EXPECT_EQ(obs.budget(ObservePurpose::Eviction), 1u);
  // Adaptation every 4 evictions: 3 of 4 faulted again -> double; none -> halve.
  EXPECT_EQ(obs.on_evicted(0), 0);
  obs.on_fault(0);
  EXPECT_EQ(obs.on_evicted(1), 0);
  obs.on_fault(1);
  EXPECT_EQ(obs.on_evicted(2), 0);
  obs.on_fault(2);
  obs.on_fault(2);  // counted once
  EXPECT_EQ(obs.on_evicted(3), 1);
  EXPECT_EQ(obs.samples(), 2u);
  for (std::uint32_t b : {4, 5, 6}) EXPECT_EQ(obs.on_evicted(b), 0);
  EXPECT_EQ(obs.on_evicted(7), -1);
  EXPECT_EQ(obs.samples(), 1u);
  for (std::uint32_t b : {4, 5, 6, 7}) obs.on_evicted(b);
  EXPECT_EQ(obs.samples(), 1u);  // never below one
}

TEST(Observability, ExactLifecycleOfObservedRegions) {
  // Three regions, room for two, prefetching off so each fault moves one 4 KB page; LRU
  // observes one region at a time with one sample per region.
  //  launch 0 reads region 0 then 1: no eviction. LRU's head, region 0, becomes observable:
  //    its only GPU page moves to host memory and is mapped remotely (4 KB DtoH).
  //  launch 1 reads region 0 over the link: a notification; LRU moves 0 to the tail, the page
  //    migrates back (4 KB HtoD) and the new head, region 1, is observed (4 KB DtoH). Then
  //    region 2 faults: LRU evicts region 1, observed and never accessed (nothing left to copy:
  //    its page is on the host). Region 0, the head again, is observed once more (4 KB DtoH).
  TempDir d;
  const auto t = d.file("o.uvt");
  write_trace(t, 3, {{{{0, 0}, {1, 0}}}, {{{0, 0}, {2, 0}}}});
  const auto s = simulate(t,
                          {"engine.eviction=lru", "engine.prefetch=none", "observe.max_regions=1",
                           "observe.max_regions_pct=100", "observe.adaptive_samples=false",
                           "observe.only_under_pressure=false"},
                          std::nullopt, std::uint64_t{4} << 20);
  const auto& o = s["observability"];
  EXPECT_TRUE(o["active"].get<bool>());
  EXPECT_EQ(u(o["regions"]["eviction"]), 3u);
  EXPECT_EQ(u(o["regions"]["feedback"]), 0u);
  EXPECT_EQ(u(o["accessed"]["eviction"]), 1u);
  EXPECT_EQ(u(o["evicted_unaccessed"]["eviction"]), 1u);
  EXPECT_EQ(u(o["sample_pages"]), 3u);
  EXPECT_EQ(u(o["remote_accesses"]), 1u);
  EXPECT_EQ(u(o["dtoh_bytes"]), 3u * 4096);
  EXPECT_EQ(u(o["htod_bytes"]), 4096u);
  EXPECT_EQ(u(s["dtoh_bytes_by_cause"]["observation"]), 3u * 4096);
  EXPECT_EQ(u(s["htod_bytes_by_cause"]["observation"]), 4096u);
  EXPECT_EQ(u(s["evictions"]), 1u);
  EXPECT_EQ(u(s["dtoh_bytes_by_cause"]["eviction"]), 0u);
  EXPECT_EQ(u(s["remote_accesses"]), 1u);
  EXPECT_EQ(u(s["gpu_faults"]), 3u);
  EXPECT_EQ(s["policies"]["eviction"]["observed_promotions"], 1);
  EXPECT_GT(u(o["service_time_ns"]), 0u);
}

TEST(Observability, AdaptiveSamplesDoubleWhenEvictedRegionsFaultAgain) {
  // A cyclic sweep of 6 regions through room for 4: every evicted region faults again two
  // evictions later, so in each window of 8 evictions more than half of the regions have faulted
  // again (the last ones are about to): the samples per region double, up to the cap of 4.
  TempDir d;
  const auto t = d.file("c.uvt");
  std::vector<Launch> ls;
  for (int it = 0; it < 12; ++it) {
    Launch l;
    l.iteration = it;
    for (std::uint32_t b = 0; b < 6; ++b)
      for (std::uint32_t p = 0; p < 512; p += 16) l.reads.push_back({b, p});
    ls.push_back(l);
  }
  write_trace(t, 6, ls, 100);
  const auto s = simulate(t,
                          {"engine.eviction=lru", "observe.adapt_window=8",
                           "observe.max_regions_pct=100", "observe.max_samples_per_region=4"},
                          std::nullopt, std::uint64_t{8} << 20);
  const auto& o = s["observability"];
  EXPECT_EQ(u(o["samples_doubled"]), 2u);
  EXPECT_EQ(u(o["samples_per_region"]), 4u);
  // Without adaptation the count stays at 1.
  const auto fixed = simulate(t, {"engine.eviction=lru", "observe.adaptive_samples=false"},
                              std::nullopt, std::uint64_t{8} << 20);
  EXPECT_EQ(u(fixed["observability"]["samples_per_region"]), 1u);
  EXPECT_EQ(u(fixed["observability"]["samples_doubled"]), 0u);
}

TEST(Observability, DefaultPoliciesLeaveTheMechanismOff) {
  TempDir d;
  const auto t = d.file("r.uvt");
  cli_ok({"gen", "regular", "--footprint", "32M", "-o", t});
  const auto s = simulate(t, {}, 50.0);
  EXPECT_FALSE(s["observability"]["active"].get<bool>());
  EXPECT_EQ(u(s["observability"]["regions"]["total"]), 0u);
  EXPECT_EQ(u(s["htod_bytes_by_cause"]["observation"]), 0u);
  EXPECT_EQ(s["policies"]["eviction"]["name"], "driver");
  EXPECT_EQ(s["policies"]["prefetch"]["name"], "tree");
  // lrm is the driver policy under ObservUVM's name: identical statistics.
  auto a = simulate(t, {"engine.eviction=lrm"}, 50.0), b = s;
  for (auto* j : {&a, &b}) {
    j->erase("wall_seconds");
    j->erase("accesses_per_second");
    j->erase("config");
    j->erase("policies");
  }
  EXPECT_EQ(a, b);
}

TEST(Observability, CostsAreCountedAndReportedSeparately) {
  TempDir d;
  const auto t = d.file("mm.uvt"), stats = d.file("s.json"), ev = d.file("e.csv");
  cli_ok({"gen", "mm-tiled", "--footprint", "16M", "-o", t});
  const auto r = cli_ok({"run", "--gpu", "titanv", "--trace", t, "--oversub", "50", "--eviction",
                         "lru", "--prefetch", "fdp", "--stats-out", stats, "--events-out", ev});
  EXPECT_NE(r.out.find("observability : "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("obs. overhead : "), std::string::npos) << r.out;
  const auto s = read_json(stats);
  const auto& o = s["observability"];
  std::uint64_t htod = 0, dtoh = 0;
  for (const auto& [k, v] : s["htod_bytes_by_cause"].items()) htod += u(v);
  for (const auto& [k, v] : s["dtoh_bytes_by_cause"].items()) dtoh += u(v);
  EXPECT_EQ(htod, u(s["htod_bytes"]));
  EXPECT_EQ(dtoh, u(s["dtoh_bytes"]));
  EXPECT_GT(u(o["regions"]["eviction"]), 0u);
  EXPECT_GT(u(o["regions"]["feedback"]), 0u);
  EXPECT_GT(u(o["remote_accesses"]), 0u);
  EXPECT_LE(u(o["remote_accesses"]), u(s["remote_accesses"]));
  // Every observation ends accessed, evicted, cancelled, or is still open at the end.
  const std::uint64_t ended =
      u(o["accessed"]["total"]) + u(o["evicted_unaccessed"]["total"]) + u(o["cancelled"]["total"]);
  EXPECT_LE(ended, u(o["regions"]["total"]));
  EXPECT_LE(u(o["regions"]["total"]) - ended, u(o["max_observed"]));
  // Feedback samples stay on the host when chosen at prefetch time: only eviction samples are
  // copied out, one 4 KB page each time.
  EXPECT_LE(u(o["dtoh_bytes"]), u(o["sample_pages"]) * 4096);
  EXPECT_GT(u(o["dtoh_bytes"]), 0u);
  std::uint64_t observe_rows = 0, access_rows = 0;
  for (const auto& row : read_events(ev)) {
    observe_rows += row.event == "observe";
    access_rows += row.event == "observe_access";
  }
  EXPECT_EQ(observe_rows, u(o["regions"]["total"]));
  EXPECT_EQ(access_rows, u(o["accessed"]["total"]));
}

// A placement policy that records what the engine relays, for the test below.
struct Recorded {
  std::vector<std::pair<std::uint32_t, std::int32_t>> kernel_starts, kernel_ends;
  std::vector<std::int32_t> iterations;
  std::uint64_t tb_ends = 0, access_events = 0, accessed = 0, remote = 0;
  std::set<std::uint32_t> refs;
  std::uint64_t launches_seen_by_position = 0;
};
Recorded g_recorded;

class Recorder final : public PlacementPolicy {
 public:
  explicit Recorder(const PolicyContext& ctx) : engine_(ctx.engine()) { g_recorded = {}; }
  Decision place(const VaBlock&, unsigned, AccessKind, Tick) override {
    return Decision::MigrateToGpu;
  }
  void on_kernel_start(const KernelEvent& k) override {
    g_recorded.kernel_starts.emplace_back(k.launch_index, k.iteration);
    g_recorded.launches_seen_by_position +=
        engine_.position().launch == static_cast<std::int64_t>(k.launch_index);
  }
  void on_kernel_end(const KernelEvent& k) override {
    g_recorded.kernel_ends.emplace_back(k.launch_index, k.iteration);
  }
  void on_iteration(std::int32_t it, Tick) override { g_recorded.iterations.push_back(it); }
  void on_threadblock_end(std::uint64_t, Tick) override { ++g_recorded.tb_ends; }
  bool wants_access_notifications() const override { return true; }
  void on_access(const AccessEvent& a) override {
    ++g_recorded.access_events;
    g_recorded.accessed += a.repeat;
    g_recorded.remote += a.remote;
    g_recorded.refs.insert(a.ref_id);
  }

 private:
  const PolicyEngine& engine_;
};
UVMSIM_REGISTER_PLACEMENT("test-recorder", "records the events the engine relays (tests only)",
                          Recorder);

TEST(PolicyEngine, RelaysProgramStructureAndPerAccessNotifications) {
  TempDir d;
  const auto t = d.file("s.uvt");
  cli_ok({"gen", "stream", "--footprint", "12M", "--param", "iters=3", "-o", t});
  const auto s = simulate(t, {"engine.placement=test-recorder"});
  const auto& r = g_recorded;
  using P = std::pair<std::uint32_t, std::int32_t>;
  EXPECT_EQ(r.kernel_starts, (std::vector<P>{{0, 0}, {1, 1}, {2, 2}}));
  EXPECT_EQ(r.kernel_ends, (std::vector<P>{{0, 0}, {1, 1}, {2, 2}}));
  EXPECT_EQ(r.iterations, (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(r.launches_seen_by_position, 3u);
  std::uint64_t tbs = 0;
  for (const auto& k : s["kernels"]) tbs += u(k["threadblocks"]);
  EXPECT_EQ(r.tb_ends, tbs);
  EXPECT_EQ(r.accessed, u(s["accesses"]));  // every completed access, repeat-expanded
  EXPECT_EQ(r.remote, 0u);
  EXPECT_EQ(r.refs, (std::set<std::uint32_t>{0, 1, 2}));  // the triad's three instructions
}

TEST(PolicyEngine, RegionPrefetchesAndAccessCounterMigration) {
  TempDir d;
  const auto t = d.file("s.uvt");
  cli_ok({"gen", "stream", "--footprint", "48M", "--param", "iters=2", "-o", t});
  // RGP asks for whole regions ahead of the streams.
  const auto rgp = simulate(t, {"engine.prefetch=rgp"}, 50.0);
  EXPECT_GT(u(rgp["driver"]["region_prefetches"]), 0u);
  EXPECT_GT(u(rgp["htod_bytes_by_cause"]["region_prefetch"]), 0u);
  EXPECT_LE(u(rgp["htod_bytes_by_cause"]["region_prefetch"]),
            u(rgp["driver"]["region_prefetches"]) * (2u << 20));
  EXPECT_GT(u(rgp["policies"]["prefetch"]["triggers_hit"]), 0u);
  // ACBM: CPU-initialised inputs are read over the link until a counter fires.
  const auto acbm = simulate(t, {"engine.placement=acbm"}, 50.0);
  EXPECT_GT(u(acbm["remote_accesses"]), 0u);
  EXPECT_GT(u(acbm["driver"]["access_counter_notifications"]), 0u);
  EXPECT_GT(u(acbm["htod_bytes_by_cause"]["access_counter"]), 0u);
  const auto lazy = simulate(t, {"engine.placement=acbm", "policy.acbm.threshold=65535"}, 50.0);
  EXPECT_LT(u(lazy["htod_bytes_by_cause"]["access_counter"]),
            u(acbm["htod_bytes_by_cause"]["access_counter"]));
}

TEST(PolicyEngine, ObservabilityRunsAreDeterministic) {
  TempDir d;
  const auto t = d.file("b.uvt");
  cli_ok({"gen", "blackscholes", "--footprint", "16M", "--param", "iters=2", "-o", t});
  auto a = simulate(t, {"engine.eviction=tournament", "engine.prefetch=fdp+rgp"}, 50.0);
  auto b = simulate(t, {"engine.eviction=tournament", "engine.prefetch=fdp+rgp"}, 50.0);
  EXPECT_GT(u(a["observability"]["regions"]["total"]), 0u);
  for (auto* j : {&a, &b}) {
    j->erase("wall_seconds");
    j->erase("accesses_per_second");
  }
  EXPECT_EQ(a, b);
}

// --- command line --------------------------------------------------------------------------------

void expect_one_line_error(const CliResult& r, const std::string& needle) {
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in " << r.err;
}

TEST(PoliciesCli, ListsPoliciesKnobsAndPresets) {
  const auto text = cli_ok({"policies"}).out;
  for (const char* want :
       {"lru", "lfu", "cp", "tournament", "random", "opt", "mru", "driver, lrm", "fdp", "rgp",
        "acbm", "policy.cp.unprotected", "policy.tournament.policies", "[0 .. 100]", "tm++",
        "eviction=tournament prefetch=fdp+rgp"})
    EXPECT_NE(text.find(want), std::string::npos) << want;
  const auto j = nlohmann::json::parse(cli_ok({"policies", "--json"}).out);
  const nlohmann::json* fdp = nullptr;
  for (const auto& p : j["prefetch"])
    if (p["name"] == "fdp") fdp = &p;
  ASSERT_NE(fdp, nullptr);
  bool found = false;
  for (const auto& k : (*fdp)["knobs"]) {
    if (k["name"] != "switch_fraction") continue;
    found = true;
    EXPECT_EQ(k["type"], "number");
    EXPECT_EQ(k["default"], 0.8);
    EXPECT_EQ(k["range"], "0 .. 1");
  }
  EXPECT_TRUE(found);
  bool tmpp = false;
  for (const auto& p : j["presets"])
    if (p["name"] == "tm++") tmpp = p["eviction"] == "tournament" && p["prefetch"] == "fdp+rgp";
  EXPECT_TRUE(tmpp);
}

TEST(PoliciesCli, KnobsPresetsAndErrors) {
  TempDir d;
  const auto t = d.file("b.uvt"), stats = d.file("s.json");
  cli_ok({"gen", "blackscholes", "--footprint", "16M", "--param", "iters=2", "-o", t});
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"run",       "--gpu", "gtx1080ti",   "--trace", t,
                                  "--oversub", "50",    "--stats-out", stats};
    a.insert(a.end(), extra.begin(), extra.end());
    return cli(a);
  };
  // A preset sets the policies; explicit options still override it.
  auto r = run({"--policy-preset", "tm++"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("eviction=tournament, prefetch=fdp+rgp"), std::string::npos) << r.out;
  r = run({"--policy-preset", "tm++", "--eviction", "lru"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_json(stats)["config"]["engine"]["eviction"], "lru");
  // Knobs reach the policy.
  ASSERT_EQ(run({"--eviction", "cp", "--set", "policy.cp.unprotected=5", "--set",
                 "policy.cp.adaptive=false"})
                .code,
            0);
  EXPECT_EQ(read_json(stats)["policies"]["eviction"]["unprotected_target"], 5);
  // Unknown knob, out-of-range value, unknown policy, bad preset, bad combination: one line each.
  expect_one_line_error(run({"--eviction", "lru", "--set", "policy.lru.nope=1"}),
                        "--set: policy.lru.nope: unknown knob of policy 'lru'");
  expect_one_line_error(run({"--set", "policy.cp.step=0"}), "policy.cp.step: value 0 out of range");
  expect_one_line_error(run({"--set", "policy.fdp.switch_fraction=1.5"}),
                        "policy.fdp.switch_fraction");
  expect_one_line_error(run({"--set", "policy.acbm.granularity=1G"}), "policy.acbm.granularity");
  expect_one_line_error(run({"--set", "policy.nosuch.x=1"}), "unknown policy 'nosuch'");
  expect_one_line_error(run({"--policy-preset", "tm+++"}), "unknown policy preset 'tm+++'");
  expect_one_line_error(run({"--prefetch", "fdp+"}), "empty name");
  expect_one_line_error(run({"--eviction", "lru", "--set", "observe.max_regions=300"}),
                        "access_counters.count");
  // A knob in a preset file names the file.
  const auto preset = d.file("gpu.json");
  std::ofstream(preset) << R"({"gpu": {"num_sms": 8}, "policy": {"lru": {"observ": true}},
      "link": {"htod_curve": [[4096, 5000]], "dtoh_curve": [[4096, 5000]]}})";
  expect_one_line_error(cli({"run", "--gpu", preset, "--trace", t}),
                        preset + ": policy.lru.observ");
}

}  // namespace
}  // namespace uvmsim::test
