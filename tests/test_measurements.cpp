// Measurement files (JSONL) and the nvprof / Nsight Systems importers, on hand-written samples in
// tests/data/ that follow the tools' documented formats.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "core/error.h"
#include "sim/calibrate/metrics.h"
#include "test_util.h"
#include "traces/measurements/importers.h"
#include "traces/measurements/measurement.h"

namespace uvmsim::test {
namespace {

using meas::RecordType;

std::string data(const std::string& f) {
  return std::string(UVMSIM_SOURCE_DIR) + "/tests/data/" + f;
}

TEST(Measurements, RoundTripKeepsEveryField) {
  TempDir d;
  meas::Measurement m;
  m.header.source = "cupti";
  m.header.gpu = "NVIDIA GeForce GTX 1080 Ti";
  meas::Record t;
  t.type = RecordType::Transfer;
  t.start = 10;
  t.end = 1770;
  t.address = 0x7f0000000000;
  t.bytes = 4096;
  t.dir = meas::Direction::HtoD;
  t.cause = meas::Cause::Coherence;
  t.src = -1;
  t.dst = 0;
  meas::Record f;
  f.type = RecordType::GpuFault;
  f.start = 5;
  f.end = 183705;
  f.address = 0x7f0000000000;
  f.count = 2;
  f.access = "write";
  meas::Record k;
  k.type = RecordType::Kernel;
  k.start = 1;
  k.end = 900;
  k.name = "void touch<int, 64>(int*)";
  k.grid = {4, 2, 1};
  k.block = {256, 1, 1};
  k.regs = 16;
  k.smem = 1024;
  k.correlation = 7;
  meas::Record a;
  a.type = RecordType::Advise;
  a.start = a.end = 3;
  a.address = 0x7f0000000000;
  a.bytes = 2 << 20;
  a.name = "set_read_mostly";
  a.device = -1;
  m.records = {t, f, k, a};
  m.summary.dropped_records = 3;
  m.summary.warnings = {"x"};
  const auto path = d.file("m.jsonl");
  meas::write(path, m);
  const auto r = meas::read(path);
  EXPECT_EQ(r.header.gpu, "NVIDIA GeForce GTX 1080 Ti");
  EXPECT_EQ(r.label, "m");
  ASSERT_EQ(r.records.size(), 4u);
  EXPECT_EQ(meas::to_json(r.records[0]), meas::to_json(t));
  EXPECT_EQ(meas::to_json(r.records[1]), meas::to_json(f));
  EXPECT_EQ(meas::to_json(r.records[2]), meas::to_json(k));
  EXPECT_EQ(meas::to_json(r.records[3]), meas::to_json(a));
  EXPECT_EQ(r.records[2].grid, (trace::Dim3{4, 2, 1}));
  EXPECT_EQ(r.summary.dropped_records, 3u);
  EXPECT_EQ(r.summary.warnings, std::vector<std::string>{"x"});
}

TEST(Measurements, BadFilesAreOneLineErrorsNamingFileAndField) {
  TempDir d;
  auto write = [&](const std::string& body) {
    const auto p = d.file("bad.jsonl");
    std::ofstream(p) << body;
    return p;
  };
  const std::string head =
      R"({"format":"uvmsim-measurements","version":1,"source":"cupti","gpu":"g"})"
      "\n";
  const std::string sum = R"({"type":"summary","records":1})"
                          "\n";
  EXPECT_NE(error_of([&] { meas::read(write("{}\n")); }).find("bad.jsonl: line 1: format: not a "),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              meas::read(write(R"({"format":"uvmsim-measurements","version":2})"
                               "\n"));
            }).find("version: unsupported version 2"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { meas::read(write(head)); }).find("summary: missing (the file is truncated"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              meas::read(write(head + "{nope\n" + sum));
            }).find("bad.jsonl: line 2: not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              meas::read(write(head +
                               R"({"type":"warp","start":1})"
                               "\n" +
                               sum));
            }).find("line 2: type: unknown value \"warp\""),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              meas::read(write(
                  head +
                  R"({"type":"transfer","start":5,"end":4,"address":0,"bytes":1,"dir":"htod"})"
                  "\n" +
                  sum));
            }).find("line 2: transfer: end: end 4 is before start 5"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              meas::read(write(head +
                               R"({"type":"transfer","start":5,"address":0,"bytes":1,"dir":"up"})"
                               "\n" +
                               sum));
            }).find("transfer: dir: unknown value \"up\""),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              meas::read(write(head +
                               R"({"type":"gpu_fault","start":5,"address":-3})"
                               "\n" +
                               sum));
            }).find("gpu_fault: address: expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              meas::read(write(head + R"({"type":"summary","records":4})"
                                      "\n"));
            }).find("summary.records: says 4 records, file has 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { meas::read(d.file("missing.jsonl")); }).find("cannot open"),
            std::string::npos);
}

