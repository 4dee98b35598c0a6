// Unit tests of the small model pieces: page masks, TLBs, the VA space, the event queue,
// thrashing detection and access counters.
#include <gtest/gtest.h>

#include <random>

#include <algorithm>
#include <utility>
#include <vector>

#include <tuple>

#include "core/error.h"
#include "core/event_queue.h"
#include "core/stats.h"
#include "models/access_counters.h"
#include "models/interrupt.h"
#include "models/thrashing.h"
#include "models/tlb.h"
#include "state/page_mask.h"
#include "state/va_space.h"

namespace uvmsim {
namespace {

TEST(PageMask, RangesRunsAndBigPages) {
  PageMask m;
  m.set_range(10, 100);
  EXPECT_EQ(m.count(), 90u);
  EXPECT_EQ(m.count_range(0, 64), 54u);
  EXPECT_EQ(m.find_next(0), 10u);
  EXPECT_EQ(m.find_next_clear(10), 100u);
  EXPECT_TRUE(m.big_page_full(1));
  EXPECT_FALSE(m.big_page_full(0));
  m.set(300);
  std::vector<std::pair<unsigned, unsigned>> runs;
  m.for_each_run([&](unsigned a, unsigned b) { runs.emplace_back(a, b); });
  EXPECT_EQ(runs, (std::vector<std::pair<unsigned, unsigned>>{{10, 100}, {300, 301}}));
  m.set_range(0, 512);
  EXPECT_EQ(m.count(), 512u);
  EXPECT_EQ(m.find_next_clear(0), 512u);
}

TEST(Tlb, HitsMissesLruAndGenerations) {
  Tlb t(4, 2);  // 2 sets x 2 ways
  EXPECT_FALSE(t.lookup(1, 1));
  t.insert(1, 1);
  EXPECT_TRUE(t.lookup(1, 1));
  EXPECT_FALSE(t.lookup(1, 2));  // stale generation = invalidated
  // Fill far beyond capacity: at most 4 distinct keys survive.
  for (std::uint64_t k = 100; k < 200; ++k) t.insert(k, 1);
  int hits = 0;
  for (std::uint64_t k = 100; k < 200; ++k) hits += t.lookup(k, 1);
  EXPECT_EQ(hits, 4);
}

TEST(Tlb, LruOrderSurvivesTheStampClockWrapping) {
  // The LRU stamps are 32-bit: when the clock would wrap, each set's stamps become their ranks.
  // A TLB whose clock starts just below the wrap must answer every look-up and pick every
  // victim as one whose clock starts at 0, through several wraps.
  for (const auto& [entries, assoc] : {std::pair{32u, 8u}, {64u, 16u}, {12u, 3u}}) {
    Tlb fresh(entries, assoc), wrapping(entries, assoc);
    std::mt19937_64 rng(7);
    int hits = 0;
    for (int i = 0; i < 200000; ++i) {
      if (i % 50000 == 0) wrapping.set_clock_for_test(~std::uint32_t{0} - 17);
      const std::uint64_t key = rng() % (3 * entries);
      const std::uint32_t gen = static_cast<std::uint32_t>(rng() % 64 == 0);
      const bool a = fresh.access(key, gen);
      ASSERT_EQ(wrapping.access(key, gen), a) << "access " << i;
      ASSERT_EQ(wrapping.last_slot(), fresh.last_slot()) << "access " << i;
      hits += a;
    }
    EXPECT_GT(hits, 10000);  // the stream hits and misses: the victims' order matters
    EXPECT_LT(hits, 190000);
  }
}

TEST(Tlb, SetCountThatIsNoPowerOfTwoKeepsEveryWay) {
  // 3 sets x 2 ways: the set index is a modulo (power-of-two set counts use a mask). Keys
  // 0..5 fill exactly the 6 entries whatever sets they fall in, or LRU would drop some.
  Tlb t(6, 2);
  int kept = 0;
  for (std::uint64_t k = 0; k < 64; ++k) {
    Tlb one(6, 2);
    one.insert(k, 1);
    kept += one.lookup(k, 1);
  }
  EXPECT_EQ(kept, 64);
  for (std::uint64_t k = 0; k < 1000; ++k) t.insert(k, 1);
  int hits = 0;
  for (std::uint64_t k = 0; k < 1000; ++k) hits += t.lookup(k, 1);
  EXPECT_EQ(hits, 6);  // every set full, each holding its 2 most recent keys
}

TEST(Tlb, AccessIsALookupThenAnInsertOnAMiss) {
  // Tlb::access fuses the two scans of a miss; over a stream of keys and generations that hits,
  // misses, goes stale and evicts, it must answer and leave every entry as the pair of calls.
  for (const auto& [entries, assoc] : {std::pair{64u, 8u}, {256u, 16u}, {24u, 4u}}) {
    Tlb fused(entries, assoc), pair(entries, assoc);
    std::uint64_t x = 12345;
    int hits = 0, filled = 0;
    for (int i = 0; i < 20000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const std::uint64_t key = (x >> 33) % (3 * entries);
      const auto gen = static_cast<std::uint32_t>((x >> 20) % 4 == 0 ? (x >> 40) % 3 : 0);
      const bool looked = pair.lookup(key, gen);
      if (!looked) pair.insert(key, gen);
      ASSERT_EQ(fused.access(key, gen), looked) << "entries " << entries << ", step " << i;
      ASSERT_EQ(fused.last_slot(), pair.last_slot()) << "entries " << entries << ", step " << i;
      hits += looked;
      filled += !looked && fused.holds(fused.last_slot(), key, gen);
    }
    // Every kind of step happened: hits, and misses (each of which the fill then holds).
    EXPECT_GT(hits, 1000) << entries;
    EXPECT_GT(20000 - hits, 1000) << entries;
    EXPECT_EQ(filled, 20000 - hits) << entries;
    for (std::uint64_t k = 0; k < 3 * entries; ++k)
      for (std::uint32_t g = 0; g < 3; ++g)
        EXPECT_EQ(Tlb(fused).lookup(k, g), Tlb(pair).lookup(k, g)) << k << " gen " << g;
  }
}

TEST(Tlb, AccessAndLookupFollowAReferenceLruWhenFullyAssociative) {
  // With one set the replacement is plain LRU over (key, generation) pairs, which a list models
  // without the Tlb's arrays, stamps or set hash. The test above checks access() against
  // lookup()+insert(), and insert() is access(): this one checks the fills themselves. 8 and 16
  // ways take the unrolled scans, 6 the run-time loop.
  for (const std::uint32_t ways : {8u, 16u, 6u}) {
    Tlb tlb(ways, ways);
    std::vector<std::pair<std::uint64_t, std::uint32_t>> lru;  // most recent last
    std::uint64_t x = 99;
    int hits = 0, stale = 0, evictions = 0;
    for (int i = 0; i < 20000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const std::uint64_t key = (x >> 33) % (2 * ways);
      const auto gen = static_cast<std::uint32_t>((x >> 20) % 5 == 0 ? (x >> 40) % 2 : 0);
      auto it = std::find_if(lru.begin(), lru.end(), [&](const auto& e) { return e.first == key; });
      const bool expect_hit = it != lru.end() && it->second == gen;
      if (i % 3 == 0) {
        // lookup() changes nothing on a miss and makes a hit the most recent.
        ASSERT_EQ(tlb.lookup(key, gen), expect_hit) << ways << " ways, step " << i;
        if (expect_hit) std::rotate(it, it + 1, lru.end());
        hits += expect_hit;
        continue;
      }
      ASSERT_EQ(tlb.access(key, gen), expect_hit) << ways << " ways, step " << i;
      EXPECT_TRUE(tlb.holds(tlb.last_slot(), key, gen)) << ways << " ways, step " << i;
      if (it != lru.end()) {  // a hit, or a stale tag refilled in its own way
        stale += !expect_hit;
        hits += expect_hit;
        lru.erase(it);
      } else if (lru.size() == ways) {  // the least recent entry makes room
        lru.erase(lru.begin());
        ++evictions;
      }
      lru.emplace_back(key, gen);
    }
    EXPECT_GT(hits, 1000) << ways;
    EXPECT_GT(stale, 100) << ways;
    EXPECT_GT(evictions, 1000) << ways;
    // Every pair the reference holds looks up as a hit, and nothing else does.
    for (std::uint64_t k = 0; k < 2 * ways; ++k)
      for (std::uint32_t g = 0; g < 2; ++g) {
        const bool held = std::find(lru.begin(), lru.end(), std::pair{k, g}) != lru.end();
        EXPECT_EQ(Tlb(tlb).lookup(k, g), held) << ways << " ways, key " << k << " gen " << g;
      }
  }
}

TEST(VaSpace, BlocksRangesAndTailRounding) {
  VaSpace va;
  trace::Allocation a{0, "a", 0x7f0000000000, (4 << 20) + 4096, true, false};
  trace::Allocation b{1, "b", 0x7f0000800000, 100, false, false};
  va.build({a, b}, true);
  ASSERT_EQ(va.ranges().size(), 2u);
  EXPECT_EQ(va.ranges()[0].size, (4u << 20) + (64u << 10));  // tail 4 KB -> 64 KB
  EXPECT_EQ(va.ranges()[0].num_blocks, 3u);
  EXPECT_EQ(va.blocks()[2].num_pages(), 16u);
  EXPECT_EQ(va.managed_footprint(), (4u << 20) + (64u << 10));
  EXPECT_EQ(va.find_range(0x7f0000000000 + (3 << 20))->name, "a");
  EXPECT_EQ(va.find_range(0x7f0000800000 + 50)->name, "b");
  EXPECT_EQ(va.find_range(0x7f0000800000 + 4096), nullptr);
  EXPECT_EQ(va.find_range(0x1000), nullptr);
  trace::Allocation c{2, "c", 0x7f0000000000 + 4096, 4096, true, false};
  EXPECT_THROW(va.build({a, c}, true), UserError);  // overlap
}

TEST(EventQueue, TimeThenInsertionOrder) {
  EventQueue q;
  q.schedule(5, EventType::Replay, 1);
  q.schedule(3, EventType::WarpWake, 2);
  q.schedule(5, EventType::WarpWake, 3);
  q.schedule(3, EventType::DriverWake, 4);
  std::vector<std::uint32_t> order;
  while (!q.empty()) order.push_back(q.pop().arg);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{2, 4, 1, 3}));
}

