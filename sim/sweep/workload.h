// A workload of a sweep or an expectation file: either a synthetic trace made by a registered
// generator (generator + footprint + parameters + seed) or an existing trace file. Generated
// traces are made once per distinct workload into the output directory and shared read-only by
// every run that uses them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "traces/generators/generator.h"

namespace uvmsim::sweep {

struct Workload {
  std::string name;
  // A generated workload ...
  std::string generator;
  std::uint64_t footprint = 0;
  gen::ParamMap params;
  std::uint64_t seed = 1;
  bool seed_given = false;  ///< "seed" was in the spec (an input-seed axis would contradict it)
  bool input_seed = false;  ///< `seed` comes from the sweep's input_seeds axis
  // ... or a trace file (absolute path) and the CRC-64 of its bytes.
  std::filesystem::path trace_file;
  std::string trace_crc;

  bool generated() const { return trace_file.empty(); }
  /// What makes the trace what it is (not its name or where it is stored): generator, footprint,
  /// parameters, seed and the simulator version for a generated one; the content hash of a file.
  nlohmann::json identity() const;
  /// The trace path: `trace_dir`/<generator>-<hash of identity>.uvt, or the trace file itself.
  std::filesystem::path trace_path(const std::filesystem::path& trace_dir) const;
  /// `uvmsim gen` arguments (after the binary) that write the trace to `output`.
  std::vector<std::string> gen_args(const std::filesystem::path& output) const;
};

/// Parses one workload object:
///   {"name": N, "generator": G, "footprint": "64M", "params": {K: V}, "seed": S}
///   {"name": N, "trace": "path/to/file.uvt"}       (relative to `base_dir`)
/// "footprint" may be a list, which expands into one workload per size named "N-<size>".
/// Errors are UserErrors "<where>: <field>: ..." naming the offending field.
std::vector<Workload> parse_workloads(const nlohmann::json& j, const std::string& where,
                                      const std::string& field,
                                      const std::filesystem::path& base_dir);

}  // namespace uvmsim::sweep
