// Li & Chapman's compile-time estimates (SC 2019) of what RDM and GLM need about the future: the
// invocation frequency RF of each target region (§4.1, "Data Locality in the Entire Program")
// and the target reuse distance of each object at each target region (§4.3, Listing 2). A
// compiler knows the program's static structure - which kernels are launched before, inside and
// after the host loop, in which order, with which objects - but neither the loop's trip count
// nor which invocation is the last one, so it estimates both:
//  * trip count: the paper builds on LLVM's BlockFrequencyInfo, whose branch probabilities
//    without profile data give a loop's back edge a weight of 124 against 4 for the exit
//    (BranchProbabilityInfo's loop heuristic): back edge taken with p = 31/32, so a loop is
//    expected to run 1 / (1 - p) = 32 times (`trip_count`);
//  * distances are expected numbers of target regions (Listing 2 weights the distances of a
//    block's successors by the branch probabilities), and the same at every invocation of a
//    launch site: at the loop's last iteration the estimate still expects the next iteration.
// The static structure is read from the hints' launch sequence (docs/hints.md): a maximal run of
// launches outside loops (iteration -1) is straight-line code, one launch site each; a run of
// launches with iterations >= 0 (a new loop when the iteration drops or follows -1) is one loop,
// whose launch sites are the positions within an iteration, each with the kernels seen there (a
// site whose pointer arguments alternate, like hotspot's ping-pong buffers, uses the union of
// their objects). Nested loops inside the host loop appear unrolled: the hints record one level.
// The exact next use and launch counts stay available to the oracle schemes (rdm-oracle,
// glm-oracle; docs/placement.md).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "traces/hints.h"

namespace uvmsim::objects {

/// LLVM BranchProbabilityInfo's loop back edge weights 124 : 4 -> expected trip count 32.
inline constexpr std::uint32_t kEstimatedTripCount = 32;

class StaticProgram {
 public:
  /// An estimate of the program `h` describes, every loop expected to run `trip_count` (>= 1)
  /// times. Hints without a launch sequence give one straight-line site per kernel.
  StaticProgram(const trace::Hints& h, std::uint32_t trip_count);

  /// The estimated target reuse distance of `alloc` at launch `launch` (the number of target
  /// regions until a region that uses it runs again, §3.4), or -1 if no later region uses it.
  /// -1 also for an allocation the launch's site does not use, or a launch the hints lack.
  std::int64_t reuse_distance(std::uint32_t launch, std::uint32_t alloc) const;
  /// GL_alloc = sum over launch sites of RF x RL (Eq. 1) with the estimated RF: 1 for a
  /// straight-line site, `trip_count` for a loop site, whose RL is averaged over the kernels
  /// seen at the site and over iterations 0 .. trip_count - 1.
  double global_locality(std::uint32_t alloc) const;
  /// The estimated invocation frequency RF of `launch`'s site (0 for an unknown launch).
  double frequency(std::uint32_t launch) const;
  std::size_t sites() const { return sites_.size(); }
  std::uint32_t site_of(std::uint32_t launch) const { return site_of_launch_.at(launch); }

 private:
  struct Site {
    std::uint32_t segment = 0;
    std::uint32_t position = 0;          ///< within the loop body (0 outside loops)
    std::vector<std::uint32_t> kernels;  ///< kernel ids launched here, in order of appearance
    std::vector<std::pair<std::uint32_t, std::int64_t>> distance;  ///< (alloc, reuse distance)
  };
  struct Segment {
    bool loop = false;
    std::uint32_t first_site = 0, sites = 0;
  };

  std::uint32_t trips_;
  std::vector<Site> sites_;
  std::vector<Segment> segments_;
  std::vector<std::uint32_t> site_of_launch_;
  std::vector<double> global_locality_;
};

}  // namespace uvmsim::objects
