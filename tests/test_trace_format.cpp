// The .uvt format: metadata validation, writer/reader round trips, chunk streaming and memory
// bounds, writer API misuse, and robustness against corrupt or hostile files.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>
#include <random>

#include "core/error.h"
#include "tests/alloc_counter.h"
#include "tests/test_util.h"
#include "traces/trace.h"
#include "traces/trace_codec.h"

namespace uvmsim::trace {
namespace {

using test::TempDir;

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

Metadata sample_metadata() {
  Metadata m;
  m.workload = "unit";
  m.params = {{"n", 3}};
  m.captured_gpu = "Test GPU";
  m.allocations = {{0, "a", 0x7f0000000000, 8 << 20, true, false},
                   {1, "dev", 0x7f0001000000, 4096, false, false},
                   {2, "pinned", 0x7f0002000000, 4096, false, true}};
  KernelInfo k0;
  k0.id = 0;
  k0.name = "k0";
  k0.grid = {5, 1, 1};
  k0.block = {64, 1, 1};
  k0.regs_per_thread = 32;
  k0.shared_mem_bytes = 1024;
  KernelInfo k1;
  k1.id = 7;
  k1.name = "k1";
  k1.grid = {2, 2, 1};
  k1.block = {16, 2, 1};
  m.kernels = {k0, k1};
  return m;
}

/// Everything that was written, for comparison with what is read back.
struct Expected {
  std::vector<HostEvent> host;
  // [launch][tb][warp] -> records
  std::vector<std::vector<std::vector<std::vector<AccessRecord>>>> blocks;
};

/// Writes a trace exercising every host event type, all access kinds, large and negative VA
/// deltas, non-page-aligned deltas, repeats, big gaps and byte counts.
Expected write_sample(const std::string& path, WriterOptions opts) {
  opts.fold_repeats = false;
  Expected e;
  const Metadata meta = sample_metadata();
  TraceWriter w(path, meta, opts);
  std::mt19937_64 rng(7);
  auto host = [&](HostEvent ev) {
    w.host_event(ev);
    e.host.push_back(ev);
  };
  HostEvent cpu;
  cpu.type = HostEventType::CpuAccess;
  cpu.va = 0x7f0000000000;
  cpu.size = 8 << 20;
  cpu.kind = AccessKind::Write;
  host(cpu);
  HostEvent adv;
  adv.type = HostEventType::MemAdvise;
  adv.va = 0x7f0000000000;
  adv.size = 4096;
  adv.advice = Advice::SetReadMostly;
  adv.device = Processor::Cpu;
  host(adv);
  HostEvent pf;
  pf.type = HostEventType::MemPrefetch;
  pf.va = 0x7f0000200000;
  pf.size = 2 << 20;
  pf.device = Processor::Gpu;
  host(pf);

  const std::pair<std::uint32_t, std::int32_t> launches[] = {{0, -1}, {7, 0}, {0, 1}};
  for (auto [kernel, iter] : launches) {
    const std::uint32_t li = w.begin_launch(kernel, iter);
    HostEvent ev;
    ev.type = HostEventType::KernelLaunch;
    ev.kernel_id = kernel;
    ev.launch_index = li;
    ev.iteration = iter;
    e.host.push_back(ev);
    const KernelInfo* k = meta.find_kernel(kernel);
    e.blocks.emplace_back();
    for (std::uint64_t tb = 0; tb < k->threadblocks(); ++tb) {
      w.begin_block(k->warps_per_block());
      auto& warps = e.blocks.back().emplace_back(k->warps_per_block());
      // Interleave warps, as a collector observes them.
      for (int step = 0; step < 40; ++step) {
        const auto warp = static_cast<std::uint32_t>(rng() % k->warps_per_block());
        if (warp == 1) continue;  // leave one warp empty
        AccessRecord r;
        switch (rng() % 4) {
          case 0:
            r.va = 0x7f0000000000 + (rng() % 2048) * 4096;
            break;
          case 1:
            r.va = 0x7f0000000000 + rng() % (8 << 20);
            break;
          case 2:
            r.va = rng();
            break;  // any 64-bit value must round-trip
          default:
            r.va = warps[warp].empty() ? 0 : warps[warp].back().va - 4096;
            break;
        }
        r.ref_id = static_cast<std::uint32_t>(rng() % 3 == 0 ? rng() : rng() % 4);
        r.gap_cycles = static_cast<std::uint32_t>(rng() % 2 ? 0 : rng());
        r.repeat = static_cast<std::uint32_t>(rng() % 3 == 0 ? 1 + rng() % 1000 : 1);
        if (rng() % 50 == 0) r.repeat = std::numeric_limits<std::uint32_t>::max();
        r.bytes = static_cast<std::uint32_t>(rng() % 3 == 0 ? 1 + rng() % 128 : 4);
        r.kind = static_cast<AccessKind>(rng() % 4);
        w.access(warp, r);
        warps[warp].push_back(r);
      }
      w.end_block();
    }
    HostEvent sync;
    sync.type = HostEventType::Synchronize;
    host(sync);
  }
  HostEvent free;  // a MemFree makes the trace version 2
  free.type = HostEventType::MemFree;
  free.va = 0x7f0001000000;
  host(free);
  HostEvent dev;  // a SetDevice and a second GPU make it version 3 (after the MemFree, which a
  dev.type = HostEventType::SetDevice;  // version-1 reader then still meets first)
  dev.device = gpu_processor(2);
  host(dev);
  pf.device = gpu_processor(15);
  host(pf);
  w.finish();
  return e;
}

/// Reads the whole trace back (all host events, every launch, every record).
Expected read_all(TraceReader& r) {
  Expected e;
  HostEvent ev;
  while (r.next_host_event(ev)) e.host.push_back(ev);
  std::vector<WarpStream> warps;
  for (std::uint32_t l = 0; l < r.launches().size(); ++l) {
    auto& blocks = e.blocks.emplace_back();
    LaunchStream s = r.launch(l);
    ThreadblockView tb;
    while (s.next(tb)) {
      EXPECT_EQ(tb.tb_id, blocks.size());
      tb.warp_streams(warps);
      auto& out = blocks.emplace_back(warps.size());
      AccessRecord rec;
      for (std::size_t w = 0; w < warps.size(); ++w) {
        while (warps[w].next(rec)) out[w].push_back(rec);
      }
      s.release(tb);
    }
  }
  return e;
}

// ---- metadata ---------------------------------------------------------------------------------

TEST(TraceMetadata, JsonRoundTrip) {
  const Metadata m = sample_metadata();
  const Metadata back = Metadata::from_json(m.to_json(), "f.uvt");
  EXPECT_EQ(back.workload, m.workload);
  EXPECT_EQ(back.params, m.params);
  EXPECT_EQ(back.captured_gpu, m.captured_gpu);
  EXPECT_EQ(back.allocations, m.allocations);
  EXPECT_EQ(back.kernels, m.kernels);
  EXPECT_EQ(back.managed_footprint(), std::uint64_t{8} << 20);
  ASSERT_NE(back.find_kernel(7), nullptr);
  EXPECT_EQ(back.find_kernel(7)->name, "k1");
  EXPECT_EQ(back.find_kernel(3), nullptr);
  EXPECT_EQ(back.find_allocation(2)->name, "pinned");
}

TEST(TraceMetadata, AcceptsHexBaseAndDefaults) {
  const auto j = nlohmann::json::parse(R"({"workload":"w","allocations":[
      {"id":0,"name":"x","base":"0x7f0000000000","size":4096}],
      "kernels":[{"id":0,"name":"k","grid":[4],"block":[32,2]}]})");
  const Metadata m = Metadata::from_json(j, "f");
  EXPECT_EQ(m.allocations[0].base, 0x7f0000000000u);
  EXPECT_TRUE(m.allocations[0].managed);
  EXPECT_EQ(m.kernels[0].grid, (Dim3{4, 1, 1}));
  EXPECT_EQ(m.kernels[0].block, (Dim3{32, 2, 1}));
  EXPECT_EQ(m.kernels[0].warps_per_block(), 2u);
}

