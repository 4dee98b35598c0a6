// Decoding throughput of .uvt traces: how fast the simulator's LaunchStream / WarpStream path can
// feed records. Each trace is generated once into a temp file; every iteration then streams all
// launches, threadblocks, warps and records of it (zstd decompression + record decoding).
//   items/s      decoded access records per second
//   bytes/s      decompressed (raw) chunk bytes per second
//   file_bytes/s compressed file bytes consumed per second
#include <benchmark/benchmark.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "traces/generators/generator.h"
#include "traces/trace.h"

namespace {

using namespace uvmsim;

/// Generated traces, removed at exit.
class TraceCache {
 public:
  ~TraceCache() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  const std::string& get(const std::string& gen, std::uint64_t footprint,
                         const gen::ParamMap& params) {
    const std::string key = gen + "-" + std::to_string(footprint);
    auto it = paths_.find(key);
    if (it != paths_.end()) return it->second;
    if (dir_.empty()) {
      dir_ = std::filesystem::temp_directory_path() /
             ("uvmsim_bench_trace_" + std::to_string(::getpid()));
      std::filesystem::create_directories(dir_);
    }
    const std::string path = (dir_ / (key + ".uvt")).string();
    gen::generate(gen, footprint, params, 1, path);
    return paths_.emplace(key, path).first->second;
  }

 private:
  std::filesystem::path dir_;
  std::map<std::string, std::string> paths_;
};

TraceCache& cache() {
  static TraceCache c;
  return c;
}

/// `check`: WhenDecoded is the simulator's path (uvmsim run), AtLoad the default of the other
/// readers (each record skimmed at load, then decoded).
void decode_trace(benchmark::State& state, const char* gen, std::uint64_t footprint,
                  const gen::ParamMap& params, trace::RecordCheck check) {
  trace::TraceReader reader(cache().get(gen, footprint, params));
  std::uint64_t raw = 0;
  for (const auto& c : reader.chunks()) raw += c.raw_bytes;
  std::uint64_t records = 0;
  std::vector<trace::WarpStream> warps;
  trace::AccessRecord rec;
  for (auto _ : state) {
    std::uint64_t n = 0;
    Addr checksum = 0;
    for (std::uint32_t l = 0; l < reader.launches().size(); ++l) {
      trace::LaunchStream stream = reader.launch(l, check);
      trace::ThreadblockView tb;
      std::uint64_t accesses = 0;
      while (stream.next(tb)) {
        tb.warp_streams(warps);
        for (const auto& w : warps) {
          trace::WarpStream ws = w;  // a local copy keeps the decoder's state in registers
          while (ws.next(rec)) {
            ++n;
            checksum += rec.va;
            accesses += rec.repeat;
          }
        }
        stream.release(tb);
      }
      if (check == trace::RecordCheck::WhenDecoded) stream.check_accesses(accesses);
    }
    benchmark::DoNotOptimize(checksum);
    records = n;
  }
  const auto iters = static_cast<std::int64_t>(state.iterations());
  state.SetItemsProcessed(iters * static_cast<std::int64_t>(records));
  state.SetBytesProcessed(iters * static_cast<std::int64_t>(raw));
  state.counters["records"] = static_cast<double>(records);
  state.counters["file_bytes/s"] =
      benchmark::Counter(static_cast<double>(reader.file_bytes()) * static_cast<double>(iters),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1024);
}

void BM_DecodeTrace(benchmark::State& state, const char* gen, std::uint64_t footprint,
                    gen::ParamMap params) {
  decode_trace(state, gen, footprint, params, trace::RecordCheck::WhenDecoded);
}
void BM_DecodeTraceCheckedAtLoad(benchmark::State& state, const char* gen,
                                 std::uint64_t footprint) {
  decode_trace(state, gen, footprint, {}, trace::RecordCheck::AtLoad);
}

/// The floor BM_DecodeTrace is compared with: zstd decompression alone of the same trace's
/// frames (read into memory once), no checksum, no record decoding. Issue 16's goal is decode at
/// >= 50 % of this rate (compare the two benchmarks' bytes/s on the same trace).
void BM_RawZstd(benchmark::State& state, const char* gen, std::uint64_t footprint) {
  const std::string& path = cache().get(gen, footprint, {});
  trace::TraceReader reader(path);
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> file{std::istreambuf_iterator<char>(in),
                               std::istreambuf_iterator<char>()};
  std::uint64_t raw = 0, largest = 0;
  for (const auto& c : reader.chunks()) {
    raw += c.raw_bytes;
    largest = std::max(largest, c.raw_bytes);
  }
  std::vector<char> out(largest);
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  for (auto _ : state) {
    for (const auto& c : reader.chunks()) {
      const std::size_t n = ZSTD_decompressDCtx(dctx, out.data(), c.raw_bytes,
                                                file.data() + c.offset, c.compressed_bytes);
      if (ZSTD_isError(n)) state.SkipWithError(ZSTD_getErrorName(n));
      benchmark::DoNotOptimize(out.data());
    }
  }
  ZSTD_freeDCtx(dctx);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(raw));
}

/// Record decoding alone (WarpStream::next over an already decompressed chunk), to separate it
/// from zstd's share of BM_DecodeTrace.
void BM_WarpStreamOnly(benchmark::State& state, const char* gen, std::uint64_t footprint) {
  trace::TraceReader reader(cache().get(gen, footprint, {}));
  // Decode every threadblock of launch 0 once and keep the views (and their chunks) alive.
  trace::LaunchStream stream = reader.launch(0);
  std::vector<trace::ThreadblockView> tbs;
  trace::ThreadblockView tb;
  while (stream.next(tb)) tbs.push_back(tb);
  std::vector<trace::WarpStream> warps;
  trace::AccessRecord rec;
  std::uint64_t records = 0;
  for (auto _ : state) {
    std::uint64_t n = 0;
    Addr checksum = 0;
    for (const auto& v : tbs) {
      v.warp_streams(warps);
      for (const auto& w : warps) {
        trace::WarpStream ws = w;
        while (ws.next(rec)) {
          ++n;
          checksum += rec.va;
        }
      }
    }
    benchmark::DoNotOptimize(checksum);
    records = n;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * records));
}

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

BENCHMARK_CAPTURE(BM_DecodeTrace, regular_2G, "regular", 2 * kGiB, {})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodeTrace, random_2G, "random", 2 * kGiB, {})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodeTrace, stream_768M, "stream", 768 << 20, {})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodeTrace, vecadd_768M, "vecadd", 768 << 20, {})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodeTraceCheckedAtLoad, random_2G, "random", 2 * kGiB)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodeTraceCheckedAtLoad, stream_768M, "stream", 768 << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RawZstd, random_2G, "random", 2 * kGiB)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RawZstd, stream_768M, "stream", 768 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WarpStreamOnly, random_2G, "random", 2 * kGiB)->Unit(benchmark::kMillisecond);

}  // namespace
