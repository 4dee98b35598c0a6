// `uvmsim gpus`: the preset table, one preset's details and the JSON, from configs/gpus.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace uvmsim {
namespace {

using test::cli;
using test::cli_ok;

TEST(CliGpus, TableListsEveryPresetWithKeyNumbers) {
  const auto r = cli_ok({"gpus"});
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "preset               SMs     clock      HBM  HBM GB/s   link      link GB/s   "
            "provenance "
            "(SMs+HBM / link / driver costs)");
  EXPECT_NE(
      r.out.find("\ngtx1080ti             28  1582 MHz   11 GiB       484   pcie3x16       12.1   "
                 "published / measured / fitted\n"),
      std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find("\ntitanv                80  1455 MHz   12 GiB     652.8   pcie3x16       12.1   "
                 "published / extrapolated / extrapolated\n"),
      std::string::npos)
      << r.out;
  for (const char* p : {"a100-40gb", "a100-80gb", "gh200", "h100-pcie", "h100-sxm", "rtx3080ti",
                        "rtx3090", "v100"}) {
    EXPECT_NE(r.out.find(std::string("\n") + p + " "), std::string::npos) << p;
  }
}

TEST(CliGpus, OnePresetShowsSources) {
  const auto r = cli_ok({"gpus", "titanv"});
  EXPECT_NE(r.out.find("  SMs:           80           published (80 SMs)\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  HBM GB/s:      652.8 GB/s   derived (3072-bit HBM2 x 1.7 Gb/s = 652.8 "
                       "GB/s)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  link GB/s:     12.1 GB/s    extrapolated (GTX 1080 Ti measured 12.1 "
                       "GB/s)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("NVIDIA TITAN V (Volta GV100"), std::string::npos);
}

TEST(CliGpus, JsonAndErrors) {
  const auto r = cli_ok({"gpus", "--json"});
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 14u);
  const auto& g = j[6];
  EXPECT_EQ(g["name"], "gtx1080ti");
  EXPECT_EQ(g["num_sms"], 28);
  EXPECT_EQ(g["hbm_bytes"], std::uint64_t{11} << 30);
  EXPECT_EQ(g["hbm_gbps"], 484.0);
  EXPECT_EQ(g["link"], "pcie3x16");
  EXPECT_EQ(g["link_gbps"], 12.1);
  EXPECT_EQ(g["provenance"]["cost.fault_entry_ns"]["kind"], "fitted");
  EXPECT_EQ(g["gpus"], 1);
  EXPECT_EQ(g["peer"], "none");
  // A node preset names its GPUs and peer links.
  const auto& n = j[2];
  EXPECT_EQ(n["name"], "a100-40gb-x4-nvlink");
  EXPECT_EQ(n["gpus"], 4);
  EXPECT_EQ(n["peer"], "nvlink");
  EXPECT_EQ(n["peer_gbps"], 100.0);
  EXPECT_EQ(n["num_sms"], 108);
  // Grace Hopper: an asymmetric, coherent host link.
  const auto& gh = j[5];
  EXPECT_EQ(gh["name"], "gh200");
  EXPECT_EQ(gh["link_gbps"], 375.0);
  EXPECT_EQ(gh["link_dtoh_gbps"], 297.0);
  EXPECT_EQ(gh["coherent_host"], true);
  EXPECT_EQ(g["link_dtoh_gbps"], 12.1);
  EXPECT_EQ(g["coherent_host"], false);
  const std::string detail = cli_ok({"gpus", "gh200"}).out;
  EXPECT_NE(detail.find("link GB/s:     375/297 GB/s"), std::string::npos) << detail;
  EXPECT_NE(detail.find("CPU:           coherent link"), std::string::npos) << detail;
  EXPECT_NE(cli_ok({"gpus", "a100-40gb-x4-pcie"})
                .out.find("GPUs:          4, peer access pcie at 20 GB/s per pair and direction"),
            std::string::npos);

  auto e = cli({"gpus", "nope"});
  EXPECT_EQ(e.code, 2);  // a bad flag value ("--gpu: ...") is a usage error
  EXPECT_EQ(e.err.substr(0, 45), "uvmsim gpus: error: --gpu: unknown preset 'no");
  e = cli({"gpus", "--frob"});
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(cli_ok({"gpus", "--help"}).out.find("usage: uvmsim gpus [NAME] [--json]"),
            std::string::npos);
  EXPECT_NE(cli_ok({"--help"}).out.find("  gpus      list the GPU presets"), std::string::npos);
}

}  // namespace
}  // namespace uvmsim
