// The collector's state: receives decoded CUPTI activity records and API calls (from any thread),
// streams the measurement records, and at the end writes the measurement file and the
// allocation / kernel / host-event part of a .uvt trace. Independent of the CUPTI library, so it
// is tested with synthetic records (tests/test_collector.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "traces/collector/cupti_decode.h"
#include "traces/measurements/measurement.h"

namespace uvmsim::collector {

struct Options {
  std::filesystem::path measurement;  ///< .jsonl measurement file
  std::filesystem::path trace;        ///< .uvt (allocations, kernels, host events); empty = none
  std::string app;                    ///< command line of the traced program
  /// Directory of the Sanitizer tracer's per-launch access files (access_file.h); empty = none.
  std::filesystem::path access_dir;
};

struct FinishReport {
  std::uint64_t records = 0, dropped = 0, launches = 0, allocations = 0, host_events = 0;
  std::uint64_t inferred_cpu_accesses = 0, relocated_allocations = 0, unmatched_kernels = 0;
  std::uint64_t access_records = 0, access_records_dropped = 0, launches_without_accesses = 0;
  std::vector<std::string> warnings;
};

class Collector {
 public:
  explicit Collector(Options opts);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  void on_activity(const Decoded& d);
  void on_api(const ApiCall& c);
  void add_dropped(std::uint64_t n);
  void warn(const std::string& w);
  /// Writes both outputs; later calls do nothing and return the first report.
  FinishReport finish();

 private:
  void write_trace(FinishReport& rep);

  std::mutex mu_;
  Options opts_;
  std::filesystem::path part_;  ///< records are streamed here, then framed by header + summary
  std::ofstream part_out_;
  meas::Header header_;
  meas::Summary summary_;
  bool finished_ = false;
  FinishReport report_;
  // Kept for the .uvt.
  std::vector<meas::Record> allocs_, frees_, kernels_, transfers_in_, cpu_faults_;
  std::vector<ApiCall> calls_;  ///< prefetch / advise / sync / launch / alloc / free, in order
};

}  // namespace uvmsim::collector
