// `uvmsim trace import FORMAT IN... -o OUT.uvt`: converts another tool's memory trace (the uvmsim
// access list, NVBit mem_trace output, Accel-Sim .traceg kernel traces) into a .uvt trace, in
// bounded memory, with a progress bar. The formats and their mapping: docs/trace-import.md.
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/units.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/sweep/progress.h"
#include "traces/import/accelsim.h"
#include "traces/import/import_builder.h"
#include "traces/import/nvbit.h"
#include "traces/import/text_format.h"

namespace uvmsim::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace trace::import;

namespace {

constexpr const char* kUsage =
    "usage: uvmsim trace import FORMAT IN... -o OUT.uvt [options]\n\n"
    "Converts another tool's memory trace into a .uvt trace (docs/trace-import.md).\n"
    "FORMAT:\n"
    "  text      the uvmsim access list, a documented plain-text format any tool can print\n"
    "  nvbit     output of NVBit's mem_trace tool (IN may be - for stdin, e.g. piped from the\n"
    "            traced application or from zcat)\n"
    "  accelsim  Accel-Sim tracer output: a kernelslist.g command list, or .traceg files\n"
    "            (one launch each, in the order given)\n"
    "Several inputs of one format are read in order as one program. NVBit and Accel-Sim traces\n"
    "do not record managed allocations: give them with --allocations FILE (alloc lines, as in\n"
    "the access list), or they are inferred from the touched addresses (with a warning).\n";

/// Parsing and writing progress on stderr: bytes read of the inputs' total (a bar with rate and
/// ETA on a terminal, a line every few seconds otherwise), then records written.
class ImportProgress {
 public:
  ImportProgress(std::ostream& out, sweep::ProgressMode mode, std::uint64_t total)
      : out_(out), mode_(mode), total_(total), start_(Clock::now()), last_(start_) {}

  void bytes(std::uint64_t done) { update("read", done, total_, true); }
  void records(std::uint64_t done, std::uint64_t total) { update("write", done, total, false); }
  void close() {
    if (mode_ == sweep::ProgressMode::Bar && drawn_) out_ << "\n";
    drawn_ = false;
    out_.flush();
  }
  double elapsed() const { return seconds(Clock::now() - start_); }

 private:
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

  void update(const char* phase, std::uint64_t done, std::uint64_t total, bool as_bytes) {
    if (mode_ == sweep::ProgressMode::None) return;
    const auto now = Clock::now();
    const double since = seconds(now - last_);
    const bool bar = mode_ == sweep::ProgressMode::Bar;
    const bool final_update = done == total && total > 0;
    // Lines mode: one line every 10 s, and the 100 % line only after earlier ones (a quick import
    // prints nothing).
    if (since < (bar ? 0.2 : 10.0) && !(final_update && (bar || printed_))) return;
    if (final_update && std::string(phase) == last_phase_ && done == last_done_) return;
    printed_ = true;
    last_ = now;
    last_phase_ = phase;
    last_done_ = done;
    const double t = seconds(now - start_);
    char line[200];
    auto amount = [&](std::uint64_t v) {
      return as_bytes ? format_bytes(v) : std::to_string(v) + " records";
    };
    const double rate = t > 0 ? static_cast<double>(done) / t : 0;
    std::string text = std::string(phase) + " " + amount(done);
    if (total > 0) {
      const double frac = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
      std::snprintf(line, sizeof line, " / %s (%.0f%%)", amount(total).c_str(), frac * 100);
      text += line;
      if (bar) {
        const int filled = static_cast<int>(frac * 30);
        text = "[" + std::string(static_cast<std::size_t>(filled), '#') +
               std::string(static_cast<std::size_t>(30 - filled), '.') + "] " + text;
      }
    }
    if (as_bytes) {
      std::snprintf(line, sizeof line, ", %.1f MB/s", rate / 1e6);
      text += line;
    }
    text += ", " + sweep::format_duration(t) + " elapsed";
    if (total > 0 && done > 0 && done < total && as_bytes) {
      text += ", ETA " + sweep::format_duration(static_cast<double>(total - done) / rate);
    }
    if (bar) {
      out_ << "\r\033[K" << text;
      drawn_ = true;
    } else {
      out_ << text << "\n";
    }
    out_.flush();
  }

