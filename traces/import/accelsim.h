// Accel-Sim's NVBit tracer output, post-processed: a command list (kernelslist.g: one
// "MemcpyHtoD,<dst>,<bytes>" or "kernel-N.traceg" line per host command) and one .traceg file
// per kernel launch (a "-key = value" header, then per threadblock and warp the SASS instructions
// with their active mask and, for memory instructions, the lane addresses). Accel-Sim records no
// managed allocations: give them with --allocations or let the builder infer them.
// docs/trace-import.md describes the mapping.
#pragma once

#include <filesystem>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "traces/import/import_builder.h"

namespace uvmsim::trace::import {

class AccelsimParser {
 public:
  explicit AccelsimParser(ImportBuilder& b);
  ~AccelsimParser();
  /// One kernel trace (.traceg): appends one launch.
  void read_kernel(std::istream& in, const std::string& name, const ProgressFn& progress = {});
  /// A command list: host-to-device copies become CPU writes of their destination, and each
  /// kernel line reads the .traceg it names (relative to `dir`). `progress` gets the bytes of
  /// the list and its kernel files consumed so far.
  void read_commands(std::istream& in, const std::string& name, const std::filesystem::path& dir,
                     const ProgressFn& progress = {});

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// The files an Accel-Sim input stands for: a .traceg itself, or a command list and the kernel
/// traces it names (for sizing a progress bar). Unreadable lists are reported when parsed.
std::vector<std::filesystem::path> accelsim_files(const std::filesystem::path& input);

/// True for a kernel trace (.traceg), false for a command list.
bool is_accelsim_kernel_trace(const std::filesystem::path& input);

}  // namespace uvmsim::trace::import