TEST(EventQueue, AReservedNumberFiresWhereItsScheduleWouldHave) {
  // Gpu's deferred GMMU join reserves the number of an event it may never schedule; scheduled
  // later (even from a later time), the event keeps its place among equal timestamps, and the
  // numbers of all other events are what they would have been.
  EventQueue q;
  q.schedule(10, EventType::WarpWake, 1);
  const std::uint64_t reserved = q.reserve_seq();
  q.schedule(50, EventType::WarpWake, 2);
  q.schedule(50, EventType::WarpWake, 3);
  EXPECT_EQ(q.pop().arg, 1u);
  EXPECT_EQ(q.now_seq(), 0u);
  q.schedule_reserved(50, reserved, EventType::FaultReport, 4);  // before 2 and 3 at t = 50
  q.schedule(50, EventType::WarpWake, 5);
  std::vector<std::uint32_t> order;
  std::vector<std::uint64_t> seqs;
  while (!q.empty()) {
    order.push_back(q.pop().arg);
    seqs.push_back(q.now_seq());
  }
  EXPECT_EQ(order, (std::vector<std::uint32_t>{4, 2, 3, 5}));
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{1, 2, 3, 4}));
}

TEST(EventQueue, AnEventKeepsItsGpuThroughEveryPathOfTheQueue) {
  // The drained bucket, a ring bucket, the overflow heap and a reserved number each keep the
  // GPU an event was scheduled for; it does not take part in the order.
  EventQueue q;
  q.schedule(10, EventType::WarpWake, 1, 3);
  q.pop();                                               // drains t = 10's bucket
  q.schedule(11, EventType::FaultReport, 2, 15);         // into the bucket being drained
  q.schedule(100'000, EventType::DriverWake, 3, 7);      // a ring bucket
  q.schedule(1'000'000'000, EventType::BatchEnd, 4, 1);  // beyond the ring: overflow
  q.schedule(1'000'000'000, EventType::Replay, 5);       // GPU 0 unless named
  const std::uint64_t reserved = q.reserve_seq();
  q.schedule_reserved(100'000, reserved, EventType::GmmuFree, 6, 9);
  std::vector<std::pair<std::uint32_t, unsigned>> got;
  while (!q.empty()) {
    const Event e = q.pop();
    got.emplace_back(e.arg, e.gpu);
  }
  EXPECT_EQ(got, (std::vector<std::pair<std::uint32_t, unsigned>>{
                     {2, 15}, {3, 7}, {6, 9}, {4, 1}, {5, 0}}));
}

TEST(EventQueue, AheadShowsTheEventsPopReturnsNextWithinTheDrainedBucket) {
  EventQueue q;
  for (std::uint32_t i = 0; i < 6; ++i) q.schedule(100 + i, EventType::WarpWake, i);
  q.schedule(1'000'000, EventType::Replay, 99);  // another bucket
  EXPECT_EQ(q.pop().arg, 0u);
  ASSERT_NE(q.ahead(0), nullptr);
  EXPECT_EQ(q.ahead(0)->arg, 1u);
  EXPECT_EQ(q.ahead(4)->arg, 5u);
  EXPECT_EQ(q.ahead(5), nullptr);  // the Replay is not in the drained bucket yet
  std::vector<std::uint32_t> order;
  while (!q.empty()) order.push_back(q.pop().arg);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{1, 2, 3, 4, 5, 99}));
}

// Thrashing detection and mitigation: tests/test_thrashing.cpp.

TEST(AccessCounters, NotifyAtThresholdOnlyWhenMigrationEnabled) {
  EventQueue q;
  Interrupt irq(q, 5000);
  Stats stats;
  AccessCounterConfig cfg;
  AccessCounters off(irq, stats, cfg, 4);
  off.on_remote_access(1, 0, 0x200000, 1000, 0);  // off by default, as on x86
  EXPECT_TRUE(off.pending().empty());
  EXPECT_TRUE(q.empty());
  cfg.migration = true;
  cfg.threshold = 4;
  AccessCounters ac(irq, stats, cfg, 4);
  ac.on_remote_access(1, 16, 0x200000 + 0x10000, 3, 100);
  EXPECT_TRUE(ac.pending().empty());
  ac.on_remote_access(1, 48, 0x200000 + 0x30000, 1, 200);
  ASSERT_EQ(ac.pending().size(), 1u);
  EXPECT_EQ(ac.pending()[0].region_base, 0x200000u);
  EXPECT_EQ(ac.pending()[0].subregion_mask, (1u << 1) | (1u << 3));
  EXPECT_EQ(stats.access_counter_notifications, 1u);
  // The notification raised the interrupt: the driver wakes interrupt_latency later.
  ASSERT_FALSE(q.empty());
  EXPECT_EQ(q.next_time(), 5200u);
  EXPECT_TRUE(irq.masked());
  // The counter restarts after notifying.
  ac.on_remote_access(1, 0, 0x200000, 3, 300);
  EXPECT_EQ(ac.pending().size(), 1u);
}

TEST(AccessCounters, WatchedPagesNotifyOnceAndBypassMigrationCounting) {
  EventQueue q;
  Interrupt irq(q, 1000);
  Stats stats;
  AccessCounterConfig cfg;
  cfg.migration = true;
  cfg.threshold = 1;
  AccessCounters ac(irq, stats, cfg, 8);
  PageMask samples;
  samples.set_range(16, 32);
  ac.watch(3, samples);
  ac.on_remote_access(3, 20, 0x600000 + 20 * kPageSize, 2, 10);
  ac.on_remote_access(3, 21, 0x600000 + 21 * kPageSize, 1, 20);
  ASSERT_EQ(ac.observed().size(), 1u);  // the threshold-1 counter notifies once
  EXPECT_EQ(ac.observed()[0], 3u);
  EXPECT_EQ(stats.observe.remote_accesses, 3u);
  EXPECT_TRUE(ac.pending().empty());  // watched pages do not count towards migration
  EXPECT_EQ(q.next_time(), 1010u);
  // Another page of the block is counted for migration as usual.
  ac.on_remote_access(3, 40, 0x600000 + 40 * kPageSize, 1, 30);
  EXPECT_EQ(ac.pending().size(), 1u);
  // Unwatched, then watched again: a fresh counter notifies again.
  ac.unwatch(3);
  ac.on_remote_access(3, 20, 0x600000 + 20 * kPageSize, 1, 40);
  EXPECT_EQ(ac.observed().size(), 1u);
  EXPECT_EQ(ac.pending().size(), 2u);
  ac.watch(3, samples);
  ac.on_remote_access(3, 17, 0x600000 + 17 * kPageSize, 1, 50);
  EXPECT_EQ(ac.observed().size(), 2u);
}

TEST(Interrupt, MaskedLineDoesNotWakeTwice) {
  EventQueue q;
  Interrupt irq(q, 700);
  irq.raise(100);
  irq.raise(150);  // masked by the first: the bottom half will find this work
  ASSERT_FALSE(q.empty());
  EXPECT_EQ(q.pop().time, 800u);
  EXPECT_TRUE(q.empty());
  irq.unmask();
  irq.raise(900);
  EXPECT_EQ(q.pop().time, 1600u);
}

}  // namespace
}  // namespace uvmsim

