// Helpers shared by the simulator tests: temporary files, in-process CLI runs, CSV parsing.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "sim/cli/commands.h"
#include "traces/trace.h"

namespace uvmsim::test {

/// A per-test scratch directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "_" + info->name() : "t";
    for (auto& c : name)
      if (!isalnum(static_cast<unsigned char>(c))) c = '_';
    path_ = std::filesystem::temp_directory_path() /
            ("uvmsim_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct CliResult {
  int code;
  std::string out, err;
};

/// Records and accesses (repeats expanded) of one launch, decoded as the simulator decodes them.
struct Decoded {
  std::uint64_t records = 0, accesses = 0;
};
/// Decodes every record of launch `l` of `r`, releasing each threadblock as it is done; with
/// RecordCheck::WhenDecoded it then checks the access total, as the simulator does at a
/// kernel's end.
/// With a `decoded_budget`, chunks past it are paged (LaunchStream) and each warp goes on with
/// its next segment when one ends, as Gpu::run_warp does.
inline Decoded decode_launch(trace::TraceReader& r, std::uint32_t l,
                             trace::RecordCheck check = trace::RecordCheck::AtLoad,
                             std::uint64_t decoded_budget = trace::LaunchStream::kNoBudget) {
  trace::LaunchStream s = r.launch(l, check, decoded_budget);
  trace::ThreadblockView tb;
  std::vector<trace::WarpStream> warps;
  trace::AccessRecord rec;
  Decoded d;
  while (s.next(tb)) {
    tb.warp_streams(warps);
    for (std::uint32_t i = 0; i < warps.size(); ++i)
      for (trace::WarpStream& w = warps[i];; tb.next_segment(i, w)) {
        while (w.next(rec)) {
          ++d.records;
          d.accesses += rec.repeat;
        }
        if (!w.has_more()) break;
      }
    s.release(tb);
  }
  if (check == trace::RecordCheck::WhenDecoded) s.check_accesses(d.accesses);
  return d;
}

inline CliResult cli(std::vector<std::string> args) {
  args.insert(args.begin(), "uvmsim");
  std::ostringstream out, err;
  const int code = cli::run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

/// Runs a CLI command that must succeed; fails the test with its stderr otherwise.
inline CliResult cli_ok(std::vector<std::string> args) {
  auto r = cli(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return r;
}

/// The message of the UserError `f` throws, or "" if it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

struct CsvRow {
  double time_ns;
  std::string event;
  long batch;
  unsigned long long va;
  unsigned long long bytes;
  std::string direction, cause;
  unsigned long long pages;
  double duration_ns = 0;
};

inline std::vector<CsvRow> read_events(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "time_ns,event,batch,va,bytes,direction,cause,pages,duration_ns");
  std::vector<CsvRow> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    while (f.size() < 9) f.emplace_back();
    rows.push_back({std::stod(f[0]), f[1], std::stol(f[2]), std::stoull(f[3], nullptr, 16),
                    std::stoull(f[4]), f[5], f[6], std::stoull(f[7]),
                    f[8].empty() ? 0.0 : std::stod(f[8])});
  }
  return rows;
}

/// HtoD migrations grouped by fault batch (in batch order), each as "<KB>K:<cause>".
inline std::vector<std::vector<std::string>> htod_by_batch(const std::vector<CsvRow>& rows) {
  std::vector<long> order;
  for (const auto& r : rows)
    if (r.event == "batch") order.push_back(r.batch);
  std::vector<std::vector<std::string>> out(order.size());
  for (const auto& r : rows) {
    if (r.event != "migration" || r.direction != "htod") continue;
    for (std::size_t i = 0; i < order.size(); ++i)
      if (order[i] == r.batch) out[i].push_back(std::to_string(r.bytes / 1024) + "K:" + r.cause);
  }
  return out;
}

/// Raw fault entries of each batch, in order.
inline std::vector<unsigned long long> batch_sizes(const std::vector<CsvRow>& rows) {
  std::vector<unsigned long long> v;
  for (const auto& r : rows)
    if (r.event == "batch") v.push_back(r.pages);
  return v;
}

}  // namespace uvmsim::test
