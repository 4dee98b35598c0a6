// The uvmsim access list: a documented plain-text trace any tool can print (docs/trace-import.md
// is the reference). A header line "uvmsim-access-list 1", then directives — alloc, kernel,
// launch, prefetch, advise, sync, cpu, workload, gpu — in program order, and one line per warp
// access: "TB WARP KIND ADDRESS BYTES PC [CYCLE]" belonging to the latest launch, in any
// threadblock order (each warp's lines in its program order).
#pragma once

#include <istream>
#include <memory>
#include <string>
#include <string_view>

#include "traces/import/import_builder.h"

namespace uvmsim::trace::import {

/// The arguments of an "alloc" line: BASE SIZE [managed|device|host-pinned] [NAME]. A malformed
/// one is a UserError(where, "alloc.<field>", ...).
Allocation parse_alloc_args(std::string_view args, const std::string& where);

/// Reads an allocations side file (--allocations): "alloc" lines, blank lines and # comments.
void read_allocations(std::istream& in, const std::string& name, ImportBuilder& b);

/// Parses access lists into a builder. Several inputs read with one parser form one program:
/// each starts with the header line, and kernels declared in one may be launched in the next.
class TextParser {
 public:
  explicit TextParser(ImportBuilder& b);
  ~TextParser();
  /// Parses one input; `name` prefixes error messages ("<name>:<line>: <field>: ...").
  void read(std::istream& in, const std::string& name, const ProgressFn& progress = {});

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// Parses one access list into `b` (a TextParser for a single input).
void import_text(std::istream& in, const std::string& name, ImportBuilder& b,
                 const ProgressFn& progress = {});

}  // namespace uvmsim::trace::import
