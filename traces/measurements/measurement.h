// Measurement files: what a real GPU did, in the vocabulary of CUPTI's unified-memory counters.
//
// Written by the CUPTI collector (traces/collector/), by the nvprof / Nsight Systems importers
// and by `uvmsim calibrate` itself (measurements derived from published figures); read by the
// calibrator. The format is JSON Lines: a header object on the first line, then one record per
// line, then a summary line. docs/calibration.md ("Measurement file format") is the reference.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "traces/trace.h"

namespace uvmsim::meas {

constexpr const char* kFormatName = "uvmsim-measurements";
constexpr std::uint32_t kFormatVersion = 1;
/// Device id of the CPU in transfer/remote-map records (CUPTI_UNIFIED_MEMORY_CPU_DEVICE_ID).
constexpr std::int64_t kCpuDevice = -1;

enum class RecordType : std::uint8_t {
  Transfer,    ///< unified-memory migration (CUPTI BYTES_TRANSFER_HTOD/DTOH/DTOD)
  GpuFault,    ///< GPU page fault (CUPTI GPU_PAGE_FAULT; one nvprof "fault group" row)
  CpuFault,    ///< CPU page fault (CUPTI CPU_PAGE_FAULT_COUNT)
  Thrashing,   ///< CUPTI THRASHING
  Throttling,  ///< CUPTI THROTTLING
  RemoteMap,   ///< CUPTI REMOTE_MAP
  Kernel,      ///< kernel execution (CONCURRENT_KERNEL)
  Memcpy,      ///< explicit cudaMemcpy* (MEMCPY)
  Alloc,       ///< managed / device allocation
  Free,        ///< release of an allocation
  Prefetch,    ///< cudaMemPrefetchAsync / cuMemPrefetchAsync call
  Advise,      ///< cudaMemAdvise / cuMemAdvise call
  Sync,        ///< synchronisation (context / stream / event)
  kCount
};
const char* to_string(RecordType t);

enum class Direction : std::uint8_t { HtoD, DtoH, DtoD, Unknown };
const char* to_string(Direction d);

/// Migration cause exactly as CUPTI reports it (CUpti_ActivityUnifiedMemoryMigrationCause).
/// A demand migration is "coherence": a GPU fault for HtoD, a CPU fault for DtoH.
enum class Cause : std::uint8_t { Unknown, User, Coherence, Prefetch, Eviction, AccessCounters };
const char* to_string(Cause c);

/// One measured event. Fields a record type does not use keep their defaults and are not written.
struct Record {
  RecordType type = RecordType::Transfer;
  std::uint64_t start = 0;  ///< ns (any epoch; only differences matter)
  std::uint64_t end = 0;    ///< ns; equal to start for point events
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  Direction dir = Direction::Unknown;  ///< Transfer, Memcpy
  Cause cause = Cause::Unknown;        ///< Transfer
  std::uint64_t count = 1;  ///< GpuFault: CUPTI value / faults in an nvprof group; CpuFault: faults
  std::string access;       ///< GpuFault: read|write|atomic|prefetch|unknown
  std::int64_t src = kCpuDevice, dst = kCpuDevice;  ///< Transfer, RemoteMap: device ids, -1 = CPU
  std::int64_t device = 0;  ///< Kernel, Alloc, Prefetch (destination), Advise (target)
  std::string name;  ///< Kernel name, Advise advice, RemoteMap cause, Sync kind, Alloc/Prefetch API
  std::string kind;  ///< Memcpy: source/destination memory kinds ("pageable->device")
  trace::Dim3 grid, block;           ///< Kernel
  std::uint32_t regs = 0, smem = 0;  ///< Kernel
  std::uint32_t stream = 0, correlation = 0;
  bool managed = true;           ///< Alloc
  bool in_cpu = false;           ///< Thrashing, Throttling: CUPTI_ACTIVITY_FLAG_*_IN_CPU
  std::uint64_t processors = 0;  ///< Thrashing: device bitmask
  std::uint64_t pc = 0;          ///< CpuFault

  std::uint64_t duration() const { return end > start ? end - start : 0; }
};

struct Header {
  std::string source;  ///< cupti | nvprof | nsys | derived | uvmsim
  std::string gpu;     ///< device name as reported
  std::string app;     ///< command line of the measured program, or a label
  nlohmann::json device = nlohmann::json::object();  ///< SMs, clocks, memory (when known)
  nlohmann::json extra = nlohmann::json::object();   ///< free-form provenance notes
};

/// Summary line written last; its absence means the writer did not finish (truncated file).
struct Summary {
  std::uint64_t records = 0;
  std::uint64_t dropped_records = 0;  ///< CUPTI records lost (cuptiActivityGetNumDroppedRecords)
  std::vector<std::string> warnings;  ///< e.g. unified-memory profiling not supported
};

/// Streams records to a measurement file. finish() writes the summary; the destructor calls it
/// when no exception is in flight.
class Writer {
 public:
  Writer(const std::filesystem::path& path, const Header& header);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  void write(const Record& r);
  void add_dropped(std::uint64_t n) { summary_.dropped_records += n; }
  void warn(std::string w) { summary_.warnings.push_back(std::move(w)); }
  void finish();

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  Summary summary_;
  bool finished_ = false;
};

nlohmann::json to_json(const Record& r);
nlohmann::json to_json(const Header& h);

/// A whole measurement file in memory (records in file order).
struct Measurement {
  std::string path;   ///< for messages
  std::string label;  ///< file stem, names the run in reports
  Header header;
  std::vector<Record> records;
  Summary summary;
};

/// Reads a measurement file. Every problem is a UserError "<file>: line N: <field>: <message>";
/// a file without its summary line is reported as truncated.
Measurement read(const std::filesystem::path& path);
/// Parses one record line (exposed for tests).
Record record_from_json(const nlohmann::json& j, const std::string& where);
void write(const std::filesystem::path& path, const Measurement& m);

}  // namespace uvmsim::meas
