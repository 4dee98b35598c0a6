// Behaviour of the placement schemes at 50 % oversubscription on small instances of the workload
// generators, as the papers describe it: SUV cuts faults and runtime on iterative and row/column
// workloads and its reservation keeps a Temporal structure from evicting a dense one (Pratheek et
// al., MICRO 2024, §VI-A); RDM removes the inter-kernel thrashing RLM suffers on bfs and cfd (Li &
// Chapman, SC 2019, §5.2); Host never migrates; and every scheme runs on every workload.
#include <gtest/gtest.h>

#include <map>
#include <ostream>

#include "placement_test_util.h"
#include "traces/generators/generator.h"

namespace uvmsim::test {
namespace {

nlohmann::json at50(const std::string& trace, std::vector<std::string> sets,
                    const std::string& events = "") {
  return run_sim(trace, sets, std::nullopt, 50.0, events);
}

double ms(const nlohmann::json& s) { return s["sim_time_ns"].get<double>() / 1e6; }

struct Case {
  const char* name;
  const char* footprint;
  std::vector<std::string> params;
};

// Test logs show the workload, not the struct's bytes.
[[maybe_unused]] void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << ' ' << c.footprint;
}

TEST(PlacementBehaviour, SuvCutsFaultsAndRuntimeOnIterativeWorkloads) {
  TempDir d;
  for (const Case& c :
       {Case{"floyd-warshall", "8M", {"passes=4"}}, Case{"gramschmidt", "6M", {"iters=4"}}}) {
    const auto t = gen(d, c.name, c.footprint, c.params);
    const auto base = at50(t, {});
    const auto suv = at50(t, {"engine.placement=suv"});
    EXPECT_LT(num(suv["gpu_faults"]) * 2, num(base["gpu_faults"])) << c.name;
    EXPECT_LT(ms(suv), ms(base)) << c.name;
    EXPECT_LT(num(suv["evictions"]), num(base["evictions"])) << c.name;
    // Algorithm 2 prefetched-and-pinned the windows of the iteration-dependent memops.
    EXPECT_GT(num(suv["policies"]["placement"]["windows_pinned_bytes"]), 0u) << c.name;
    EXPECT_GT(num(suv["htod_bytes_by_cause"]["placement"]), 0u) << c.name;
  }
}

TEST(PlacementBehaviour, SuvCutsFaultsAndRuntimeOnRowColumnWorkloads) {
  TempDir d;
  for (const char* name : {"mvt", "bicg"}) {
    const auto t = gen(d, name, "8M");
    const auto base = at50(t, {});
    const auto suv = at50(t, {"engine.placement=suv"});
    // The matrix does not fit: its densest part is pinned on the HBM, the rest on the host
    // (accessed remotely), and nothing faults.
    EXPECT_EQ(num(suv["gpu_faults"]), 0u) << name;
    EXPECT_GT(num(base["gpu_faults"]), 500u) << name;
    EXPECT_LT(ms(suv), ms(base)) << name;
    EXPECT_GT(num(suv["placement"]["gpu_pinned_pages"]), 0u) << name;
    EXPECT_GT(num(suv["placement"]["host_pinned_pages"]), 0u) << name;
    EXPECT_GT(num(suv["remote_accesses"]), 0u) << name;
  }
}

TEST(PlacementBehaviour, SuvReservationKeepsTemporalFromEvictingDense) {
  // mm-tiled, N = 1024 on 4 SMs: 8 threadblocks in flight of 1024, so A's working set (a band of
  // rows, 8 x 128 KB) is under half of it: 'Temporal', density 8 > 5 -> on demand in a one-chunk
  // reservation. B, walked by every threadblock, is dense and pinned.
  TempDir d;
  const auto t = gen(d, "mm-tiled", "12M");
  const Addr b_lo = 0x7f0000600000, b_hi = b_lo + (4 << 20);
  auto b_evictions = [&](const std::string& csv) {
    std::uint64_t n = 0;
    for (const auto& r : read_events(csv))
      if (r.event == "eviction" && r.va >= b_lo && r.va < b_hi) ++n;
    return n;
  };
  const auto e0 = d.file("d.csv"), e1 = d.file("s.csv");
  const auto base = at50(t, {"gpu.num_sms=4"}, e0);
  const auto suv = at50(t, {"gpu.num_sms=4", "engine.placement=suv"}, e1);
  const auto& a = suv["policies"]["placement"]["allocations"];
  EXPECT_EQ(a["A"]["last_decision"], "on_demand");
  EXPECT_EQ(a["B"]["last_decision"], "pin");
  EXPECT_GT(b_evictions(e0), 0u);  // the driver default lets A's bands push B out
  EXPECT_EQ(b_evictions(e1), 0u);
  EXPECT_EQ(num(a["B"]["evictions"]), 0u);
  EXPECT_EQ(num(suv["placement"]["reservations"]), 1u);
  EXPECT_EQ(num(suv["evictions"]), num(suv["placement"]["reservation_evictions"]));
  EXPECT_LT(num(suv["gpu_faults"]), num(base["gpu_faults"]));
  EXPECT_LT(ms(suv), ms(base));
}

TEST(PlacementBehaviour, RdmRemovesThrashingWhereRlmDoesNot) {
  TempDir d;
  for (const char* name : {"bfs", "cfd"}) {
    const auto t = gen(d, name, "4M");
    const auto rlm = at50(t, {"engine.placement=rlm"});
    const auto rdm = at50(t, {"engine.placement=rdm"});
    const auto objev = [](const nlohmann::json& s) {
      return num(s["policies"]["placement"]["object_evictions"]);
    };
    // RLM moves objects back and forth between the interleaved kernels; RDM at most replaces
    // once while warming up, and its device-to-host traffic is a small fraction of RLM's.
    EXPECT_GE(objev(rlm), 10u) << name;
    EXPECT_LE(objev(rdm), 1u) << name;
    EXPECT_LT(num(rdm["dtoh_bytes"]) * 10, num(rlm["dtoh_bytes"])) << name;
    // On cfd that is also much faster. (On this small bfs RDM serves more of the graph remotely
    // than RLM's thrashing costs, so its runtime is not lower; docs/placement.md.)
    if (std::string(name) == "cfd") {
      EXPECT_LT(ms(rdm) * 2, ms(rlm)) << name;
    }
  }
}

TEST(PlacementBehaviour, RdmAndGlmUseTheCompilersEstimatesNotTheFuture) {
  // Issue 18 #2. Three 2 MB objects, GPU memory for two: a host loop of two iterations launches
  // walk0 (A, B), then walk1 (A, C) once. At walk1 the oracle knows B is never used again (and
  // B's launch count, 2, makes its GL 20 < C's 100), so RDM and GLM replace B by C. The compiler
  // expects B back at the next iteration of the loop (estimated reuse distance 1, §4.3) and the
  // loop to run 32 times (GL_B = 32 x 10 = 320 > 100, §4.1): C stays in CPU memory.
  TempDir d;
  const auto t = d.file("p.uvt");
  constexpr std::uint64_t M = 2 << 20;
  Program p({{"A", M}, {"B", M}, {"C", M}}, 2);
  trace::Hints& h = p.meta.hints.emplace();
  for (std::uint32_t a = 0; a < 3; ++a) h.allocations.push_back({a, p.meta.allocations[a].name, M});
  auto use = [&](std::uint32_t alloc, std::int64_t reads) {
    trace::UseHint u;
    u.alloc = alloc;
    u.reads = reads;
    u.bytes = static_cast<std::int64_t>(M);  // dense: prefetched before the kernel (explicit)
    return u;
  };
  h.kernels = {{0, "walk0", {use(0, 100), use(1, 10)}, {}},
               {1, "walk1", {use(0, 100), use(2, 100)}, {}}};
  h.launches = {
      {0, 0, 0, {{0, 1}, {1, 1}}}, {1, 0, 1, {{0, 2}, {1, -1}}}, {2, 1, -1, {{0, -1}, {2, -1}}}};
  p.open(t);
  p.walk(0, {{0, 0, 4096}, {1, 0, 4096}}, 1, 0);
  p.walk(0, {{0, 0, 4096}, {1, 0, 4096}}, 1, 1);
  p.walk(1, {{0, 0, 4096}, {2, 0, 4096}});
  p.finish();
  for (const char* scheme : {"rdm", "glm"}) {
    SCOPED_TRACE(scheme);
    const auto est = run_sim(t, {std::string("engine.placement=") + scheme}, 4 << 20);
    const auto orc = run_sim(t, {std::string("engine.placement=") + scheme + "-oracle"}, 4 << 20);
    const auto& e = est["policies"]["placement"];
    const auto& o = orc["policies"]["placement"];
    EXPECT_EQ(e["future"], "estimated");
    EXPECT_EQ(e["trip_count"], 32);
    EXPECT_EQ(o["future"], "oracle");
    EXPECT_EQ(num(e["gpu_mappings"]), 2u);  // A, B
    EXPECT_EQ(num(e["cpu_mappings"]), 1u);  // C
    EXPECT_EQ(num(e["object_evictions"]), 0u);
    EXPECT_EQ(num(o["gpu_mappings"]), 3u);  // A, B, then C
    EXPECT_EQ(num(o["cpu_mappings"]), 0u);
    EXPECT_EQ(num(o["object_evictions"]), 1u);  // B
    EXPECT_DOUBLE_EQ(e["objects"]["B"]["global_locality"].get<double>(), 320.0);
    EXPECT_DOUBLE_EQ(o["objects"]["B"]["global_locality"].get<double>(), 20.0);
    // The estimate with a loop expected to run twice agrees with the oracle on GL (but still
    // expects B back after the last iteration: RDM keeps C out, GLM lets it in).
    const auto two = run_sim(t,
                             {std::string("engine.placement=") + scheme,
                              std::string("policy.") + scheme + ".trip_count=2"},
                             4 << 20);
    EXPECT_DOUBLE_EQ(two["policies"]["placement"]["objects"]["B"]["global_locality"].get<double>(),
                     20.0);
    EXPECT_EQ(num(two["policies"]["placement"]["object_evictions"]),
              std::string(scheme) == "rdm" ? 0u : 1u);
  }
}

TEST(PlacementBehaviour, HostNeverMigrates) {
  TempDir d;
  for (const Case& c : {Case{"mvt", "8M", {}}, Case{"bfs", "4M", {}}, Case{"cfd", "4M", {}},
                        Case{"gramschmidt", "6M", {"iters=2"}}}) {
    const auto t = gen(d, c.name, c.footprint, c.params);
    const auto s = at50(t, {"engine.placement=host"});
    EXPECT_EQ(num(s["htod_bytes"]), 0u) << c.name;
    EXPECT_EQ(num(s["dtoh_bytes"]), 0u) << c.name;
    EXPECT_EQ(num(s["gpu_faults"]), 0u) << c.name;
    EXPECT_EQ(num(s["evictions"]), 0u) << c.name;
    EXPECT_EQ(num(s["remote_accesses"]), num(s["accesses"])) << c.name;
  }
}

/// The schemes, as `--set` lists: placement policies, the two presets of the SUV paper and LEU.
const std::vector<std::pair<std::string, std::vector<std::string>>>& schemes() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> s = {
      {"driver", {}},
      {"suv", {"engine.placement=suv"}},
      {"ac", {"engine.placement=suv", "policy.suv.mode=ac"}},
      {"sc", {"engine.placement=rdm", "policy.rdm.partial_mapping=false"}},
      {"rlm", {"engine.placement=rlm"}},
      {"glm", {"engine.placement=glm"}},
      {"glm-oracle", {"engine.placement=glm-oracle"}},
      {"rdm", {"engine.placement=rdm"}},
      {"rdm-oracle", {"engine.placement=rdm-oracle"}},
      {"object-lru", {"engine.placement=object-lru"}},
      {"host", {"engine.placement=host"}},
      {"leu", {"engine.eviction=leu"}}};  // the eviction scheme of the same issue
  return s;
}