TEST(Importers, NvprofGpuTraceCsv) {
  const auto m = meas::import_nvprof(data("nvprof_p1_gputrace.csv"));
  EXPECT_EQ(m.header.source, "nvprof");
  EXPECT_EQ(m.header.gpu, "GeForce GTX 1080 Ti");
  EXPECT_EQ(m.header.app, "./touch 0 1 2 4 8 16");
  std::map<RecordType, int> n;
  for (const auto& r : m.records) ++n[r.type];
  EXPECT_EQ(n[RecordType::GpuFault], 6);
  EXPECT_EQ(n[RecordType::Transfer], 14);
  EXPECT_EQ(n[RecordType::Kernel], 1);
  EXPECT_EQ(n[RecordType::Memcpy], 1);
  EXPECT_EQ(n[RecordType::CpuFault], 1);
  // Units: Start in s, Duration in us, Size in KB (binary).
  const auto& g = m.records[2];
  ASSERT_EQ(g.type, RecordType::GpuFault);
  EXPECT_EQ(g.start, 412412000u);
  EXPECT_EQ(g.duration(), 183712u);
  EXPECT_EQ(g.address, 0x7f2a40000000u);
  const auto& big = m.records[19];
  ASSERT_EQ(big.type, RecordType::Transfer);
  EXPECT_EQ(big.bytes, 1020u * 1024);
  EXPECT_EQ(big.duration(), 86400u);
  EXPECT_EQ(big.dir, meas::Direction::HtoD);
  EXPECT_EQ(big.cause, meas::Cause::Unknown);  // nvprof does not print causes
  const auto& k = m.records[1];
  ASSERT_EQ(k.type, RecordType::Kernel);
  EXPECT_EQ(k.name, "void touch<int, 64>(int*, unsigned long)");  // quoted comma kept
  EXPECT_EQ(k.regs, 16u);
  EXPECT_EQ(m.records[20].count, 16u);  // CPU page faults in the group

  const auto r = calib::from_measurement(m);
  ASSERT_EQ(r.groups.size(), 6u);
  EXPECT_DOUBLE_EQ(r.groups[5].duration_ns, 157024);
  EXPECT_EQ(r.bytes[calib::kHtoD].at("unknown"), (6u * 4 + 60 * 2 + 124 + 252 + 508 + 1020) * 1024);
  EXPECT_EQ(r.transfers[calib::kDtoH].size(), 2u);
  EXPECT_EQ(r.kernel_ns.size(), 1u);
  EXPECT_EQ(meas::detect_format(data("nvprof_p1_gputrace.csv")), meas::InputFormat::Nvprof);
}

TEST(Importers, NvprofRejectsOtherFilesAndBadUnits) {
  TempDir d;
  const auto p = d.file("x.csv");
  std::ofstream(p) << "a,b,c\n1,2,3\n";
  EXPECT_NE(error_of([&] { meas::import_nvprof(p); }).find("not an nvprof --print-gpu-trace"),
            std::string::npos);
  std::ofstream(p) << "\"Start\",\"Duration\",\"Name\"\nfortnight,us,\n1,2,\"k\"\n";
  EXPECT_NE(error_of([&] { meas::import_nvprof(p); }).find("Start: unknown time unit 'fortnight'"),
            std::string::npos);
}