void expect_meta_error(const std::string& text, const std::string& expected) {
  try {
    (void)Metadata::from_json(nlohmann::json::parse(text), "f.uvt");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(expected, 0), 0u) << e.what();
  }
}

TEST(TraceMetadata, ErrorsNameTheField) {
  const std::string k = R"("kernels":[{"id":0,"name":"k","grid":[1],"block":[32]}])";
  const std::string a = R"("allocations":[{"id":0,"name":"x","base":4096,"size":4096}])";
  expect_meta_error("[]", "f.uvt: metadata: expected an object");
  expect_meta_error("{" + a + "," + k + "}", "f.uvt: metadata.workload: missing required");
  expect_meta_error(R"({"workload":1,)" + a + "," + k + "}",
                    "f.uvt: metadata.workload: expected a string");
  expect_meta_error(R"({"workload":"w",)" + k + "}", "f.uvt: metadata.allocations: missing");
  expect_meta_error(R"({"workload":"w",)" + a + "}", "f.uvt: metadata.kernels: missing");
  expect_meta_error(
      R"({"workload":"w","allocations":[{"id":0,"name":"x","base":0,"size":"big"}],)" + k + "}",
      "f.uvt: metadata.allocations[0].size: expected an unsigned integer");
  expect_meta_error(
      R"({"workload":"w","allocations":[{"id":0,"name":"x","base":0,"size":-4}],)" + k + "}",
      "f.uvt: metadata.allocations[0].size: must not be negative");
  expect_meta_error(R"({"workload":"w","allocations":[{"id":0,"name":"x","base":0,"size":8192},
                     {"id":1,"name":"y","base":4096,"size":4096}],)" +
                        k + "}",
                    "f.uvt: metadata.allocations[1].base: range overlaps allocation 0 'x'");
  expect_meta_error(R"({"workload":"w","allocations":[{"id":0,"name":"x","base":0,"size":4096},
                     {"id":0,"name":"y","base":8192,"size":4096}],)" +
                        k + "}",
                    "f.uvt: metadata.allocations[1].id: duplicate");
  expect_meta_error(
      R"({"workload":"w",)" + a + R"(,"kernels":[{"id":0,"name":"k","grid":[0],"block":[32]}]})",
      "f.uvt: metadata.kernels[0].grid[0]: must be in");
  expect_meta_error(
      R"({"workload":"w",)" + a + R"(,"kernels":[{"id":0,"name":"k","grid":[1],"block":[64,32]}]})",
      "f.uvt: metadata.kernels[0].block: more than 1024");
  expect_meta_error(R"({"workload":"w",)" + a + R"(,"kernels":[{"id":0,"name":"k","block":[32]}]})",
                    "f.uvt: metadata.kernels[0].grid: missing required field");
  expect_meta_error(R"({"workload":"w",)" + a +
                        R"(,"kernels":[{"id":0,"name":"k","grid":[1],"block":[32],"regs":true}]})",
                    "f.uvt: metadata.kernels[0].regs: expected an unsigned integer");
}

