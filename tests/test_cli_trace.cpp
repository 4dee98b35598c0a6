// `uvmsim gen` and `uvmsim trace` end to end (in-process), plus the size/unit helpers they use.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "core/units.h"
#include "tests/test_util.h"

namespace uvmsim {
namespace {

using test::cli;
using test::cli_ok;
using test::TempDir;

TEST(Units, ParseSize) {
  EXPECT_EQ(parse_size("4096", "x"), 4096u);
  EXPECT_EQ(parse_size("0", "x"), 0u);
  EXPECT_EQ(parse_size("64k", "x"), 64u * 1024);
  EXPECT_EQ(parse_size("64K", "x"), 64u * 1024);
  EXPECT_EQ(parse_size("2M", "x"), 2u << 20);
  EXPECT_EQ(parse_size("2MB", "x"), 2u << 20);
  EXPECT_EQ(parse_size("2mib", "x"), 2u << 20);
  EXPECT_EQ(parse_size("1GiB", "x"), 1u << 30);
  EXPECT_EQ(parse_size("3T", "x"), std::uint64_t{3} << 40);
  EXPECT_EQ(parse_size("512B", "x"), 512u);
  EXPECT_EQ(parse_size("2240K", "x"), 2240u * 1024);
  EXPECT_EQ(parse_size("18446744073709551615", "x"), ~std::uint64_t{0});
  for (const char* bad : {"", "K", "-1", " 1", "1 ", "1.5G", "1X", "1iB", "1KK", "1KiBB", "0x10",
                          "18446744073709551616", "16777216T", "+4"}) {
    try {
      (void)parse_size(bad, "--footprint");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), std::string("--footprint: invalid size '") + bad + "'");
    }
  }
}

TEST(Units, FormatBytesAndSplit) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(64u << 20), "64 MiB");
  EXPECT_EQ(format_bytes((1u << 30) - 1), "1.0 GiB");
  EXPECT_EQ(format_bytes(std::uint64_t{3} << 40), "3 TiB");
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(split("0K,64K", ','), (std::vector<std::string>{"0K", "64K"}));
}

TEST(CliGen, HelpAndList) {
  auto r = cli_ok({"gen", "--help"});
  EXPECT_NE(r.out.find("usage: uvmsim gen NAME"), std::string::npos);
  EXPECT_NE(r.out.find("--footprint"), std::string::npos);
  EXPECT_NE(r.out.find("--param"), std::string::npos);
  r = cli_ok({"gen", "--list"});
  for (const char* g : {"regular", "random", "stream", "vecadd", "touch"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + g + " "), std::string::npos) << g;
  }
  EXPECT_NE(r.out.find("--param offsets=(required)"), std::string::npos);
  EXPECT_NE(r.out.find("--param clock_mhz=1500"), std::string::npos);
}

