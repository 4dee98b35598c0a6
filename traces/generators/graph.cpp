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