// ---- codec ------------------------------------------------------------------------------------

TEST(TraceCodec, VarintAndZigzag) {
  for (std::int64_t v :
       {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1}, std::int64_t{-4096},
        std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()}) {
    EXPECT_EQ(codec::unzigzag(codec::zigzag(v)), v);
  }
  EXPECT_EQ(codec::zigzag(-1), 1u);
  EXPECT_EQ(codec::zigzag(1), 2u);
  std::vector<std::uint8_t> buf;
  codec::put_varint(buf, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(buf.size(), 10u);
  std::uint64_t v = 0;
  EXPECT_EQ(codec::get_varint(buf.data(), buf.data() + buf.size(), v), buf.data() + buf.size());
  EXPECT_EQ(v, std::numeric_limits<std::uint64_t>::max());
  // Truncated, and an 11-byte / over-64-bit encoding.
  EXPECT_EQ(codec::get_varint(buf.data(), buf.data() + 9, v), nullptr);
  std::vector<std::uint8_t> over(10, 0xff);
  over.push_back(0x01);
  EXPECT_EQ(codec::get_varint(over.data(), over.data() + over.size(), v), nullptr);
  buf.back() = 0x02;  // 10th byte may only carry one bit
  EXPECT_EQ(codec::get_varint(buf.data(), buf.data() + buf.size(), v), nullptr);
}

// get_short_varint (the record decoders', one to four bytes unrolled) must agree with
// get_varint on every input: value, length and rejection, for every encoded length, with 0-12
// bytes readable (the unrolled path needs 4), non-canonical encodings (trailing zero groups) and
// bytes beyond the varint.
TEST(TraceCodec, ShortVarintAgreesWithTheByteLoopEverywhere) {
  std::mt19937_64 rng(11);
  std::vector<std::uint8_t> buf(24);
  std::uint64_t checked = 0;
  for (int iter = 0; iter < 200000; ++iter) {
    for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
    // A varint of 1-11 bytes at the front: continuation bits on all but its last byte.
    const std::size_t len = 1 + rng() % 11;
    for (std::size_t i = 0; i < len; ++i) buf[i] = static_cast<std::uint8_t>(buf[i] | 0x80);
    buf[len - 1] &= static_cast<std::uint8_t>(rng() % 4 == 0 ? 0x00 : 0x7f);
    for (std::size_t avail = 0; avail <= 12; ++avail) {
      std::uint64_t a = 0xdead, b = 0xbeef;
      const std::uint8_t* end = buf.data() + avail;
      const std::uint8_t* pa = codec::get_varint(buf.data(), end, a);
      const std::uint8_t* pb = codec::get_short_varint(buf.data(), end, b);
      ASSERT_EQ(pa, pb) << "length " << len << ", " << avail << " bytes readable";
      if (pa != nullptr) {
        ASSERT_EQ(a, b) << "length " << len;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 500000u);  // most cases decode (a value, not only rejections)
}

TEST(TraceCodec, Crc32IsTheStandardIeeeCrc) {
  EXPECT_EQ(codec::crc32("123456789", 9), 0xCBF43926u);  // the documented check value
}

TEST(TraceCodec, SlicedCrc32EqualsTheBytewiseDefinitionAtEveryLengthAndAlignment) {
  // The slicing-by-8 loop handles 8 bytes at a time and the tail bytewise: compare it with the
  // definition (one bit at a time) for lengths 0..80 at offsets 0..7, so every split of a buffer
  // into 8-byte words and a tail, at every alignment, is covered.
  auto bitwise = [](const std::uint8_t* p, std::size_t n) {
    std::uint32_t c = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? 0xEDB88320u : 0u);
    }
    return c ^ 0xFFFFFFFFu;
  };
  std::mt19937 rng(16);
  std::vector<std::uint8_t> buf(96);
  for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
  for (std::size_t off = 0; off < 8; ++off)
    for (std::size_t n = 0; n <= 80; ++n)
      ASSERT_EQ(codec::crc32(buf.data() + off, n), bitwise(buf.data() + off, n))
          << "offset " << off << " length " << n;
  EXPECT_EQ(codec::crc32("", 0), 0u);
}

TEST(TraceCodec, PageTouchRecordsAreTwoBytes) {
  std::vector<std::uint8_t> buf;
  codec::RecordEncoder enc;
  enc.prev_va = 0x7f0000000000;
  for (int i = 0; i < 100; ++i) {
    AccessRecord r;
    r.va = 0x7f0000000000 + static_cast<Addr>(i) * 4096;
    enc.encode(r, buf);
  }
  EXPECT_EQ(buf.size(), 200u);
}

