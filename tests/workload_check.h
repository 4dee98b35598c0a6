// Helpers for the workload tests: stream a trace once and aggregate, per launch and static ref,
// what the trace really does (thread-level accesses, per-threadblock extents, offset range), so
// the tests can hold every generator's static hints against its own records.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "traces/generators/generator.h"
#include "traces/trace.h"

namespace uvmsim::test {

struct RefStats {
  std::uint64_t bytes = 0;  ///< sum of bytes x repeat
  std::uint64_t records = 0;
  Addr min_va = ~Addr{0}, max_va = 0;  ///< over record VAs (first lane of each page group)
  std::uint64_t max_tb_extent = 0;     ///< max over TBs of (max_va - min_va + bytes of last)
  bool wrong_kind = false;
};

struct LaunchStats {
  std::uint32_t kernel = 0;
  std::int32_t iteration = -1;
  std::uint64_t records = 0, bytes = 0, read_bytes = 0, write_bytes = 0;
  std::map<std::uint32_t, RefStats> refs;
};

struct TraceStats {
  trace::Metadata meta;
  std::vector<trace::HostEvent> host;
  std::vector<LaunchStats> launches;
};

/// Reads the whole trace once. `on_record(launch, tb, warp, rec)` sees every record if given.
inline TraceStats trace_stats(
    const std::string& path,
    const std::function<void(std::uint32_t, std::uint64_t, std::uint32_t,
                             const trace::AccessRecord&)>& on_record = {}) {
  trace::TraceReader reader(path);
  TraceStats s;
  s.meta = reader.metadata();
  trace::HostEvent ev;
  while (reader.next_host_event(ev)) {
    s.host.push_back(ev);
    if (ev.type == trace::HostEventType::KernelLaunch) {
      LaunchStats ls;
      ls.kernel = ev.kernel_id;
      ls.iteration = ev.iteration;
      s.launches.push_back(ls);
    }
  }
  std::map<std::uint32_t, AccessKind> kinds;
  if (s.meta.hints) {
    for (const auto& k : s.meta.hints->kernels) {
      for (const auto& r : k.refs) kinds[r.id] = r.kind;
    }
  }
  std::vector<trace::WarpStream> warps;
  for (std::uint32_t l = 0; l < reader.launches().size(); ++l) {
    LaunchStats& ls = s.launches.at(l);
    trace::LaunchStream stream = reader.launch(l);
    trace::ThreadblockView tb;
    std::map<std::uint32_t, std::pair<Addr, Addr>> tb_range;  // ref -> min, max end in this TB
    while (stream.next(tb)) {
      tb.warp_streams(warps);
      tb_range.clear();
      trace::AccessRecord r;
      for (std::uint32_t w = 0; w < warps.size(); ++w) {
        while (warps[w].next(r)) {
          if (on_record) on_record(l, tb.tb_id, w, r);
          RefStats& rs = ls.refs[r.ref_id];
          rs.bytes += std::uint64_t{r.bytes} * r.repeat;
          ++rs.records;
          rs.min_va = std::min(rs.min_va, r.va);
          rs.max_va = std::max(rs.max_va, r.va);
          auto [it, fresh] = tb_range.try_emplace(r.ref_id, r.va, r.va);
          if (!fresh) {
            it->second.first = std::min(it->second.first, r.va);
            it->second.second = std::max(it->second.second, r.va);
          }
          ++ls.records;
          ls.bytes += std::uint64_t{r.bytes} * r.repeat;
          (r.kind == AccessKind::Read ? ls.read_bytes : ls.write_bytes) +=
              std::uint64_t{r.bytes} * r.repeat;
          const auto k = kinds.find(r.ref_id);
          if (k != kinds.end() && k->second != r.kind) rs.wrong_kind = true;
        }
      }
      for (const auto& [ref, range] : tb_range) {
        RefStats& rs = ls.refs[ref];
        rs.max_tb_extent = std::max(rs.max_tb_extent, range.second - range.first);
      }
      stream.release(tb);
    }
  }
  return s;
}

/// Every static hint of the trace against what its records do (docs/hints.md's guarantees for
/// generator hints). Record VAs are those of the first lane in each page, so extents measured from
/// records may fall short of the true extent by less than one warp instruction's span
/// (`slack` bytes).
inline void expect_hints_match_trace(const TraceStats& s, std::uint64_t slack = kPageSize) {
  ASSERT_TRUE(s.meta.hints.has_value()) << s.meta.workload;
  const trace::Hints& h = *s.meta.hints;
  const std::string w = s.meta.workload;
  EXPECT_EQ(h.source, trace::HintSource::Static);
  EXPECT_EQ(h.workload, w);
  ASSERT_EQ(h.launches.size(), s.launches.size()) << w;
  // Next use per (launch, allocation), recomputed from the launch sequence.
  std::map<std::uint32_t, std::int64_t> next;
  for (std::size_t i = s.launches.size(); i-- > 0;) {
    const trace::LaunchHint& lh = h.launches[i];
    EXPECT_EQ(lh.kernel, s.launches[i].kernel) << w;
    EXPECT_EQ(lh.iteration, s.launches[i].iteration) << w;
    const trace::KernelHint* k = h.kernel(lh.kernel);
    ASSERT_NE(k, nullptr);
    ASSERT_EQ(lh.next_use.size(), k->uses.size()) << w;
    for (const auto& [alloc, n] : lh.next_use) {
      const auto it = next.find(alloc);
      EXPECT_EQ(n, it == next.end() ? -1 : it->second)
          << w << " launch " << i << " alloc " << alloc;
    }
    for (const auto& [alloc, n] : lh.next_use) next[alloc] = static_cast<std::int64_t>(i);
  }
  for (std::size_t i = 0; i < s.launches.size(); ++i) {
    const LaunchStats& ls = s.launches[i];
    const trace::KernelHint* k = h.kernel(ls.kernel);
    ASSERT_NE(k, nullptr);
    const std::int32_t it = ls.iteration;
    std::map<std::uint32_t, const trace::RefHint*> refs;
    for (const auto& r : k->refs) refs[r.id] = &r;
    for (const auto& [id, rs] : ls.refs) {
      ASSERT_TRUE(refs.count(id)) << w << ": launch " << i << " has records of ref " << id
                                  << " which kernel " << k->name << " does not declare";
    }
    for (const auto& [id, r] : refs) {
      const std::string where =
          w + " launch " + std::to_string(i) + " (" + k->name + ") ref " + std::to_string(id);
      const trace::Allocation* a = s.meta.find_allocation(r->alloc);
      ASSERT_NE(a, nullptr) << where;
      const auto found = ls.refs.find(id);
      const RefStats none;
      const RefStats& rs = found == ls.refs.end() ? none : found->second;
      EXPECT_EQ(rs.bytes % r->bytes, 0u) << where;
      EXPECT_FALSE(rs.wrong_kind) << where;
      const std::uint64_t count = rs.bytes / r->bytes;
      const bool exact = !r->data_dependent && !r->conditional;
      if (exact) {
        EXPECT_EQ(count, r->count.at(it)) << where;
      } else {
        EXPECT_LE(count, r->count.at(it)) << where;
      }
      if (rs.records == 0) continue;
      EXPECT_GE(rs.min_va, a->base) << where;
      EXPECT_LE(rs.max_va + r->bytes, a->base + a->size) << where;
      const std::uint64_t extent = rs.max_tb_extent + r->bytes;
      EXPECT_LE(extent, r->bytes_per_tb.at(it)) << where;
      if (exact) {
        EXPECT_GT(extent + slack, r->bytes_per_tb.at(it)) << where;
      }
      if (r->window) {
        const std::uint64_t start = r->window->start.at(it), span = r->window->span.at(it);
        EXPECT_GE(rs.min_va - a->base, start) << where;
        EXPECT_LE(rs.max_va - a->base + r->bytes, start + span) << where;
        if (exact) {
          EXPECT_EQ(rs.min_va - a->base, start) << where;
          EXPECT_GT(rs.max_va - a->base + r->bytes + slack, start + span) << where;
        }
      }
    }
  }
}

/// Generates `name` into `dir` and returns the path.
inline std::string gen_trace(const TempDir& dir, const std::string& name, std::uint64_t footprint,
                             const gen::ParamMap& params = {}, std::uint64_t seed = 1,
                             const std::string& file = "") {
  const std::string path = dir.file(file.empty() ? name + ".uvt" : file);
  gen::generate(name, footprint, params, seed, path);
  return path;
}

inline std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace uvmsim::test
