// Li & Chapman's object-level schemes (policies/placement/objects/object_manager.h) on the paper's
// examples: GLM keeps the globally hottest objects for the whole run while RDM adapts to the
// inner loop of cfd (§3.3-§3.4, Fig. 3, §5.2); RLM thrashes between two interleaved kernels
// where RDM does not (§5.2, bfs); partial mapping; implicit vs explicit transfer; object LRU.
#include <gtest/gtest.h>

#include "policies/placement/objects/object_manager.h"

namespace uvmsim::test {
namespace {

using objects::Action;
using objects::kNever;
using objects::ObjectManager;
using objects::Scheme;
using objects::Use;

// Fig. 3 of the paper, four one-chunk objects with GL_V > GL_N > GL_F > GL_O, GPU memory for two:
// TR0 uses V and O, then an inner loop alternates TR1 (V, N, F) and TR2 (F, O).
enum : std::uint32_t { V = 0, N = 1, F = 2, O = 3 };

struct Launch {
  std::vector<Use> uses;
};

std::vector<Launch> cfd_program() {
  // Launch sequence 0: TR0, 1: TR1, 2: TR2, 3: TR1, 4: TR2; next_use = the next launch using it.
  auto u = [](std::uint32_t o, double rl, std::int64_t next) { return Use{o, rl, 1.0, next}; };
  return {{{u(V, 10, 1), u(O, 1, 2)}},
          {{u(V, 10, 3), u(N, 8, 3), u(F, 4, 2)}},
          {{u(F, 5, 3), u(O, 5, 4)}},
          {{u(V, 10, kNever), u(N, 8, kNever), u(F, 4, 4)}},
          {{u(F, 5, kNever), u(O, 5, kNever)}}};
}

ObjectManager cfd_manager(Scheme s) {
  ObjectManager m(s, 2, false, 0.5);
  m.add_object(V, 1, 40);
  m.add_object(N, 1, 30);
  m.add_object(F, 1, 20);
  m.add_object(O, 1, 10);
  return m;
}

using Actions = std::vector<Action>;
Action gpu(std::uint32_t o) { return {Action::ToGpu, o, 1, true}; }
Action cpu(std::uint32_t o) { return {Action::ToCpu, o, 0, false}; }
Action evict(std::uint32_t o) { return {Action::Evict, o, 0, false}; }

TEST(ObjectSchemes, GlmKeepsTheGloballyHottestObjects) {
  ObjectManager m = cfd_manager(Scheme::Glm);
  const auto prog = cfd_program();
  EXPECT_EQ(m.invoke(0, prog[0].uses), (Actions{gpu(V), gpu(O)}));
  // TR1: N (GL 30) replaces O (GL 10); F (GL 20) may not replace V or N.
  EXPECT_EQ(m.invoke(1, prog[1].uses), (Actions{evict(O), gpu(N), cpu(F)}));
  // From then on V and N stay: F and O are kept in CPU memory.
  EXPECT_EQ(m.invoke(2, prog[2].uses), (Actions{cpu(F), cpu(O)}));
  EXPECT_EQ(m.invoke(3, prog[3].uses), (Actions{cpu(F)}));
  EXPECT_EQ(m.invoke(4, prog[4].uses), (Actions{cpu(F), cpu(O)}));
  EXPECT_EQ(m.state(V).gpu_chunks, 1u);
  EXPECT_EQ(m.state(N).gpu_chunks, 1u);
}

TEST(ObjectSchemes, RdmFollowsTheNextReuseTime) {
  ObjectManager m = cfd_manager(Scheme::Rdm);
  const auto prog = cfd_program();
  EXPECT_EQ(m.invoke(0, prog[0].uses), (Actions{gpu(V), gpu(O)}));
  // TR1: F (next use 2) is mapped first and replaces V (next use 3, furthest); O (next use 2)
  // stays. V and N (next use 3) find no object reused later than them.
  EXPECT_EQ(m.invoke(1, prog[1].uses), (Actions{evict(V), gpu(F), cpu(V), cpu(N)}));
  EXPECT_EQ(m.state(V).next_reuse, 3);
  // TR2 finds F and O in GPU memory, and in the inner loop they stay: no more replacements.
  EXPECT_EQ(m.invoke(2, prog[2].uses), Actions{});
  EXPECT_EQ(m.invoke(3, prog[3].uses), (Actions{cpu(V), cpu(N)}));
  EXPECT_EQ(m.invoke(4, prog[4].uses), Actions{});
}

TEST(ObjectSchemes, RlmThrashesBetweenInterleavedKernelsRdmDoesNot) {
  // bfs-like: kernel a uses X (2 chunks) and Y, kernel b uses Z; three chunks of GPU memory.
  enum : std::uint32_t { X = 0, Y = 1, Z = 2 };
  auto run = [](Scheme s) {
    ObjectManager m(s, 3, false, 0.5);
    m.add_object(X, 2, 100);
    m.add_object(Y, 1, 50);
    m.add_object(Z, 1, 10);
    std::vector<Actions> out;
    for (std::int64_t l = 0; l < 6; ++l) {
      std::vector<Use> uses;
      if (l % 2 == 0)
        uses = {{X, 10, 1.0, l + 2}, {Y, 5, 1.0, l + 2}};
      else
        uses = {{Z, 3, 1.0, l + 2}};
      out.push_back(m.invoke(static_cast<std::uint64_t>(l), uses));
    }
    return out;
  };
  const auto rlm = run(Scheme::Rlm);
  EXPECT_EQ(rlm[0], (Actions{{Action::ToGpu, X, 2, true}, gpu(Y)}));
  for (int l = 1; l < 6; ++l) {
    // Each kernel's objects outrank the other kernel's (regional locality 0 there).
    const Actions want =
        l % 2 ? Actions{evict(X), gpu(Z)} : Actions{evict(Z), {Action::ToGpu, X, 2, true}};
    EXPECT_EQ(rlm[l], want) << l;
  }
  const auto rdm = run(Scheme::Rdm);
  EXPECT_EQ(rdm[0], (Actions{{Action::ToGpu, X, 2, true}, gpu(Y)}));
  for (int l = 1; l < 6; ++l) {
    // Z is reused after X and Y: it never replaces them.
    EXPECT_EQ(rdm[l], l % 2 ? Actions{cpu(Z)} : Actions{}) << l;
  }
}

TEST(ObjectSchemes, PartialMappingAndTransferMode) {
  // RDM with partial mapping: a 4-chunk object with 3 chunks free gets its first 3 chunks.
  ObjectManager m(Scheme::Rdm, 4, true, 0.5);
  m.add_object(0, 1, 5);
  m.add_object(1, 4, 5);
  EXPECT_EQ(m.invoke(0, {{0, 1, 0.2, 1}, {1, 1, 0.7, 1}}),
            (Actions{{Action::ToGpu, 0, 1, false}, {Action::Partial, 1, 3, true}}));
  EXPECT_EQ(m.used_chunks(), 4u);
  // Without partial mapping the same object stays in CPU memory.
  ObjectManager w(Scheme::Rdm, 4, false, 0.5);
  w.add_object(0, 1, 5);
  w.add_object(1, 4, 5);
  EXPECT_EQ(w.invoke(0, {{0, 1, 0.5, 1}, {1, 1, 0.7, 1}}),
            (Actions{{Action::ToGpu, 0, 1, true}, cpu(1)}));
}

TEST(ObjectSchemes, ObjectLruReplacesTheLeastRecentlyUsed) {
  ObjectManager m(Scheme::Lru, 2, false, 0.5);
  for (std::uint32_t o = 0; o < 3; ++o) m.add_object(o, 1, 1);
  EXPECT_EQ(m.invoke(0, {{0, 1, 0.1, kNever}}), (Actions{gpu(0)}));  // always explicit
  EXPECT_EQ(m.invoke(1, {{1, 1, 0.1, kNever}}), (Actions{gpu(1)}));
  EXPECT_EQ(m.invoke(2, {{0, 1, 0.1, kNever}}), Actions{});
  EXPECT_EQ(m.invoke(3, {{2, 1, 0.1, kNever}}), (Actions{evict(1), gpu(2)}));
}

}  // namespace
}  // namespace uvmsim::test
