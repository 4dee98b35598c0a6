// Devices in traces (issue 17, multi-GPU): cudaSetDevice as the SetDevice host event and GPU
// ordinals in prefetch destinations and advice (format version 3), written only when a trace
// needs them; the readers' errors for them in older versions; `trace info`, `trace dump` and the
// text importer; and the simulator refusing a trace that names a GPU the machine lacks.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>

#include "placement_test_util.h"
#include "traces/trace_codec.h"

namespace uvmsim::test {
namespace {

constexpr std::uint64_t M = 1 << 20;

std::vector<trace::HostEvent> host_events(const std::string& path) {
  trace::TraceReader r(path);
  std::vector<trace::HostEvent> out;
  trace::HostEvent ev;
  while (r.next_host_event(ev)) out.push_back(ev);
  return out;
}

void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

/// The error decoding one host event from `bytes` gives.
std::string decode_error(const std::vector<std::uint8_t>& bytes) {
  const std::string where = "host";
  trace::codec::ByteReader r(bytes.data(), bytes.data() + bytes.size(), &where, "host event");
  return error_of([&] { trace::codec::decode_host_event(r); });
}

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

/// `bytes` with the header's version set to `v` and its CRC recomputed.
std::vector<std::uint8_t> with_version(std::vector<std::uint8_t> b, std::uint8_t v) {
  b[8] = v;
  const std::size_t meta_len = b[16] | (b[17] << 8) | (b[18] << 16);
  const std::size_t end = 24 + meta_len;
  const std::uint32_t crc = trace::codec::crc32(b.data(), end);
  for (int i = 0; i < 4; ++i) b[end + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  return b;
}

std::string reader_error(const std::string& path) {
  return error_of([&] {
    trace::TraceReader r(path);
    trace::HostEvent ev;
    while (r.next_host_event(ev)) {
    }
  });
}

TEST(SetDevice, WrittenAsVersionThreeOnlyWhenATraceNamesASecondGpu) {
  TempDir d;
  // GPU 0 only (an explicit SetDevice(0) aside): the lowest version that holds it.
  const auto plain = d.file("plain.uvt");
  {
    Program p({{"X", 2 * M}});
    p.open(plain);
    p.w->host_event(prefetch(p.base(0), 2 * M, Processor::Gpu));
    p.walk(0, {{0, 0, 8192}});
    p.finish();
  }
  EXPECT_EQ(trace::TraceReader(plain).version(), 1u);

  const auto multi = d.file("multi.uvt");
  {
    Program p({{"X", 2 * M}});
    p.open(multi);
    p.w->host_event(set_device(2));
    p.walk(0, {{0, 0, 8192}});
    p.w->host_event(prefetch(p.base(0), 2 * M, gpu_processor(15)));
    p.w->host_event(prefetch(p.base(0), 2 * M, Processor::Cpu));
    trace::HostEvent advise;
    advise.type = trace::HostEventType::MemAdvise;
    advise.va = p.base(0);
    advise.size = 4096;
    advise.advice = trace::Advice::SetAccessedBy;
    advise.device = gpu_processor(1);
    p.w->host_event(advise);
    p.finish();
  }
  EXPECT_EQ(trace::TraceReader(multi).version(), trace::kDeviceVersion);
  const auto ev = host_events(multi);
  ASSERT_EQ(ev.size(), 6u);  // SetDevice, launch, sync, two prefetches, advice
  EXPECT_EQ(ev[0].type, trace::HostEventType::SetDevice);
  EXPECT_EQ(ev[0].device, gpu_processor(2));
  EXPECT_EQ(ev[1].type, trace::HostEventType::KernelLaunch);
  EXPECT_EQ(ev[3].device, gpu_processor(15));
  EXPECT_EQ(ev[4].device, Processor::Cpu);
  EXPECT_EQ(ev[5].device, gpu_processor(1));
  EXPECT_EQ(ev[5].advice, trace::Advice::SetAccessedBy);

  // A SetDevice alone (to GPU 0) still needs version 3: older readers do not know the event.
  const auto zero = d.file("zero.uvt");
  {
    Program p({{"X", 2 * M}});
    p.open(zero);
    p.w->host_event(set_device(0));
    p.walk(0, {{0, 0, 4096}});
    p.finish();
  }
  EXPECT_EQ(trace::TraceReader(zero).version(), 3u);
}

TEST(SetDevice, TheWriterRefusesTheCpuAndOrdinalsPastTheLast) {
  TempDir d;
  Program p({{"X", 2 * M}});
  p.open(d.file("w.uvt"));
  trace::HostEvent cpu = set_device(0);
  cpu.device = Processor::Cpu;
  auto misuse = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::logic_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(misuse([&] { p.w->host_event(cpu); }),
            "TraceWriter: SetDevice to the CPU (kernels run on a GPU)");
  EXPECT_EQ(misuse([&] { p.w->host_event(set_device(kMaxGpus)); }),
            "TraceWriter: host event with an out-of-range enum value");
  EXPECT_EQ(misuse([&] { p.w->host_event(prefetch(p.base(0), 2 * M, gpu_processor(16))); }),
            "TraceWriter: host event with an out-of-range enum value");
  p.finish();
}

TEST(SetDevice, OlderVersionsRejectTheEventAndSecondGpusByName) {
  TempDir d;
  const auto good = d.file("good.uvt");
  {
    Program p({{"X", 2 * M}});
    p.open(good);
    p.w->host_event(set_device(1));
    p.finish();
  }
  const auto bytes = read_bytes(good);
  const auto v2 = d.file("v2.uvt");
  write_file(v2, with_version(bytes, 2));
  EXPECT_NE(reader_error(v2).find(
                ": unknown host event type 6 in a version 2 trace (SetDevice needs version 3)"),
            std::string::npos)
      << reader_error(v2);

  // A prefetch to GPU 1 in a version-2 file, and a processor byte no version has.
  const auto pf = d.file("pf.uvt");
  {
    Program p({{"X", 2 * M}});
    p.open(pf);
    p.w->host_event(prefetch(p.base(0), 2 * M, gpu_processor(1)));
    p.finish();
  }
  const auto pf2 = d.file("pf2.uvt");
  write_file(pf2, with_version(read_bytes(pf), 2));
  EXPECT_NE(reader_error(pf2).find(
                ": unknown processor id 1 in a version 2 trace (GPU 1 needs version 3)"),
            std::string::npos)
      << reader_error(pf2);

  // The host chunk's bytes, decoded directly: processor 16, and SetDevice naming the CPU.
  const auto e16 = decode_error({1, 0, 1, 16});  // MemPrefetch of 1 byte at 0 to "16"
  EXPECT_NE(e16.find("unknown processor id 16 (0xFF is the CPU, 0 ... 15 a GPU)"),
            std::string::npos)
      << e16;
  const auto ecpu = decode_error({6, 0xff});
  EXPECT_NE(ecpu.find("SetDevice names the CPU (a kernel runs on a GPU)"), std::string::npos)
      << ecpu;
}

TEST(SetDevice, TraceInfoAndDumpShowEachLaunchsGpu) {
  TempDir d;
  const auto t = d.file("info.uvt");
  {
    Program p({{"X", 2 * M}});
    p.open(t);
    p.walk(0, {{0, 0, 4096}});
    p.w->host_event(set_device(3));
    p.walk(0, {{0, 0, 4096}});
    p.w->host_event(prefetch(p.base(0), 2 * M, gpu_processor(2)));
    p.finish();
  }
  const auto info = nlohmann::json::parse(cli_ok({"trace", "info", t, "--json"}).out);
  EXPECT_EQ(info["format_version"], 3);
  EXPECT_EQ(info["host_events"]["SetDevice"], 1);
  EXPECT_EQ(info["launches"][0]["device"], 0);
  EXPECT_EQ(info["launches"][1]["device"], 3);
  const auto text = cli_ok({"trace", "info", t}).out;
  EXPECT_NE(text.find("iteration -1, GPU 3, 1 threadblocks"), std::string::npos) << text;
  const auto dump = cli_ok({"trace", "dump", t, "--host-only"}).out;
  EXPECT_NE(dump.find("SetDevice gpu=3"), std::string::npos) << dump;
  EXPECT_NE(dump.find("to=gpu2"), std::string::npos) << dump;
  // Without a SetDevice the text stays as it was.
  const auto plain = d.file("plain.uvt");
  {
    Program p({{"X", 2 * M}});
    p.open(plain);
    p.walk(0, {{0, 0, 4096}});
    p.finish();
  }
  const auto text0 = cli_ok({"trace", "info", plain}).out;
  EXPECT_NE(text0.find("iteration -1, 1 threadblocks"), std::string::npos) << text0;
}

TEST(SetDevice, TextImportReadsDeviceLinesAndGpuOrdinals) {
  TempDir d;
  const auto in = d.file("a.accesses");
  auto import = [&](const std::string& body) {
    {
      std::ofstream f(in);
      f << "uvmsim-access-list 1\n"
           "alloc 0x7f0000000000 2M managed x\n"
           "kernel k 1 32\n"
        << body;
    }
    return cli({"trace", "import", "text", in, "-o", d.file("a.uvt")});
  };
  const auto ok = import(
      "device 1\n"
      "prefetch 0x7f0000000000 4K gpu1\n"
      "advise 0x7f0000000000 4K set-accessed-by gpu0\n"
      "launch k\n"
      "0 0 r 0x7f0000000000 128 0x10\n");
  ASSERT_EQ(ok.code, 0) << ok.err;
  const auto ev = host_events(d.file("a.uvt"));
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].type, trace::HostEventType::SetDevice);
  EXPECT_EQ(ev[0].device, gpu_processor(1));
  EXPECT_EQ(ev[1].device, gpu_processor(1));
  EXPECT_EQ(ev[2].device, Processor::Gpu);
  EXPECT_EQ(trace::TraceReader(d.file("a.uvt")).version(), 3u);