/// Every generator at a tiny size (its own small parameters where the default is heavy).
std::vector<Case> tiny_workloads() {
  const std::map<std::string, Case> special = {
      {"regular", {"regular", "4M", {}}},  // one allocation: needs two chunks at 50 %
      {"random", {"random", "4M", {}}},    //
      {"lu", {"lu", "4M", {"iters=1"}}},   //
      {"touch", {"touch", "4M", {"size=4M", "offsets=0K,64K,2048K", "delay_us=1"}}},
      {"btree", {"btree", "61440", {"queries=256"}}},  // heavy ones at their smallest sizes
      {"xsbench", {"xsbench", "356864", {"lookups=1024"}}},
      {"alexnet", {"alexnet", "2M", {"channel_div=16", "batches=1"}}},
      {"squeezenet", {"squeezenet", "2M", {"channel_div=16", "batches=1"}}},
      {"ra", {"ra", "1M", {}}},  // smaller, the default 65536 threads leave no table
      {"gemm", {"gemm", "49152", {}}},
      // The multi-GPU patterns as one-GPU programs (the schemes run on one GPU here).
      {"mgpu-halo", {"mgpu-halo", "512K", {"gpus=1"}}},
      {"mgpu-pipeline", {"mgpu-pipeline", "512K", {"gpus=1"}}},
      {"mgpu-alltoall", {"mgpu-alltoall", "512K", {"gpus=1"}}},
      {"hellinger", {"hellinger", "49152", {}}}};
  std::vector<Case> out;
  for (const gen::Generator* g : gen::generators()) {
    const auto it = special.find(g->name);
    out.push_back(it != special.end() ? it->second : Case{g->name.c_str(), "512K", {}});
  }
  return out;
}

class EveryScheme : public ::testing::TestWithParam<Case> {};

TEST_P(EveryScheme, RunsOnTheWorkload) {
  const Case c = GetParam();
  TempDir d;
  const auto t = gen(d, c.name, c.footprint, c.params);
  std::uint64_t accesses = 0;
  for (const auto& [name, sets] : schemes()) {
    SCOPED_TRACE(std::string(c.name) + " / " + name);
    nlohmann::json s;
    ASSERT_NO_THROW(s = at50(t, sets));
    EXPECT_FALSE(s["truncated"].get<bool>());
    // The same program whatever the placement: every access completes.
    if (name == "driver") accesses = num(s["accesses"]);
    EXPECT_EQ(num(s["accesses"]), accesses);
    if (name == "host") {
      // Nothing migrates on demand. The scheme pins at the first kernel start, so a program's
      // own cudaMemPrefetchAsync before its first launch (fir, radix-sort, hash-join) still
      // moves data (and the pin brings it back); everything else is zero.
      EXPECT_EQ(num(s["htod_bytes"]), num(s["htod_bytes_by_cause"]["user_prefetch"]));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Generators, EveryScheme, ::testing::ValuesIn(tiny_workloads()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.name;
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace uvmsim::test
