// Simulates small mutated traces: a trace the reader accepts must print (`trace info --json`,
// `trace dump`), simulate to the end (no hang, no internal error) under any policy combination,
// and `uvmsim analyze` must derive its hints.
// The policy combination and oversubscription are chosen from a hash of the input, so every input
// replays the same way. Traces that are large by their index are skipped: the reader checks the
// index totals against the data as it streams, so a lying index cannot smuggle in more work.
#include <sstream>

#include "fuzz/fuzz_target.h"
#include "fuzz/uvt_mutator.h"
#include "sim/cli/commands.h"
#include "traces/trace.h"
#include "traces/trace_codec.h"

namespace uvmsim::fuzz {

namespace {

constexpr std::uint64_t kMaxAccesses = 20000;
constexpr std::uint64_t kMaxFootprint = 64ull << 20;
constexpr std::uint64_t kMaxHostEvents = 2000;

bool small_enough(const std::filesystem::path& path) {
  try {
    trace::TraceReader r(path);
    std::uint64_t accesses = 0;
    for (const auto& l : r.launches()) {
      if (l.accesses > kMaxAccesses - accesses) return false;
      accesses += l.accesses;
    }
    return r.metadata().managed_footprint() <= kMaxFootprint &&
           r.host_event_count() <= kMaxHostEvents;
  } catch (const std::exception&) {
    return false;  // the uvt target checks how the reader rejects it
  }
}

void cli_clean(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  std::vector<std::string> argv = {"uvmsim"};
  argv.insert(argv.end(), args.begin(), args.end());
  const int code = cli::run_cli(argv, out, err);
  const std::string e = err.str();
  if (code == 3) throw Finding("uvmsim " + args[0] + ": " + e);
  if (code != 0 && (e.empty() || e.find('\n') != e.size() - 1)) {
    throw Finding("uvmsim " + args[0] + ": exit " + std::to_string(code) +
                  " without a one-line error: " + e);
  }
}

void run(Input in) {
  const auto path = scratch_file(in, "input.uvt");
  if (!small_enough(path)) return;
  static const char* kEviction[] = {"driver", "lru", "lfu", "cp", "tournament",
                                    "random", "mru", "opt", "leu"};
  static const char* kPrefetch[] = {"tree", "none", "fdp", "rgp", "fdp+rgp"};
  static const char* kPlacement[] = {"driver", "suv", "acbm",       "rdm",
                                     "rlm",    "glm", "object-lru", "host"};
  static const char* kOversub[] = {"0", "50", "200"};
  std::uint32_t h = trace::codec::crc32(in.data(), in.size());
  auto pick = [&h](const auto& list) {
    const auto* v = list[h % std::size(list)];
    h /= static_cast<std::uint32_t>(std::size(list));
    return std::string(v);
  };
  cli_clean({"trace", "info", path.string(), "--json"});
  cli_clean({"trace", "dump", path.string(), "--limit", "300"});
  cli_clean({"run", "--gpu", "gtx1080ti", "--trace", path.string(), "--eviction", pick(kEviction),
             "--prefetch", pick(kPrefetch), "--placement", pick(kPlacement), "--oversub",
             pick(kOversub)});
  const auto hints = path.parent_path() / "analyze.hints.json";
  cli_clean({"analyze", path.string(), "-o", hints.string()});
}

}  // namespace

UVMSIM_FUZZ_TARGET("uvt_run", "uvmsim run and analyze on small traces the reader accepts", run,
                   mutate_uvt);

}  // namespace uvmsim::fuzz
