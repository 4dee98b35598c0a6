// Unit tests of the ObservUVM policies and the other research policies on crafted event
// sequences, against a scripted engine (policy_test_engine.h): every expected victim, bin,
// threshold and request follows from the policy's rules in the paper (§VI) and its source.
#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "policies/policy.h"
#include "policies/registry.h"
#include "policy_test_engine.h"
#include "test_util.h"
#include "traces/trace.h"

namespace uvmsim::test {
namespace {

struct Rig {
  SimConfig cfg;
  VaSpace va;
  TestEngine engine;
  explicit Rig(std::uint32_t blocks = 8) : va(make_va(blocks)), engine(va) {}
  const VaBlock& b(std::uint32_t i) const { return va.blocks()[i]; }
  std::unique_ptr<EvictionPolicy> eviction(const std::string& name, nlohmann::json p = {}) {
    return make_eviction_policy(name, engine.ctx(cfg, p.is_null() ? nlohmann::json::object() : p));
  }
  std::unique_ptr<PrefetchPolicy> prefetch(const std::string& name, nlohmann::json p = {}) {
    return make_prefetch_policy(name, engine.ctx(cfg, p.is_null() ? nlohmann::json::object() : p));
  }
  std::vector<std::uint32_t> observe(EvictionPolicy& e, std::uint32_t budget) {
    engine.budget[0] = budget;
    TestEngine::Sink sink(engine, ObservePurpose::Eviction);
    e.observability_candidates(sink, 0);
    std::vector<std::uint32_t> got;
    for (const auto& o : engine.observed)
      if (o.purpose == ObservePurpose::Eviction) got.push_back(o.block);
    return got;
  }
};

using Ids = std::vector<std::uint32_t>;

// --- LRU (§VI-A, Listing 1) --------------------------------------------------------------------

TEST(LruPolicy, ObservedAndAccessedRegionMovesToTheTail) {
  Rig s;
  auto lru = s.eviction("lru");
  EXPECT_TRUE(lru->uses_observability());
  for (std::uint32_t i : {0, 1, 2, 3}) lru->on_chunk_allocated(s.b(i), 0);  // 0 1 2 3
  EXPECT_EQ(lru->select_victim(99, 0), 0u);
  lru->on_page_fault(s.b(1), 7, 0);  // promotion: 0 2 3 1
  EXPECT_EQ(lru->select_victim(99, 0), 0u);
  EXPECT_EQ(lru->select_victim(0, 0), 2u);  // never the requester
  // The unobserved regions closest to the head become observable.
  EXPECT_EQ(s.observe(*lru, 2), (Ids{0, 2}));
  // Region 0's sample is accessed: the driver ends the observation and notifies the policy.
  s.engine.end_observation(0);
  lru->on_access_counter(s.b(0), 3, ObservePurpose::Eviction, 0);  // 2 3 1 0
  EXPECT_EQ(lru->select_victim(99, 0), 2u);
  lru->on_eviction(s.b(2), 0);  // 3 1 0
  EXPECT_EQ(lru->select_victim(99, 0), 3u);
  s.engine.end_observation(2);
  EXPECT_EQ(s.observe(*lru, 1), (Ids{3}));  // the new head
  nlohmann::json r = nlohmann::json::object();
  lru->report(r);
  EXPECT_EQ(r["observed_promotions"], 1);
  EXPECT_FALSE(s.eviction("lru", {{"observe", false}})->uses_observability());
}

// --- LFU (§VI-A, Figure 7b) --------------------------------------------------------------------

TEST(LfuPolicy, BinsByFaultBatchesAndObservedAccesses) {
  Rig s;
  auto lfu = s.eviction("lfu", {{"max_frequency", 3}});
  s.engine.batch = 1;
  for (std::uint32_t i : {0, 1, 2}) lfu->on_chunk_allocated(s.b(i), 0);  // bin 0: 0 1 2
  lfu->on_page_fault(s.b(0), 0, 0);  // the inserting batch is not a promotion
  s.engine.batch = 2;
  lfu->on_page_fault(s.b(0), 0, 0);  // 0 -> bin 1
  lfu->on_page_fault(s.b(0), 1, 0);  // same batch: once
  s.engine.batch = 3;
  lfu->on_page_fault(s.b(0), 0, 0);  // 0 -> bin 2
  lfu->on_page_fault(s.b(1), 0, 0);  // 1 -> bin 1
  nlohmann::json r = nlohmann::json::object();
  lfu->report(r);
  EXPECT_EQ(r["resident_per_frequency"], nlohmann::json({1, 1, 1, 0}));
  s.engine.batch = 0;
  EXPECT_EQ(lfu->select_victim(99, 0), 2u);                        // head of the lowest bin
  lfu->on_access_counter(s.b(1), 0, ObservePurpose::Eviction, 0);  // 1 -> bin 2, after 0
  lfu->on_eviction(s.b(2), 0);
  EXPECT_EQ(lfu->select_victim(99, 0), 0u);  // bin 2: 0 1
  for (int i = 0; i < 5; ++i) lfu->on_access_counter(s.b(0), 0, ObservePurpose::Eviction, 0);
  r = nlohmann::json::object();
  lfu->report(r);
  EXPECT_EQ(r["resident_per_frequency"], nlohmann::json({0, 0, 1, 1}));  // 0 saturates at 3
  EXPECT_EQ(lfu->select_victim(99, 0), 1u);
  // Frequencies survive eviction: region 0 comes back in bin 3 ...
  lfu->on_eviction(s.b(0), 0);
  lfu->on_chunk_allocated(s.b(0), 0);
  EXPECT_EQ(lfu->select_victim(99, 0), 1u);
  // ... unless keep_history is off.
  auto fresh = s.eviction("lfu", {{"max_frequency", 3}, {"keep_history", false}});
  fresh->on_chunk_allocated(s.b(1), 0);
  fresh->on_access_counter(s.b(1), 0, ObservePurpose::Eviction, 0);
  fresh->on_chunk_allocated(s.b(0), 0);
  EXPECT_EQ(fresh->select_victim(99, 0), 0u);
  // The lowest bins are observed first.
  EXPECT_EQ(s.observe(*lfu, 2), (Ids{1, 0}));
}

TEST(LfuPolicy, RegionsOfTheBatchBeingServicedAreTakenLast) {
  Rig s;
  auto lfu = s.eviction("lfu");
  s.engine.batch = 4;
  lfu->on_chunk_allocated(s.b(0), 0);
  s.engine.batch = 5;
  lfu->on_page_fault(s.b(0), 0, 0);    // 0 -> bin 1
  lfu->on_chunk_allocated(s.b(1), 0);  // bin 0, brought in by batch 5
  EXPECT_EQ(lfu->select_victim(99, 0), 0u);
  EXPECT_EQ(lfu->select_victim(0, 0), 1u);  // nothing else left
  s.engine.batch = 6;
  EXPECT_EQ(lfu->select_victim(99, 0), 1u);
}

// --- Cyclic Protection (§VI-A, Figure 7c) -----------------------------------------------------

TEST(CpPolicy, EvictsAtTheSplitAndGrowsWhenObservedRegionsAreAccessed) {
  Rig s;
  auto cp = s.eviction("cp", {{"unprotected", 2}, {"observe_depth", 1}});
  for (std::uint32_t i : {0, 1, 2, 3, 4}) cp->on_chunk_allocated(s.b(i), 0);
  // protected 0 1 2 | S | unprotected 3 4
  nlohmann::json r = nlohmann::json::object();
  cp->report(r);
  EXPECT_EQ(r["protected"], 3);
  EXPECT_EQ(r["unprotected"], 2);
  EXPECT_EQ(cp->select_victim(99, 0), 3u);
  EXPECT_EQ(s.observe(*cp, 5), (Ids{3}));  // the region nearest S only (observe_depth 1)
  // Region 3 was still in use: the area grows by one (the youngest protected region, 2, loses
  // protection) and 3 moves to the tail: protected 0 1 | unprotected 2 4 3.
  s.engine.end_observation(3);
  cp->on_access_counter(s.b(3), 0, ObservePurpose::Eviction, 0);
  r = nlohmann::json::object();
  cp->report(r);
  EXPECT_EQ(r["unprotected_target"], 3);
  EXPECT_EQ(r["grows"], 1);
  EXPECT_EQ(r["protected"], 2);
  EXPECT_EQ(cp->select_victim(99, 0), 2u);
  // A new region enters at the tail; the oldest unprotected stays at S.
  cp->on_eviction(s.b(2), 0);
  cp->on_chunk_allocated(s.b(5), 0);  // protected 0 1 | 4 3 5
  EXPECT_EQ(cp->select_victim(99, 0), 4u);
}

TEST(CpPolicy, ShrinksWhenObservedRegionsAreEvictedUnusedAndGrowsOnQuickRefaults) {
  Rig s;
  auto cp = s.eviction("cp", {{"unprotected", 3}, {"refault_window", 2}});
  for (std::uint32_t i : {0, 1, 2, 3, 4}) cp->on_chunk_allocated(s.b(i), 0);  // 0 1 | 2 3 4
  EXPECT_EQ(s.observe(*cp, 1), (Ids{2}));
  cp->on_eviction(s.b(2), 0);  // observed, never accessed: a shrink once its window passes
  s.engine.end_observation(2);
  nlohmann::json r = nlohmann::json::object();
  cp->report(r);
  EXPECT_EQ(r["unprotected_target"], 3);
  cp->on_eviction(s.b(3), 0);
  cp->on_eviction(s.b(4), 0);  // the window of 2 evictions has passed for region 2
  r = nlohmann::json::object();
  cp->report(r);
  EXPECT_EQ(r["unprotected_target"], 2);
  EXPECT_EQ(r["shrinks"], 1);
  // Region 4, evicted at S a moment ago, faults again: the area was too small.
  cp->on_chunk_allocated(s.b(4), 0);
  cp->on_page_fault(s.b(4), 0, 0);
  r = nlohmann::json::object();
  cp->report(r);
  EXPECT_EQ(r["unprotected_target"], 3);
  EXPECT_EQ(r["grows"], 1);
  // Fixed split: no adaptation at all.
  auto fixed = s.eviction("cp", {{"unprotected", 2}, {"adaptive", false}});
  EXPECT_FALSE(fixed->uses_observability());
}

// --- Tournament (§VI-B, Algorithm 1) ----------------------------------------------------------

TEST(TournamentPolicy, RetiresThePolicyThatCausesRefaults) {
  Rig s;
  auto t = s.eviction("tournament", {{"policies", "lru,mru"}, {"threshold", 2}});
  for (std::uint32_t i : {0, 1, 2, 3, 4, 5}) t->on_chunk_allocated(s.b(i), 0);
  // Round robin: lru (oldest), mru (newest), lru, mru.
  const Ids want = {0, 5, 1, 4};
  for (std::uint32_t v : want) {
    EXPECT_EQ(t->select_victim(99, 0), v);
    t->on_eviction(s.b(v), 0);
  }
  // Regions evicted by mru fault again (blamed once each), then one of lru's.
  for (std::uint32_t v : {5u, 4u, 0u}) {
    t->on_chunk_allocated(s.b(v), 0);
    t->on_page_fault(s.b(v), 0, 0);
    t->on_page_fault(s.b(v), 1, 0);  // a second fault is not a second blame
  }
  // 3 blames > threshold 2: mru has 2/3 > 1.2/2 and retires; lru stays.
  nlohmann::json r = nlohmann::json::object();
  t->report(r);
  EXPECT_EQ(r["total_blame"], 3);
  ASSERT_EQ(r["policies"].size(), 2u);
  EXPECT_EQ(r["policies"][0]["name"], "lru");
  EXPECT_EQ(r["policies"][0]["blame"], 1);
  EXPECT_EQ(r["policies"][0]["active"], true);
  EXPECT_EQ(r["policies"][1]["name"], "mru");
  EXPECT_EQ(r["policies"][1]["blame"], 2);
  EXPECT_EQ(r["policies"][1]["active"], false);
  EXPECT_EQ(r["policies"][1]["retired_after_evictions"], 4);
  // Only lru decides now: 2 3 5 4 0 in its order.
  EXPECT_EQ(t->select_victim(99, 0), 2u);
  EXPECT_EQ(t->select_victim(99, 0), 2u);
  EXPECT_THROW(s.eviction("tournament", {{"policies", "lru,tournament"}}), UserError);
}

// --- Random, MRU (the example policy) ---------------------------------------------------------

TEST(RandomPolicy, SeededChoiceAmongResidentRegions) {
  Rig s;
  s.engine.resident = {3, 5, 7};
  auto a = s.eviction("random"), b = s.eviction("random");
  std::set<std::uint32_t> seen;
  for (int i = 0; i < 200; ++i) {
    const std::uint32_t v = a->select_victim(5, 0);
    EXPECT_EQ(v, b->select_victim(5, 0));  // same seed, same choices
    EXPECT_NE(v, 5u);
    seen.insert(v);
  }
  EXPECT_EQ(seen, (std::set<std::uint32_t>{3, 7}));
  s.engine.resident = {5};
  EXPECT_EQ(a->select_victim(5, 0), kNoBlock);
}

TEST(MruPolicy, EvictsTheNewestRegionButNotOneTheBatchJustBroughtIn) {
  Rig s;
  auto mru = s.eviction("mru");
  for (std::uint32_t i : {0, 1, 2, 3}) mru->on_chunk_allocated(s.b(i), 0);
  EXPECT_EQ(mru->select_victim(99, 0), 3u);
  EXPECT_EQ(mru->select_victim(3, 0), 2u);
  EXPECT_EQ(s.eviction("mru", {{"skip", 1}})->select_victim(99, 0), kNoBlock);  // empty list
  auto skip = s.eviction("mru", {{"skip", 1}});
  for (std::uint32_t i : {0, 1, 2, 3}) skip->on_chunk_allocated(s.b(i), 0);
  EXPECT_EQ(skip->select_victim(99, 0), 2u);
  s.engine.batch = 7;
  mru->on_chunk_allocated(s.b(4), 0);
  EXPECT_EQ(mru->select_victim(99, 0), 3u);  // 4 has faults pending in batch 7
  mru->on_eviction(s.b(3), 0);
  mru->on_eviction(s.b(2), 0);
  mru->on_eviction(s.b(1), 0);
  mru->on_eviction(s.b(0), 0);
  EXPECT_EQ(mru->select_victim(99, 0), 4u);  // nothing else left
}

// --- OPT ---------------------------------------------------------------------------------------

TEST(OptPolicy, EvictsTheRegionUsedFurthestInTheFuture) {
  TempDir d;
  Rig s;
  s.engine.trace = d.file("opt.uvt");
  // One warp: record k touches block order[k] (logical time k, one step per bucket).
  write_one_warp_trace(s.engine.trace, {0, 1, 2, 3, 0, 1, 4, 2});
  auto opt = s.eviction("opt", {{"bucket_steps", 1}});
  s.engine.pos.launch = 0;
  s.engine.pos.in_kernel = true;
  // The warp has decoded 5 records; the 5th (step 4) may still wait for its fault, so the
  // present is step 4.
  s.engine.running = {{0, 5}};
  for (std::uint32_t i : {0, 1, 2, 3}) opt->on_chunk_allocated(s.b(i), 0);
  // Next uses: 0 at 4, 1 at 5, 2 at 7, 3 never again.
  EXPECT_EQ(opt->select_victim(4, 0), 3u);
  opt->on_eviction(s.b(3), 0);
  opt->on_chunk_allocated(s.b(4), 0);  // used at 6
  EXPECT_EQ(opt->select_victim(99, 0), 2u);
  s.engine.running = {{0, 7}};  // present 6: 0 and 1 are done (ties: the higher block id)
  EXPECT_EQ(opt->select_victim(99, 0), 1u);
  // The threadblock completes: every region it used is dead.
  s.engine.running.clear();
  s.engine.pos.in_kernel = false;
  opt->on_threadblock_end(0, 0);
  EXPECT_EQ(opt->select_victim(99, 0), 4u);
  nlohmann::json r = nlohmann::json::object();
  opt->report(r);
  EXPECT_EQ(r["buckets"], 8);
  EXPECT_EQ(r["uses"], 8);              // one (bucket, region) use per record here
  EXPECT_EQ(r["threadblock_uses"], 5);  // blocks 0..4
  // Outside a simulation there is no future to read.
  Rig bare;
  EXPECT_THROW(bare.eviction("opt"), UserError);
}

// --- FDP (§VI-C, Algorithm 2) ------------------------------------------------------------------

TEST(FdpPolicy, SwitchesThresholdsAtTheEightyPercentBoundary) {
  Rig s(32);
  auto fdp = s.prefetch("fdp", {{"min_feedback", 4}});
  EXPECT_EQ(fdp->prefetch_threshold(), 51u);  // driver.prefetch_threshold
  s.engine.budget[1] = 100;
  std::uint32_t next = 0;
  // One prefetched region made observable for feedback, then its outcome.
  auto feedback = [&](bool accessed) {
    const std::uint32_t b = next++;
    PageMask pages;
    pages.set_range(16, 512);
    fdp->on_prefetch(s.b(b), pages, 0);
    TestEngine::Sink sink(s.engine, ObservePurpose::Feedback);
    fdp->feedback_candidates(sink, 0);
    ASSERT_TRUE(s.engine.is_observed(b));
    EXPECT_EQ(s.engine.observation(b)->samples, pages);  // samples come from the prefetch
    if (accessed) {
      s.engine.end_observation(b);
      fdp->on_access_counter(s.b(b), 20, ObservePurpose::Feedback, 0);
    } else {
      fdp->on_eviction(s.b(b), 0);
      s.engine.end_observation(b);
    }
  };
  for (bool a : {true, true, true, true}) feedback(a);
  EXPECT_EQ(fdp->prefetch_threshold(), 51u);  // 4 outcomes, not more than T = 4 yet
  feedback(false);                            // 4 / 5 = 80 %: not above
  EXPECT_EQ(fdp->prefetch_threshold(), 51u);
  feedback(true);  // 5 / 6 = 83 %
  EXPECT_EQ(fdp->prefetch_threshold(), 1u);
  // Aggressive prefetching: one faulted page brings its whole 2 MB region.
  PageMask faulted, none, out;
  faulted.set(100);
  fdp->compute({s.b(31), Processor::Gpu, none, faulted, none, 0}, out);
  EXPECT_EQ(out.count(), 511u);
  feedback(false);  // 5 / 7 = 71 %
  EXPECT_EQ(fdp->prefetch_threshold(), 51u);
  nlohmann::json r = nlohmann::json::object();
  fdp->report(r);
  EXPECT_EQ(r["feedback_accessed"], 5);
  EXPECT_EQ(r["feedback_evicted"], 2);
  EXPECT_EQ(r["switches"], 2);
}

// --- RGP (§VI-D) -------------------------------------------------------------------------------

TEST(RgpPolicy, StreamingAllocationsGetWholeRegionsAndTriggeredNextRegions) {
  Rig s(8);
  auto rgp = s.prefetch("rgp", {{"confidence", 2}});
  PageMask faulted, none, out;
  faulted.set(3);
  // Not streaming yet: the tree prefetcher's 64 KB big page only.
  rgp->compute({s.b(2), Processor::Gpu, none, faulted, none, 0}, out);
  EXPECT_EQ(out.count(), 15u);
  for (std::uint32_t b : {0, 1, 2}) rgp->on_page_fault(s.b(b), 0, 0);  // neighbours: score 2
  out.clear();
  rgp->compute({s.b(2), Processor::Gpu, none, faulted, none, 0}, out);
  EXPECT_EQ(out.count(), 512u);  // the whole region (the driver drops the faulted page)
  // The prefetched region gets a trigger page; touching it prefetches the next region that is
  // not fully resident (3 is, so 4).
  PageMask pages;
  pages.set_range(0, 512);
  rgp->on_prefetch(s.b(2), pages, 0);
  s.engine.budget[1] = 4;
  TestEngine::Sink sink(s.engine, ObservePurpose::Feedback);
  rgp->feedback_candidates(sink, 0);
  ASSERT_TRUE(s.engine.is_observed(2));
  s.va.blocks()[3].gpu(0).count = 512;
  s.engine.end_observation(2);
  rgp->on_access_counter(s.b(2), 40, ObservePurpose::Feedback, 0);
  EXPECT_EQ(s.engine.region_requests, (Ids{4}));
  rgp->on_access_counter(s.b(2), 40, ObservePurpose::Feedback, 0);  // trigger used up
  EXPECT_EQ(s.engine.region_requests.size(), 1u);
  // A jump lowers the score by 2: no longer streaming.
  rgp->on_page_fault(s.b(7), 0, 0);
  out.clear();
  rgp->compute({s.b(2), Processor::Gpu, none, faulted, none, 0}, out);
  EXPECT_EQ(out.count(), 15u);
}

// --- ACBM --------------------------------------------------------------------------------------

TEST(AcbmPolicy, TurnsOnCounterMigrationAndMigratesOnFault) {
  Rig s;
  auto acbm = make_placement_policy(
      "acbm", s.engine.ctx(s.cfg, {{"granularity", "64K"}, {"threshold", 8}}));
  EXPECT_EQ(s.engine.acbm_granularity, 64u << 10);
  EXPECT_EQ(s.engine.acbm_threshold, 8u);
  // A fault migrates host data as without ACBM (block_select_processor_residency); only a
  // preferred location in host memory maps it remotely.
  s.va.blocks()[0].cpu_resident.set(5);
  EXPECT_EQ(acbm->place(s.b(0), 5, AccessKind::Read, 0), PlacementPolicy::Decision::MigrateToGpu);
  EXPECT_EQ(acbm->place(s.b(0), 6, AccessKind::Read, 0), PlacementPolicy::Decision::MigrateToGpu);
  s.va.blocks()[0].preferred = PreferredLocation::Cpu;
  EXPECT_EQ(acbm->place(s.b(0), 5, AccessKind::Read, 0), PlacementPolicy::Decision::MapRemote);
  EXPECT_THROW(make_placement_policy("acbm", s.engine.ctx(s.cfg, {{"granularity", "1G"}})),
               UserError);
}

// --- Combined prefetchers ----------------------------------------------------------------------

TEST(CombinedPrefetch, UnitesMasksAndSharesTheFeedbackBudget) {
  Rig s(8);
  s.cfg.policy_params["rgp"]["confidence"] = 2;
  auto both = make_prefetch_policy("none+rgp", s.engine.ctx(s.cfg));
  EXPECT_TRUE(both->uses_observability());
  for (std::uint32_t b : {0, 1, 2}) both->on_page_fault(s.b(b), 0, 0);  // reaches rgp
  PageMask faulted, none, out;
  faulted.set(3);
  both->compute({s.b(2), Processor::Gpu, none, faulted, none, 0}, out);
  EXPECT_EQ(out.count(), 512u);
  nlohmann::json r = nlohmann::json::object();
  both->report(r);
  EXPECT_EQ(r["rgp"]["streaming_ranges"], 1);
  EXPECT_THROW(make_prefetch_policy("fdp+", s.engine.ctx(s.cfg)), UserError);
  EXPECT_THROW(make_prefetch_policy("fdp+nope", s.engine.ctx(s.cfg)), UserError);
}

}  // namespace
}  // namespace uvmsim::test