TEST(CliGen, ErrorsAreOneLine) {
  // A bad flag value ("--x: ...") is a usage error, exit 2 (is_usage_error, core/error.h).
  TempDir dir;
  const std::string out = dir.file("x.uvt");
  // Usage errors (a bad generator, parameter or option) exit 2; an unwritable output exits 1.
  auto expect_error = [&](std::vector<std::string> args, const std::string& msg, int code = 2) {
    const auto r = cli(args);
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_EQ(r.err, "uvmsim gen: error: " + msg + "\n");
  };
  expect_error({"gen", "nope", "-o", out},
               "unknown generator 'nope' (uvmsim gen --list shows them all)");
  expect_error({"gen", "regular", "--param", "x=1", "-o", out},
               "--param x: unknown parameter of generator 'regular' (its parameters: block, init; "
               "every generator's: alloc)",
               2);
  expect_error({"gen", "regular", "--param", "block=2000", "-o", out},
               "--param block: expected an integer in [1, 1024], got '2000'", 2);
  expect_error({"gen", "regular", "--param", "block", "-o", out},
               "--param 'block': expected KEY=VALUE", 2);
  expect_error({"gen", "regular", "--param", "block=1", "--param", "block=2", "-o", out},
               "--param block: given more than once", 2);
  expect_error({"gen", "regular", "--footprint", "lots", "-o", out},
               "--footprint: invalid size 'lots'", 2);
  expect_error({"gen", "regular", "--seed", "-3", "-o", out},
               "--seed: invalid value '-3' (expected a non-negative integer)", 2);
  expect_error({"gen", "regular"}, "missing output file (-o FILE)");
  expect_error({"gen", "-o", out}, "missing generator name (see uvmsim gen --list)");
  expect_error({"gen", "regular", "-o", dir.file("no/such/dir/x.uvt")},
               dir.file("no/such/dir/x.uvt") + ": open: directory '" + dir.file("no/such/dir") +
                   "' does not exist",
               1);
  const auto r = cli({"gen", "regular", "--bogus", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CliGen, WritesTraceAndRecordsParams) {
  TempDir dir;
  const std::string out = dir.file("r.uvt");
  const auto r = cli_ok(
      {"gen", "regular", "--footprint", "2M", "--seed", "5", "--param", "init=cpu", "-o", out});
  EXPECT_EQ(r.out.rfind("wrote " + out + ": regular, 1 launch(es), 2 threadblocks, 512 records", 0),
            0u)
      << r.out;
  const auto info = nlohmann::json::parse(cli_ok({"trace", "info", out, "--json"}).out);
  EXPECT_EQ(info["params"],
            (nlohmann::json{{"block", 256}, {"footprint", 2 << 20}, {"init", "cpu"}, {"seed", 5}}));
  // The documented example of the touch generator works verbatim.
  cli_ok({"gen", "touch", "--param", "size=2M", "--param", "offsets=0K,64K,128K,256K,512K,1024K",
          "--param", "delay_us=500", "-o", dir.file("t.uvt")});
}

class CliTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("s.uvt");
    cli_ok({"gen", "stream", "--footprint", "3M", "--param", "iters=2", "-o", path_});
  }
  TempDir dir_;
  std::string path_;
};