TEST(TraceCodec, MalformedRecordsAreUserErrors) {
  const std::string src = "x.uvt";
  auto decode = [&](std::vector<std::uint8_t> bytes, std::uint32_t records) {
    WarpStream s(bytes.data(), bytes.data() + bytes.size(), records, 0, &src);
    AccessRecord r;
    while (s.next(r)) {
    }
  };
  try {
    decode({0x05, 0x00}, 1);  // kind 5
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "x.uvt: access record: record 0 of 1: unknown access kind 5");
  }
  EXPECT_THROW(decode({0x01, 0x80}, 1), UserError);        // varint runs past the end
  EXPECT_THROW(decode({0x01, 0x00}, 2), UserError);        // fewer records than claimed
  EXPECT_THROW(decode({0x01, 0x00, 0x01}, 1), UserError);  // trailing bytes
  EXPECT_THROW(decode({0x21, 0x00, 0x00}, 1), UserError);  // bytes = 0
  EXPECT_THROW(decode({0x11, 0x00, 0xff, 0xff, 0xff, 0xff, 0x7f}, 1), UserError);  // ref > 2^32
  EXPECT_THROW(decode({0x81, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f}, 1), UserError);  // repeat 2^32
  EXPECT_NO_THROW(decode({0x01, 0x00}, 1));
}

TEST(TraceCodec, RandomBytesNeverCrashTheDecoders) {
  std::mt19937_64 rng(1);
  const std::string src = "fuzz";
  std::vector<codec::TbEntry> tbs;
  std::vector<WarpStream> warps;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<std::uint8_t> bytes(rng() % 64);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng() % 4 == 0 ? rng() % 4 : rng());
    try {
      WarpStream s(bytes.data(), bytes.data() + bytes.size(), static_cast<std::uint32_t>(rng() % 8),
                   rng(), &src);
      AccessRecord r;
      while (s.next(r)) {
      }
    } catch (const UserError&) {
    }
    try {
      codec::parse_block_chunk(bytes.data(), bytes.size(), rng() % 3, 1 + rng() % 3,
                               1 + static_cast<std::uint32_t>(rng() % 3), tbs, &src, 0);
      for (const auto& tb : tbs) {
        ThreadblockView v;
        v.tb_id = tb.tb_id;
        v.num_warps = tb.num_warps;
        v.warps_begin = bytes.data() + tb.begin;
        v.warps_end = bytes.data() + tb.end;
        v.va_base = tb.va_base;
        v.source = &src;
        v.warp_streams(warps);
        AccessRecord r;
        for (auto& w : warps) {
          while (w.next(r)) {
          }
        }
      }
    } catch (const UserError&) {
    }
    try {
      codec::ByteReader in(bytes.data(), bytes.data() + bytes.size(), &src, "host");
      while (!in.at_end()) (void)codec::decode_host_event(in);
    } catch (const UserError&) {
    }
  }
}

TEST(TraceCodec, SkimAcceptsExactlyWhatTheDecoderAcceptsAndCountsItsAccesses) {
  // skim_warp is the load-time validation (parse_block_chunk); WarpStream is what the
  // simulation then reads. They must agree on every input: a warp the skim accepts and the
  // decoder rejects would fail mid-run instead of at load, and the converse would make
  // parse_block_chunk throw std::logic_error. Random warps biased towards valid records (small
  // bytes, set flags of every kind), plus their truncations.
  std::mt19937_64 rng(7);
  const std::string src = "skim";
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 50000; ++iter) {
    std::vector<std::uint8_t> bytes;
    const int n = static_cast<int>(rng() % 6);
    for (int r = 0; r < n; ++r) {
      bytes.push_back(static_cast<std::uint8_t>((rng() & 0xf8) | (rng() % 5)));
      const int fields = 1 + static_cast<int>(rng() % 5);
      for (int f = 0; f < fields; ++f) {
        const std::uint64_t pick = rng() % 8;
        if (pick < 5) {
          bytes.push_back(static_cast<std::uint8_t>(rng() % 0x80));  // one-byte varint
        } else {
          const int len = 2 + static_cast<int>(rng() % 10);
          for (int k = 0; k < len - 1; ++k)
            bytes.push_back(static_cast<std::uint8_t>(rng() | 0x80));
          bytes.push_back(static_cast<std::uint8_t>(rng() % (pick == 7 ? 0x80 : 0x10)));
        }
      }
    }
    if (!bytes.empty() && rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    const auto records = static_cast<std::uint32_t>(rng() % 7);
    std::uint64_t decoded = 0;
    bool ok = true;
    try {
      WarpStream s(bytes.data(), bytes.data() + bytes.size(), records, 0, &src);
      AccessRecord r;
      while (s.next(r)) decoded += r.repeat;
    } catch (const UserError&) {
      ok = false;
    }
    std::uint64_t skimmed = 0;
    ASSERT_EQ(codec::skim_warp(bytes.data(), bytes.data() + bytes.size(), records, skimmed), ok)
        << "iteration " << iter;
    if (ok) {
      EXPECT_EQ(skimmed, decoded) << "iteration " << iter;
      ++accepted;
    } else {
      ++rejected;
    }
  }
  // Both outcomes are exercised often.
  EXPECT_GT(accepted, 5000);
  EXPECT_GT(rejected, 5000);
}

