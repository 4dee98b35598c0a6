// Collects what an importer parsed — metadata, host events in program order, and access records
// in whatever order the input printed them — and writes it as a .uvt trace. A .uvt needs its
// allocations and kernels before any data and each launch's threadblocks in id order, so the
// builder spills host events and access records to compressed temporary files (bounded memory,
// see AccessSorter) and writes the trace once the input has been read.
//
// Parsers (text_format.h, nvbit.h, accelsim.h) validate each input line and report problems as
// "<file>:<line>: <field>: <message>"; the builder trusts what it is given.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/import/access_sorter.h"
#include "traces/import/range_inference.h"
#include "traces/trace.h"

namespace uvmsim::trace::import {

/// Called by the parsers now and then with the bytes of the current input consumed so far.
using ProgressFn = std::function<void(std::uint64_t bytes)>;

struct ImportOptions {
  std::filesystem::path tmpdir = ".";                 ///< where temporary spill files go
  std::size_t memory_bytes = std::size_t{256} << 20;  ///< budget for regrouping access records
  /// Before the first launch, the CPU writes every managed allocation (a program that
  /// initialises its data on the host). Without it, pages are first touched by the GPU.
  bool cpu_init = false;
  /// Sorted runs kept on disk before they are merged into one (bounds open files and memory).
  std::size_t max_runs = 128;
  /// A kernel whose grid has more threadblocks is rejected: every threadblock of a launch is
  /// written, empty or not, so a corrupt grid size would otherwise mean hours of empty output.
  std::uint64_t max_threadblocks = std::uint64_t{1} << 32;
  WriterOptions writer;
};

/// What an import did, for the command's summary and its warnings.
struct ImportReport {
  std::string allocations_source;  ///< "declared", "inferred" or the side file's name
  std::size_t allocations = 0, kernels = 0, launches = 0;
  std::uint64_t host_events = 0;    ///< including kernel launches
  std::uint64_t input_records = 0;  ///< access records the parsers produced
  std::uint64_t records = 0;        ///< records written (after merging same-instruction lines)
  std::uint64_t accesses = 0;       ///< records expanded by repeat counts (after folding)
  std::uint64_t outside_allocations = 0;  ///< records outside every allocation
  std::size_t spill_runs = 0;             ///< sorted runs written to disk
  std::size_t spill_merges = 0;           ///< times max_runs runs were merged into one
  std::uint64_t spill_bytes = 0;          ///< compressed bytes of the runs left for the final merge
  std::vector<std::string> warnings;      ///< one line each, without a "warning:" prefix
};

class ImportBuilder {
 public:
  explicit ImportBuilder(ImportOptions opts);
  ~ImportBuilder();
  ImportBuilder(const ImportBuilder&) = delete;
  ImportBuilder& operator=(const ImportBuilder&) = delete;

  /// Workload name, captured GPU, params and extra; allocations and kernels are managed below.
  Metadata& metadata() { return meta_; }

  /// Adds an allocation (its id is assigned here). A range overlapping an earlier one, an empty
  /// one or one that overflows the address space is a UserError(where, "alloc", ...).
  void add_allocation(Allocation a, const std::string& where);
  std::size_t allocation_count() const { return meta_.allocations.size(); }
  /// Allocations were given by `source` (a side file's name, or "declared"); without any, the
  /// builder infers managed ranges from the touched addresses and says so in a warning.
  void set_allocation_source(std::string source) { alloc_source_ = std::move(source); }

  /// The id of a kernel with this name and launch configuration, adding it if new (the same
  /// function launched with another grid is another kernel entry). CUDA's limits are checked:
  /// a UserError(where, "kernel", ...) otherwise.
  std::uint32_t kernel(const KernelInfo& k, const std::string& where);
  const KernelInfo& kernel_info(std::uint32_t id) const { return meta_.kernels[id]; }
  /// Static instruction ids of one kernel function, keyed by PC (see ref()).
  using RefScope = std::unordered_map<std::uint64_t, std::uint32_t>;
  /// The scope of kernel function `kernel_name`; the reference stays valid while the builder
  /// lives, so a parser looks it up once per launch rather than once per access.
  RefScope& ref_scope(const std::string& kernel_name) { return refs_[kernel_name]; }
  /// The trace-wide static instruction id of `pc` in a kernel function: the same (function, pc)
  /// gets the same id in every launch, and different ones never share an id.
  std::uint32_t ref(RefScope& scope, std::uint64_t pc) {
    const auto it = scope.find(pc);
    return it != scope.end() ? it->second : new_ref(scope, pc);
  }

  /// Appends a kernel launch to the program order and returns its launch index.
  std::uint32_t launch(std::uint32_t kernel_id, std::int32_t iteration = -1);
  std::uint32_t launch_count() const { return launches_; }
  /// Appends a host event (any type but KernelLaunch) to the program order.
  void host_event(const HostEvent& ev);

  /// An access of launch `a.launch` (already validated against its kernel's grid and block).
  void access(const PendingAccess& a) {
    if (inferring_) touched(a.va, a.bytes);
    sorter_.add(a);
  }
  /// Marks a range as used by the program (e.g. a host-to-device copy's destination) for the
  /// inference of managed ranges.
  void touched(Addr va, std::uint64_t bytes) {
    if (inferring_) inference_.add(va, bytes);
  }
  /// Counts an event worth a warning (dropped lanes, skipped lines, ...): reported once, as
  /// "<n> <what>".
  void count(const std::string& what, std::uint64_t n = 1) { counters_[what] += n; }
  void warn(std::string message) { warnings_.push_back(std::move(message)); }

  /// Writes the trace to `output` (through "<output>.partial", renamed when complete, so a
  /// failed import never leaves a truncated trace under the requested name). `progress`, if
  /// given, is called now and then with the number of access records written so far (of
  /// input_records()).
  ImportReport write(const std::filesystem::path& output, const ProgressFn& progress = {});
  std::uint64_t input_records() const { return sorter_.total(); }

 private:
  struct HostLog;
  struct Emitter;
  void emit(const std::filesystem::path& path, const std::vector<Allocation>& sorted,
            ImportReport& report, const ProgressFn& progress);

  ImportOptions opts_;
  Metadata meta_;
  std::string alloc_source_;
  std::map<std::string, std::uint32_t> kernel_ids_;  // name + configuration -> id
  std::uint32_t new_ref(RefScope& scope, std::uint64_t pc);

  std::unordered_map<std::string, RefScope> refs_;
  std::uint32_t next_ref_ = 0;
  std::uint32_t launches_ = 0;
  std::unique_ptr<HostLog> host_;
  AccessSorter sorter_;
  RangeInference inference_;
  bool inferring_ = true;  // until an allocation is declared
  std::map<std::string, std::uint64_t> counters_;
  std::vector<std::string> warnings_;
  bool written_ = false;
};

}  // namespace uvmsim::trace::import