  std::ostream& out_;
  sweep::ProgressMode mode_;
  std::uint64_t total_;
  Clock::time_point start_, last_;
  bool drawn_ = false, printed_ = false;
  std::string last_phase_;
  std::uint64_t last_done_ = ~std::uint64_t{0};
};

std::uint64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

std::ifstream open_input(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path, "open", "cannot open the input file");
  return in;
}

}  // namespace

int cmd_trace_import(const Args& args, std::ostream& out, std::ostream& err) {
  po::options_description visible("options");
  visible.add_options()                                                             //
      ("help,h", "show this help")                                                  //
      ("output,o", po::value<std::string>(), "the .uvt trace to write (required)")  //
      ("allocations", po::value<std::string>(),
       "nvbit, accelsim: managed (and other) allocations, one 'alloc BASE SIZE "
       "[managed|device|host-pinned] [NAME]' line each; without it they are inferred")  //
      ("cpu-init",
       "before the first launch, the CPU writes every managed allocation (a program that "
       "initialises its data on the host); default: the GPU touches pages first")  //
      ("workload", po::value<std::string>(),
       "workload name in the trace (default: the input's)")  //
      ("memory", po::value<std::string>()->default_value("256M"),
       "memory for regrouping access records; beyond it they are sorted on disk")  //
      ("tmpdir", po::value<std::string>(),
       "directory for the temporary files (default: the output's directory)")  //
      ("progress", po::value<std::string>()->default_value("auto"),
       "auto, bar, lines or none (auto: a bar on a terminal, else a line every 10 s)");
  po::options_description hidden;
  hidden.add_options()("format", po::value<std::string>())("input",
                                                           po::value<std::vector<std::string>>());
  po::positional_options_description pos;
  pos.add("format", 1).add("input", -1);
  const po::variables_map vm = parse_args(args, visible, hidden, pos);

  if (vm.count("help")) {
    out << kUsage << "\n" << visible;
    return 0;
  }
  if (!vm.count("format")) throw po::error("missing FORMAT (text, nvbit or accelsim)");
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "nvbit" && format != "accelsim") {
    throw po::error("unknown format '" + format + "' (expected text, nvbit or accelsim)");
  }
  if (!vm.count("input")) throw po::error("missing input file(s)");
  if (!vm.count("output")) throw po::error("missing -o OUT.uvt");
  const std::vector<std::string> inputs = vm["input"].as<std::vector<std::string>>();
  const fs::path output = vm["output"].as<std::string>();
  if (format == "text" && vm.count("allocations")) {
    throw po::error("--allocations: the access list declares its allocations (alloc lines)");
  }
  for (const auto& in : inputs) {
    if (in == "-" && format == "accelsim") {
      throw po::error("accelsim reads files (kernel traces are named by the command list)");
    }
  }

  ImportOptions opts;
  opts.memory_bytes = parse_size(vm["memory"].as<std::string>(), "--memory");
  if (opts.memory_bytes < (std::size_t{1} << 20)) {
    throw UserError("--memory: at least 1M, got '" + vm["memory"].as<std::string>() + "'");
  }
  opts.tmpdir = vm.count("tmpdir") ? fs::path(vm["tmpdir"].as<std::string>())
                                   : (output.has_parent_path() ? output.parent_path() : ".");
  if (!fs::is_directory(opts.tmpdir)) {
    throw UserError(opts.tmpdir.string(), vm.count("tmpdir") ? "--tmpdir" : "-o",
                    "no such directory");
  }
  opts.cpu_init = vm.count("cpu-init") > 0;
  const auto mode = sweep::parse_progress_mode(vm["progress"].as<std::string>(), err);

  ImportBuilder b(opts);
  trace::Metadata& meta = b.metadata();
  meta.workload = vm.count("workload") ? vm["workload"].as<std::string>()
                  : inputs[0] == "-"   ? format
                                       : fs::path(inputs[0]).stem().string();
  meta.extra["importer"] = "uvmsim trace import " + format;
  meta.extra["inputs"] = inputs;
  if (vm.count("allocations")) {
    const std::string path = vm["allocations"].as<std::string>();
    std::ifstream in = open_input(path);
    read_allocations(in, path, b);
  }

  // Inputs and their sizes, for the progress bar (stdin counts as unknown).
  std::vector<fs::path> files;
  std::uint64_t total = 0;
  for (const auto& in : inputs) {
    if (in == "-") continue;
    if (!fs::is_regular_file(in)) throw UserError(in, "open", "no such file");
    const auto listed = format == "accelsim" ? accelsim_files(in) : std::vector<fs::path>{in};
    for (const auto& f : listed) total += file_size_or_zero(f);
  }
  const bool stdin_input =
      std::find(inputs.begin(), inputs.end(), std::string("-")) != inputs.end();
  ImportProgress progress(err, mode, stdin_input ? 0 : total);

  std::uint64_t offset = 0;  // bytes of the inputs already read
  std::uint64_t read_bytes = 0;
  auto on_bytes = [&](std::uint64_t n) {
    read_bytes = offset + n;
    progress.bytes(read_bytes);
  };
  const std::string workload_before = meta.workload;
  if (format == "text") {
    TextParser p(b);
    for (const auto& in : inputs) {
      if (in == "-") {
        p.read(std::cin, "<stdin>", on_bytes);
      } else {
        std::ifstream f = open_input(in);
        p.read(f, in, on_bytes);
      }
      offset = read_bytes;
    }
    if (vm.count("workload")) meta.workload = workload_before;  // the option wins over the file
  } else if (format == "nvbit") {
    NvbitParser p(b);
    for (const auto& in : inputs) {
      if (in == "-") {
        p.read(std::cin, "<stdin>", on_bytes);
      } else {
        std::ifstream f = open_input(in);
        p.read(f, in, on_bytes);
      }
      offset = read_bytes;
    }
  } else {
    AccelsimParser p(b);
    for (const auto& in : inputs) {
      std::ifstream f = open_input(in);
      if (is_accelsim_kernel_trace(in)) {
        p.read_kernel(f, in, on_bytes);
      } else {
        p.read_commands(f, in, fs::path(in).parent_path(), on_bytes);
      }
      offset = read_bytes;
    }
  }
  const double parse_seconds = progress.elapsed();

  const std::uint64_t records_total = b.input_records();
  const ImportReport r =
      b.write(output, [&](std::uint64_t n) { progress.records(n, records_total); });
  progress.close();
  const double seconds = progress.elapsed();

  for (const auto& w : r.warnings) err << "uvmsim trace import: warning: " << w << "\n";
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f MB/s", seconds > 0 ? read_bytes / seconds / 1e6 : 0.0);
  char times[96];
  std::snprintf(times, sizeof times, "%.2f s (%.2f s reading, %.2f s writing)", seconds,
                parse_seconds, seconds - parse_seconds);
  out << "imported " << format << " (" << format_bytes(read_bytes) << ") -> " << output.string()
      << "\n"
      << "  allocations: " << r.allocations << " (" << r.allocations_source
      << "), kernels: " << r.kernels << ", launches: " << r.launches
      << ", host events: " << r.host_events << "\n"
      << "  access records: " << r.input_records << " imported, " << r.records << " written ("
      << r.accesses << " accesses)\n"
      << "  spilled: " << r.spill_runs << " sorted run(s)"
      << (r.spill_merges > 0 ? " (merged " + std::to_string(r.spill_merges) + " time(s))" : "")
      << ", " << format_bytes(r.spill_bytes) << " on disk\n"
      << "  time: " << times << ", " << rate << "\n";
  return 0;
}

}  // namespace uvmsim::cli
