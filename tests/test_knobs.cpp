// Knobs are declared once (core/knob.h): checking and normalising values, the engine's table and
// its defaults, the listings and docs/knobs.md generated from the declarations, and the knob-value
// defects found by fuzzing (each reproduced here).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/knob.h"
#include "policies/registry.h"
#include "test_util.h"

namespace uvmsim::test {
namespace {

using nlohmann::json;

/// The error check() raises for `v`, or "" if it accepts it.
std::string check_error(const Knob& k, const json& v) {
  return error_of([&] { k.check(v, "here"); });
}

// ---------------------------------------------------------------- the Knob type

template <typename B>
concept IntegerBound = requires(B b) {
  Knob::integer("k", 0, 0, b, "doc");
};

TEST(Knob, IntegerBoundsMustBeIntegers) {
  static_assert(IntegerBound<int> && IntegerBound<std::uint64_t>);
  static_assert(!IntegerBound<double>);  // 1e12 as a bound would be rounded silently
  EXPECT_THROW(Knob::integer("k", 5, 0, 3, "default outside its range"), std::logic_error);
  EXPECT_THROW(Knob::choice("k", "c", {"a", "b"}, "default not a choice"), std::logic_error);
}

TEST(Knob, IntegersAreExact) {
  const Knob k = Knob::integer("engine.seed", 1, 0, UINT64_MAX, "seed");
  EXPECT_EQ(k.check(json(std::uint64_t{18446744073709551615u}), "w").get<std::uint64_t>(),
            18446744073709551615u);
  // Above 2^53 a double would round 9007199254740993 to ...992.
  EXPECT_EQ(k.check(json("9007199254740993"), "w").get<std::uint64_t>(), 9007199254740993u);
  EXPECT_EQ(k.check(json(std::uint64_t{9007199254740993u}), "w").get<std::uint64_t>(),
            9007199254740993u);
  EXPECT_EQ(k.check(json(4096.0), "w").get<std::uint64_t>(), 4096u);
  EXPECT_EQ(k.check(json("64K"), "w").get<std::uint64_t>(), 65536u);
  // A float past 2^53 may already be a rounded spelling: it must be written as an integer.
  EXPECT_EQ(check_error(k, json(1e17)), "here: engine.seed: expected an integer, got 1e+17");
  EXPECT_EQ(check_error(k, json(2.5)), "here: engine.seed: expected an integer, got 2.5");
  EXPECT_EQ(check_error(k, json(-1)),
            "here: engine.seed: value -1 out of range [0, 18446744073709551615]");
  const Knob s = Knob::integer("k", 0, -5, 5, "signed");
  EXPECT_EQ(s.check(json(-5), "w").get<std::int64_t>(), -5);
  EXPECT_EQ(s.check(json("-5"), "w").get<std::int64_t>(), -5);
  EXPECT_EQ(check_error(s, json(-6)), "here: k: value -6 out of range [-5, 5]");
  EXPECT_EQ(check_error(s, json(INT64_MIN)),
            "here: k: value -9223372036854775808 out of range [-5, 5]");
}

TEST(Knob, NumbersAndIntegersRejectNonDecimalText) {
  const Knob i = Knob::integer("gpu.num_sms", 28, 1, 4096, "SMs");
  const Knob n = Knob::number("gpu.clock_mhz", 1481, 1, 10000, "clock");
  // strtod accepted all of these: hexadecimal, leading space, inf, nan, a '+' sign.
  for (const char* s : {"0x10", " 5", "5 ", "+5", "inf", "nan", "1e400", "", "-"}) {
    EXPECT_NE(check_error(i, json(s)), "") << s;
    EXPECT_NE(check_error(n, json(s)), "") << s;
  }
  EXPECT_EQ(check_error(i, json("0x10")), "here: gpu.num_sms: expected an integer, got \"0x10\"");
  EXPECT_EQ(check_error(n, json(" 5")), "here: gpu.clock_mhz: expected a number, got \" 5\"");
  EXPECT_EQ(n.check(json("1.5e3"), "w").get<double>(), 1500.0);
  EXPECT_EQ(n.check(json(".5e1"), "w").get<double>(), 5.0);
  EXPECT_EQ(i.check(json("16"), "w").get<std::uint64_t>(), 16u);
  EXPECT_EQ(check_error(n, json(10000.5)),
            "here: gpu.clock_mhz: value 10000.5 out of range [1, 10000]");
}

TEST(Knob, BooleansAndChoicesDoNotTruncateIntegers) {
  const Knob b = Knob::boolean("thrashing.enable", true, "on");
  EXPECT_EQ(b.check(json(1), "w"), json(true));
  EXPECT_EQ(b.check(json(0), "w"), json(false));
  EXPECT_EQ(b.check(json("off"), "w"), json(false));
  // get<int>() made 2^32 + 1 a 1, i.e. true.
  EXPECT_EQ(check_error(b, json(std::uint64_t{4294967297u})),
            "here: thrashing.enable: expected true or false, got 4294967297");
  EXPECT_NE(check_error(b, json(2)), "");
  EXPECT_NE(check_error(b, json(1.0)), "");
  const Knob c = Knob::choice("driver.replay_policy", "once", {"block", "batch", "once"}, "r");
  EXPECT_EQ(c.check(json("batch"), "w"), json("batch"));
  EXPECT_EQ(check_error(c, json(std::uint64_t{4294967298u})),
            "here: driver.replay_policy: expected one of block|batch|once, got 4294967298");
  EXPECT_NE(check_error(c, json(1)), "");
}

TEST(Knob, SizeChoicesAcceptAnySpellingOfTheSize) {
  const Knob g = Knob::size_choice("g", "2M", {"64K", "2M", "16G"}, "granularity");
  EXPECT_EQ(g.check(json(65536), "w"), json("64K"));
  EXPECT_EQ(g.check(json("64KiB"), "w"), json("64K"));
  EXPECT_EQ(g.check(json("17179869184"), "w"), json("16G"));
  EXPECT_EQ(check_error(g, json("1G")), "here: g: expected one of 64K|2M|16G, got \"1G\"");
  EXPECT_EQ(check_error(g, json(65536.5)), "here: g: expected one of 64K|2M|16G, got 65536.5");
  EXPECT_EQ(g.default_value(), json("2M"));
}

TEST(Knob, NumberOrZeroExcludesTinyPositiveValues) {
  const Knob z = Knob::number_or_zero("cost.zero_fill_gbps", 0, 1e-3, 1e6, "rate");
  EXPECT_EQ(z.check(json(0), "w"), json(0.0));
  EXPECT_EQ(z.check(json(0.001), "w"), json(0.001));
  // 1e-300 GB/s made a zero-fill take ~1e306 ns, past any Tick.
  EXPECT_EQ(check_error(z, json(1e-300)),
            "here: cost.zero_fill_gbps: value 1e-300 out of range (0 or [0.001, 1e+06])");
  EXPECT_EQ(z.range(), "0 or 0.001 .. 1e+06");
}

TEST(Knob, CurvesRejectNonFiniteAndHugePoints) {
  const Knob c = Knob::curve("link.htod_curve", json::array(), "curve");
  EXPECT_EQ(c.check(json::parse("[[4096, 5000], [\"2M\", 180000.5]]"), "w").dump(),
            "[[4096,5000.0],[2097152,180000.5]]");
  for (const char* bad : {"[[4096, 1e30]]", "[[1e30, 5]]", "[[4096, 0]]", "[[0, 5]]",
                          "[[4096.5, 5]]", "[[\"inf\", 5]]", "[[\"nan\", 5]]",
                          "[[8192, 5], [4096, 6]]", "[[4096, 6], [8192, 5]]", "[]", "[4096]"})
    EXPECT_NE(check_error(c, json::parse(bad)), "") << bad;
  EXPECT_NE(check_error(c, json::array({json::array({4096, std::nan("")})})), "");
  EXPECT_NE(check_error(c, json::array({json::array({4096, INFINITY})})), "");
  EXPECT_EQ(check_error(c, json::parse("[[4096, 1e30]]")),
            "here: link.htod_curve: point [4096,1e+30] out of range (bytes in [1, 1099511627776], "
            "ns in (0, 1e+12])");
}

TEST(Knob, RangesAndDefaultsAsPeopleWriteThem) {
  // Integer ranges were printed through a double: "1 .. 1.67772e+07".
  EXPECT_EQ(find_config_knob("gpu.fault_buffer_entries")->range(), "1 .. 16777216");
  EXPECT_EQ(find_config_knob("engine.seed")->range(), "0 .. 18446744073709551615");
  EXPECT_EQ(find_config_knob("hbm.capacity")->range(), "2097152 .. 1000000000000000000");
  EXPECT_EQ(find_config_knob("cost.block_ns")->range(), "0 .. 1e+09");
  EXPECT_EQ(find_config_knob("driver.replay_policy")->range(), "block|batch|batch_flush|once");
  EXPECT_EQ(find_config_knob("driver.replay_policy")->default_text(), "batch_flush");
  EXPECT_EQ(find_config_knob("access_counters.granularity")->default_text(), "2M");
  EXPECT_EQ(find_config_knob("gpu.clock_mhz")->default_text(), "1481");
  EXPECT_EQ(find_config_knob("engine.hints")->default_text(), "\"\"");
  EXPECT_EQ(find_config_knob("link.htod_curve")->default_text(), "(required)");
}

// ---------------------------------------------------------------- the engine's declarations

TEST(ConfigKnobs, DefaultsAreTheStructInitialisers) {
  // The default shown by --list-knobs is the field's initialiser, normalised.
  const json j = SimConfig{}.to_json();
  ASSERT_EQ(config_knobs().size(), 115u);
  for (const auto& k : config_knobs()) {
    const auto dot = k.name().find('.');
    const json& v = j.at(k.name().substr(0, dot)).at(k.name().substr(dot + 1));
    if (k.type() == Knob::Type::Curve) {
      EXPECT_EQ(v, json::array()) << k.name();
      continue;
    }
    EXPECT_EQ(k.check(v, "default").dump(), k.default_value().dump()) << k.name();
  }
  EXPECT_EQ(find_config_knob("gpu.num_sms")->default_value(), json(28));
  EXPECT_EQ(SimConfig{}.gpu.num_sms, 28u);
  EXPECT_EQ(find_config_knob("nope.nope"), nullptr);
}

TEST(ConfigKnobs, EveryPolicyKnobDefaultPassesItsOwnCheck) {
  std::size_t n = 0;
  auto family = [&](const auto& entries) {
    for (const auto& e : entries)
      for (const auto& k : e.knobs) {
        ++n;
        if (k.default_value().is_null()) continue;
        EXPECT_EQ(k.check(k.default_value(), "t").dump(), k.default_value().dump())
            << e.name << "." << k.name();
      }
  };
  family(EvictionRegistry::all());
  family(PrefetchRegistry::all());
  family(PlacementRegistry::all());
  EXPECT_GT(n, 30u);
}

/// The golden files were written by the binary before knobs were declared once: to_json() keeps
/// its exact form (sweep point ids hash it).
std::string golden(const std::string& name) {
  std::ifstream in(std::string(UVMSIM_SOURCE_DIR) + "/tests/data/" + name);
  return json::parse(in).dump();
}

TEST(ConfigKnobs, ToJsonIsUnchanged) {
  EXPECT_EQ(SimConfig{}.to_json().dump(), golden("config_default.json"));
  SimConfig c;
  // (The old binary rounded seeds above 2^53, so the golden's seed is 2^53 - 1.)
  for (const char* s :
       {"access_counters.granularity=64K", "driver.replay_policy=once", "policy.lru.observe=false",
        "engine.seed=9007199254740991", "thrashing.enable=off", "hbm.capacity=4G",
        "cost.block_ns=4460.5", "link.htod_curve=[[4096,5000],[2097152,180000.5]]",
        "link.dtoh_curve=[[\"64K\",6000.25]]", "cost.zero_fill_gbps=100", "engine.eviction=lru",
        "gpu.name=mine"})
    c.set_from_string(s);
  EXPECT_EQ(c.to_json().dump(), golden("config_with_sets.json"));
  SimConfig d;
  d.apply_json(c.to_json(), "round trip");
  EXPECT_EQ(d.to_json().dump(), c.to_json().dump());
}

TEST(ConfigKnobs, SetValuesAreNormalised) {
  SimConfig c;
  c.set_from_string("engine.seed=18446744073709551615");
  EXPECT_EQ(c.engine.seed, std::numeric_limits<std::uint64_t>::max());
  c.set_from_string("engine.seed=9007199254740993");
  EXPECT_EQ(c.engine.seed, 9007199254740993u);
  c.set("access_counters.granularity", json(16777216), "w");
  EXPECT_EQ(c.access_counters.granularity, 16u << 20);
  EXPECT_EQ(c.to_json()["access_counters"]["granularity"], json(16777216));
  // Granularity was cast from a double unchecked; 2^64 + 65536 must not wrap to 64K.
  EXPECT_EQ(
      error_of([&] { c.set_from_string("access_counters.granularity=18446744073709617152"); }),
      "--set: access_counters.granularity: expected one of 64K|2M|16M|16G, got "
      "1.8446744073709617e+19");
  EXPECT_EQ(error_of([&] {
              c.set("access_counters.granularity", json("18446744073709617152"), "f.json");
            }),
            "f.json: access_counters.granularity: expected one of 64K|2M|16M|16G, got "
            "\"18446744073709617152\"");
  EXPECT_EQ(error_of([&] { c.set_from_string("driver.replay_policy=2"); }),
            "--set: driver.replay_policy: expected one of block|batch|batch_flush|once, got 2");
  EXPECT_EQ(error_of([&] { c.set_from_string("thrashing.enable=4294967297"); }),
            "--set: thrashing.enable: expected true or false, got 4294967297");
  EXPECT_EQ(error_of([&] { c.set_from_string("gpu.num_sms=0x10"); }),
            "--set: gpu.num_sms: expected an integer, got \"0x10\"");
  // A value with surrounding space is text, not JSON: " 5" is no number.
  EXPECT_EQ(error_of([&] { c.set_from_string("gpu.num_sms= 5"); }),
            "--set: gpu.num_sms: expected an integer, got \" 5\"");
  EXPECT_EQ(error_of([&] { c.set("gpu.clock_mhz", json(" 5"), "f.json"); }),
            "f.json: gpu.clock_mhz: expected a number, got \" 5\"");
  EXPECT_EQ(error_of([&] { c.set_from_string("link.htod_curve=[[4096,1e30]]"); }).substr(0, 30),
            "--set: link.htod_curve: point ");
  EXPECT_EQ(c.gpu.num_sms, 28u);  // failed settings change nothing
  EXPECT_EQ(error_of([&] { c.set_from_string("gpu.nope=1"); }),
            "--set: gpu.nope: unknown configuration key (uvmsim run --list-knobs lists them)");
}

// ---------------------------------------------------------------- simulated time

TEST(SimTime, TheLimitFitsInATick) {
  SimConfig c;
  // max_sim_time_s above 1.8e7 s made the limit's cast overflow (and wrap).
  EXPECT_EQ(error_of([&] { c.set_from_string("engine.max_sim_time_s=2e7"); }),
            "--set: engine.max_sim_time_s: value 20000000.0 out of range [0, 1e+06]");
  EXPECT_EQ(sim_time_limit(c.engine), Tick{1000000000000000000});  // 0: the horizon, 1e6 s
  c.set_from_string("engine.max_sim_time_s=1e6");
  EXPECT_EQ(sim_time_limit(c.engine), Tick{1000000000000000000});
  c.set_from_string("engine.max_sim_time_s=0.25");
  EXPECT_EQ(sim_time_limit(c.engine), Tick{250000000000});
  // The horizon leaves room for the largest event delays before 2^64 ps.
  EXPECT_LT(sim_time_limit(c.engine), std::numeric_limits<Tick>::max() / 16);
}

TEST(SimTime, CopyTimesSaturateInsteadOfWrapping) {
  TransferCurve steep;
  steep.points = {{1, 1e12}, {2, 2e12}};  // accepted: 1000 s per byte past the first byte
  EXPECT_EQ(steep.time_ps(1), Tick{1000000000000000});
  EXPECT_EQ(steep.time_ps(std::uint64_t{1} << 40), Tick{1000000000000000});
}

TEST(SimTime, SlowestAcceptedSettingsDoNotWrap) {
  // Every driver cost and latency at its maximum (1 s): the run takes at least one second per
  // fault batch, and its time must not have wrapped round to something small.
  TempDir d;
  const auto t = d.file("t.uvt");
  cli_ok({"gen", "regular", "--footprint", "4M", "-o", t});
  const auto stats = d.file("s.json");
  std::vector<std::string> args = {"run", "--gpu", "gtx1080ti",   "--trace",
                                   t,     "-q",    "--stats-out", stats};
  for (const auto& k : config_knobs())
    if (k.name().starts_with("cost.") && k.name().ends_with("_ns"))
      args.insert(args.end(), {"--set", k.name() + "=1e9"});
  for (const char* s :
       {"gpu.fault_latency_ns=1e9", "gpu.interrupt_latency_ns=1e9", "tlb.walk_latency_ns=1e9",
        "hbm.latency_ns=1e9", "link.remote_latency_ns=1e9", "thrashing.lapse_us=1e6"})
    args.insert(args.end(), {"--set", s});
  cli_ok(args);
  const json s = read_json(stats);
  const double batches = s["fault_batches"].get<double>();
  ASSERT_GT(batches, 0);
  EXPECT_GE(s["sim_time_ns"].get<double>(), batches * 1e9);
  EXPECT_LT(s["sim_time_ns"].get<double>(), 1e15);  // the 1e6 s horizon
  EXPECT_FALSE(s["truncated"].get<bool>());
}

// ---------------------------------------------------------------- presets and sources

TEST(ConfigKnobs, PresetWithoutCopyCurvesIsRejected) {
  TempDir d;
  const auto p = d.file("nolink.json");
  std::ofstream(p) << R"({"gpu": {"num_sms": 4}})";
  // Accepted before, and every copy took zero time.
  EXPECT_EQ(error_of([&] { SimConfig::from_preset(p); }),
            p + ": link.htod_curve: missing: a preset must give the copy-time curve (in its "
                "\"link\" section)");
  std::ofstream(p) << R"({"link": {"htod_curve": [[4096, 5000]]}})";
  EXPECT_EQ(error_of([&] { SimConfig::from_preset(p); }).find(p + ": link.dtoh_curve: missing"),
            0u);
}

TEST(ConfigKnobs, EnginePolicyErrorsNameWhereTheyWereSet) {
  SimConfig c = SimConfig::from_preset("gtx1080ti");
  c.set_from_string("engine.eviction=nonesuch");
  // The error named --eviction although the value came from --set.
  EXPECT_EQ(error_of([&] { validate_policy_params(c); }).substr(0, 67),
            "--set: engine.eviction: unknown eviction policy 'nonesuch' (known: ");
  c.set("engine.eviction", "lru", "--eviction");
  c.set("engine.prefetch", "fdp+", "f.json");
  EXPECT_EQ(error_of([&] { validate_policy_params(c); }),
            "f.json: engine.prefetch: empty name in combined prefetch policy 'fdp+'");
  c.set("engine.prefetch", "fdp+rgp", "f.json");
  c.set("engine.placement", "nowhere", "--placement");
  EXPECT_EQ(error_of([&] { validate_policy_params(c); }).substr(0, 65),
            "--placement: engine.placement: unknown placement policy 'nowhere'");
  c.set("engine.placement", "driver", "--placement");
  EXPECT_EQ(error_of([&] { validate_policy_params(c); }), "");
}

TEST(ConfigKnobs, CliErrorsNameSetAndTheKey) {
  TempDir d;
  const auto t = d.file("t.uvt");
  cli_ok({"gen", "regular", "--footprint", "4M", "-o", t});
  auto r = cli({"run", "--gpu", "gtx1080ti", "--trace", t, "--set", "engine.eviction=nope"});
  EXPECT_EQ(r.code, 2);  // a bad flag value is a usage error
  EXPECT_EQ(r.err.find("uvmsim run: error: --set: engine.eviction: unknown eviction policy 'nope'"),
            0u)
      << r.err;
  r = cli({"run", "--gpu", "gtx1080ti", "--trace", t, "--eviction", "tournament", "--set",
           "policy.tournament.policies=lru,nope"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--set: policy.tournament.policies: unknown eviction policy 'nope'"),
            std::string::npos)
      << r.err;
  // Out-of-range and non-integer values of an integer knob: one line naming the flag and the
  // knob, exit 2; the same value in a preset file names the file, also exit 2 (the configuration
  // is what the user asked for: nothing ran; README "Reliability").
  for (const auto& [set, msg] : std::vector<std::pair<std::string, std::string>>{
           {"gpu.num_sms=0", "--set: gpu.num_sms: value 0 out of range [1, 4096]"},
           {"gpu.num_sms=2.5", "--set: gpu.num_sms: expected an integer, got 2.5"},
           {"hbm.capacity=1e18x", "--set: hbm.capacity: expected an integer, got \"1e18x\""},
           {"engine.max_sim_time_s=2e7",
            "--set: engine.max_sim_time_s: value 20000000.0 out of range [0, 1e+06]"}}) {
    r = cli({"run", "--gpu", "gtx1080ti", "--trace", t, "--set", set});
    EXPECT_EQ(r.code, 2) << set;
    EXPECT_EQ(r.err, "uvmsim run: error: " + msg + "\n");
  }
  const auto preset = d.file("p.json");
  std::ofstream(preset) << R"({"gpu": {"num_sms": 2.5}, "link": {"htod_curve": [[4096, 5000]],
      "dtoh_curve": [[4096, 5000]]}})";
  r = cli({"run", "--gpu", preset, "--trace", t});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "uvmsim run: error: " + preset + ": gpu.num_sms: expected an integer, got 2.5\n");
  r = cli({"run", "--list-knobs", "--format", "html"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "uvmsim run: error: --format: html: expected text, markdown or json\n");
}