  auto error = [&](const std::string& body) {
    const auto r = import(body);
    EXPECT_EQ(r.code, 1);
    return r.err;
  };
  EXPECT_NE(
      error("device 16\n").find(in + ":4: device: got '16' (a GPU's device ordinal, 0 ... 15)"),
      std::string::npos)
      << error("device 16\n");
  EXPECT_NE(error("device cpu\n").find(in + ":4: device: got 'cpu'"), std::string::npos);
  EXPECT_NE(error("device\n").find(in + ":4: device: missing"), std::string::npos);
  EXPECT_NE(error("prefetch 0x7f0000000000 4K gpu16\n")
                .find(in + ":4: prefetch.destination: expected gpu, gpu0 ... gpu15 or cpu, got "
                           "'gpu16'"),
            std::string::npos)
      << error("prefetch 0x7f0000000000 4K gpu16\n");
  EXPECT_NE(error("prefetch 0x7f0000000000 4K gpu01\n").find("got 'gpu01'"), std::string::npos);

  // The fuzzing seed (scripts/fuzz.sh): two launches, the second on GPU 1.
  const auto seed = d.file("seed.uvt");
  cli_ok({"trace", "import", "text",
          std::string(UVMSIM_SOURCE_DIR) + "/tests/data/import/devices.accesses", "-o", seed,
          "--progress", "none"});
  const auto info = nlohmann::json::parse(cli_ok({"trace", "info", seed, "--json"}).out);
  EXPECT_EQ(info["format_version"], 3);
  EXPECT_EQ(info["host_events"]["SetDevice"], 2);
  ASSERT_EQ(info["launches"].size(), 2u);
  EXPECT_EQ(info["launches"][0]["device"], 0);
  EXPECT_EQ(info["launches"][1]["device"], 1);
}

TEST(SetDevice, TheSimulatorRefusesAGpuPastTheMachinesInOneLine) {
  TempDir d;
  // SetDevice(0) changes nothing: the same statistics as without it.
  auto make = [&](const std::string& name, const std::vector<trace::HostEvent>& before) {
    const auto t = d.file(name);
    Program p({{"X", 4 * M}});
    p.open(t);
    for (const auto& e : before) p.w->host_event(e);
    p.walk(0, {{0, 0, 4 * M}});
    p.finish();
    return t;
  };
  const auto base = run_sim(make("base.uvt", {}), {});
  const auto zero = run_sim(make("zero.uvt", {set_device(0)}), {});
  EXPECT_EQ(num(zero["accesses"]), 1024u);
  EXPECT_EQ(zero["sim_time_ns"], base["sim_time_ns"]);
  EXPECT_EQ(zero["gpu_faults"], base["gpu_faults"]);

  const auto on1 = make("on1.uvt", {set_device(1)});
  EXPECT_EQ(error_of([&] { run_sim(on1, {}); }),
            on1 +
                ": host event KernelLaunch: launch 0 runs on GPU 1 (SetDevice), but the machine "
                "has 1 GPU (system.gpus=1)");
  const auto pf = make("pf.uvt", {prefetch(kPlaceBase, 2 * M, gpu_processor(1))});
  EXPECT_EQ(
      error_of([&] { run_sim(pf, {}); }),
      pf + ": host event MemPrefetch: names GPU 1, but the machine has 1 GPU (system.gpus=1)");
  // With two GPUs both run (tests/test_multi_gpu.cpp); a third is refused the same way.
  EXPECT_EQ(num(run_sim(on1, {"system.gpus=2"})["accesses"]), 1024u);
  EXPECT_EQ(error_of([&] { run_sim(make("on2.uvt", {set_device(2)}), {"system.gpus=2"}); }),
            d.file("on2.uvt") +
                ": host event KernelLaunch: launch 0 runs on GPU 2 (SetDevice), but the machine "
                "has 2 GPUs (system.gpus=2)");
  // The CLI: one line, exit status 1.
  const auto r = cli({"run", "--gpu", "gtx1080ti", "--trace", on1, "-q"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace uvmsim::test