// ---- round trips ------------------------------------------------------------------------------

class TraceRoundTrip : public ::testing::TestWithParam<std::size_t> {};

TEST_P(TraceRoundTrip, EverythingReadsBackExactly) {
  TempDir dir;
  const std::string path = dir.file("t.uvt");
  WriterOptions opts;
  opts.chunk_raw_bytes = GetParam();
  const Expected written = write_sample(path, opts);
  TraceReader r(path);
  EXPECT_EQ(r.version(), kFormatVersion);
  EXPECT_EQ(r.metadata().to_json(), sample_metadata().to_json());
  EXPECT_EQ(r.host_event_count(), written.host.size());
  ASSERT_EQ(r.launches().size(), 3u);
  const Expected read = read_all(r);
  ASSERT_EQ(read.host.size(), written.host.size());
  for (std::size_t i = 0; i < read.host.size(); ++i) EXPECT_EQ(read.host[i], written.host[i]) << i;
  ASSERT_EQ(read.blocks.size(), written.blocks.size());
  for (std::size_t l = 0; l < read.blocks.size(); ++l) {
    EXPECT_EQ(read.blocks[l], written.blocks[l]) << "launch " << l;
    std::uint64_t records = 0, accesses = 0;
    for (const auto& tb : written.blocks[l]) {
      for (const auto& w : tb) {
        records += w.size();
        for (const auto& rec : w) accesses += rec.repeat;
      }
    }
    EXPECT_EQ(r.launches()[l].records, records);
    EXPECT_EQ(r.launches()[l].accesses, accesses);
    EXPECT_EQ(r.launches()[l].threadblocks, written.blocks[l].size());
  }
  EXPECT_EQ(r.launches()[1].kernel_id, 7u);
  // Host events can be replayed.
  r.rewind_host();
  HostEvent ev;
  ASSERT_TRUE(r.next_host_event(ev));
  EXPECT_EQ(ev, written.host[0]);
  if (GetParam() == 1) {
    std::size_t block_chunks = 0;
    for (const auto& c : r.chunks()) block_chunks += c.type == ChunkInfo::Blocks;
    EXPECT_EQ(block_chunks, 5u + 4u + 5u);  // one threadblock per chunk
    EXPECT_EQ(r.launch_chunks(1).size(), 4u);
  }
}

INSTANTIATE_TEST_SUITE_P(ChunkSizes, TraceRoundTrip, ::testing::Values(1, 300, 1 << 20));

TEST(TraceWriter, FoldsSamePageRepeats) {
  TempDir dir;
  const std::string path = dir.file("t.uvt");
  Metadata m = sample_metadata();
  m.kernels[0].grid = {1, 1, 1};
  {
    TraceWriter w(path, m);
    w.begin_launch(0);
    w.begin_block(2);
    auto acc = [&](Addr va, std::uint32_t gap, std::uint32_t repeat = 1,
                   AccessKind kind = AccessKind::Read) {
      AccessRecord r;
      r.va = va;
      r.gap_cycles = gap;
      r.repeat = repeat;
      r.kind = kind;
      w.access(0, r);
    };
    acc(0x1000, 5);
    acc(0x1004, 5);                        // same page: folded
    acc(0x1ff8, 5, 3);                     // same page: folded (+3)
    acc(0x2000, 5);                        // next page: new record
    acc(0x2004, 6);                        // different gap: new record
    acc(0x2008, 6, 1, AccessKind::Write);  // different kind: new record
    acc(0x200c, 6, 1, AccessKind::Write);  // folded
    w.end_block();
  }
  TraceReader r(path);
  EXPECT_EQ(r.launches()[0].records, 4u);
  EXPECT_EQ(r.launches()[0].accesses, 9u);
  LaunchStream s = r.launch(0);
  ThreadblockView tb;
  ASSERT_TRUE(s.next(tb));
  std::vector<WarpStream> warps;
  tb.warp_streams(warps);
  ASSERT_EQ(warps.size(), 2u);
  EXPECT_TRUE(warps[1].done());
  AccessRecord rec;
  std::vector<std::pair<Addr, std::uint32_t>> got;
  while (warps[0].next(rec)) got.emplace_back(rec.va, rec.repeat);
  EXPECT_EQ(got, (std::vector<std::pair<Addr, std::uint32_t>>{
                     {0x1000, 5}, {0x2000, 1}, {0x2004, 1}, {0x2008, 2}}));
  s.release(tb);
  EXPECT_FALSE(s.next(tb));
}

