// R-MAT graph generation and BFS levels (see graph.h).
#include "traces/generators/graph.h"

#include <limits>
#include <random>

#include "traces/generators/generator.h"

namespace uvmsim::gen {

Csr rmat_graph(unsigned scale, unsigned edge_factor, std::uint64_t seed) {
  const std::uint64_t n = std::uint64_t{1} << scale, m = n * edge_factor;
  const std::vector<std::uint64_t> relabel = random_permutation(n, seed ^ 0x9e3779b97f4a7c15ull);
  std::mt19937_64 rng(seed);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  edges.reserve(m);
  for (std::uint64_t e = 0; e < m; ++e) {
    std::uint64_t u = 0, v = 0;
    for (unsigned bit = 0; bit < scale; ++bit) {
      // Quadrant a = 57 %, b = 19 %, c = 19 %, d = 5 % (Graph500 reference generator).
      const std::uint64_t r = uniform_below(rng, 100);
      u = (u << 1) | (r >= 76 ? 1 : 0);
      v = (v << 1) | ((r >= 57 && r < 76) || r >= 95 ? 1 : 0);
    }
    if (u != v)
      edges.emplace_back(static_cast<std::uint32_t>(relabel[u]),
                         static_cast<std::uint32_t>(relabel[v]));
  }
  Csr g;
  g.vertices = n;
  g.offsets.assign(n + 1, 0);
  for (const auto& [u, v] : edges) ++g.offsets[u + 1], ++g.offsets[v + 1];
  for (std::uint64_t i = 0; i < n; ++i) g.offsets[i + 1] += g.offsets[i];
  g.targets.resize(g.offsets[n]);
  std::vector<std::uint64_t> fill(g.offsets.begin(), g.offsets.end() - 1);
  for (const auto& [u, v] : edges) g.targets[fill[u]++] = v, g.targets[fill[v]++] = u;
  return g;
}

namespace {

// graphgen draws the number of picks and the destinations from two generators (rand() and a TR1
// engine); so do we, which makes the arc count of the first n vertices independent of n.
std::mt19937_64 picks_rng(std::uint64_t seed) {
  return std::mt19937_64(seed ^ 0x5851f42d4c957f2dull);
}
std::mt19937_64 dest_rng(std::uint64_t seed) { return std::mt19937_64(seed); }
std::uint64_t next_picks(std::mt19937_64& rng) {
  return kRodiniaMinPicks + uniform_below(rng, kRodiniaMaxPicks - kRodiniaMinPicks + 1);
}

}  // namespace

Csr rodinia_graph(std::uint64_t n, std::uint64_t seed) {
  // Two passes over the same random streams: count each vertex's arcs, then place them in the
  // order graphgen appends them (no edge list is stored).
  Csr g;
  g.vertices = n;
  g.offsets.assign(n + 1, 0);
  for (int pass = 0; pass < 2; ++pass) {
    std::mt19937_64 pr = picks_rng(seed), dr = dest_rng(seed);
    std::vector<std::uint64_t> fill;
    if (pass == 1) {
      for (std::uint64_t i = 0; i < n; ++i) g.offsets[i + 1] += g.offsets[i];
      g.targets.resize(g.offsets[n]);
      fill.assign(g.offsets.begin(), g.offsets.end() - 1);
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      for (std::uint64_t e = next_picks(pr); e > 0; --e) {
        const std::uint64_t j = uniform_below(dr, n);
        if (pass == 0) {
          ++g.offsets[i + 1], ++g.offsets[j + 1];
        } else {
          g.targets[fill[i]++] = static_cast<std::uint32_t>(j);
          g.targets[fill[j]++] = static_cast<std::uint32_t>(i);
        }
      }
    }
  }
  return g;
}

std::uint64_t rodinia_vertices(
    std::uint64_t seed, std::uint64_t budget,
    const std::function<std::uint64_t(std::uint64_t, std::uint64_t)>& bytes) {
  std::mt19937_64 pr = picks_rng(seed);
  std::uint64_t n = 0, arcs = 0, best = 0;
  for (;;) {
    const std::uint64_t a = arcs + 2 * next_picks(pr);
    if (n + 1 > 0xffffffffu || bytes(n + 1, a) > budget) break;
    ++n, arcs = a;
    if (n >= kRodiniaMinVertices) best = n;
  }
  return best;
}

std::vector<std::uint32_t> bfs_levels(const Csr& g, std::uint64_t source) {
  constexpr std::uint32_t kUnreached = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> level(g.vertices, kUnreached);
  std::vector<std::uint64_t> frontier{source}, next;
  level[source] = 0;
  for (std::uint32_t l = 0; !frontier.empty(); ++l, frontier.swap(next), next.clear()) {
    for (std::uint64_t u : frontier) {
      for (std::uint64_t a = g.offsets[u]; a < g.offsets[u + 1]; ++a) {
        if (level[g.targets[a]] == kUnreached)
          level[g.targets[a]] = l + 1, next.push_back(g.targets[a]);
      }
    }
  }
  return level;
}

std::uint64_t first_connected_vertex(const Csr& g) {
  for (std::uint64_t v = 0; v < g.vertices; ++v) {
    if (g.degree(v) > 0) return v;
  }
  return 0;
}

}  // namespace uvmsim::gen
