// The thrashing detector against uvm_perf_thrashing.c (models/thrashing.h): which migrations are
// events, the throttle/pin sequence with the PCIe access rules, pin expiry, the epoch reset with
// max_resets, the adaptive lapse, and the same rules between GPUs over a node's topology
// (models/topology.h).
#include <gtest/gtest.h>

#include <vector>

#include "models/driver/residency_choice.h"
#include "models/thrashing.h"

namespace uvmsim::test {
namespace {

using Cause = ThrashingDetector::Cause;
using Hint = ThrashingDetector::Hint;
constexpr Tick us(double v) { return static_cast<Tick>(v * kPsPerUs); }
constexpr ProcessorMask kOnCpu = 1, kOnGpu = 2;
/// The one-GPU x86 + PCIe machine.
const Topology kPcie = Topology::make(1, Topology::Peer::None);

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
  t.configure(ThrashingConfig{}, 1, kPcie);
  for (int i = 0; i < 100; ++i)
    EXPECT_FALSE(t.on_migration(0, 7, Processor::Gpu, us(i), Cause::Fault));
  EXPECT_EQ(t.get_hint(0, 7, Processor::Gpu, kOnCpu, nullptr, us(200)).type, Hint::None);
  EXPECT_FALSE(t.thrashing_pages(0).test(7));
}

TEST(Thrashing, AnyTwoMigrationsWithinLapseCountOnceTheBlockIsTracked) {
  // thrashing_event_cb counts every event within lapse of the page's previous one, whatever
  // the processor: after one CPU/GPU change, three GPU-only migrations make the page thrashing.
  ThrashingDetector t;
  t.configure(ThrashingConfig{}, 1, kPcie);
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
  t.configure(c, 1, kPcie);
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
  t.configure(ThrashingConfig{}, 1, kPcie);
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
  t.configure(c, 1, kPcie);
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
  t.configure(c, 1, kPcie);
  ping_pong(t, 2);
  EXPECT_EQ(t.lapse(), us(500));
  t.get_hint(0, 2, Processor::Gpu, kOnCpu, nullptr, us(600));  // gap 560 us: +1
  EXPECT_EQ(t.lapse(), us(500));
  t.get_hint(0, 2, Processor::Gpu, kOnCpu, nullptr, us(700));  // +2: grows
  EXPECT_EQ(t.lapse(), us(562.5));
  c.lapse_us = 400;  // set by the user: fixed
  ThrashingDetector f;
  f.configure(c, 1, kPcie);
  ping_pong(f, 2);
  for (int i = 0; i < 10; ++i) f.get_hint(0, 2, Processor::Gpu, kOnCpu, nullptr, us(600 + i));
  EXPECT_EQ(f.lapse(), us(400));
}

// ---- several GPUs: the same rules over a node's topology ----------------------------------

const Processor kG0 = gpu_processor(0), kG1 = gpu_processor(1);

TEST(Topology, AccessMasksAndTheClosestProcessorFollowTheLinks) {
  using Peer = Topology::Peer;
  const ProcessorMask cpu = processor_bit(Processor::Cpu), g0 = processor_bit(kG0),
                      g1 = processor_bit(kG1), g2 = processor_bit(gpu_processor(2)),
                      g3 = processor_bit(gpu_processor(3));
  // x86 + PCIe, one GPU: the GPU maps host memory, the CPU maps nothing but its own.
  const Topology one = Topology::make(1, Peer::None);
  EXPECT_EQ(one.can_access(0), cpu);
  EXPECT_EQ(one.can_access(1), cpu | g0);
  EXPECT_EQ(one.accessible_from(0), cpu | g0);
  EXPECT_EQ(one.accessible_from(1), g0);
  EXPECT_EQ(one.fast_atomic_link(1), 0u);
  // Four GPUs over NVLink: every GPU maps every other's memory over a fast link.
  const Topology nv = Topology::make(4, Peer::Nvlink);
  EXPECT_EQ(nv.can_access(2), cpu | g0 | g1 | g2 | g3);
  EXPECT_EQ(nv.accessible_from(2), g0 | g1 | g2 | g3);  // not the CPU
  EXPECT_EQ(nv.fast_atomic_link(2), g0 | g2 | g3);
  EXPECT_EQ(nv.fast_atomic_link(0), 0u);
  // uvm_processor_mask_find_closest_id from GPU 1 (id 2): itself, then a fast peer (the lowest),
  // then anything it can map with GPUs first, then the first processor.
  EXPECT_EQ(nv.find_closest(cpu | g1 | g3, 2), 2);
  EXPECT_EQ(nv.find_closest(cpu | g3, 2), 4);
  EXPECT_EQ(Topology::make(4, Peer::Pcie).find_closest(cpu | g3, 2), 4);  // a PCIe peer
  EXPECT_EQ(Topology::make(4, Peer::Pcie).fast_atomic_link(2), 0u);
  EXPECT_EQ(Topology::make(4, Peer::None).find_closest(cpu | g3, 2), 0);  // only the host
  EXPECT_EQ(Topology::make(4, Peer::None).find_closest(g3, 2), 4);        // what there is
  EXPECT_EQ(nv.find_closest(g2 | g3, 0), 3);  // the CPU reaches no GPU memory: the first
  EXPECT_EQ(nv.find_closest(0, 0), -1);
}

TEST(Topology, ACoherentHostLinkLetsTheCpuMapGpuMemoryWithNativeAtomicsBothWays) {
  // Grace Hopper (va_space_register_gpu over NVLink-C2C with the GPU's memory a NUMA node).
  const ProcessorMask cpu = processor_bit(Processor::Cpu), g0 = processor_bit(kG0),
                      g1 = processor_bit(kG1);
  const Topology gh = Topology::make(1, Topology::Peer::None, true);
  EXPECT_EQ(gh.can_access(0), cpu | g0);
  EXPECT_EQ(gh.can_access(1), cpu | g0);
  EXPECT_EQ(gh.accessible_from(0), cpu | g0);
  EXPECT_EQ(gh.accessible_from(1), cpu | g0);
  EXPECT_EQ(gh.fast_atomic_link(0), g0);
  EXPECT_EQ(gh.fast_atomic_link(1), cpu);
  EXPECT_EQ(gh.find_closest(g0, 0), 1);  // the CPU reaches the GPU's copy over the fast link
  // Two coherent GPUs without peer access: each has the CPU, not the other GPU.
  const Topology two = Topology::make(2, Topology::Peer::None, true);
  EXPECT_EQ(two.can_access(0), cpu | g0 | g1);
  EXPECT_EQ(two.fast_atomic_link(2), cpu);
  EXPECT_EQ(two.find_closest(g0 | g1, 0), 1);
}

/// CPU at 0, G0 at 10, CPU at 20, G0 at 30, CPU at 40 us: thrashing between the host and GPU 0.
void cpu_gpu_ping_pong(ThrashingDetector& t, unsigned page) {
  for (int i = 0; i < 5; ++i)
    t.on_migration(0, page, i % 2 ? kG0 : Processor::Cpu, us(10 * i), Cause::Fault);
}

TEST(Thrashing, OverACoherentHostLinkThePinIsInGpuMemory) {
  // get_hint_for_migration_thrashing's fast path: both processors reach each other over a fast
  // link with native atomics. A GPU faulting on the host copy takes the pin ("on coherent
  // systems, we prefer the CPU to map vidmem"); a CPU faulting on the GPU copy is pinned there.
  ThrashingDetector t;
  t.configure(ThrashingConfig{}, 1, Topology::make(1, Topology::Peer::None, true));
  cpu_gpu_ping_pong(t, 4);
  ASSERT_TRUE(t.thrashing_pages(0).test(4));
  const ProcessorMask on_cpu = processor_bit(Processor::Cpu), on_gpu = processor_bit(kG0);
  auto h = t.get_hint(0, 4, kG0, on_cpu, nullptr, us(45));
  EXPECT_EQ(h.type, Hint::Pin);
  EXPECT_EQ(h.pin, kG0);
  h = t.get_hint(0, 4, Processor::Cpu, on_gpu, nullptr, us(46));
  EXPECT_EQ(h.type, Hint::Pin);
  EXPECT_EQ(h.pin, kG0);
  // Over PCIe the same history throttles the GPU instead (no fast path).
  ThrashingDetector p;
  p.configure(ThrashingConfig{}, 1, kPcie);
  cpu_gpu_ping_pong(p, 4);
  EXPECT_EQ(p.get_hint(0, 4, kG0, on_cpu, nullptr, us(45)).type, Hint::None);
  EXPECT_EQ(p.get_hint(0, 4, Processor::Cpu, on_gpu, nullptr, us(46)).type, Hint::Throttle);
}

TEST(ResidencyChoice, FollowsBlockSelectProcessorResidencyInItsOrder) {
  // The driver's choice for a faulting processor, on a one-GPU machine over PCIe and over a
  // coherent link (where the CPU can map GPU memory).
  const Topology pcie = Topology::make(1, Topology::Peer::None);
  const Topology c2c = Topology::make(1, Topology::Peer::None, true);
  const ThrashingDetector::Result none{};
  auto choose = [&](const VaBlock& b, Processor who, const Topology& t,
                    const ThrashingDetector::Result& h = {}, AccessKind k = AccessKind::Read) {
    return select_residency(b, 7, who, k, h, t, 1, true);
  };
  VaBlock on_gpu;
  on_gpu.gpu(0).resident.set(7);
  // No advice: the faulting processor takes the page, whatever the link.
  EXPECT_EQ(choose(on_gpu, Processor::Cpu, pcie), 0);
  EXPECT_EQ(choose(on_gpu, Processor::Cpu, c2c), 0);
  // Accessed-by the CPU: kept where it is only where the CPU can map it.
  VaBlock by = on_gpu;
  by.accessed_by = processor_bit(Processor::Cpu);
  EXPECT_EQ(choose(by, Processor::Cpu, pcie), 0);
  EXPECT_EQ(choose(by, Processor::Cpu, c2c), 1);
  // A preferred GPU: the same, and read duplication comes first.
  VaBlock pref = on_gpu;
  pref.preferred = PreferredLocation::Gpu;
  EXPECT_EQ(choose(pref, Processor::Cpu, pcie), 0);
  EXPECT_EQ(choose(pref, Processor::Cpu, c2c), 1);
  pref.read_mostly = true;
  EXPECT_EQ(choose(pref, Processor::Cpu, c2c), 0);
  // Resident nowhere: the preferred location if the requester can map it.
  VaBlock nowhere;
  nowhere.preferred = PreferredLocation::Gpu;
  EXPECT_EQ(choose(nowhere, Processor::Cpu, pcie), 0);
  EXPECT_EQ(choose(nowhere, Processor::Cpu, c2c), 1);
  nowhere.preferred = PreferredLocation::Cpu;
  EXPECT_EQ(choose(nowhere, kG0, pcie), 0);
  // A thrashing pin wins over everything but read duplication and the requester's own
  // preferred location.
  ThrashingDetector::Result pin;
  pin.type = Hint::Pin;
  pin.pin = kG0;
  EXPECT_EQ(choose(on_gpu, Processor::Cpu, c2c, pin), 1);
  VaBlock cpu_pref = on_gpu;
  cpu_pref.preferred = PreferredLocation::Cpu;
  EXPECT_EQ(choose(cpu_pref, Processor::Cpu, c2c, pin), 0);
  // An atomic stays remote only on a GPU copy (map_remote_on_atomic_fault): a host copy moves.
  VaBlock on_cpu;
  on_cpu.cpu_resident.set(7);
  EXPECT_EQ(choose(on_cpu, kG0, c2c, none, AccessKind::Atomic), 1);
}

/// G0 at 0, G1 at 10, G0 at 20, G1 at 30, G0 at 40 us: thrashing between two GPUs.
void gpu_ping_pong(ThrashingDetector& t, unsigned page) {
  for (int i = 0; i < 5; ++i) t.on_migration(0, page, i % 2 ? kG1 : kG0, us(10 * i), Cause::Fault);
}

TEST(Thrashing, OverNvlinkTheOtherGpuMapsThePeerCopy) {
  // The fast path of get_hint_for_migration_thrashing: every thrashing processor has a fast
  // link with native atomics to the residency, so the page is pinned where it is.
  ThrashingDetector t;
  t.configure(ThrashingConfig{}, 1, Topology::make(2, Topology::Peer::Nvlink));
  gpu_ping_pong(t, 6);
  ASSERT_TRUE(t.thrashing_pages(0).test(6));
  const auto h = t.get_hint(0, 6, kG1, processor_bit(kG0), nullptr, us(45));
  EXPECT_EQ(h.type, Hint::Pin);
  EXPECT_EQ(h.pin, kG0);
}

TEST(Thrashing, BetweenGpusThePinIsAPeerMappingOverPcieAndTheHostWithoutPeers) {
  ThrashingConfig c;
  c.pin_threshold = 1;
  for (const auto peer : {Topology::Peer::Pcie, Topology::Peer::None}) {
    SCOPED_TRACE(peer == Topology::Peer::Pcie ? "pcie peers" : "no peers");
    ThrashingDetector t;
    t.configure(c, 1, Topology::make(2, peer));
    gpu_ping_pong(t, 3);
    ASSERT_TRUE(t.thrashing_pages(0).test(3));
    // 50 us: GPU 1 opens a throttling period [50, 550) and is privileged; no fast path over
    // PCIe, so it migrates the page.
    EXPECT_EQ(t.get_hint(0, 3, kG1, processor_bit(kG0), nullptr, us(50)).type, Hint::None);
    t.on_migration(0, 3, kG1, us(55), Cause::Fault);
    // GPU 0 is throttled to the period's end.
    auto h = t.get_hint(0, 3, kG0, processor_bit(kG1), nullptr, us(60));
    EXPECT_EQ(h.type, Hint::Throttle);
    EXPECT_EQ(h.throttle_end, us(550));
    // 550 us: GPU 0 is privileged and was throttled once: pinned to itself.
    h = t.get_hint(0, 3, kG0, processor_bit(kG1), nullptr, us(550));
    EXPECT_EQ(h.type, Hint::Pin);
    EXPECT_EQ(h.pin, kG0);
    EXPECT_FALSE(t.on_migration(0, 3, kG0, us(551), Cause::Fault));  // to its pin: no event
    h = t.get_hint(0, 3, kG1, processor_bit(kG0), nullptr, us(600));
    if (peer == Topology::Peer::Pcie) {
      // GPU 1 can map GPU 0's memory: it maps the pinned copy over the peer link.
      EXPECT_EQ(h.type, Hint::Pin);
      EXPECT_EQ(h.pin, kG0);
      continue;
    }
    // Without peer access GPU 1 cannot reach the pinned copy: throttled, and privileged in the
    // next period, it moves the pin to the one location both GPUs can map, host memory.
    EXPECT_EQ(h.type, Hint::Throttle);
    EXPECT_EQ(h.throttle_end, us(1050));
    h = t.get_hint(0, 3, kG1, processor_bit(kG0), nullptr, us(1050));
    EXPECT_EQ(h.type, Hint::Pin);
    EXPECT_EQ(h.pin, Processor::Cpu);
    h = t.get_hint(0, 3, kG0, processor_bit(Processor::Cpu), nullptr, us(1100));
    EXPECT_EQ(h.type, Hint::Pin);
    EXPECT_EQ(h.pin, Processor::Cpu);
  }
}

}  // namespace
}  // namespace uvmsim::test
