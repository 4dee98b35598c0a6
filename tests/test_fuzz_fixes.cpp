// Reproducers of the defects found by fuzzing (issue 14), one test each: what used to hang, crash
// or report an "internal error" now runs or gives a one-line error naming the file and field.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include "core/config.h"
#include "core/error.h"
#include "core/json_input.h"
#include "fuzz/uvt_mutator.h"
#include "sim/check/expectations.h"
#include "sim/check/relation.h"
#include "sim/sweep/spec.h"
#include "test_util.h"
#include "traces/hints.h"
#include "traces/measurements/importers.h"
#include "traces/measurements/measurement.h"
#include "traces/trace.h"
#include "traces/trace_codec.h"

namespace uvmsim::test {
namespace {

using trace::AccessRecord;
using trace::HostEvent;
using trace::HostEventType;

/// One kernel of one warp reading `pages` (VAs) of one allocation the CPU initialised first.
std::string one_warp_trace(const TempDir& d, const std::string& name, Addr base, std::uint64_t size,
                           const std::vector<Addr>& vas) {
  trace::Metadata meta;
  meta.workload = "fuzz-fix";
  meta.allocations.push_back({0, "a", base, size, true, false});
  trace::KernelInfo k;
  k.id = 0;
  k.name = "k";
  k.grid = {1, 1, 1};
  k.block = {32, 1, 1};
  meta.kernels.push_back(k);
  const auto path = d.file(name);
  trace::TraceWriter w(path, meta);
  HostEvent init;
  init.type = HostEventType::CpuAccess;
  init.va = base;
  init.size = size;
  init.kind = AccessKind::Write;
  w.host_event(init);
  w.begin_launch(0);
  w.begin_block(1);
  for (const Addr va : vas) {
    AccessRecord r;
    r.va = va;
    r.kind = AccessKind::Read;
    w.access(0, r);
  }
  w.end_block();
  HostEvent sync;
  sync.type = HostEventType::Synchronize;
  w.host_event(sync);
  w.finish();
  return path;
}

// Defect 1: an allocation whose base is not 4 KB-aligned ends inside a page; that partial last
// page used to be left out of its VA block, so a fault on it was never serviced and `run` looped
// forever. The page is now part of the allocation.
TEST(FuzzFixes, UnalignedAllocationBaseRunsToTheEnd) {
  TempDir d;
  const Addr base = 0x7f0000000800;  // 2 KB into a page; 8 KB long: pages 0, 1 and part of 2
  const auto t = one_warp_trace(d, "unaligned.uvt", base, 8192, {base, base + 4096, base + 8188});
  const auto stats = d.file("s.json");
  cli_ok({"run", "--gpu", "gtx1080ti", "--trace", t, "--prefetch", "none", "--stats-out", stats,
          "--quiet"});
  const auto s = read_json(stats);
  // Three distinct pages, each faulted and migrated once.
  EXPECT_EQ(s["htod_bytes"].get<std::uint64_t>(), 3u * 4096);
  EXPECT_EQ(s["accesses"].get<std::uint64_t>(), 3u);
}

std::string deep(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::uint8_t> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::vector<std::uint8_t>& b) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

/// A generated trace taken apart, for the tests that craft broken ones.
fuzz::UnpackedTrace unpacked(const TempDir& d, const std::vector<std::string>& gen_args) {
  const auto t = d.file("base.uvt");
  std::vector<std::string> args = {"gen"};
  args.insert(args.end(), gen_args.begin(), gen_args.end());
  args.insert(args.end(), {"-o", t});
  cli_ok(args);
  const auto b = bytes_of(t);
  auto u = fuzz::unpack_trace(b.data(), b.size());
  EXPECT_TRUE(u.has_value());
  return *u;
}

// Defect 2: ~45,000 levels of JSON nesting crashed every JSON reader (stack overflow, exit 139).
// All of them now stop at 128 levels with a one-line error naming the file.
TEST(FuzzFixes, DeepJsonNestingIsAOneLineErrorEverywhere) {
  TempDir d;
  const std::string bomb = deep(45000);
  const std::string too_deep = ": JSON nested deeper than 128 levels";

  EXPECT_NO_THROW((void)parse_json(deep(128), "x"));
  EXPECT_EQ(error_of([&] { (void)parse_json(deep(129), "x"); }), "x" + too_deep);

  const auto preset = d.file("preset.json");
  write_text(preset, R"({"gpu": {"num_sms": )" + bomb + "}}");
  EXPECT_EQ(error_of([&] { (void)SimConfig::from_preset(preset); }), preset + too_deep);

  SimConfig c;
  EXPECT_EQ(error_of([&] { c.set_from_string("policy.lru.x=" + bomb); }),
            "--set: policy.lru.x" + too_deep);

  const auto spec = d.file("spec.json");
  write_text(spec, R"({"workloads": )" + bomb + "}");
  EXPECT_EQ(error_of([&] { (void)sweep::SweepSpec::load(spec); }), spec + too_deep);

  const auto expect = d.file("expect.json");
  write_text(expect, R"({"runs": )" + bomb + "}");
  EXPECT_EQ(error_of([&] { (void)check::ExpectationFile::load(expect); }), expect + too_deep);

  const auto hints = d.file("h.json");
  write_text(hints, bomb);
  EXPECT_EQ(error_of([&] { (void)trace::Hints::load(hints); }), hints + too_deep);

  const auto jsonl = d.file("m.jsonl");
  write_text(jsonl, R"({"format": "uvmsim-measurements", "version": 1})"
                    "\n" +
                        bomb + "\n");
  EXPECT_EQ(error_of([&] { (void)meas::read(jsonl); }), jsonl + ": line 2" + too_deep);

  // Trace metadata: a header whose "extra" is the bomb.
  auto u = unpacked(d, {"regular", "--footprint", "64K"});
  u.metadata.insert(u.metadata.size() - 1, R"(, "deep": )" + bomb);
  const auto t = d.file("deep.uvt");
  write_bytes(t, fuzz::pack_trace(u));
  EXPECT_EQ(error_of([&] { trace::TraceReader r(t); }), t + ": metadata" + too_deep);

  // Relations are expressions, not JSON: parentheses and chains are bounded too.
  const std::string parens = std::string(45000, '(') + "a(r)";
  EXPECT_EQ(error_of([&] { (void)check::Relation::parse(parens, "f.json: relations[0]"); }),
            "f.json: relations[0]: parentheses nested deeper than 32 levels at column 33 of \"" +
                std::string(160, '(') + "...\"");
  std::string chain = "a(r)";
  for (int i = 0; i < 300; ++i) chain += "+a(r)";
  const std::string err = error_of([&] { (void)check::Relation::parse(chain + " < 1", "f"); });
  EXPECT_EQ(err.rfind("f: more than 256 terms at column 1281 of \"a(r)+a(r)", 0), 0u) << err;
  EXPECT_NO_THROW((void)check::Relation::parse(
      std::string(32, '(') + "a(r)" + std::string(32, ')') + " < 1", "f"));
}

// Defect 5: the hints' polynomial arithmetic overflowed int64 (undefined behaviour); a wrapped
// count changed SUV's placement. Evaluation is now exact and clamps, sums are checked.
TEST(FuzzFixes, HintArithmeticDoesNotOverflow) {
  const std::int64_t big = std::int64_t{1} << 62;
  const std::uint64_t max = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(trace::Poly(big, big).at(3), max);  // 2^64 wrapped to 0 before
  EXPECT_EQ(trace::Poly(0, 0, big).at(std::numeric_limits<std::int32_t>::max()), max);
  EXPECT_EQ(trace::Poly(max, -1).at(2), max - 2);
  EXPECT_EQ(trace::Poly(-big, 0, -big).at(65536), 0u);
  EXPECT_EQ(trace::Poly(10, -3).at(2), 4u);
  EXPECT_THROW((void)(trace::Poly(big) + trace::Poly(big) + trace::Poly(big)), trace::PolyOverflow);
  EXPECT_THROW((void)(trace::Poly(0, big) * 4), trace::PolyOverflow);

  // A hints file whose per-allocation sum of count x bytes overflows is rejected, naming the ref.
  nlohmann::json h = nlohmann::json::parse(R"({
    "format": "uvmsim-hints", "version": 1, "source": "static",
    "allocations": [{"id": 0, "name": "a", "size": 4096}],
    "kernels": [{"kernel": 0, "name": "k",
      "uses": [{"alloc": 0, "reads": 0, "writes": 0, "bytes": 0, "bytes_per_tb": 4096,
                "pattern": "streaming"}],
      "refs": [{"id": 0, "alloc": 0, "kind": "read", "bytes": 4096,
                "count": 4611686018427387904, "bytes_per_tb": 4096, "pattern": "streaming"}]}]
  })");
  EXPECT_EQ(error_of([&] { (void)trace::Hints::from_json(h, "h.json"); }),
            "h.json: hints.kernels[0].refs[0].count: count x bytes, summed over this "
            "allocation's refs, overflows 64 bits");
}

// Defect 6: numbers out of range (1e999) in hints and expectation files, and invalid UTF-8 in an
// nvprof kernel name, were "internal error"s without file or field.
TEST(FuzzFixes, OutOfRangeNumbersAndBadUtf8NameTheFileAndField) {
  TempDir d;
  const auto hints = d.file("h.json");
  write_text(hints, R"({"format": "uvmsim-hints", "version": 1e999})");
  EXPECT_EQ(error_of([&] { (void)trace::Hints::load(hints); }),
            hints + ": version: number out of range ('1e999')");
  const auto expect = d.file("e.json");
  write_text(expect, R"({"tolerances": {"*": 1e999}})");
  EXPECT_EQ(error_of([&] { (void)check::ExpectationFile::load(expect); }),
            expect + ": tolerances.*: number out of range ('1e999')");

  const std::string head =
      "==1== Profiling application: ./app\n"
      "\"Start\",\"Duration\",\"Grid X\",\"Grid Y\",\"Grid Z\",\"Block X\",\"Block Y\","
      "\"Block Z\",\"Registers Per Thread\",\"Static SMem\",\"Dynamic SMem\",\"Stream\","
      "\"Name\"\n"
      "s,us,,,,,,,,B,B,,\n";
  const auto csv = d.file("p.csv");
  write_text(csv, head + "0.5,2.0,1,1,1,32,1,1,16,0,0,7,\"k\xff\xfe\"\n");
  EXPECT_EQ(error_of([&] { (void)meas::import_nvprof(csv); }),
            csv + ": line 4: Name: not valid UTF-8 (byte 2)");
  // The CLI says the same, on one line, and exits 1.
  const auto r = cli({"calibrate", "import", "nvprof", csv, "-o", d.file("m.jsonl")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(csv + ": line 4: Name: not valid UTF-8 (byte 2)"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// Defect 7: the nvprof importer cast registers, shared memory and stream to 32 bits unchecked.
TEST(FuzzFixes, NvprofColumnsOutOfRangeAreErrors) {
  TempDir d;
  const std::string head =
      "\"Start\",\"Duration\",\"Grid X\",\"Grid Y\",\"Grid Z\",\"Block X\",\"Block Y\","
      "\"Block Z\",\"Registers Per Thread\",\"Static SMem\",\"Dynamic SMem\",\"Stream\","
      "\"Name\"\n"
      "s,us,,,,,,,,B,B,,\n";
  const auto csv = d.file("p.csv");
  auto import_row = [&](const std::string& row) {
    write_text(csv, head + row + "\n");
    return error_of([&] { (void)meas::import_nvprof(csv); });
  };
  EXPECT_EQ(import_row("0.5,2.0,1,1,1,32,1,1,4294967296,0,0,7,\"k\""),
            csv + ": line 3: Registers Per Thread: value out of range (more than 32 bits)");
  EXPECT_EQ(import_row("0.5,2.0,1,1,1,32,1,1,16,4294967295,1,7,\"k\""),
            csv + ": line 3: Static SMem + Dynamic SMem: value out of range (more than 32 bits)");
  EXPECT_EQ(import_row("0.5,2.0,1,1,1,32,1,1,16,0,0,1e12,\"k\""),
            csv + ": line 3: Stream: value out of range (more than 32 bits)");
  EXPECT_EQ(import_row("1e300,2.0,1,1,1,32,1,1,16,0,0,7,\"k\""),
            csv + ": line 3: Start: value out of range (more than 64 bits)");
  // In range, the values are kept exactly.
  write_text(csv, head + "0.5,2.0,1,1,1,32,1,1,255,49152,1024,4294967295,\"k\"\n");
  const auto m = meas::import_nvprof(csv);
  ASSERT_EQ(m.records.size(), 1u);
  EXPECT_EQ(m.records[0].regs, 255u);
  EXPECT_EQ(m.records[0].smem, 50176u);
  EXPECT_EQ(m.records[0].stream, 4294967295u);
  EXPECT_EQ(m.records[0].start, 500000000u);
  EXPECT_EQ(m.records[0].end, 500002000u);
}

// Defect 8: the index's per-launch totals were never checked against the chunks, and OPT sized its
// buckets from them. A trace whose totals lie is now rejected when the launch is read.
TEST(FuzzFixes, IndexTotalsThatDisagreeWithTheDataAreRejected) {
  TempDir d;
  const auto u = unpacked(d, {"regular", "--footprint", "256K", "--chunk-size", "256"});
  ASSERT_EQ(u.launches.size(), 1u);
  const std::uint64_t records = u.launches[0].records, accesses = u.launches[0].accesses;
  ASSERT_EQ(records, 64u);
  auto read_launch = [&](const fuzz::UnpackedTrace& t) {
    const auto path = d.file("lying.uvt");
    write_bytes(path, fuzz::pack_trace(t));
    return error_of([&] {
      trace::TraceReader r(path);
      trace::LaunchStream s = r.launch(0);
      trace::ThreadblockView tb;
      while (s.next(tb)) s.release(tb);
    });
  };
  const std::string where = d.file("lying.uvt") + ": index: launch 0: ";
  auto more = u;
  more.launches[0].records = records + 1;
  more.launches[0].accesses = accesses + 1;
  EXPECT_EQ(read_launch(more), where + "the index says 65 records, its chunks hold 64");
  auto fewer = u;
  fewer.launches[0].records = 10;
  EXPECT_EQ(read_launch(fewer), where + "the index says 10 records, its chunks hold more");
  auto accesses_off = u;
  accesses_off.launches[0].accesses = accesses + 5;
  EXPECT_EQ(read_launch(accesses_off), where + "the index says " + std::to_string(accesses + 5) +
                                           " accesses, its chunks hold " +
                                           std::to_string(accesses));
  EXPECT_EQ(read_launch(u), "");

  // OPT read the totals to size its buckets before streaming: now its pre-pass stops on the lie.
  auto huge = u;
  huge.launches[0].records = std::uint64_t{1} << 40;
  huge.launches[0].accesses = std::uint64_t{1} << 41;
  const auto path = d.file("huge.uvt");
  write_bytes(path, fuzz::pack_trace(huge));
  const auto r = cli({"run", "--gpu", "gtx1080ti", "--trace", path, "--eviction", "opt", "--hbm",
                      "2M", "--quiet"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "uvmsim run: error: " + path +
                       ": index: launch 0: the index says 1099511627776 records, its chunks "
                       "hold 64\n");
}

// `uvmsim run` reads launches with RecordCheck::WhenDecoded (each record checked once, when its
// warp decodes it, not also when its chunk loads): a malformed record and an index whose access
// total lies are still rejected, with the words the load-time check uses.
TEST(RecordCheck, WhenDecodedRejectsWhatAtLoadRejectsWithTheSameMessage) {
  TempDir d;
  const auto u = unpacked(d, {"regular", "--footprint", "256K", "--chunk-size", "256"});
  const auto path = d.file("t.uvt");
  // Reads launch 0 in the given mode, decoding every record; with WhenDecoded the caller checks
  // the access total, as the simulator does at the kernel's end.
  auto read_launch = [&](const fuzz::UnpackedTrace& t, trace::RecordCheck check) {
    write_bytes(path, fuzz::pack_trace(t));
    return error_of([&] {
      trace::TraceReader r(path);
      test::decode_launch(r, 0, check);
    });
  };
  EXPECT_EQ(read_launch(u, trace::RecordCheck::AtLoad), "");
  EXPECT_EQ(read_launch(u, trace::RecordCheck::WhenDecoded), "");

  // The first record of the last threadblock chunk's first warp gets access kind 7 (there are
  // four).
  auto bad_kind = u;
  std::size_t last = 0;
  for (std::size_t i = 0; i < u.chunks.size(); ++i)
    if (u.chunks[i].info.type == trace::ChunkInfo::Blocks) last = i;
  auto& chunk = bad_kind.chunks[last];
  ASSERT_EQ(chunk.info.type, trace::ChunkInfo::Blocks);
  write_bytes(path, fuzz::pack_trace(u));
  const trace::TraceReader good(path);
  const std::uint32_t warps =
      good.metadata().find_kernel(good.launches()[0].kernel_id)->warps_per_block();
  std::vector<trace::codec::TbEntry> tbs;
  const std::string name = "chunk";
  trace::codec::parse_block_chunk(chunk.data.data(), chunk.data.size(), chunk.info.first,
                                  chunk.info.count, warps, tbs, &name, 0);
  ASSERT_FALSE(tbs.empty());
  trace::codec::ByteReader warp(chunk.data.data() + tbs[0].begin, chunk.data.data() + tbs[0].end,
                                &name, "warp");
  ASSERT_GT(warp.varint(), 0u);  // records
  (void)warp.varint();           // bytes
  chunk.data[tbs[0].begin + warp.offset()] |= 0x07;
  const std::string at_load = read_launch(bad_kind, trace::RecordCheck::AtLoad);
  EXPECT_NE(at_load.find("unknown access kind"), std::string::npos) << at_load;
  EXPECT_EQ(read_launch(bad_kind, trace::RecordCheck::WhenDecoded), at_load);

  // An index whose access total is off by 5: the same message from the last chunk's load
  // (AtLoad), from check_accesses (WhenDecoded) and from `uvmsim run`.
  auto lie = u;
  lie.launches[0].accesses += 5;
  const std::string expected =
      path + ": index: launch 0: the index says " + std::to_string(lie.launches[0].accesses) +
      " accesses, its chunks hold " + std::to_string(u.launches[0].accesses);
  EXPECT_EQ(read_launch(lie, trace::RecordCheck::AtLoad), expected);
  EXPECT_EQ(read_launch(lie, trace::RecordCheck::WhenDecoded), expected);
  const auto r = cli({"run", "--gpu", "gtx1080ti", "--trace", path, "--quiet"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "uvmsim run: error: " + expected + "\n");
  // The same trace with the truth in its index runs.
  write_bytes(path, fuzz::pack_trace(u));
  EXPECT_EQ(cli({"run", "--gpu", "gtx1080ti", "--trace", path, "--quiet"}).code, 0);
}

// A paged chunk (LaunchStream's decoded-bytes budget) cuts each warp into segments where its
// records parse; from a malformed record on, the rest of the warp is its last segment, so the
// decoder reports the same record, with the same index, as when the chunk is held whole.
TEST(RecordCheck, APagedWarpReportsAMalformedRecordAsAWholeOneDoes) {
  TempDir d;
  // mvt at 16 MiB: 64 warps of 65,536 records (~130 KB each, eight or more 16 KB segments).
  const auto base = d.file("base.uvt");
  cli_ok({"gen", "mvt", "--footprint", "16M", "-o", base});
  const auto b = bytes_of(base);
  const auto unpacked_mvt = fuzz::unpack_trace(b.data(), b.size(), std::size_t{64} << 20);
  ASSERT_TRUE(unpacked_mvt.has_value());
  const fuzz::UnpackedTrace& u = *unpacked_mvt;
  const auto path = d.file("t.uvt");
  auto read_launch = [&](const fuzz::UnpackedTrace& t, trace::RecordCheck check,
                         std::uint64_t budget) {
    write_bytes(path, fuzz::pack_trace(t));
    return error_of([&] {
      trace::TraceReader r(path);
      const test::Decoded got = test::decode_launch(r, 0, check, budget);
      EXPECT_EQ(got.records, r.launches()[0].records);
    });
  };
  for (const std::uint64_t budget : {trace::LaunchStream::kNoBudget, std::uint64_t{0}})
    EXPECT_EQ(read_launch(u, trace::RecordCheck::WhenDecoded, budget), "");

  // The first Blocks chunk's first warp: its record count and where its records start.
  std::size_t first = 0;
  while (u.chunks[first].info.type != trace::ChunkInfo::Blocks) ++first;
  write_bytes(path, fuzz::pack_trace(u));
  const trace::TraceReader good(path);
  const std::uint32_t warps =
      good.metadata().find_kernel(good.launches()[0].kernel_id)->warps_per_block();
  const auto& data = u.chunks[first].data;
  std::vector<trace::codec::TbEntry> tbs;
  const std::string name = "chunk";
  trace::codec::parse_block_chunk(data.data(), data.size(), u.chunks[first].info.first,
                                  u.chunks[first].info.count, warps, tbs, &name, 0);
  trace::codec::ByteReader header(data.data() + tbs[0].begin, data.data() + tbs[0].end, &name,
                                  "warp");
  const std::uint64_t records = header.varint();
  const std::uint64_t bytes = header.varint();
  const std::size_t records_at = tbs[0].begin + header.offset();
  ASSERT_GT(bytes, 4 * trace::LaunchStream::kPageSegmentBytes);
  // The record that starts past 2.5 segments' worth of bytes, in the warp's third segment.
  std::uint64_t accesses = 0, index = 0;
  const std::uint8_t* p = data.data() + records_at;
  while (static_cast<std::size_t>(p - (data.data() + records_at)) <
         5 * trace::LaunchStream::kPageSegmentBytes / 2) {
    p = trace::codec::skim_record(p, data.data() + records_at + bytes, accesses);
    ASSERT_NE(p, nullptr);
    ++index;
  }
  auto bad_kind = u;
  bad_kind.chunks[first].data[static_cast<std::size_t>(p - data.data())] |= 0x07;
  const std::string whole =
      read_launch(bad_kind, trace::RecordCheck::WhenDecoded, trace::LaunchStream::kNoBudget);
  EXPECT_EQ(whole, path + ": access record: record " + std::to_string(index) + " of " +
                       std::to_string(records) + ": unknown access kind 7");
  EXPECT_EQ(read_launch(bad_kind, trace::RecordCheck::WhenDecoded, 0), whole);
  EXPECT_EQ(read_launch(bad_kind, trace::RecordCheck::AtLoad, 0).find("unknown access kind"),
            whole.find("unknown access kind"));

  // A warp header claiming one record more than its bytes hold (the index agreeing): the
  // decoder runs past the end of the warp at the last segment, paged or not.
  auto more = u;
  std::vector<std::uint8_t> grown;
  trace::codec::put_varint(grown, records + 1);
  std::vector<std::uint8_t> was;
  trace::codec::put_varint(was, records);
  ASSERT_EQ(grown.size(), was.size());  // the same length: nothing else moves
  std::copy(grown.begin(), grown.end(),
            more.chunks[first].data.begin() + static_cast<std::ptrdiff_t>(tbs[0].begin));
  more.launches[0].records += 1;
  more.launches[0].accesses += 1;
  const std::string past =
      read_launch(more, trace::RecordCheck::WhenDecoded, trace::LaunchStream::kNoBudget);
  EXPECT_EQ(past, path + ": access record: record " + std::to_string(records) + " of " +
                      std::to_string(records + 1) + ": runs past the end of the warp's data");
  EXPECT_EQ(read_launch(more, trace::RecordCheck::WhenDecoded, 0), past);
}

// Defect 9: a 150 KB crafted trace made the reader allocate 4.2 GB before rejecting it: a zstd
// frame may declare any size. The declaration is now checked against the frame's blocks first.
TEST(FuzzFixes, AFrameThatOverstatesItsSizeIsRejectedBeforeAllocating) {
  TempDir d;
  auto u = unpacked(d, {"regular", "--footprint", "64K"});
  std::size_t host = u.chunks.size();
  for (std::size_t i = 0; i < u.chunks.size(); ++i)
    if (u.chunks[i].info.type == trace::ChunkInfo::Host) host = i;
  ASSERT_LT(host, u.chunks.size());
  // A frame declaring 4 GiB (single segment, 8-byte content size) with one raw 16-byte block.
  std::vector<std::uint8_t> frame = {0x28, 0xb5, 0x2f, 0xfd, 0xe0};
  for (int i = 0; i < 8; ++i) frame.push_back(i == 4 ? 1 : 0);  // 2^32, little-endian
  frame.insert(frame.end(), {(16 << 3) | 1, 0, 0});             // last block, raw, 16 bytes
  frame.insert(frame.end(), 16, 0x42);
  u.chunks[host].frame = frame;
  u.chunks[host].info.raw_bytes = std::uint64_t{1} << 32;
  const auto path = d.file("bomb.uvt");
  write_bytes(path, fuzz::pack_trace(u));
  trace::TraceReader r(path);
  trace::ChunkBuffer buf;
  EXPECT_EQ(error_of([&] { r.load_chunk(host, buf); }),
            path + ": chunk " + std::to_string(host) +
                ": zstd frame declares 4294967296 uncompressed bytes but its blocks hold at most "
                "16");
  EXPECT_LT(buf.capacity(), std::size_t{1} << 20);  // nothing was allocated for the claim
}

// ---- found by the fuzz targets of fuzz/ (inputs kept in tests/data/fuzz/) ----------------------

// uvt: a launch's host-loop iteration below -1 was accepted, and `uvmsim analyze` then wrote hints
// that its own reader rejects. -1 means "no loop"; the reader now rejects other negatives.
TEST(FuzzFixes, LaunchIterationBelowMinusOneIsRejected) {
  TempDir d;
  auto u = unpacked(d, {"regular", "--footprint", "64K"});
  std::size_t host_chunk = 0;
  for (std::size_t i = 0; i < u.chunks.size(); ++i) {
    auto& c = u.chunks[i];
    if (c.info.type != trace::ChunkInfo::Host) continue;
    host_chunk = i;
    // KernelLaunch: type 0, kernel 0, launch 0, zigzag(-1) = 1, then Synchronize (3).
    ASSERT_EQ(c.data, (std::vector<std::uint8_t>{0, 0, 0, 1, 3}));
    c.data[3] = 9;  // zigzag(-5)
  }
  const auto path = d.file("it.uvt");
  write_bytes(path, fuzz::pack_trace(u));
  trace::TraceReader r(path);
  trace::HostEvent ev;
  EXPECT_EQ(error_of([&] { (void)r.next_host_event(ev); }),
            path + ": chunk " + std::to_string(host_chunk) +
                ": iteration -5 (must be -1, no loop, or 0..2147483647)");
}

// measurement: {"format": 0} on the first line made the reader throw nlohmann's type_error
// ("internal error") instead of saying it is not a measurement file.
TEST(FuzzFixes, MeasurementHeaderOfTheWrongTypeIsNotAMeasurementFile) {
  TempDir d;
  const auto p = d.file("m.jsonl");
  write_text(p, R"({"format":0})");
  EXPECT_EQ(error_of([&] { (void)meas::read(p); }),
            p + ": line 1: format: not a measurement file (expected \"format\": "
                "\"uvmsim-measurements\" on the first line)");
  write_text(p, "{\"format\": \"uvmsim-measurements\", \"version\": 1}\n{\"type\": true}\n");
  EXPECT_EQ(error_of([&] { (void)meas::read(p); }),
            p + ": line 2: type: expected a string, got true");
}

// set_value: --set link.type=<byte 0xff> was stored, and printing the configuration (--stats-out,
// the sweep results) threw nlohmann's type_error 316 ("internal error").
TEST(FuzzFixes, SetValuesMustBeUtf8) {
  SimConfig c;
  EXPECT_EQ(error_of([&] { c.set_from_string("link.type=\xff"); }),
            "--set: not valid UTF-8 (byte 11)");
  EXPECT_EQ(error_of([&] { c.set_from_string("policy.l\xc3.x=1"); }),
            "--set: not valid UTF-8 (byte 9)");
  const auto r =
      cli({"run", "--gpu", "gtx1080ti", "--trace", "none.uvt", "--set", "gpu.name=\xfe"});
  EXPECT_EQ(r.code, 2);  // a bad --set value is a usage error
  EXPECT_EQ(r.err, "uvmsim run: error: --set: not valid UTF-8 (byte 10)\n");
}

// nvprof CSV cells, relations and --set keys are quoted in error messages and may hold line
// breaks: the CLI prints every error on one line (control characters escaped, one_line()).
TEST(FuzzFixes, ErrorsArePrintedOnOneLine) {
  const auto r = cli({"run", "--gpu", "gtx1080ti", "--trace", "none.uvt", "--set", "gpu.na\nme=1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("gpu.na\\nme"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace uvmsim::test
