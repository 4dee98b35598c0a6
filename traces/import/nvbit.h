// NVBit's mem_trace tool output (stdout of an application run with mem_trace.so injected): a
// "MEMTRACE: ... - LAUNCH - ..." line per kernel launch (name, grid, block, registers, shared
// memory) and a "MEMTRACE: ... - CTA x,y,z - warp W - OPCODE - 32 addresses" line per executed
// warp memory instruction. Other lines (the application's own output, NVBit's banner, verbose
// messages) are skipped. docs/trace-import.md describes what is kept and what is lost.
#pragma once

#include <istream>
#include <memory>
#include <string>

#include "traces/import/import_builder.h"

namespace uvmsim::trace::import {

/// Parses mem_trace outputs into a builder; several inputs read with one parser form one program
/// (e.g. one output split into parts).
class NvbitParser {
 public:
  explicit NvbitParser(ImportBuilder& b);
  ~NvbitParser();
  void read(std::istream& in, const std::string& name, const ProgressFn& progress = {});

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// Parses one mem_trace output into `b`.
void import_nvbit(std::istream& in, const std::string& name, ImportBuilder& b,
                  const ProgressFn& progress = {});

}  // namespace uvmsim::trace::import
