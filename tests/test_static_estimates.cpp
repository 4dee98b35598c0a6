// Li & Chapman's compile-time estimates (policies/placement/objects/static_estimates.h): launch
// sites from the hints' launch sequence, reuse distances as expected numbers of target regions
// (§4.3, Listing 2) and global locality with the estimated invocation frequency (§4.1, Eq. 1),
// against the exact next use the launch sequence gives the oracle.
#include <gtest/gtest.h>

#include "policies/placement/objects/static_estimates.h"

namespace uvmsim::test {
namespace {

using objects::StaticProgram;

enum : std::uint32_t { A = 0, B = 1, C = 2 };

trace::UseHint use(std::uint32_t alloc, std::int64_t reads, std::int64_t per_iteration = 0) {
  trace::UseHint u;
  u.alloc = alloc;
  u.reads = trace::Poly(reads, per_iteration);
  return u;
}

/// k0 (A) once; a host loop of `iters` iterations launching k1 (A, B) then k2 (B, C); k3 (A, C).
trace::Hints program(std::int32_t iters) {
  trace::Hints h;
  for (std::uint32_t a : {A, B, C})
    h.allocations.push_back({a, std::string(1, static_cast<char>('A' + a)), 4096});
  h.kernels = {{0, "k0", {use(A, 10)}, {}},
               {1, "k1", {use(A, 100), use(B, 5)}, {}},
               {2, "k2", {use(B, 7, 1), use(C, 3)}, {}},
               {3, "k3", {use(A, 1), use(C, 1)}, {}}};
  auto launch = [&](std::uint32_t k, std::int32_t it) {
    trace::LaunchHint l;
    l.launch = static_cast<std::uint32_t>(h.launches.size());
    l.kernel = k;
    l.iteration = it;
    h.launches.push_back(l);
  };
  launch(0, -1);
  for (std::int32_t it = 0; it < iters; ++it) {
    launch(1, it);
    launch(2, it);
  }
  launch(3, -1);
  return h;
}

TEST(StaticEstimates, ReuseDistancesAreExpectedRegionCountsOfTheStaticStructure) {
  // Two iterations: launches 0 k0, 1 k1, 2 k2, 3 k1, 4 k2, 5 k3; the loop has 2 sites.
  const StaticProgram p(program(2), 32);
  EXPECT_EQ(p.sites(), 4u);
  EXPECT_EQ(p.site_of(1), p.site_of(3));
  EXPECT_EQ(p.site_of(2), p.site_of(4));
  // k0 -> k1 next: 1 region on.
  EXPECT_EQ(p.reuse_distance(0, A), 1);
  // In the loop, A is used again by k1 of the next iteration (2 on) or by k3 after the loop:
  // (2 - 1 - 0) + 31 x 2 + 1 = 64 expected regions on. The nearer one wins.
  EXPECT_EQ(p.reuse_distance(1, A), 2);
  EXPECT_EQ(p.reuse_distance(1, B), 1);
  EXPECT_EQ(p.reuse_distance(2, B), 1);
  EXPECT_EQ(p.reuse_distance(2, C), 2);
  // The same at every invocation of a site: the last iteration still expects the next one,
  // where the exact next use of C after launch 4 is launch 5 (1 on) and of B none.
  EXPECT_EQ(p.reuse_distance(4, C), 2);
  EXPECT_EQ(p.reuse_distance(4, B), 1);
  // Nothing after k3; k0 does not use B.
  EXPECT_EQ(p.reuse_distance(5, A), -1);
  EXPECT_EQ(p.reuse_distance(0, B), -1);
  // A launch the hints do not have.
  EXPECT_EQ(p.reuse_distance(6, A), -1);
}

TEST(StaticEstimates, TripCountOneHasNoBackEdge) {
  // A loop expected to run once never returns to its first site: C's next use is k3.
  const StaticProgram p(program(2), 1);
  EXPECT_EQ(p.reuse_distance(2, C), 1);
  EXPECT_EQ(p.reuse_distance(1, A), 2);  // k2, then k3
  EXPECT_EQ(p.reuse_distance(2, B), -1);
}

TEST(StaticEstimates, GlobalLocalityUsesTheEstimatedFrequency) {
  // The trace's loop runs 3 times; the estimate sums every loop site over 32 iterations.
  const StaticProgram p(program(3), 32);
  EXPECT_DOUBLE_EQ(p.frequency(0), 1.0);
  EXPECT_DOUBLE_EQ(p.frequency(1), 32.0);
  // A: k0 10 + k1 32 x 100 + k3 1.
  EXPECT_DOUBLE_EQ(p.global_locality(A), 10.0 + 3200.0 + 1.0);
  // B: k1 32 x 5 + k2 sum over it = 0..31 of (7 + it) = 32 x 7 + 496.
  EXPECT_DOUBLE_EQ(p.global_locality(B), 160.0 + 224.0 + 496.0);
  EXPECT_DOUBLE_EQ(p.global_locality(C), 32.0 * 3 + 1.0);
}

TEST(StaticEstimates, AlternatingKernelsShareTheirSite) {
  // hotspot's ping-pong: the loop's one site launches k1 and k2 in turn (their pointer
  // arguments swapped); the site uses A, B and C, each object's RL is the kernels' mean.
  trace::Hints h = program(0);
  h.launches.clear();
  for (std::int32_t it = 0; it < 4; ++it) {
    trace::LaunchHint l;
    l.launch = static_cast<std::uint32_t>(it);
    l.kernel = 1 + static_cast<std::uint32_t>(it % 2);
    l.iteration = it;
    h.launches.push_back(l);
  }
  const StaticProgram p(h, 32);
  EXPECT_EQ(p.sites(), 1u);
  EXPECT_EQ(p.reuse_distance(0, C), 1);  // next iteration (the site uses C through k2)
  EXPECT_DOUBLE_EQ(p.global_locality(A), 0.5 * 32 * 100);
  EXPECT_DOUBLE_EQ(p.global_locality(B), 0.5 * (32 * 5 + 32 * 7 + 496));
}

TEST(StaticEstimates, NewLoopWhenTheIterationStartsAgain) {
  // nw: two loops back to back, each numbering its iterations from 0.
  trace::Hints h = program(0);
  h.launches.clear();
  std::uint32_t n = 0;
  for (std::uint32_t k : {1u, 2u})
    for (std::int32_t it = 0; it < 3; ++it) {
      trace::LaunchHint l;
      l.launch = n++;
      l.kernel = k;
      l.iteration = it;
      h.launches.push_back(l);
    }
  const StaticProgram p(h, 32);
  EXPECT_EQ(p.sites(), 2u);
  // B from the first loop's site: the loop itself (1 on) beats the second loop (31 x 1 + 1).
  EXPECT_EQ(p.reuse_distance(0, B), 1);
  // A is only the first loop's: the next iteration.
  EXPECT_EQ(p.reuse_distance(2, A), 1);
  EXPECT_EQ(p.reuse_distance(3, C), 1);
}

TEST(StaticEstimates, NoLaunchSequenceGivesOneSitePerKernel) {
  trace::Hints h = program(0);
  h.launches.clear();
  const StaticProgram p(h, 32);
  EXPECT_EQ(p.sites(), 4u);
  EXPECT_DOUBLE_EQ(p.global_locality(A), 10.0 + 100.0 + 1.0);
  EXPECT_EQ(p.reuse_distance(0, A), -1);
}

}  // namespace
}  // namespace uvmsim::test
