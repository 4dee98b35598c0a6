// The TLB-hit shortcut (Gpu::memo_hit): each SM remembers where its L1 TLB holds the
// translation of a recently used page (or of its whole 64 KB or 2 MB PTE), so a hit skips the
// VA range and block lookups and the set's scan. It must change nothing: every run below is
// simulated with and without it and must give the same statistics, bit for bit, on the paths
// where a remembered translation goes stale (eviction, read-duplicated pages written, pages
// migrated to a peer or the host, PTE sizes growing as a block fills, ATS, a coherent host).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/gpu.h"
#include "models/tlb.h"
#include "test_util.h"

namespace uvmsim {
namespace {

TEST(Tlb, LastSlotHoldsAndTouchAreTheEntryALookupFinds) {
  // Two TLBs given the same fills; one refreshes an entry by looking it up, the other by
  // touching the slot lookup() reported: LRU must then evict the same keys from both.
  Tlb a(8, 4), b(8, 4);  // 2 sets x 4 ways
  for (std::uint64_t k = 0; k < 8; ++k) {
    a.insert(k, 1);
    b.insert(k, 1);
  }
  ASSERT_TRUE(b.lookup(3, 1));
  const std::size_t slot = b.last_slot();
  EXPECT_TRUE(b.holds(slot, 3, 1));
  EXPECT_FALSE(b.holds(slot, 3, 2));  // a newer mapping generation: the entry is stale
  EXPECT_FALSE(b.holds(slot, 4, 1));
  for (std::uint64_t k = 100; k < 112; ++k) {
    ASSERT_TRUE(a.lookup(3, 1));
    b.touch(slot);
    a.insert(k, 1);
    b.insert(k, 1);
  }
  for (std::uint64_t k = 0; k < 112; ++k) EXPECT_EQ(a.lookup(k, 1), b.lookup(k, 1)) << k;
  EXPECT_TRUE(b.lookup(3, 1));  // kept by its refreshes
  // insert() reports the way it filled.
  b.insert(500, 7);
  EXPECT_TRUE(b.holds(b.last_slot(), 500, 7));
}

/// Statistics of `uvmsim run ARGS`, without the fields that measure the host.
nlohmann::json run_stats(const test::TempDir& d, std::vector<std::string> args) {
  const std::string out = d.file("stats.json");
  args.insert(args.begin(), "run");
  args.insert(args.end(), {"-q", "--stats-out", out});
  test::cli_ok(args);
  nlohmann::json s = test::read_json(out);
  for (const char* k :
       {"accesses_per_second", "wall_seconds", "faults_per_second", "fault_entries_per_second"})
    s.erase(k);
  return s;
}

struct MemoOff {
  MemoOff() { Gpu::set_translation_memo(false); }
  ~MemoOff() { Gpu::set_translation_memo(true); }
};

TEST(TranslationMemo, ChangesNoStatistic) {
  test::TempDir d;
  auto gen = [&](const std::string& name, std::vector<std::string> args) {
    const std::string path = d.file(name + ".uvt");
    args.insert(args.begin(), "gen");
    args.insert(args.end(), {"-o", path});
    test::cli_ok(args);
    return path;
  };
  const std::string stream = gen("stream", {"stream", "--footprint", "6M", "--param", "iters=2"});
  const std::string gemm = gen("gemm", {"gemm", "--footprint", "1M"});
  const std::string mvt = gen("mvt", {"mvt", "--footprint", "4M"});
  const std::string bfs = gen("bfs", {"bfs", "--footprint", "2M"});
  const std::string halo = gen("halo", {"mgpu-halo", "--footprint", "4M", "--param", "gpus=4",
                                        "--param", "iters=2", "--param", "advise=read-mostly"});
  const std::string fir = gen("fir", {"fir", "--footprint", "4M"});
  const std::vector<std::vector<std::string>> runs = {
      {"--gpu", "titanv", "--trace", stream},
      {"--gpu", "titanv", "--trace", stream, "--oversub", "50"},
      {"--gpu", "gtx1080ti", "--trace", gemm, "--oversub", "50"},
      {"--gpu", "rtx3090", "--trace", mvt, "--oversub", "50"},
      {"--gpu", "rtx3090", "--trace", mvt, "--oversub", "50", "--placement", "suv"},
      {"--gpu", "titanv", "--trace", bfs, "--oversub", "75", "--eviction", "lru"},
      // Entries for whole 64 KB and 2 MB PTEs (Memo::shift) while blocks fill and are evicted.
      {"--gpu", "titanv", "--trace", bfs, "--oversub", "50"},
      {"--gpu", "titanv", "--trace", mvt, "--oversub", "30", "--prefetch", "none"},
      {"--gpu", "h100-sxm-x4-nvlink", "--trace", halo},
      {"--gpu", "a100-40gb-x4-pcie", "--trace", halo, "--oversub", "50"},
      {"--gpu", "gh200", "--trace", bfs, "--oversub", "50", "--set", "driver.ats=true"},
      {"--gpu", "gh200", "--trace", stream, "--oversub", "30", "--set",
       "system.coherent_host=true"},
      {"--gpu", "rtx3080ti", "--trace", fir, "--oversub", "50"},
  };
  for (const auto& args : runs) {
    const nlohmann::json with = run_stats(d, args);
    nlohmann::json without;
    {
      MemoOff off;
      without = run_stats(d, args);
    }
    std::string what;
    for (const auto& a : args) what += a + " ";
    ASSERT_GT(with.at("accesses").get<std::uint64_t>(), 0u) << what;
    EXPECT_EQ(with, without) << what;
  }
}

}  // namespace
}  // namespace uvmsim
