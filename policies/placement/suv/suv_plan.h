// SUV's decisions as pure functions of the static hints (Pratheek et al., "SUV: Static Analysis
// Guided Unified Virtual Memory", MICRO 2024): the classification of every data structure a
// kernel launch accesses (§V-A, §V-B), Algorithm 1's per-launch placement (§V-C) and Algorithm 2's
// iteration windows (§V-C). The policy (suv.cpp) applies them through the driver's placement
// actions; the unit tests check them on crafted hints.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "traces/hints.h"
#include "traces/trace.h"

namespace uvmsim::suv {

/// The thresholds of SUV (all knobs of the `suv` placement policy).
struct Params {
  double temporal_wss_fraction = 0.5;  ///< Temporal when WSS < this x size (§V-B)
  double temporal_tb_fraction = 0.5;   ///< ... and concurrent TBs <= this x all TBs (§V-B)
  double density_threshold = 5;        ///< accesses per byte; Temporal above it goes on demand
  std::uint64_t batch_bytes = std::uint64_t{2} << 20;  ///< spans below this are batched (§V-C)
};

enum class Class : std::uint8_t { Density = 0, Temporal = 1, Unknown = 2 };
const char* to_string(Class c);

/// A data structure (allocation) as one kernel launch sees it.
struct DataStructure {
  std::uint32_t alloc = 0;
  std::uint64_t size = 0;    ///< bytes
  std::uint64_t blocks = 0;  ///< 2 MB VA blocks (= chunks it occupies when resident)
  double accesses = 0;       ///< reads + writes at the launch's iteration
  double density = 0;        ///< accesses / size (per byte)
  std::uint64_t wss = 0;     ///< bytes_per_tb x concurrent TBs
  Class cls = Class::Density;
  bool iterative = false;  ///< an iteration-dependent memop touches it and the launch is in a loop
  bool window_only = false;  ///< every memop of it in this kernel has an iteration window
};

/// Classifies the data structures of one launch of `kernel` (§V-B): 'Unknown' when a memop's
/// address is data-dependent; 'Temporal' when WSS = bytes_per_tb x concurrent TBs (concurrent TBs
/// = TBs per SM x SMs, PolicyEngine::concurrent_threadblocks(), given as `concurrent`) is
/// below temporal_wss_fraction x size and concurrent TBs <= temporal_tb_fraction x all TBs;
/// 'Density' otherwise. `size_of(alloc)` gives the allocation's size and block count.
struct AllocSize {
  std::uint64_t size = 0, blocks = 0;
};
std::vector<DataStructure> classify(const trace::KernelHint& hint, const trace::KernelInfo& kernel,
                                    std::int32_t iteration, std::uint64_t concurrent,
                                    const std::vector<AllocSize>& sizes, const Params& p);

/// One decision of Algorithm 1 for one data structure.
struct Decision {
  enum Kind : std::uint8_t {
    Reserve,   ///< Unknown: HBM reserved in proportion to its size, access counters enabled
    OnDemand,  ///< Temporal above the density threshold: on-demand migration into a WSS reservation
    Pin,       ///< HBMPIN of `chunks` blocks (beyond those already held), DRAMPIN of the rest
    DramPin,   ///< DRAMPIN of all of it (no HBM left, or Temporal below the threshold)
    Window,    ///< window-only Iterative structure: left to Algorithm 2
  } kind = Pin;
  std::uint32_t alloc = 0;
  std::uint64_t chunks = 0;  ///< reserved (Reserve, OnDemand) or newly pinned (Pin) chunks
};
const char* to_string(Decision::Kind k);

/// Algorithm 1 (per-kernel invocation): `avail` chunks of HBM; `held[i]` chunks of ds[i] already
/// pinned by Algorithm 2 (counted neither in `avail` nor again here). Follows the paper line by
/// line, with the paper's evident intent where the pseudo-code is loose: the Unknown reservations
/// are set aside from `avail` (the text: "sets aside HBM capacity"), Unknown structures are not
/// pinned again in the second loop, and a Temporal structure below the threshold is only
/// DRAM-pinned (line 16 does not fall through to line 17). Ties in density keep allocation order.
std::vector<Decision> algorithm1(const std::vector<DataStructure>& ds,
                                 const std::vector<std::uint64_t>& held, std::uint64_t avail,
                                 const Params& p);

/// A byte window [lo, hi) of an allocation, from an iteration-dependent memop.
struct Window {
  std::uint32_t alloc = 0;
  std::uint64_t lo = 0, hi = 0;
  bool operator==(const Window&) const = default;
};

/// A memop's window in force: prefetched for the iterations before `until`.
struct ActiveWindow {
  Window window;
  std::int64_t until = 0;
  bool operator==(const ActiveWindow&) const = default;
};
/// By memop: (kernel id << 32) | ref id (kernel entries of one function share ref ids).
using ActiveWindows = std::map<std::uint64_t, ActiveWindow>;

/// Algorithm 2 (per-iteration prefetch) at the boundary into iteration `it`, for every memop with
/// an iteration window in `kernels` (the kernels launched in that iteration): its window is
/// [start(it), start(it) + span(it)) of its allocation, clamped to the allocation. A memop whose
/// span is below batch_bytes is prefetched for several iterations at once — it .. it + n - 1 with
/// n = batch_bytes / span, not beyond `last_iteration` — and keeps that window until iteration
/// it + n. Memops of `before` still covered are kept; memops not in `kernels` expire. Returns the
/// windows in force for `it`.
ActiveWindows algorithm2(const trace::Hints& hints, const std::vector<std::uint32_t>& kernels,
                         std::int32_t it, std::int32_t last_iteration,
                         const std::vector<AllocSize>& sizes, const Params& p,
                         const ActiveWindows& before);
/// The windows of `active`, merged.
std::vector<Window> windows_of(const ActiveWindows& active);

/// Sorts and merges overlapping / touching windows of the same allocation.
std::vector<Window> merge(std::vector<Window> w);
/// `a` minus `b` (both merged).
std::vector<Window> subtract(const std::vector<Window>& a, const std::vector<Window>& b);

}  // namespace uvmsim::suv