namespace uvmsim {
namespace {

TEST(EventQueue, MatchesAReferenceOrderingUnderRandomLoad) {
  // The calendar queue must pop exactly in (time, insertion) order, including events scheduled
  // into the bucket being drained, far beyond the horizon, and at equal times.
  EventQueue q;
  std::vector<std::pair<Tick, std::uint32_t>> ref;  // (time, id) in insertion order
  std::uint64_t rng = 12345;
  auto next = [&] {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
  };
  Tick now = 0;
  std::uint32_t id = 0;
  std::vector<std::uint32_t> popped, expected;
  std::vector<std::pair<std::pair<Tick, std::uint32_t>, std::uint32_t>> pending;  // ((t, seq), id)
  for (int round = 0; round < 20000; ++round) {
    const int pushes = static_cast<int>(next() % 3);
    for (int i = 0; i < pushes; ++i) {
      Tick dt;
      switch (next() % 4) {
        case 0:
          dt = 0;
          break;  // same time
        case 1:
          dt = next() % 2000;
          break;  // same ~1 ns bucket
        case 2:
          dt = next() % 5'000'000;
          break;  // within the ring
        default:
          dt = next() % 500'000'000'000ull;
          break;  // far future (overflow)
      }
      q.schedule(now + dt, EventType::WarpWake, id);
      pending.push_back({{now + dt, id}, id});
      ++id;
    }
    if (!q.empty() && next() % 2) {
      const Event e = q.pop();
      now = e.time;
      popped.push_back(e.arg);
      auto it = std::min_element(pending.begin(), pending.end());
      expected.push_back(it->second);
      pending.erase(it);
    }
  }
  while (!q.empty()) {
    popped.push_back(q.pop().arg);
    auto it = std::min_element(pending.begin(), pending.end());
    expected.push_back(it->second);
    pending.erase(it);
  }
  EXPECT_EQ(popped, expected);
  EXPECT_EQ(popped.size(), id);
}

// Events scheduled into the bucket being drained, far before its end: the insertion's short
// backward scan gives way to a binary search over the bucket (core/event_queue.h), which must
// put each event exactly where (time, sequence) order says, also among equal times.
TEST(EventQueue, EventsScheduledDeepIntoTheDrainedBucketFireInTimeThenSequenceOrder) {
  EventQueue q;
  std::vector<std::tuple<Tick, std::uint64_t, std::uint32_t>> ref;  // (time, seq, arg)
  std::uint64_t seq = 0;
  auto add = [&](Tick t, std::uint32_t arg) {
    ref.emplace_back(t, seq++, arg);
    q.schedule(t, EventType::WarpWake, arg);
  };
  // 300 events 2 ps apart, all in the first 4.096 ns bucket; popping one drains it.
  for (std::uint32_t i = 0; i < 300; ++i) add(1000 + 2 * Tick{i}, i);
  EXPECT_EQ(q.pop().arg, 0u);
  ref.erase(ref.begin());
  // Then 200 more at pseudo-random times of the same bucket, from "now" on: most land hundreds
  // of events before the end, some on the time of an event already there.
  std::uint64_t rng = 7;
  for (std::uint32_t i = 0; i < 200; ++i) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    add(1000 + (rng >> 33) % 700, 1000 + i);
    if (i % 50 == 49) {  // pops in between: inserts against a partly drained bucket
      const Event e = q.pop();
      std::sort(ref.begin(), ref.end());
      EXPECT_EQ(e.arg, std::get<2>(ref.front()));
      ref.erase(ref.begin());
    }
  }
  std::sort(ref.begin(), ref.end());
  std::vector<std::uint32_t> popped, expected;
  while (!q.empty()) popped.push_back(q.pop().arg);
  for (const auto& r : ref) expected.push_back(std::get<2>(r));
  EXPECT_EQ(popped, expected);
}

// One 4.096 ns bucket filled out of order, drained at once: the counting pass on the 64 ps
// sub-slot plus the insertion sort, the fallback to std::sort when one sub-slot holds many
// events in reverse, and reserved numbers out of insertion order among equal times.
TEST(EventQueue, ABucketFilledOutOfOrderDrainsInTimeThenSequenceOrder) {
  constexpr Tick kBase = Tick{5} << EventQueue::kBucketBits;  // a bucket ahead of "now"
  struct Case {
    const char* name;
    std::uint32_t n;
    Tick spread;  // event times lie in [kBase, kBase + spread)
    bool reverse;
  };
  for (const Case& c : {Case{"scattered over the bucket", 500, 4096, false},
                        Case{"a few times, many equal", 300, 4096 / 64 * 3, false},
                        Case{"one sub-slot, reversed (fallback)", 400, 64, true},
                        Case{"whole bucket, reversed", 4096, 4096, true}}) {
    SCOPED_TRACE(c.name);
    EventQueue q;
    std::vector<std::tuple<Tick, std::uint64_t, std::uint32_t>> ref;  // (time, seq, arg)
    std::uint64_t rng = 99;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> reserved;  // (seq, arg)
    for (std::uint32_t i = 0; i < c.n; ++i) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      const Tick t = kBase + (c.reverse ? c.spread - 1 - (i % c.spread) : (rng >> 33) % c.spread);
      if (i % 7 == 3) {
        // Reserved now, scheduled after all the others: earlier number, later insertion.
        reserved.push_back({q.reserve_seq(), i});
        ref.emplace_back(t, reserved.back().first, i);
        continue;
      }
      ref.emplace_back(t, i, i);
      q.schedule(t, EventType::WarpWake, i);
    }
    // Sequence numbers are handed out one per event in order, so event i got number i.
    for (const auto& [seq, arg] : reserved)
      q.schedule_reserved(std::get<0>(ref[arg]), seq, EventType::FaultReport, arg);
    std::sort(ref.begin(), ref.end());
    std::vector<std::uint32_t> popped, expected;
    while (!q.empty()) {
      const Event e = q.pop();
      popped.push_back(e.arg);
      EXPECT_EQ(q.now_seq(), e.seq);
    }
    for (const auto& r : ref) expected.push_back(std::get<2>(r));
    EXPECT_EQ(popped, expected);
  }
}

}  // namespace
}  // namespace uvmsim

