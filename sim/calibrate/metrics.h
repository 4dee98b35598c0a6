// The quantities the calibrator matches between a real GPU and the simulator, extracted the same
// way from a measurement file (meas::Measurement) and from a simulation run, and compared into
// relative residuals. docs/calibration.md ("What is matched") describes every metric.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "traces/measurements/measurement.h"

namespace uvmsim::calib {

struct FaultGroup {
  std::uint64_t start_ns = 0;
  double duration_ns = 0;
  std::uint64_t faults = 0;
};

struct TransferSample {
  std::uint64_t bytes = 0;
  double ns = 0;
};

enum Dir : std::uint8_t { kHtoD = 0, kDtoH = 1 };
const char* dir_name(int d);

/// What one run (one measured program execution, or one simulation of its trace) did.
struct RunMetrics {
  std::vector<FaultGroup> groups;       ///< GPU fault groups (driver batches), in start order
  bool has_fault_data = false;          ///< the measurement recorded GPU faults at all
  std::vector<double> kernel_ns;        ///< kernel durations in launch order
  std::vector<double> kernel_start_ns;  ///< kernel start times (same order), for launch gaps
  /// Migrated bytes by direction and cause in the simulator's vocabulary ("demand", "prefetch",
  /// "user_prefetch", "access_counter" / "eviction", "cpu_fault", "user_prefetch", "unknown").
  std::array<std::map<std::string, std::uint64_t>, 2> bytes;
  std::array<bool, 2> has_transfers{};                   ///< direction has migration records
  std::array<std::vector<TransferSample>, 2> transfers;  ///< unified-memory migrations
  std::array<std::vector<TransferSample>, 2> memcpys;    ///< explicit cudaMemcpy
  std::uint64_t cpu_faults = 0, thrashing = 0, throttling = 0, remote_maps = 0;
};

/// Maps a measured migration cause to the simulator's cause names.
std::string sim_cause(meas::Direction d, meas::Cause c);

RunMetrics from_measurement(const meas::Measurement& m);

/// Simulates `trace` with `cfg` and extracts its metrics.
RunMetrics simulate(const SimConfig& cfg, const std::filesystem::path& trace);

/// The simulated run as a measurement (what CUPTI would have reported for it).
meas::Measurement simulated_measurement(const SimConfig& cfg, const std::filesystem::path& trace);

/// One compared quantity. rel = (simulated - measured) / max(|measured|, floor).
struct Residual {
  std::string family;  ///< fault_group_time, fault_group_count, kernel_time, bytes.htod.demand, ...
  std::string run;
  int index = -1;    ///< element within the family (group / kernel / size), -1 = aggregate
  std::string what;  ///< human label ("group 3", "4096 B", "total")
  double measured = 0, simulated = 0, rel = 0;
};

/// Options of the comparison that depend on the whole calibration set.
struct CompareOptions {
  /// Directions whose link curve models explicit memcpy (no migration records anywhere):
  /// their memcpy records are compared against the curve.
  std::array<bool, 2> memcpy_defines_curve{};
};

/// Residuals of a simulated run against its measurement. `sim` may be null for runs that have
/// no trace (curve-only measurements); then only transfer/memcpy times are compared.
std::vector<Residual> compare(const std::string& run, const RunMetrics& measured,
                              const RunMetrics* sim, const SimConfig& cfg,
                              const CompareOptions& opts);

/// Robust, size-aware fit of a link curve to measured (bytes, ns) samples: the median time of
/// every distinct size (sizes merged into half-octave buckets when there are more than 24),
/// made non-decreasing by pool-adjacent-violators. Points of `base` beyond the measured range
/// are kept, scaled to join the fit continuously. Returns false if `samples` is empty.
bool fit_curve(const std::vector<TransferSample>& samples, const TransferCurve& base,
               TransferCurve& out);

}  // namespace uvmsim::calib
