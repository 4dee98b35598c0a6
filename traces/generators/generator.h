// Synthetic workload generators (`uvmsim gen`). Each generator registers itself at static
// initialisation with a name, a one-line description, its documented parameters and a function
// that writes the trace. docs/generators.md describes every generator.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "traces/trace.h"

namespace uvmsim::gen {

using ParamMap = std::map<std::string, std::string>;

struct ParamSpec {
  std::string name;
  std::string default_value;  ///< used when the parameter is not given (unless `required`)
  std::string doc;
  bool required = false;
};

/// The parameters of one generator run after defaults were applied. Typed getters parse a value
/// (throwing UserError "--param NAME: ..." for a bad one) and record the parsed value in
/// `recorded()`, which becomes the trace's metadata "params".
class ResolvedParams {
 public:
  ResolvedParams(ParamMap values, nlohmann::json recorded);
  const std::string& text(const std::string& name) const;
  /// A byte size with optional K/M/G/T suffix (see parse_size).
  std::uint64_t size(const std::string& name);
  /// A decimal integer in [min, max].
  std::uint64_t integer(const std::string& name, std::uint64_t min, std::uint64_t max);
  /// One of `choices`.
  std::string choice(const std::string& name, const std::vector<std::string>& choices);
  /// A non-empty comma-separated list of sizes.
  std::vector<std::uint64_t> size_list(const std::string& name);
  const nlohmann::json& recorded() const { return recorded_; }
  [[noreturn]] void fail(const std::string& name, const std::string& msg) const;

 private:
  ParamMap values_;
  nlohmann::json recorded_;
};

struct GenContext {
  std::string generator;
  std::uint64_t footprint = 0;
  std::uint64_t seed = 0;
  ResolvedParams params;
  std::filesystem::path output;
  trace::WriterOptions writer_options;

  /// Metadata pre-filled with the workload name and the resolved parameters. Generators read all
  /// their parameters before calling this, so `params` is complete.
  trace::Metadata metadata() const;
};

using GenerateFn = std::function<void(GenContext&)>;

struct Generator {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  GenerateFn run;
  /// Access-pattern class shown by `gen --list`: streaming, tiled-reuse, cyclic,
  /// iterative-disjoint, irregular or micro (docs/workloads.md).
  std::string pattern = "micro";
  /// --footprint when none is given.
  std::uint64_t default_footprint = std::uint64_t{64} << 20;
  /// Which benchmark it emulates (suite and kernel), for `gen --list`.
  std::string source;

  Generator(std::string name_, std::string description_, std::vector<ParamSpec> params_,
            GenerateFn run_, std::string pattern_ = "micro",
            std::uint64_t default_footprint_ = std::uint64_t{64} << 20, std::string source_ = {})
      : name(std::move(name_)),
        description(std::move(description_)),
        params(std::move(params_)),
        run(std::move(run_)),
        pattern(std::move(pattern_)),
        default_footprint(default_footprint_),
        source(std::move(source_)) {}
};

/// Registers a generator; a duplicate name is a programming error (std::logic_error).
void register_generator(Generator g);
/// All registered generators, sorted by name.
std::vector<const Generator*> generators();
const Generator* find_generator(const std::string& name);

/// Parameters every generator takes (handled by generate(), not by the generator): `alloc`.
const std::vector<ParamSpec>& common_params();
/// True if `g` takes parameter `name` (its own or a common one).
bool takes_param(const Generator& g, const std::string& name);
/// "its parameters: a, b; every generator's: alloc", for unknown-parameter errors.
std::string param_list(const Generator& g);

/// Resolves `params` against the generator's specs (unknown key, missing required parameter and
/// unknown generator are UserErrors naming them) and writes the trace to `output`.
void generate(const std::string& name, std::uint64_t footprint, const ParamMap& params,
              std::uint64_t seed, const std::filesystem::path& output,
              trace::WriterOptions opts = {});

/// Static registration helper: `static const Registrar reg{Generator{...}};`
struct Registrar {
  explicit Registrar(Generator g) { register_generator(std::move(g)); }
};

// ---- helpers shared by the generators ---------------------------------------------------------

/// Virtual base of the first allocation; matches where the CUDA driver places large managed
/// allocations on x86-64 Linux.
inline constexpr Addr kFirstAllocationBase = 0x7f0000000000;

/// Appends allocations with the given names and sizes, each at a 2 MB-aligned base followed by a
/// 2 MB guard gap, with ids 0, 1, 2, ... Returns their bases.
std::vector<Addr> place_allocations(
    trace::Metadata& meta, const std::vector<std::pair<std::string, std::uint64_t>>& allocs,
    bool managed = true);

/// Writes one warp-wide memory instruction: `lane_va[i]` is the address of active lane i. Lanes
/// are grouped by 4 KB page in lane order (first occurrence), one record per distinct page with
/// the VA of its first lane and bytes = lanes in that page * `lane_bytes`. The first record gets
/// `gap`, the others 0 (they issue as the same instruction). With `repeat` > 1 every record
/// stands for that many executions, `gap` apart (the format's repeat count).
void warp_instruction(trace::TraceWriter& w, std::uint32_t warp, std::span<const Addr> lane_va,
                      std::uint32_t lane_bytes, AccessKind kind, std::uint32_t ref,
                      std::uint32_t gap, std::uint32_t repeat = 1);

/// Uniform integer in [0, n), n > 0, from the raw output of mt19937_64 (whose sequence the
/// standard fixes) by rejection sampling. std::uniform_int_distribution and std::shuffle are
/// implementation-defined, so using them would make traces differ between standard libraries.
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n);

/// A permutation of 0..n-1 by Fisher-Yates over uniform_below, seeded with `seed`.
std::vector<std::uint64_t> random_permutation(std::uint64_t n, std::uint64_t seed);

}  // namespace uvmsim::gen
