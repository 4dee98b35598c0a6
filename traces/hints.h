// Static (compiler-style) hints about a program's memory accesses: per kernel and allocation, how
// much it accesses, how large one threadblock's window is, whether offsets depend on the host-loop
// iteration or on loaded data, and per launch when each allocation is used next. They feed the
// placement schemes of SUV (Pratheek et al., MICRO 2024, §V-B) and of Li & Chapman (SC 2019,
// §4). The same schema is embedded in a trace's metadata ("hints") by the workload generators
// (source "static") and stands alone as a JSON file (a compiler's output, or `uvmsim analyze`'s
// profile-derived hints, source "profile"). docs/hints.md is the reference.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"

namespace uvmsim::trace {

struct Metadata;

/// Version of the hints schema this build reads and writes ("version" field).
constexpr std::uint32_t kHintsVersion = 1;

/// Who produced the hints: a static analysis (or a generator that knows its kernels' code), or a
/// profile of a trace (an upper bound on what a compiler could know).
enum class HintSource : std::uint8_t { Static = 0, Profile = 1 };

/// How a kernel's threads walk an allocation (docs/hints.md defines each class).
enum class AccessPattern : std::uint8_t {
  Streaming = 0,  ///< TB-indexed contiguous slices, each element touched O(1) times per launch
  Strided = 1,    ///< consecutive accesses of a thread or warp are a row (>= a page) apart
  Tiled = 2,      ///< a TB works on a sub-block that other TBs reuse (e.g. a row band)
  Shared = 3,     ///< every TB walks (nearly) the whole allocation (e.g. gemm's B, gemv's x)
  Irregular = 4,  ///< data-dependent addresses (indirect, pointer chasing, hashing)
};

const char* to_string(HintSource s);
const char* to_string(AccessPattern p);

/// A quantity that may depend on the host-loop iteration `it` of the launch: a polynomial of
/// degree <= 2, base + per_iteration * it + per_iteration_squared * it^2 (it = 0 for launches
/// outside a loop). Triangular loop nests (lu, gramschmidt) give linear or quadratic counts in the
/// outer induction variable. Negative results clamp to 0, results above INT64_MAX to INT64_MAX (so
/// that adding two of them cannot wrap).
///
/// The coefficients come from files: arithmetic on them is checked, and a result that does not fit
/// in 64 bits throws PolyOverflow rather than wrapping (signed overflow is undefined behaviour, and
/// a wrapped count would silently change placement decisions).
struct PolyOverflow : std::overflow_error {
  PolyOverflow() : std::overflow_error("hint polynomial arithmetic overflows 64 bits") {}
};

struct Poly {
  std::int64_t base = 0;
  std::int64_t per_iteration = 0;
  std::int64_t per_iteration_squared = 0;
  Poly() = default;
  Poly(std::int64_t b, std::int64_t step = 0, std::int64_t sq = 0)  // NOLINT: implicit from int
      : base(b), per_iteration(step), per_iteration_squared(sq) {}
  std::uint64_t at(std::int32_t iteration) const;
  Poly operator+(const Poly& o) const;
  Poly operator*(std::int64_t k) const;
  /// Product of two polynomials of degree <= 1 (throws std::logic_error beyond degree 2).
  Poly operator*(const Poly& o) const;
  bool operator==(const Poly&) const = default;
};

/// The byte window [start, start + span) of an allocation that an iteration-dependent memop
/// touches in iteration `it` (SUV's min offset and span, §V-B "Calculating span").
struct IterationWindow {
  Poly start;  ///< start.base = offset at iteration 0, start.per_iteration = shift per iteration
  Poly span;
  bool operator==(const IterationWindow&) const = default;
};

/// One static load/store instruction (SUV's "memop"); `id` is the ref_id of its trace records.
struct RefHint {
  std::uint32_t id = 0;
  std::uint32_t alloc = 0;
  AccessKind kind = AccessKind::Read;
  std::uint32_t bytes = 4;  ///< bytes one thread accesses per execution
  Poly count;               ///< thread-level executions per launch (upper bound if estimated)
  Poly bytes_per_tb;        ///< extent of one TB's addresses (max - min + bytes), max over TBs
  AccessPattern pattern = AccessPattern::Streaming;
  bool data_dependent = false;  ///< address computed from loaded data (indirect, pointer chase)
  bool conditional = false;     ///< under a data-dependent branch: `count` assumes it is taken
  std::optional<IterationWindow> window;  ///< set iff the offset depends on the host iteration
  bool operator==(const RefHint&) const = default;
};

/// What one kernel does to one allocation, per launch.
struct UseHint {
  std::uint32_t alloc = 0;
  Poly reads, writes;  ///< thread-level loads / stores (atomics count as writes)
  Poly bytes;          ///< bytes accessed (sum over memops of count x bytes)
  Poly bytes_per_tb;   ///< one TB's working set: the largest extent of its memops
  AccessPattern pattern = AccessPattern::Streaming;
  bool data_dependent = false;       ///< some memop's address depends on loaded data
  bool iteration_dependent = false;  ///< some memop has an iteration window
  bool estimated = false;            ///< counts are upper bounds (data-dependent or conditional)
  bool operator==(const UseHint&) const = default;
};

struct KernelHint {
  std::uint32_t kernel = 0;  ///< kernel id in the trace metadata
  std::string name;
  std::vector<UseHint> uses;  ///< one per allocation the kernel accesses
  std::vector<RefHint> refs;  ///< optional: its memops
  const UseHint* use(std::uint32_t alloc) const;
  bool operator==(const KernelHint&) const = default;
};

struct LaunchHint {
  std::uint32_t launch = 0;
  std::uint32_t kernel = 0;
  std::int32_t iteration = -1;
  /// For every allocation the kernel uses: the index of the next launch that uses it, -1 if none
  /// (Li & Chapman's target reuse distance is next - launch).
  std::vector<std::pair<std::uint32_t, std::int64_t>> next_use;
  bool operator==(const LaunchHint&) const = default;
};

struct AllocationHint {
  std::uint32_t id = 0;
  std::string name;
  std::uint64_t size = 0;
  bool operator==(const AllocationHint&) const = default;
};

struct Hints {
  std::uint32_t version = kHintsVersion;
  HintSource source = HintSource::Static;
  std::string workload;
  std::vector<AllocationHint> allocations;
  std::vector<KernelHint> kernels;
  std::vector<LaunchHint> launches;  ///< may be empty (no launch sequence known)

  const KernelHint* kernel(std::uint32_t id) const;
  nlohmann::json to_json() const;
  /// Parses and validates; every problem is a UserError "<where>: <path>.<field>: <message>".
  static Hints from_json(const nlohmann::json& j, const std::string& where,
                         const std::string& path = "hints");
  /// A standalone hints file (the schema's top-level object).
  static Hints load(const std::filesystem::path& file);
  void save(const std::filesystem::path& file) const;
  /// Checks that the hints describe this trace: allocation ids, names and sizes, kernel ids and
  /// names, and (when `launches` is given) the number of launches and their kernels.
  void check_against(const Metadata& meta, const std::string& where,
                     const std::vector<std::uint32_t>* launch_kernels = nullptr) const;
  bool operator==(const Hints&) const = default;
};

}  // namespace uvmsim::trace