TEST(TraceWriter, MisuseIsALogicError) {
  TempDir dir;
  const Metadata m = sample_metadata();
  AccessRecord rec;
  {
    TraceWriter w(dir.file("a.uvt"), m);
    EXPECT_THROW(w.begin_block(2), std::logic_error);  // outside a launch
    EXPECT_THROW(w.access(0, rec), std::logic_error);
    EXPECT_THROW(w.end_block(), std::logic_error);
    EXPECT_THROW(w.begin_launch(3), std::logic_error);  // unknown kernel
    HostEvent launch;
    launch.type = HostEventType::KernelLaunch;
    EXPECT_THROW(w.host_event(launch), std::logic_error);
    w.begin_launch(0);
    EXPECT_THROW(w.begin_block(1), std::logic_error);  // kernel has 2 warps per block
    w.begin_block(2);
    EXPECT_THROW(w.begin_block(2), std::logic_error);  // nested
    EXPECT_THROW(w.access(2, rec), std::logic_error);  // warp out of range
    AccessRecord zero = rec;
    zero.repeat = 0;
    EXPECT_THROW(w.access(0, zero), std::logic_error);
    zero = rec;
    zero.bytes = 0;
    EXPECT_THROW(w.access(0, zero), std::logic_error);
    w.end_block();
    HostEvent sync;
    sync.type = HostEventType::Synchronize;
    EXPECT_THROW(w.host_event(sync), std::logic_error);  // launch incomplete (1 of 5)
    EXPECT_THROW(w.begin_launch(0), std::logic_error);
    EXPECT_THROW(w.finish(), std::logic_error);
  }
  // The incomplete file was left without a footer, so the reader rejects it.
  EXPECT_THROW(TraceReader(dir.file("a.uvt")), UserError);

  Metadata bad = m;
  bad.allocations[1].base = bad.allocations[0].base;  // overlap
  EXPECT_THROW(TraceWriter(dir.file("b.uvt"), bad), std::logic_error);
  WriterOptions opts;
  opts.zstd_level = 99;
  EXPECT_THROW(TraceWriter(dir.file("c.uvt"), m, opts), std::logic_error);
  EXPECT_THROW(TraceWriter(dir.file("missing-dir/d.uvt"), m), UserError);
}

TEST(TraceWriter, EmptyTraceIsValid) {
  TempDir dir;
  { TraceWriter w(dir.file("e.uvt"), sample_metadata()); }  // destructor finishes
  TraceReader r(dir.file("e.uvt"));
  EXPECT_EQ(r.version(), 1u);  // nothing needs version 2: older builds can read it
  EXPECT_EQ(r.host_event_count(), 0u);
  EXPECT_TRUE(r.launches().empty());
  HostEvent ev;
  EXPECT_FALSE(r.next_host_event(ev));
}

// ---- streaming --------------------------------------------------------------------------------

/// One kernel with `tbs` threadblocks of one warp, one record each, one threadblock per chunk.
std::string write_many_blocks(const TempDir& dir, std::uint32_t tbs) {
  const std::string path = dir.file("many.uvt");
  Metadata m;
  m.workload = "many";
  m.allocations = {{0, "a", 0x7f0000000000, 1 << 30, true, false}};
  KernelInfo k;
  k.name = "k";
  k.grid = {tbs, 1, 1};
  k.block = {32, 1, 1};
  m.kernels = {k};
  WriterOptions opts;
  opts.chunk_raw_bytes = 1;
  TraceWriter w(path, m, opts);
  w.begin_launch(0);
  for (std::uint32_t i = 0; i < tbs; ++i) {
    w.begin_block(1);
    AccessRecord r;
    r.va = 0x7f0000000000 + std::uint64_t{i} * 4096;
    w.access(0, r);
    w.end_block();
  }
  w.finish();
  return path;
}

TEST(LaunchStream, HoldsOnlyChunksWithThreadblocksInFlight) {
  TempDir dir;
  TraceReader r(write_many_blocks(dir, 100));
  LaunchStream s = r.launch(0);
  EXPECT_EQ(s.threadblocks(), 100u);
  EXPECT_EQ(s.decoded_chunks(), 0u);
  std::vector<ThreadblockView> in_flight;
  std::vector<WarpStream> warps;
  ThreadblockView tb;
  std::uint64_t seen = 0;
  // Keep up to 4 threadblocks in flight and retire them out of order.
  while (s.next(tb)) {
    EXPECT_EQ(tb.tb_id, seen++);
    in_flight.push_back(tb);
    EXPECT_LE(s.decoded_chunks(), 4u);
    if (in_flight.size() == 4) {
      s.release(in_flight[2]);
      in_flight.erase(in_flight.begin() + 2);
      s.release(in_flight[0]);
      in_flight.erase(in_flight.begin());
    }
    for (const auto& v : in_flight) {
      v.warp_streams(warps);
      AccessRecord rec;
      ASSERT_TRUE(warps[0].next(rec));
      EXPECT_EQ(rec.va, 0x7f0000000000 + v.tb_id * 4096);
    }
  }
  EXPECT_EQ(seen, 100u);
  for (const auto& v : in_flight) s.release(v);
  EXPECT_EQ(s.decoded_chunks(), 0u);
  // Releasing twice, or a view this stream does not own, is a programming error.
  EXPECT_THROW(s.release(in_flight[0]), std::logic_error);
  ThreadblockView foreign;
  foreign.slot = 99;
  EXPECT_THROW(s.release(foreign), std::logic_error);
  EXPECT_THROW(r.launch(1), std::out_of_range);
}

