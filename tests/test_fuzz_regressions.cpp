// Replays every saved fuzz input through its target in every build (not only the clang fuzz
// build): tests/data/fuzz/<target>/<input> holds the inputs that once crashed, hung or broke the
// bad-input contract, and the ones kept as seeds of each target. A replay fails on a Finding
// (fuzz/fuzz_target.h); a crash or sanitizer report fails the whole test binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "fuzz/fuzz_target.h"
#include "fuzz/json_mutator.h"
#include "fuzz/uvt_mutator.h"
#include "test_util.h"
#include "traces/trace.h"

namespace uvmsim::test {
namespace {

namespace fs = std::filesystem;

fs::path corpus_root() { return fs::path(UVMSIM_SOURCE_DIR) / "tests" / "data" / "fuzz"; }

std::vector<std::uint8_t> bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Saved {
  std::string target;
  fs::path file;
};

std::vector<Saved> saved_inputs() {
  std::vector<Saved> out;
  std::error_code ec;
  for (const auto& dir : fs::directory_iterator(corpus_root(), ec)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      if (f.is_regular_file() && f.path().filename() != "README.md") {
        out.push_back({dir.path().filename().string(), f.path()});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Saved& a, const Saved& b) { return a.file < b.file; });
  return out;
}

class SavedInput : public ::testing::TestWithParam<Saved> {};

TEST_P(SavedInput, ReplaysClean) {
  const Saved& s = GetParam();
  const fuzz::Target* t = fuzz::find_target(s.target);
  ASSERT_NE(t, nullptr) << "tests/data/fuzz/" << s.target << " names no fuzz target";
  try {
    t->run(bytes_of(s.file));
  } catch (const fuzz::Finding& f) {
    FAIL() << s.file.string() << ": " << f.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Fuzz, SavedInput, ::testing::ValuesIn(saved_inputs()),
                         [](const ::testing::TestParamInfo<Saved>& info) {
                           std::string n =
                               info.param.target + "_" + info.param.file.stem().string();
                           for (auto& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(FuzzTargets, EveryTargetHasSavedInputs) {
  // A target without a corpus folder would be fuzzed from nothing in CI and never replayed here.
  const auto saved = saved_inputs();
  for (const fuzz::Target* t : fuzz::all_targets()) {
    EXPECT_TRUE(std::any_of(saved.begin(), saved.end(),
                            [&](const Saved& s) { return s.target == t->name; }))
        << "no inputs under tests/data/fuzz/" << t->name;
  }
  EXPECT_GE(fuzz::all_targets().size(), 12u);
}

TEST(FuzzTargets, TheContractIsEnforced) {
  // A one-line UserError naming the input passes; anything else is a finding.
  EXPECT_NO_THROW(fuzz::expect_clean([] { throw UserError("in.json", "x", "bad"); }, "in.json"));
  // Printed by the CLI with its line break as '?': one line.
  EXPECT_NO_THROW(fuzz::expect_clean([] { throw UserError("in.json: a\nb"); }, "in.json"));
  EXPECT_THROW(fuzz::expect_clean([] { throw UserError("other.json: bad"); }, "in.json"),
               fuzz::Finding);
  EXPECT_THROW(fuzz::expect_clean([] { throw std::out_of_range("vector"); }, ""), fuzz::Finding);
  EXPECT_THROW(fuzz::expect_clean(
                   [] {
                     const auto j = nlohmann::json::parse("{");
                     (void)j;
                   },
                   ""),
               fuzz::Finding);
}

TEST(FuzzMutators, UvtUnpacksAndPacksBackToTheSameTrace) {
  TempDir d;
  const auto t = d.file("t.uvt");
  cli_ok({"gen", "stream", "--footprint", "256K", "-o", t});
  const auto bytes = bytes_of(t);
  const auto u = fuzz::unpack_trace(bytes.data(), bytes.size());
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->version, trace::kMinFormatVersion);  // no MemFree: written as version 1
  EXPECT_EQ(u->launches.size(), 1u);
  EXPECT_GE(u->chunks.size(), 2u);
  // Repacked (recompressed at another level), the trace reads back the same.
  const auto packed = fuzz::pack_trace(*u);
  const auto again = d.file("again.uvt");
  std::ofstream(again, std::ios::binary)
      .write(reinterpret_cast<const char*>(packed.data()),
             static_cast<std::streamsize>(packed.size()));
  trace::TraceReader a(t), b(again);
  EXPECT_EQ(a.metadata().to_json(), b.metadata().to_json());
  EXPECT_EQ(a.host_event_count(), b.host_event_count());
  ASSERT_EQ(a.launches().size(), b.launches().size());
  EXPECT_EQ(a.launches()[0].records, b.launches()[0].records);
  trace::ChunkBuffer ca, cb;
  for (std::size_t i = 0; i < a.chunks().size(); ++i) {
    a.load_chunk(i, ca);
    b.load_chunk(i, cb);
    EXPECT_EQ(ca, cb) << "chunk " << i;
  }
}

TEST(FuzzMutators, MutatedTracesNeverBreakTheReader) {
  // A short fuzzing run without libFuzzer: the structure-aware mutations reach the index, chunk
  // and record checks, and every result must be read cleanly or rejected with a UserError.
  TempDir d;
  const auto t = d.file("t.uvt");
  cli_ok({"gen", "bfs", "--footprint", "256K", "--param", "graph=rmat", "-o", t});
  const fuzz::Target* uvt = fuzz::find_target("uvt");
  ASSERT_NE(uvt, nullptr);
  const auto seed = bytes_of(t);
  std::vector<std::uint8_t> buf;
  int unpacked = 0;
  for (unsigned i = 0; i < 300; ++i) {
    buf = seed;
    const std::size_t max = seed.size() + 4096;
    buf.resize(max);
    const std::size_t n = fuzz::mutate_uvt(buf.data(), seed.size(), max, i);
    ASSERT_LE(n, max);
    buf.resize(n);
    unpacked += fuzz::unpack_trace(buf.data(), buf.size()).has_value();
    try {
      uvt->run(buf);
    } catch (const fuzz::Finding& f) {
      FAIL() << "mutation " << i << ": " << f.what();
    }
  }
  // Most mutations keep the framing valid: that is the point of the mutator.
  EXPECT_GT(unpacked, 150);
}

TEST(FuzzMutators, JsonMutationsStayJson) {
  std::mt19937 rng(7);
  const std::string original =
      R"({"gpu": {"num_sms": 28, "name": "x"}, "list": [1, 2.5, true, null]})";
  int changed = 0;
  for (int i = 0; i < 200; ++i) {
    std::string text = original;
    ASSERT_TRUE(fuzz::mutate_json_text(text, rng));
    nlohmann::ordered_json j;
    ASSERT_NO_THROW(j = nlohmann::ordered_json::parse(text)) << text;
    changed += j != nlohmann::ordered_json::parse(original);
  }
  EXPECT_GT(changed, 150);
  std::string not_json = "{\"a\": ";
  EXPECT_FALSE(fuzz::mutate_json_text(not_json, rng));
}

}  // namespace
}  // namespace uvmsim::test