TEST_F(CliTrace, InfoText) {
  const auto r = cli_ok({"trace", "info", path_});
  for (const char* s : {"format:        version 1", "workload:      stream",
                        "captured on:   (synthetic)", "a                base=0x7f0000000000",
                        "triad grid=(256,1,1) block=(1024,1,1) regs=0 smem=0",
                        "host events:   6 (KernelLaunch 2, MemPrefetch 0, MemAdvise 0, "
                        "Synchronize 2, CpuAccess 2, MemFree 0, SetDevice 0)",
                        "launch 1: kernel 0 (triad) iteration 1, 256 threadblocks, 24576 records",
                        "threadblocks:  512", "records:       49152", "ratio:"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
}

TEST_F(CliTrace, InfoJsonHasStableKeys) {
  const auto j = nlohmann::json::parse(cli_ok({"trace", "info", path_, "--json"}).out);
  for (const char* k :
       {"file", "format_version", "workload", "params", "captured_gpu", "allocations", "kernels",
        "host_events", "launches", "totals", "chunks", "bytes", "extra"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["allocations"][1]["name"], "b");
  EXPECT_EQ(j["allocations"][0]["base_hex"], "0x7f0000000000");
  EXPECT_EQ(j["kernels"][0]["block"], (nlohmann::json{1024, 1, 1}));
  EXPECT_EQ(j["host_events"]["CpuAccess"], 2);
  EXPECT_EQ(j["host_events"]["total"], 6);
  EXPECT_EQ(j["launches"][1]["iteration"], 1);
  EXPECT_EQ(j["totals"]["records"], 49152);
  EXPECT_EQ(j["totals"]["accesses"], 49152);
  EXPECT_GT(j["bytes"]["raw"].get<std::uint64_t>(), j["bytes"]["compressed"].get<std::uint64_t>());
  EXPECT_GT(j["bytes"]["ratio"].get<double>(), 1.0);
}

TEST_F(CliTrace, Dump) {
  auto r = cli_ok({"trace", "dump", path_, "--limit", "8"});
  EXPECT_EQ(r.out,
            "# host events (6)\n"
            "[0] CpuAccess write va=0x7f0000400000 size=1048576\n"
            "[1] CpuAccess write va=0x7f0000800000 size=1048576\n"
            "[2] KernelLaunch launch=0 kernel=0 (triad) iteration=0\n"
            "[3] Synchronize\n"
            "[4] KernelLaunch launch=1 kernel=0 (triad) iteration=1\n"
            "[5] Synchronize\n"
            "# launch 0: kernel 0 (triad), 256 threadblocks, 24576 records\n"
            "tb 0 warp 0: read va=0x7f0000400000 bytes=128 ref=0 gap=12 repeat=1\n"
            "tb 0 warp 0: read va=0x7f0000800000 bytes=128 ref=1 gap=0 repeat=1\n"
            "# stopped after 8 entries (--limit 0 prints everything)\n");
  r = cli_ok({"trace", "dump", path_, "--launch", "1", "--limit", "4"});
  EXPECT_EQ(r.out.find("# launch 1: kernel 0 (triad)"), 0u) << r.out;
  EXPECT_NE(r.out.find("tb 0 warp 1: read va=0x7f0000400080 bytes=128 ref=0 gap=12 repeat=1\n"),
            std::string::npos);
  r = cli_ok({"trace", "dump", path_, "--host-only"});
  EXPECT_EQ(r.out.find("# launch"), std::string::npos);
  r = cli_ok({"trace", "dump", path_, "--limit", "0"});
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6 + 1 + 2 + 2 * 24576);
}

TEST_F(CliTrace, Errors) {
  // Usage errors (a bad action or option) exit 2; errors in the data (the file, its launches)
  // exit 1.
  auto expect_error = [&](std::vector<std::string> args, const std::string& msg, int code = 1) {
    const auto r = cli(args);
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_EQ(r.err, "uvmsim trace: error: " + msg + "\n");
  };
  expect_error({"trace", "dump", path_, "--launch", "2"},
               path_ + ": --launch: launch 2 does not exist (the trace has 2)");
  expect_error({"trace", "frob", path_},
               "unknown action 'frob' (expected info, dump, hints or import)", 2);
  expect_error({"trace", "info"}, "missing trace file", 2);
  expect_error({"trace", "info", path_, "--limit", "3"}, "--limit: only applies to trace dump", 2);
  expect_error({"trace", "dump", path_, "--json"}, "--json: only applies to trace info", 2);
  expect_error({"trace", "dump", path_, "--limit", "-5"},
               "--limit: invalid value '-5' (expected an integer in 0..18446744073709551615)", 2);
  expect_error({"trace", "dump", path_, "--launch", "x"},
               "--launch: invalid value 'x' (expected an integer in 0..4294967295)", 2);
  expect_error({"trace", "info", dir_.file("none.uvt")},
               dir_.file("none.uvt") + ": open: cannot open file: No such file or directory");
  // A corrupted file is one line naming the file, the part and the problem.
  std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(0);
  f.write("NOTATRACE", 9);
  f.close();
  expect_error({"trace", "info", path_}, path_ + ": header: bad magic: not a .uvt trace file");
  const auto help = cli_ok({"trace", "--help"});
  EXPECT_NE(help.out.find("usage: uvmsim trace info FILE [--json]"), std::string::npos);
}

TEST(CliBinary, GenAndInfoRunAsProcesses) {
  TempDir dir;
  const std::string out = dir.file("v.uvt");
  const std::string cmd = std::string(UVMSIM_BINARY) + " gen vecadd --param threads=32 -o " + out +
                          " > /dev/null && " + UVMSIM_BINARY + " trace info " + out +
                          " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace uvmsim