// ---------------------------------------------------------------- listings and docs

TEST(KnobListing, ListKnobsPrintsEveryKnobWithExactRanges) {
  const auto r = cli_ok({"run", "--list-knobs"});
  EXPECT_NE(r.out.find("gpu.fault_buffer_entries"), std::string::npos);
  EXPECT_NE(r.out.find("[1 .. 16777216]"), std::string::npos);
  EXPECT_EQ(r.out.find("e+07"), std::string::npos);
  EXPECT_NE(r.out.find("policy.mru.skip"), std::string::npos);
  std::istringstream lines(r.out);
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line);) n += line.starts_with("      ");
  std::size_t policy_knobs = 0;
  for (const auto& e : EvictionRegistry::all()) policy_knobs += e.knobs.size();
  for (const auto& e : PrefetchRegistry::all()) policy_knobs += e.knobs.size();
  for (const auto& e : PlacementRegistry::all()) policy_knobs += e.knobs.size();
  EXPECT_EQ(n, config_knobs().size() + policy_knobs);
  const json j = json::parse(cli_ok({"run", "--list-knobs", "--format", "json"}).out);
  EXPECT_EQ(j.size(), n);
  EXPECT_EQ(j[0]["name"], "system.gpus");
  EXPECT_EQ(j[0]["default"], 1);
  EXPECT_EQ(j[0]["range"], "1 .. 16");
  EXPECT_EQ(j[1]["name"], "system.peer");
  EXPECT_EQ(j[1]["default"], "none");
  EXPECT_EQ(j[1]["range"], "none|pcie|nvlink");
  EXPECT_EQ(j[6]["name"], "gpu.num_sms");
  EXPECT_EQ(j[6]["default"], 28);
  EXPECT_EQ(j[6]["range"], "1 .. 4096");
  EXPECT_NE(cli({"run", "--list-knobs", "--format", "html"}).err.find("--format: html"),
            std::string::npos);
}

TEST(KnobListing, DocsKnobTableIsGenerated) {
  // docs/knobs.md is `uvmsim run --list-knobs --format markdown`; regenerate it after changing
  // a declaration: build/uvmsim run --list-knobs --format markdown > docs/knobs.md
  // (The real binary: this test binary registers test-only policies.)
  std::ifstream in(std::string(UVMSIM_SOURCE_DIR) + "/docs/knobs.md");
  const std::string doc{std::istreambuf_iterator<char>(in), {}};
  FILE* p =
      popen((std::string(UVMSIM_BINARY) + " run --list-knobs --format markdown").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string generated;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) generated.append(buf, n);
  ASSERT_EQ(pclose(p), 0);
  EXPECT_GT(generated.size(), 10000u);
  EXPECT_EQ(doc, generated);
}

}  // namespace
}  // namespace uvmsim::test