TEST(LaunchStream, SteadyStateStreamingDoesNotAllocate) {
  TempDir dir;
  TraceReader r(write_many_blocks(dir, 400));
  LaunchStream s = r.launch(0);
  std::vector<WarpStream> warps;
  ThreadblockView tb;
  AccessRecord rec;
  auto step = [&] {
    if (!s.next(tb)) return false;
    tb.warp_streams(warps);
    while (warps[0].next(rec)) {
    }
    s.release(tb);
    return true;
  };
  // Warm up past threadblock 128, where the threadblock id's varint (and so the chunk) grows by
  // a byte and the reused buffers grow once.
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(step());
  const std::uint64_t before = test::allocations();
  int n = 0;
  while (step()) ++n;
  EXPECT_EQ(n, 200);
  EXPECT_EQ(test::allocations() - before, 0u);
}

// ---- corrupt files ----------------------------------------------------------------------------

std::string error_of(const std::string& path) {
  try {
    TraceReader r(path);
    (void)read_all(r);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

class CorruptTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("good.uvt");
    WriterOptions opts;
    opts.chunk_raw_bytes = 200;
    (void)write_sample(path_, opts);
    bytes_ = read_file(path_);
    bad_ = dir_.file("bad.uvt");
  }
  std::string with(const std::vector<std::uint8_t>& bytes) {
    write_file(bad_, bytes);
    return error_of(bad_);
  }
  TempDir dir_;
  std::string path_, bad_;
  std::vector<std::uint8_t> bytes_;
};

TEST_F(CorruptTrace, GoodFileReads) { EXPECT_EQ(error_of(path_), ""); }

TEST_F(CorruptTrace, BadMagic) {
  auto b = bytes_;
  b[0] = 'X';
  EXPECT_EQ(with(b), bad_ + ": header: bad magic: not a .uvt trace file");
  EXPECT_EQ(with({'h', 'i'}),
            bad_ + ": header: truncated file (2 bytes; the header alone takes 24)");
  EXPECT_EQ(with({}), bad_ + ": header: truncated file (0 bytes; the header alone takes 24)");
}

TEST_F(CorruptTrace, WrongVersionSaysFoundAndSupported) {
  auto b = bytes_;
  b[8] = 4;
  EXPECT_EQ(with(b), bad_ +
                         ": header: unsupported format version 4 (this build of uvmsim "
                         "supports versions 1 to 3)");
  b[8] = 0;
  EXPECT_EQ(with(b), bad_ +
                         ": header: unsupported format version 0 (this build of uvmsim "
                         "supports versions 1 to 3)");
}

