// The thrashing detector against uvm_perf_thrashing.c (models/thrashing.h): which migrations are
// events, the throttle/pin sequence with the PCIe access rules, pin expiry, the epoch reset with
// max_resets, and the adaptive lapse.
#include <gtest/gtest.h>

#include <vector>

#include "models/thrashing.h"

namespace uvmsim::test {
namespace {

using Cause = ThrashingDetector::Cause;
using Hint = ThrashingDetector::Hint;
constexpr Tick us(double v) { return static_cast<Tick>(v * kPsPerUs); }
constexpr std::uint8_t kOnCpu = 1, kOnGpu = 2;

/// G at 0, C at 10, G at 20, C at 30, G at 40 us: the block gets per-page state at 10 us (a
/// processor change within lapse) and the page its third event at 40 us.
void ping_pong(ThrashingDetector& t, unsigned page, Tick t0 = 0) {
  for (int i = 0; i < 5; ++i)
    t.on_migration(0, page, i % 2 ? Processor::Cpu : Processor::Gpu, t0 + us(10 * i), Cause::Fault);
}

TEST(Thrashing, GpuOnlyMigrationsNeverCreatePageState) {
  // Evictions are no input, so pure GPU oversubscription only ever migrates to the GPU: the
  // block never sees a processor change and the per-page state is never created.
  ThrashingDetector t;
  t.configure(ThrashingConfig{}, 1);
  for (int i = 0; i < 100; ++i)
    EXPECT_FALSE(t.on_migration(0, 7, Processor::Gpu, us(i), Cause::Fault));
  EXPECT_EQ(t.get_hint(0, 7, Processor::Gpu, kOnCpu, nullptr, us(200)).type, Hint::None);
  EXPECT_FALSE(t.thrashing_pages(0).test(7));
}

TEST(Thrashing, AnyTwoMigrationsWithinLapseCountOnceTheBlockIsTracked) {
  // thrashing_event_cb counts every event within lapse of the page's previous one, whatever
  // the processor: after one CPU/GPU change, three GPU-only migrations make the page thrashing.
  ThrashingDetector t;
  t.configure(ThrashingConfig{}, 1);
  EXPECT_FALSE(t.on_migration(0, 4, Processor::Gpu, us(0), Cause::Fault));
  EXPECT_FALSE(t.on_migration(0, 4, Processor::Cpu, us(10), Cause::Fault));     // page state born
  EXPECT_FALSE(t.on_migration(0, 4, Processor::Gpu, us(20), Cause::Prefetch));  // 1
  EXPECT_FALSE(t.on_migration(0, 4, Processor::Gpu, us(30), Cause::AccessCounter));  // 2
  EXPECT_TRUE(t.on_migration(0, 4, Processor::Gpu, us(40), Cause::Fault));           // 3
  EXPECT_TRUE(t.thrashing_pages(0).test(4));
  // A user migration (cudaMemPrefetchAsync) or read duplication resets the page.
  EXPECT_FALSE(t.on_migration(0, 4, Processor::Cpu, us(50), Cause::Other));
  EXPECT_FALSE(t.thrashing_pages(0).test(4));
  // A gap longer than lapse resets a thrashing page; events below the threshold survive gaps.
  ping_pong(t, 5, us(100));
  ASSERT_TRUE(t.thrashing_pages(0).test(5));
  EXPECT_FALSE(t.on_migration(0, 5, Processor::Cpu, us(100 + 40 + 501), Cause::Fault));
  EXPECT_FALSE(t.thrashing_pages(0).test(5));
}

TEST(Thrashing, ThrottlesTheOtherProcessorThenPinsToTheRequester) {
  ThrashingDetector t;
  ThrashingConfig c;  // threshold 3, lapse = nap = 500 us, pin 300 x lapse
  c.pin_threshold = 1;
  t.configure(c, 1);
  ping_pong(t, 3);
  ASSERT_TRUE(t.thrashing_pages(0).test(3));

  // 50 us: the CPU faults first in a throttling period [50, 550) and is privileged.
  auto h = t.get_hint(0, 3, Processor::Cpu, kOnGpu, nullptr, us(50));
  EXPECT_EQ(h.type, Hint::None);
  EXPECT_FALSE(t.on_migration(0, 3, Processor::Cpu, us(55), Cause::Fault));  // 4th event
  // The GPU is throttled to the period's end, however often it re-faults.
  h = t.get_hint(0, 3, Processor::Gpu, kOnCpu, nullptr, us(60));
  EXPECT_EQ(h.type, Hint::Throttle);
  EXPECT_EQ(h.throttle_end, us(550));
  EXPECT_EQ(t.get_hint(0, 3, Processor::Gpu, kOnCpu, nullptr, us(300)).type, Hint::Throttle);
  // 550 us: a new period, the GPU is privileged and was throttled pin_threshold (1) times:
  // pinned to the requester, the GPU (the old model pinned the page where it was, the host).
  h = t.get_hint(0, 3, Processor::Gpu, kOnCpu, nullptr, us(550));
  EXPECT_EQ(h.type, Hint::Pin);
  EXPECT_EQ(h.pin, Processor::Gpu);
  EXPECT_TRUE(t.pinned(0, 3));
  // Moving the page to its pin is no event.
  EXPECT_FALSE(t.on_migration(0, 3, Processor::Gpu, us(551), Cause::Fault));
  // The CPU cannot map GPU memory over PCIe: it is throttled, not given free remote access.
  h = t.get_hint(0, 3, Processor::Cpu, kOnGpu, nullptr, us(600));
  EXPECT_EQ(h.type, Hint::Throttle);
  EXPECT_EQ(h.throttle_end, us(1050));
  // Next period the CPU is privileged: the pin moves to host memory, where both can reach it,
  // and the GPU then maps the host copy.
  h = t.get_hint(0, 3, Processor::Cpu, kOnGpu, nullptr, us(1050));
  EXPECT_EQ(h.type, Hint::Pin);
  EXPECT_EQ(h.pin, Processor::Cpu);
  h = t.get_hint(0, 3, Processor::Gpu, kOnCpu, nullptr, us(1100));
  EXPECT_EQ(h.type, Hint::Pin);
  EXPECT_EQ(h.pin, Processor::Cpu);
  // The pin lasts 300 x 500 us from when it was taken (550 us).
  std::vector<unsigned> expired;
  t.expire_pins(us(550) + us(150000) - 1, [&](std::uint32_t, unsigned p) { expired.push_back(p); });
  EXPECT_TRUE(expired.empty());
  t.expire_pins(us(550) + us(150000), [&](std::uint32_t, unsigned p) { expired.push_back(p); });
  EXPECT_EQ(expired, std::vector<unsigned>{3});
  EXPECT_FALSE(t.pinned(0, 3));
  EXPECT_FALSE(t.thrashing_pages(0).test(3));
}

TEST(Thrashing, PreferredHostLocationTakesThePin) {
  ThrashingDetector t;
  t.configure(ThrashingConfig{}, 1);
  ping_pong(t, 9);
  const Processor cpu = Processor::Cpu;
  const auto h = t.get_hint(0, 9, Processor::Gpu, kOnCpu, &cpu, us(45));
  EXPECT_EQ(h.type, Hint::Pin);
  EXPECT_EQ(h.pin, Processor::Cpu);
}

TEST(Thrashing, EpochResetsABlockAtMostMaxResetsTimes) {
  ThrashingDetector t;
  ThrashingConfig c;
  c.epoch = 2;  // 1 ms
  c.max_resets = 1;
  t.configure(c, 1);
  ping_pong(t, 1);
  ASSERT_TRUE(t.thrashing_pages(0).test(1));
  // Last thrashing at 40 us; 1 ms later the block's state is dropped.
  EXPECT_EQ(t.get_hint(0, 1, Processor::Gpu, kOnCpu, nullptr, us(1040)).type, Hint::None);
  EXPECT_TRUE(t.thrashing_pages(0).test(1));
  EXPECT_EQ(t.get_hint(0, 1, Processor::Gpu, kOnCpu, nullptr, us(1041)).type, Hint::None);
  EXPECT_FALSE(t.thrashing_pages(0).test(1));
  EXPECT_EQ(t.block_resets(), 1u);
  // Thrashing again; past the epoch, the block has used its one reset and keeps its state.
  ping_pong(t, 1, us(5000));
  ASSERT_TRUE(t.thrashing_pages(0).test(1));
  EXPECT_EQ(t.get_hint(0, 1, Processor::Gpu, kOnCpu, nullptr, us(9000)).type, Hint::None);
  EXPECT_TRUE(t.thrashing_pages(0).test(1));
  EXPECT_EQ(t.block_resets(), 1u);
}

TEST(Thrashing, LapseAdaptsOnlyAtItsDefault) {
  // adjust_thrashing_lapse: every hint on a thrashing page votes +1 for a gap >= lapse; at the
  // vote threshold the lapse grows by an eighth.
  ThrashingConfig c;
  c.lapse_vote_threshold = 2;
  ThrashingDetector t;
  t.configure(c, 1);
  ping_pong(t, 2);
  EXPECT_EQ(t.lapse(), us(500));
  t.get_hint(0, 2, Processor::Gpu, kOnCpu, nullptr, us(600));  // gap 560 us: +1
  EXPECT_EQ(t.lapse(), us(500));
  t.get_hint(0, 2, Processor::Gpu, kOnCpu, nullptr, us(700));  // +2: grows
  EXPECT_EQ(t.lapse(), us(562.5));
  c.lapse_us = 400;  // set by the user: fixed
  ThrashingDetector f;
  f.configure(c, 1);
  ping_pong(f, 2);
  for (int i = 0; i < 10; ++i) f.get_hint(0, 2, Processor::Gpu, kOnCpu, nullptr, us(600 + i));
  EXPECT_EQ(f.lapse(), us(400));
}

}  // namespace
}  // namespace uvmsim::test
