// Page-level character of the workloads, as the UVM literature describes their real counterparts:
// streaming kernels fault 2 MB blocks in address order, mvt/bicg read one matrix row-wise and
// column-wise, floyd-warshall and gramschmidt move to a disjoint part of their data every
// iteration, the irregular workloads are data-dependent; seeds make irregular inputs reproducible.
#include <gtest/gtest.h>

#include <map>

#include "core/config.h"
#include "sim/simulator.h"
#include "tests/workload_check.h"

namespace uvmsim::test {
namespace {

struct Access {
  std::uint32_t launch;
  std::uint64_t tb;
  std::uint32_t warp;
  trace::AccessRecord r;
};

/// All records of `ref` (in trace order).
std::vector<Access> records_of(const std::string& path, std::uint32_t ref) {
  std::vector<Access> out;
  trace_stats(
      path, [&](std::uint32_t l, std::uint64_t tb, std::uint32_t w, const trace::AccessRecord& r) {
        if (r.ref_id == ref) out.push_back({l, tb, w, r});
      });
  return out;
}

const trace::RefHint* find_ref(const trace::Metadata& m, const std::string& kernel,
                               const std::string& alloc, AccessKind kind, int nth = 0) {
  for (const auto& k : m.hints->kernels) {
    if (k.name != kernel) continue;
    for (const auto& r : k.refs) {
      if (m.find_allocation(r.alloc)->name == alloc && r.kind == kind && nth-- == 0) return &r;
    }
  }
  ADD_FAILURE() << "no ref " << kernel << " " << alloc;
  return nullptr;
}

TEST(WorkloadCharacter, StreamingKernelsFaultBlocksInAddressOrder) {
  TempDir dir;
  const std::string t = gen_trace(dir, "blackscholes", 80 << 20, {{"iters", "1"}});
  const trace::Metadata m = trace::TraceReader(t).metadata();
  RunOptions o;
  o.trace = t;
  o.events_out = dir.file("events.csv");
  Simulator sim(SimConfig::from_preset("titanv"), o);
  sim.run();
  // First population of each 2 MB block — a demand migration of CPU-initialised inputs, a zero
  // fill of the outputs — in simulated-time order, per allocation.
  // Rows in time order; equal times keep file order. (std::sort on indices: std::stable_sort's
  // temporary buffer trips the allocation-counting operator new of tests/alloc_counter.cpp.)
  const auto events = read_events(dir.file("events.csv"));
  std::vector<std::size_t> order(events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return events[a].time_ns != events[b].time_ns ? events[a].time_ns < events[b].time_ns : a < b;
  });
  std::vector<CsvRow> rows;
  for (std::size_t i : order) rows.push_back(events[i]);
  std::map<std::uint32_t, std::vector<Addr>> first;
  std::set<Addr> seen;
  for (const CsvRow& r : rows) {
    const bool demand = r.event == "migration" && r.direction == "htod" && r.cause == "demand";
    if (!demand && r.event != "zero_fill") continue;
    const Addr block = r.va & ~(kBlockSize - 1);
    if (!seen.insert(block).second) continue;
    for (const auto& a : m.allocations) {
      if (r.va >= a.base && r.va < a.base + a.size) first[a.id].push_back(block);
    }
  }
  ASSERT_EQ(first.size(), 5u);
  for (const auto& [id, blocks] : first) {
    const auto& a = *m.find_allocation(id);
    EXPECT_EQ(blocks.size(), (a.size + kBlockSize - 1) / kBlockSize) << a.name;
    EXPECT_TRUE(std::is_sorted(blocks.begin(), blocks.end())) << a.name;
  }
}

TEST(WorkloadCharacter, MvtAndBicgReadOneMatrixRowWiseAndOneColumnWise) {
  TempDir dir;
  const std::uint64_t n = 1024, row = n * 4;  // a row is one 4 KB page
  for (const std::string name : {"mvt", "bicg"}) {
    const std::string t = gen_trace(dir, name, (n * n + 4 * n) * 4);
    const trace::Metadata m = trace::TraceReader(t).metadata();
    const std::string mat = m.allocations[0].name;
    const Addr base = m.allocations[0].base;
    const std::string row_kernel = name == "mvt" ? "mvt_kernel1" : "bicg_kernel2";
    const std::string col_kernel = name == "mvt" ? "mvt_kernel2" : "bicg_kernel1";
    // Row-wise kernel: thread i walks row i, so one warp instruction touches 32 rows (32 pages,
    // one record each, a row apart) and the next instruction the next element of each row.
    const auto rows = records_of(t, find_ref(m, row_kernel, mat, AccessKind::Read)->id);
    std::vector<Access> warp0;
    for (const Access& a : rows) {
      if (a.tb == 0 && a.warp == 0) warp0.push_back(a);
    }
    ASSERT_EQ(warp0.size(), 32 * n) << name;
    for (std::size_t i = 0; i < warp0.size(); ++i) {
      const std::uint64_t lane = i % 32, j = i / 32;
      EXPECT_EQ(warp0[i].r.va, base + lane * row + j * 4) << name << " " << i;
      EXPECT_EQ(warp0[i].r.bytes, 4u);
    }
    // Column-wise kernel: thread i walks column i, so every warp instruction reads 128
    // contiguous bytes of one row and the next instruction the same columns of the next row.
    const auto cols = records_of(t, find_ref(m, col_kernel, mat, AccessKind::Read)->id);
    std::vector<Access> w1;
    for (const Access& a : cols) {
      if (a.tb == 0 && a.warp == 1) w1.push_back(a);
    }
    ASSERT_EQ(w1.size(), n) << name;
    for (std::size_t j = 0; j < n; ++j) {
      EXPECT_EQ(w1[j].r.va, base + j * row + 32 * 4) << name << " " << j;
      EXPECT_EQ(w1[j].r.bytes, 128u);
    }
  }
}

/// The range [min, max] of the record VAs (first lane of each page group) of `ref`, per launch.
std::map<std::uint32_t, std::pair<Addr, Addr>> ranges(const std::string& t, std::uint32_t ref) {
  std::map<std::uint32_t, std::pair<Addr, Addr>> out;
  for (const Access& a : records_of(t, ref)) {
    auto [it, fresh] = out.try_emplace(a.launch, a.r.va, a.r.va);
    it->second.first = std::min(it->second.first, a.r.va);
    it->second.second = std::max(it->second.second, a.r.va);
  }
  return out;
}

void expect_disjoint_ascending(const std::map<std::uint32_t, std::pair<Addr, Addr>>& r,
                               std::size_t launches, const std::string& what) {
  ASSERT_EQ(r.size(), launches) << what;
  Addr prev_end = 0;
  for (const auto& [launch, range] : r) {
    EXPECT_GT(range.first, prev_end) << what << " launch " << launch;
    prev_end = range.second;
  }
}

TEST(WorkloadCharacter, FloydWarshallAndGramschmidtWalkDisjointPartsPerIteration) {
  TempDir dir;
  {
    const std::uint64_t n = 64;
    const std::string t = gen_trace(dir, "floyd-warshall", 2 * n * n * 4, {{"passes", "6"}});
    const trace::Metadata m = trace::TraceReader(t).metadata();
    // Reads of row k, d[k][x]: iteration k reads exactly row k, a new row every pass.
    const trace::RefHint* row_k =
        find_ref(m, "floydWarshallPass", "pathDistanceBuffer", AccessKind::Read, 2);
    ASSERT_TRUE(row_k->window.has_value());
    EXPECT_EQ(row_k->window->start.per_iteration, static_cast<std::int64_t>(n * 4));
    EXPECT_EQ(row_k->window->span.at(0), n * 4);
    const auto r = ranges(t, row_k->id);
    expect_disjoint_ascending(r, 6, "floyd-warshall row k");
    for (const auto& [launch, range] : r) {  // the first lane of each warp reads d[k][bx*16]
      EXPECT_EQ(range.first - m.allocations[0].base, launch * n * 4);
      EXPECT_EQ(range.second - m.allocations[0].base, (launch * n + n - 16) * 4);
    }
  }
  {
    const std::uint64_t n = 512;
    const std::string t = gen_trace(dir, "gramschmidt", 3 * n * n * 4, {{"iters", "4"}});
    const trace::Metadata m = trace::TraceReader(t).metadata();
    // kernel3 writes row k of R (columns j > k): disjoint rows, one per iteration.
    const trace::RefHint* r_row = find_ref(m, "gramschmidt_kernel3", "R", AccessKind::Write);
    ASSERT_TRUE(r_row->window.has_value());
    const auto r = ranges(t, r_row->id);
    expect_disjoint_ascending(r, 4, "gramschmidt R row k");
    std::uint32_t k = 0;
    for (const auto& [launch, range] : r) {
      EXPECT_EQ(launch, 3 * k + 2);  // the third kernel of iteration k
      EXPECT_EQ(range.first - m.allocations[1].base, (k * n + k + 1) * 4);
      EXPECT_EQ(range.second - m.allocations[1].base, (k * n + n - 32) * 4);  // last warp
      ++k;
    }
    // Column k of A is read by kernel1 and kernel2 of iteration k only.
    const trace::RefHint* a_col = find_ref(m, "gramschmidt_kernel2", "A", AccessKind::Read);
    std::map<std::uint32_t, std::set<Addr>> cols;
    for (const Access& a : records_of(t, a_col->id)) {
      cols[a.launch].insert((a.r.va - m.allocations[0].base) % (n * 4));
    }
    ASSERT_EQ(cols.size(), 4u);
    k = 0;
    for (const auto& [launch, offsets] : cols) {
      EXPECT_EQ(offsets, (std::set<Addr>{k * 4})) << launch;
      ++k;
    }
  }
}

/// Fraction of consecutive records of a ref (in trace order, within a launch) whose address
/// goes down.
double descending_fraction(const std::vector<Access>& recs) {
  std::size_t down = 0, pairs = 0;
  for (std::size_t i = 1; i < recs.size(); ++i) {
    if (recs[i].launch != recs[i - 1].launch) continue;
    ++pairs;
    down += recs[i].r.va < recs[i - 1].r.va;
  }
  return pairs == 0 ? 0.0 : static_cast<double>(down) / static_cast<double>(pairs);
}

struct Irregular {
  std::string name;
  std::uint64_t footprint;
  std::string kernel, alloc;  // a data-dependent read
};

TEST(WorkloadCharacter, IrregularWorkloadsAreDataDependent) {
  TempDir dir;
  const std::vector<Irregular> cases = {
      {"bfs", 80 << 10, "Kernel", "d_graph_visited"},
      {"btree", 15 * 4096, "findK", "knodesD"},
      {"xsbench", 22304 * 16, "xs_lookup_kernel_baseline", "unionized_energy_array"},
  };
  for (const Irregular& c : cases) {
    const std::string t = gen_trace(dir, c.name, c.footprint);
    const trace::Metadata m = trace::TraceReader(t).metadata();
    const trace::RefHint* r = find_ref(m, c.kernel, c.alloc, AccessKind::Read);
    ASSERT_NE(r, nullptr) << c.name;
    EXPECT_TRUE(r->data_dependent) << c.name;
    EXPECT_EQ(r->pattern, trace::AccessPattern::Irregular) << c.name;
    const trace::KernelHint* k = nullptr;
    for (const auto& kh : m.hints->kernels) {
      if (kh.name == c.kernel) k = &kh;
    }
    EXPECT_TRUE(k->use(r->alloc)->data_dependent) << c.name;
    EXPECT_TRUE(k->use(r->alloc)->estimated) << c.name;
    // Addresses in data order, not address order: a good share of steps go backwards.
    EXPECT_GT(descending_fraction(records_of(t, r->id)), 0.2) << c.name;
  }
  // A regular kernel for contrast: gemm's B is walked in address order.
  const std::string g = gen_trace(dir, "gemm", 3 * 64 * 64 * 4);
  const trace::Metadata gm = trace::TraceReader(g).metadata();
  const trace::RefHint* b = find_ref(gm, "gemm_kernel", "B", AccessKind::Read);
  EXPECT_FALSE(b->data_dependent);
  EXPECT_LT(descending_fraction(records_of(g, b->id)), 0.05);  // only where a warp starts
}

TEST(WorkloadCharacter, SeedsMakeIrregularInputsReproducible) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::uint64_t>> seeded = {
      {"bfs", 80 << 10},    {"floyd-warshall", 32 << 10}, {"cfd", 132 * 192 * 4},
      {"btree", 15 * 4096}, {"xsbench", 22304 * 16},      {"ra", 70000},
      {"hash-join", 22532}, {"radix-sort", 32768},        {"spmm", 80000},
      {"sssp", 80000},      {"minivite", 90000}};
  for (const auto& [name, fp] : seeded) {
    const auto a = file_bytes(gen_trace(dir, name, fp, {}, 7, "a.uvt"));
    const auto b = file_bytes(gen_trace(dir, name, fp, {}, 7, "b.uvt"));
    const auto c = file_bytes(gen_trace(dir, name, fp, {}, 8, "c.uvt"));
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_EQ(a, b) << name;
    EXPECT_NE(a, c) << name;
  }
}

}  // namespace
}  // namespace uvmsim::test