TEST_F(CorruptTrace, MemFreeNeedsVersionTwo) {
  // The sample ends with a MemFree: as a version-1 file (header CRC recomputed) its host chunk
  // holds an event type version 1 does not have.
  auto b = bytes_;
  ASSERT_EQ(b[8], 3);
  b[8] = 1;
  const std::size_t meta_len = b[16] | (b[17] << 8) | (b[18] << 16);
  const std::size_t end = 24 + meta_len;
  const std::uint32_t crc = codec::crc32(b.data(), end);
  for (int i = 0; i < 4; ++i) b[end + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  const std::string err = with(b);
  EXPECT_NE(err.find(": unknown host event type 5 in a version 1 trace (MemFree needs version 2)"),
            std::string::npos)
      << err;
}

TEST_F(CorruptTrace, Truncated) {
  auto b = bytes_;
  ASSERT_GT(b.size(), 40u);
  // erase, not resize: GCC's -Wstringop-overflow cannot see that resize only shrinks here.
  b.erase(b.end() - 10, b.end());
  EXPECT_EQ(with(b), bad_ +
                         ": footer: missing end marker (the file is truncated or was not "
                         "finished)");
  b.erase(b.begin() + 40, b.end());
  EXPECT_NE(with(b).find("truncated"), std::string::npos);
}

TEST_F(CorruptTrace, CrcMismatchNamesTheChunk) {
  TraceReader good(path_);
  const ChunkInfo c = good.chunks()[2];
  auto b = bytes_;
  b[c.offset + c.compressed_bytes / 2] ^= 0x10;
  const std::string err = with(b);
  EXPECT_EQ(err.rfind(bad_ + ": chunk 2: CRC mismatch (stored 0x", 0), 0u) << err;
  // Header and index are covered too.
  b = bytes_;
  b[30] ^= 1;  // inside the metadata JSON
  EXPECT_EQ(with(b).rfind(bad_ + ": header: CRC mismatch", 0), 0u);
  b = bytes_;
  b[b.size() - codec::kFooterBytes - 3] ^= 1;  // inside the index
  EXPECT_EQ(with(b).rfind(bad_ + ": index: CRC mismatch", 0), 0u);
}

// zstd verifies each frame's content checksum as it decompresses, so the reader computes a chunk's
// CRC only when zstd cannot vouch for the chunk (no checksum in the frame, or a frame problem).
// A stale CRC in the index with an intact frame loses no data and is accepted; the same stale CRC
// with a damaged frame is reported as the cause. (python/tests/test_trace_errors.py covers frames
// without a checksum, and that both readers agree.)
TEST_F(CorruptTrace, ChunkCrcIsCheckedWhenZstdCannotVouchForTheChunk) {
  TraceReader good(path_);
  const ChunkInfo c = good.chunks()[2];
  auto b = bytes_;
  const std::size_t footer = b.size() - codec::kFooterBytes;
  const std::uint64_t index_at = codec::get_u64(b.data() + footer);
  const std::uint64_t index_len = codec::get_u64(b.data() + footer + 8);
  // Chunk entries (49 bytes, the CRC last) follow the u64 host-event total and u64 chunk count.
  const std::size_t crc_at = index_at + 16 + 2 * 49 + 45;
  ASSERT_EQ(codec::get_u32(b.data() + crc_at), c.crc);
  auto store_crc = [&](std::uint32_t crc) {  // as chunk 2's CRC, and the index CRC updated
    for (int k = 0; k < 4; ++k) b[crc_at + k] = static_cast<std::uint8_t>(crc >> (8 * k));
    const std::uint32_t index_crc = codec::crc32(b.data() + index_at, index_len);
    for (int k = 0; k < 4; ++k)
      b[footer + 16 + k] = static_cast<std::uint8_t>(index_crc >> (8 * k));
  };
  store_crc(c.crc ^ 1);
  EXPECT_EQ(with(b), "");
  b[c.offset + c.compressed_bytes - 1] ^= 0x10;  // inside the frame's content checksum
  EXPECT_EQ(with(b).rfind(bad_ + ": chunk 2: CRC mismatch (stored 0x", 0), 0u) << with(b);
  store_crc(codec::crc32(b.data() + c.offset, c.compressed_bytes));
  EXPECT_EQ(with(b), bad_ + ": chunk 2: zstd: Restored data doesn't match checksum");
}

TEST_F(CorruptTrace, MissingFileAndDirectory) {
  EXPECT_EQ(error_of(dir_.file("nope.uvt")).rfind(dir_.file("nope.uvt") + ": open: cannot open", 0),
            0u);
  EXPECT_EQ(error_of(dir_.file("")).find(": open: is a directory"), dir_.file("").size());
}

/// Opens and fully decodes; any outcome other than success or UserError fails the test (a crash
/// or sanitizer report ends the run).
void expect_clean_outcome(const std::string& path) {
  try {
    TraceReader r(path);
    (void)read_all(r);
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected " << typeid(e).name() << ": " << e.what();
  }
}

TEST_F(CorruptTrace, EveryTruncationIsAUserError) {
  for (std::size_t len = 0; len < bytes_.size(); len += 1 + len / 64) {
    write_file(bad_, {bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(len)});
    EXPECT_NE(error_of(bad_), "") << "truncated to " << len << " bytes was accepted";
  }
}

TEST_F(CorruptTrace, RandomByteFlipsNeverCrash) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 400; ++trial) {
    auto b = bytes_;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i)
      b[rng() % b.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    write_file(bad_, b);
    expect_clean_outcome(bad_);
  }
  // Pure garbage of various sizes, some starting with the right magic and version.
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::uint8_t> b(rng() % 4096);
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
    if (trial % 2 == 0 && b.size() >= 12) {
      std::memcpy(b.data(), codec::kHeaderMagic, 8);
      b[8] = 1;
      b[9] = b[10] = b[11] = 0;
    }
    write_file(bad_, b);
    expect_clean_outcome(bad_);
  }
}

TEST_F(CorruptTrace, FlipsBehindValidCrcsNeverCrash) {
  // CRCs catch random damage before anything is parsed, so to exercise the parsers themselves
  // this corrupts the metadata, the index or a chunk and then repairs every CRC on the way.
  using codec::get_u32;
  using codec::get_u64;
  auto put32 = [](std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  const std::size_t meta_end = codec::kHeaderFixedBytes + get_u64(bytes_.data() + 16);
  const std::size_t footer = bytes_.size() - codec::kFooterBytes;
  const std::size_t index_off = get_u64(bytes_.data() + footer);
  TraceReader good(path_);
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 600; ++trial) {
    auto b = bytes_;
    const int flips = 1 + static_cast<int>(rng() % 3);
    switch (trial % 3) {
      case 0:  // metadata JSON
        for (int i = 0; i < flips; ++i) {
          b[codec::kHeaderFixedBytes + rng() % (meta_end - codec::kHeaderFixedBytes)] ^=
              static_cast<std::uint8_t>(1 + rng() % 255);
        }
        put32(b, meta_end, codec::crc32(b.data(), meta_end));
        break;
      case 1:  // index
        for (int i = 0; i < flips; ++i) {
          b[index_off + rng() % (footer - index_off)] ^=
              static_cast<std::uint8_t>(1 << (rng() % 8));
        }
        break;
      default: {  // a chunk's compressed bytes, with its CRC in the index repaired
        const std::size_t ci = rng() % good.chunks().size();
        const ChunkInfo& c = good.chunks()[ci];
        for (int i = 0; i < flips; ++i) {
          b[c.offset + rng() % c.compressed_bytes] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        }
        const std::size_t crc_at =
            index_off + 16 + ci * codec::kChunkEntryBytes + (codec::kChunkEntryBytes - 4);
        ASSERT_EQ(get_u32(b.data() + crc_at), c.crc);
        put32(b, crc_at, codec::crc32(b.data() + c.offset, c.compressed_bytes));
        break;
      }
    }
    put32(b, footer + 16, codec::crc32(b.data() + index_off, footer - index_off));
    write_file(bad_, b);
    expect_clean_outcome(bad_);
  }
}

}  // namespace
}  // namespace uvmsim::trace