namespace uvmsim {
namespace {

TEST(VaSpace, AdviceNamesProcessorsInTheDriversEncoding) {
  // Processor ids as uvm_processor_id_t (0 the CPU, 1 + g GPU g); a preferred location uses the
  // Processor encoding itself, so GPU k is k and GPU 0 keeps the old `Gpu` value.
  EXPECT_EQ(processor_bit(Processor::Cpu), 1u);
  EXPECT_EQ(processor_bit(gpu_processor(0)), 2u);
  EXPECT_EQ(processor_bit(gpu_processor(15)), 1u << 16);
  EXPECT_EQ(processor_of_id(0), Processor::Cpu);
  EXPECT_EQ(processor_of_id(4), gpu_processor(3));
  EXPECT_EQ(preferred_on(Processor::Cpu), PreferredLocation::Cpu);
  EXPECT_EQ(preferred_on(gpu_processor(0)), PreferredLocation::Gpu);
  EXPECT_TRUE(is_gpu(preferred_on(gpu_processor(7))));
  EXPECT_EQ(static_cast<int>(preferred_on(gpu_processor(7))), 7);
  EXPECT_FALSE(is_gpu(PreferredLocation::None));
  EXPECT_FALSE(is_gpu(PreferredLocation::Cpu));
}

TEST(VaSpace, OtherGpusStatesAreMadeOnlyForBlocksTheyTouch) {
  VaSpace va;
  va.set_gpus(3);
  va.build({trace::Allocation{0, "a", 0x7f0000000000, 8 << 20, true, false}}, true);
  ASSERT_EQ(va.blocks().size(), 4u);
  VaBlock& b = va.blocks()[1];
  // Never touched by GPU 1 or 2: they read an empty state, and nothing is allocated.
  const VaBlock& cb = b;
  EXPECT_FALSE(cb.has_peer_states());
  EXPECT_EQ(cb.gpu(2).count, 0u);
  EXPECT_TRUE(cb.gpu(1).resident.none());
  EXPECT_FALSE(cb.gpu(1).has_chunk);
  EXPECT_EQ(va.blocks_with_gpu_states(), 0u);
  b.gpu(0).resident.set(5);
  va.add_gpu_states(b);
  va.add_gpu_states(b);  // once per block
  EXPECT_EQ(va.blocks_with_gpu_states(), 1u);
  b.gpu(1).resident.set(7);
  b.gpu(2).has_chunk = true;
  EXPECT_TRUE(cb.gpu(0).resident.test(5));
  EXPECT_FALSE(cb.gpu(0).resident.test(7));
  EXPECT_TRUE(cb.gpu(1).resident.test(7));
  EXPECT_FALSE(cb.gpu(2).resident.test(7));
  EXPECT_TRUE(cb.gpu(2).has_chunk);
  EXPECT_FALSE(va.blocks()[2].has_peer_states());
  EXPECT_THROW(va.set_gpus(4), std::logic_error);  // the states are sized for 3
  EXPECT_THROW(va.set_gpus(0), std::invalid_argument);
  EXPECT_THROW(va.set_gpus(kMaxGpus + 1), std::invalid_argument);
  // A rebuilt space starts over.
  va.build({trace::Allocation{0, "a", 0x7f0000000000, 2 << 20, true, false}}, true);
  EXPECT_EQ(va.blocks_with_gpu_states(), 0u);
  EXPECT_FALSE(va.blocks()[0].has_peer_states());
  // One GPU: there is nobody else to make states for.
  VaSpace one;
  one.build({trace::Allocation{0, "a", 0x7f0000000000, 2 << 20, true, false}}, true);
  one.add_gpu_states(one.blocks()[0]);
  EXPECT_FALSE(one.blocks()[0].has_peer_states());
}

TEST(VaSpace, SharedWindowsAndSparseSpacesStillResolve) {
  VaSpace va;
  // Two small ranges in one 2 MB window, and one far away (beyond the dense table).
  trace::Allocation a{0, "a", 0x7f0000000000, 8192, true, false};
  trace::Allocation b{1, "b", 0x7f0000004000, 8192, true, false};
  trace::Allocation c{2, "c", 0x100000000000ull, 4096, true, false};
  va.build({a, b, c}, false);
  EXPECT_EQ(va.find_range(0x7f0000001000)->name, "a");
  EXPECT_EQ(va.find_range(0x7f0000005000)->name, "b");
  EXPECT_EQ(va.find_range(0x7f0000003000), nullptr);
  EXPECT_EQ(va.find_range(0x100000000000ull)->name, "c");
  EXPECT_EQ(va.find_range(0x100000001000ull), nullptr);
  VaSpace dense;
  dense.build({a, b}, false);
  EXPECT_EQ(dense.find_range(0x7f0000001000)->name, "a");
  EXPECT_EQ(dense.find_range(0x7f0000005000)->name, "b");
  EXPECT_EQ(dense.find_range(0x7f0000300000), nullptr);
  EXPECT_EQ(dense.find_range(0x1000), nullptr);
}

}  // namespace
}  // namespace uvmsim