meas::Measurement import_sample_sqlite(const TempDir& d) {
  const auto db_path = d.file("report.sqlite");
  std::ifstream in(data("nsys_um_sample.sql"));
  const std::string sql((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  EXPECT_EQ(meas::detect_format(db_path), meas::InputFormat::Nsys);
  return meas::load_any(db_path);
}

TEST(Importers, NsightSystemsSqliteExport) {
  TempDir d;
  const auto m = import_sample_sqlite(d);
  EXPECT_EQ(m.header.source, "nsys");
  EXPECT_EQ(m.header.gpu, "NVIDIA A100-SXM4-40GB");
  std::map<RecordType, int> n;
  for (const auto& r : m.records) ++n[r.type];
  EXPECT_EQ(n[RecordType::GpuFault], 3);
  EXPECT_EQ(n[RecordType::CpuFault], 1);
  EXPECT_EQ(n[RecordType::Transfer], 4);  // copy kinds 11 and 12
  EXPECT_EQ(n[RecordType::Memcpy], 1);    // copy kind 1: an explicit cudaMemcpy
  EXPECT_EQ(n[RecordType::Kernel], 1);
  const auto r = calib::from_measurement(m);
  // Two GPU fault records share the service window [2.0, 2.03] ms: one fault group.
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].faults, 4u);
  EXPECT_DOUBLE_EQ(r.groups[0].duration_ns, 30000);
  EXPECT_EQ(r.groups[1].faults, 56u);
  EXPECT_EQ(r.bytes[calib::kHtoD].at("demand"), 4096u);
  EXPECT_EQ(r.bytes[calib::kHtoD].at("prefetch"), 61440u);
  EXPECT_EQ(r.bytes[calib::kHtoD].at("user_prefetch"), 2097152u);
  EXPECT_EQ(r.bytes[calib::kDtoH].at("eviction"), 2097152u);
  ASSERT_EQ(r.kernel_ns.size(), 1u);
  EXPECT_DOUBLE_EQ(r.kernel_ns[0], 1310000);
  for (const auto& rec : m.records)
    if (rec.type == RecordType::Kernel) {
      EXPECT_EQ(rec.name, "touch(int*, unsigned long)");
      EXPECT_EQ(rec.grid, (trace::Dim3{4096, 1, 1}));
      EXPECT_EQ(rec.smem, 1024u);
    }
}

TEST(Importers, CliImportWritesAMeasurementFile) {
  TempDir d;
  const auto out = d.file("p1.jsonl");
  const auto r =
      cli_ok({"calibrate", "import", "nvprof", data("nvprof_p1_gputrace.csv"), "-o", out});
  EXPECT_NE(r.out.find("imported 23 records"), std::string::npos) << r.out;
  EXPECT_EQ(meas::read(out).records.size(), 23u);
  const auto show = cli_ok({"calibrate", "show", out});
  EXPECT_NE(show.out.find("fault groups: 6"), std::string::npos) << show.out;
  const auto bad = cli({"calibrate", "import", "bogus", out, "-o", d.file("x.jsonl")});
  EXPECT_EQ(bad.code, 2);  // an unknown format is a usage error
  EXPECT_NE(bad.err.find("expected nvprof, nsys or auto"), std::string::npos);
  const auto notcsv = cli({"calibrate", "show", data("nsys_um_sample.sql")});
  EXPECT_EQ(notcsv.code, 1);
  EXPECT_NE(notcsv.err.find("not a measurement file, nvprof --csv GPU trace or nsys SQLite"),
            std::string::npos);
}

}  // namespace
}  // namespace uvmsim::test
