// The static-hints schema (docs/hints.md): JSON round trip, standalone files, validation errors
// naming file and field, embedding in trace metadata, and the `trace hints` command.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "tests/workload_check.h"
#include "traces/hints.h"
#include "traces/trace.h"

namespace uvmsim::test {
namespace {

using nlohmann::json;
using trace::Hints;

/// A valid hints object: one kernel reading alloc 0 (iteration-dependent) and writing alloc 1.
json sample() {
  return json::parse(R"({
    "format": "uvmsim-hints", "version": 1, "source": "static", "workload": "w",
    "allocations": [{"id": 0, "name": "a", "size": 8192}, {"id": 1, "name": "b", "size": 4096}],
    "kernels": [{"kernel": 0, "name": "k",
      "uses": [
        {"alloc": 0, "reads": {"base": 100, "per_iteration": -1}, "writes": 0,
         "bytes": {"base": 400, "per_iteration": -4}, "bytes_per_tb": 512, "pattern": "strided",
         "data_dependent": false, "iteration_dependent": true, "estimated": false},
        {"alloc": 1, "reads": 0, "writes": 64, "bytes": 256, "bytes_per_tb": 256,
         "pattern": "irregular", "data_dependent": true, "estimated": true}],
      "refs": [
        {"id": 7, "alloc": 0, "kind": "read", "bytes": 4, "count": {"base": 100, "per_iteration": -1},
         "bytes_per_tb": 512, "pattern": "strided",
         "window": {"start": {"base": 0, "per_iteration": 256}, "span": 256}},
        {"id": 3, "alloc": 1, "kind": "atomic", "bytes": 4, "count": 64, "bytes_per_tb": 256,
         "pattern": "irregular", "data_dependent": true}]}],
    "launches": [
      {"launch": 0, "kernel": 0, "iteration": 0, "next_use": [[0, 1], [1, 1]]},
      {"launch": 1, "kernel": 0, "iteration": 1, "next_use": [[0, -1], [1, -1]]}]
  })");
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Hints, ParsesTheDocumentedSchema) {
  const Hints h = Hints::from_json(sample(), "h.json");
  EXPECT_EQ(h.version, 1u);
  EXPECT_EQ(h.source, trace::HintSource::Static);
  ASSERT_EQ(h.kernels.size(), 1u);
  const trace::KernelHint& k = h.kernels[0];
  ASSERT_EQ(k.uses.size(), 2u);
  EXPECT_EQ(k.uses[0].reads.at(0), 100u);
  EXPECT_EQ(k.uses[0].reads.at(30), 70u);
  EXPECT_EQ(k.uses[0].reads.at(-1), 100u);  // outside a loop = iteration 0
  EXPECT_EQ(k.uses[0].reads.at(200), 0u);   // clamps at 0
  EXPECT_EQ(k.uses[1].writes.at(5), 64u);   // atomics count as writes
  EXPECT_EQ(k.refs[0].window->start.at(3), 768u);
  EXPECT_EQ(k.refs[1].kind, AccessKind::Atomic);
  EXPECT_EQ(k.use(1)->pattern, trace::AccessPattern::Irregular);
  EXPECT_EQ(k.use(2), nullptr);
  EXPECT_EQ(h.launches[0].next_use,
            (std::vector<std::pair<std::uint32_t, std::int64_t>>{{0, 1}, {1, 1}}));
}

TEST(Hints, JsonAndFileRoundTrip) {
  const Hints h = Hints::from_json(sample(), "h.json");
  EXPECT_EQ(Hints::from_json(h.to_json(), "again"), h);
  TempDir dir;
  h.save(dir.file("h.json"));
  EXPECT_EQ(Hints::load(dir.file("h.json")), h);
  // A profile-derived file of the same schema.
  json p = sample();
  p["source"] = "profile";
  EXPECT_EQ(Hints::from_json(p, "p").source, trace::HintSource::Profile);
}

TEST(Hints, BadInputNamesFileAndField) {
  auto broken = [](const std::function<void(json&)>& edit) {
    json j = sample();
    edit(j);
    return error_of([&] { (void)Hints::from_json(j, "h.json"); });
  };
  EXPECT_EQ(broken([](json& j) { j["version"] = 2; }),
            "h.json: hints.version: unsupported hints version 2 (this build reads version 1)");
  EXPECT_EQ(broken([](json& j) { j.erase("version"); }),
            "h.json: hints.version: missing required field");
  EXPECT_EQ(broken([](json& j) { j["source"] = "guess"; }),
            "h.json: hints.source: expected \"static\" or \"profile\", got 'guess'");
  EXPECT_EQ(broken([](json& j) { j["format"] = "other"; }),
            "h.json: hints.format: expected \"uvmsim-hints\"");
  EXPECT_EQ(broken([](json& j) { j["kernels"][0]["refs"][0]["kind"] = "load"; }),
            "h.json: hints.kernels[0].refs[0].kind: unknown access kind 'load' (expected read, "
            "write or atomic)");
  EXPECT_EQ(broken([](json& j) { j["kernels"][0]["uses"][1]["pattern"] = "zigzag"; }),
            "h.json: hints.kernels[0].uses[1].pattern: unknown access pattern 'zigzag' (expected "
            "streaming, strided, tiled, shared or irregular)");
  EXPECT_EQ(broken([](json& j) { j["kernels"][0]["uses"][0]["reads"] = 99; }),
            "h.json: hints.kernels[0].uses[0].reads: disagrees with the sum over this "
            "allocation's refs");
  EXPECT_EQ(broken([](json& j) { j["kernels"][0]["uses"][0]["iteration_dependent"] = false; }),
            "h.json: hints.kernels[0].uses[0].iteration_dependent: disagrees with the sum over "
            "this allocation's refs");
  EXPECT_EQ(broken([](json& j) { j["kernels"][0]["refs"][1]["id"] = 7; }),
            "h.json: hints.kernels[0].refs[1].id: duplicate ref id 7 (ref ids are unique across "
            "the whole program)");
  EXPECT_EQ(broken([](json& j) { j["kernels"][0]["uses"][1]["alloc"] = 5; }),
            "h.json: hints.kernels[0].uses[1].alloc: allocation 5 is not listed");
  EXPECT_EQ(broken([](json& j) { j["kernels"][0]["refs"][0]["bytes"] = 0; }),
            "h.json: hints.kernels[0].refs[0].bytes: must be positive");
  EXPECT_EQ(broken([](json& j) { j["kernels"][0]["refs"][0]["count"] = "many"; }),
            "h.json: hints.kernels[0].refs[0].count: expected an integer or {\"base\": B, "
            "\"per_iteration\": S}");
  EXPECT_EQ(broken([](json& j) { j["launches"][0]["next_use"][0][1] = 0; }),
            "h.json: hints.launches[0].next_use[0][1]: next use 0 must be -1 or a later launch "
            "(1..1)");
  EXPECT_EQ(broken([](json& j) { j["launches"][1]["launch"] = 5; }),
            "h.json: hints.launches[1].launch: expected 1");
  EXPECT_EQ(broken([](json& j) { j["launches"][1]["kernel"] = 3; }),
            "h.json: hints.launches[1].kernel: kernel 3 is not listed");
  EXPECT_EQ(broken([](json& j) { j["allocations"][1]["size"] = 0; }),
            "h.json: hints.allocations[1].size: must be positive");
  TempDir dir;
  { std::ofstream(dir.file("bad.json")) << "{\"version\": "; }
  EXPECT_EQ(error_of([&] { (void)Hints::load(dir.file("bad.json")); }),
            dir.file("bad.json") +
                ": not valid JSON: parse error at line 1, column 13: syntax error while parsing "
                "value - unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(error_of([&] { (void)Hints::load(dir.file("none.json")); }),
            dir.file("none.json") + ": open: cannot read the hints file");
}

TEST(Hints, KernelEntriesOfOneFunctionShareRefIds) {
  // A second entry of kernel "k" (another grid or pointer binding) lists the same instructions.
  json j = sample();
  json second = j["kernels"][0];
  second["kernel"] = 1;
  j["kernels"].push_back(second);
  const Hints h = Hints::from_json(j, "h.json");
  EXPECT_EQ(h.kernels[1].refs[0].id, 7u);
  // Another function may not reuse them, and one kernel may not list an id twice.
  j["kernels"][1]["name"] = "other";
  EXPECT_EQ(error_of([&] { (void)Hints::from_json(j, "h.json"); }),
            "h.json: hints.kernels[1].refs[0].id: duplicate ref id 7 (ref ids are unique across "
            "the whole program)");
  j = sample();
  j["kernels"][0]["refs"][1]["id"] = 7;
  EXPECT_NE(error_of([&] { (void)Hints::from_json(j, "h.json"); }).find("duplicate ref id 7"),
            std::string::npos);
}

/// Writes a trace with allocations a, b and kernel k launched `launches` times, with `hints`.
void write_trace(const std::string& path, std::optional<Hints> hints, int launches) {
  trace::Metadata m;
  m.workload = "w";
  m.allocations = {{0, "a", 0x7f0000000000, 8192, true, false},
                   {1, "b", 0x7f0000400000, 4096, true, false}};
  trace::KernelInfo k;
  k.name = "k";
  m.kernels.push_back(k);
  m.hints = std::move(hints);
  trace::TraceWriter w(path, m);
  for (int i = 0; i < launches; ++i) {
    w.begin_launch(0, i);
    w.begin_block(1);
    w.end_block();
  }
  w.finish();
}

TEST(Hints, EmbeddedInTraceMetadata) {
  TempDir dir;
  const Hints h = Hints::from_json(sample(), "h.json");
  write_trace(dir.file("t.uvt"), h, 2);
  {
    trace::TraceReader r(dir.file("t.uvt"));
    ASSERT_TRUE(r.metadata().hints.has_value());
    EXPECT_EQ(*r.metadata().hints, h);
  }
  // Old traces (no "hints" key) stay valid.
  write_trace(dir.file("old.uvt"), std::nullopt, 1);
  EXPECT_FALSE(trace::TraceReader(dir.file("old.uvt")).metadata().hints.has_value());
  // Hints that do not describe the trace.
  write_trace(dir.file("short.uvt"), h, 1);
  EXPECT_EQ(error_of([&] { trace::TraceReader r(dir.file("short.uvt")); }),
            dir.file("short.uvt") + ": hints.launches: 2 launches, the trace has 1");
  trace::Metadata m = trace::TraceReader(dir.file("t.uvt")).metadata();
  json j = m.to_json();
  j["hints"]["allocations"][1]["name"] = "x";
  EXPECT_EQ(error_of([&] { (void)trace::Metadata::from_json(j, "t.uvt"); }),
            "t.uvt: hints.allocations[1]: 'x' (4096 bytes) does not match the trace's "
            "allocation 'b' (4096 bytes)");
  j = m.to_json();
  j["hints"]["kernels"][0]["refs"][0]["alloc"] = 1;
  j["hints"]["kernels"][0]["refs"][0]["window"] = 3;
  EXPECT_EQ(error_of([&] { (void)trace::Metadata::from_json(j, "t.uvt"); }),
            "t.uvt: metadata.hints.kernels[0].refs[0].window: expected an object");
  j = m.to_json();
  j["hints"]["version"] = 9;
  EXPECT_EQ(error_of([&] { (void)trace::Metadata::from_json(j, "t.uvt"); }),
            "t.uvt: metadata.hints.version: unsupported hints version 9 (this build reads "
            "version 1)");
}

TEST(Hints, TraceHintsCommandWritesAStandaloneFile) {
  TempDir dir;
  const std::string t = gen_trace(dir, "floyd-warshall", 2 * 64 * 64 * 4, {{"passes", "2"}});
  const auto r = cli_ok({"trace", "hints", t});
  const Hints printed = Hints::from_json(json::parse(r.out), "stdout");
  EXPECT_EQ(printed, *trace::TraceReader(t).metadata().hints);
  cli_ok({"trace", "hints", t, "-o", dir.file("h.json")});
  EXPECT_EQ(Hints::load(dir.file("h.json")), printed);
  EXPECT_NE(cli_ok({"trace", "info", t})
                .out.find("hints:         static, version 1, 1 kernels, "
                          "5 refs, 2 launches"),
            std::string::npos);
  EXPECT_EQ(json::parse(cli_ok({"trace", "info", t, "--json"}).out)["hints"]["refs"], 5);
  gen_trace(dir, "regular", 1 << 20);
  const auto bad = cli({"trace", "hints", dir.file("regular.uvt")});
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.err, "uvmsim trace: error: " + dir.file("regular.uvt") +
                         ": hints: the trace has no hints\n");
}

}  // namespace
}  // namespace uvmsim::test
