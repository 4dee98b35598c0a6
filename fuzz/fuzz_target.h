// Fuzz targets: one function per parser, shared by the libFuzzer binaries (fuzz/CMakeLists.txt,
// clang only) and by the GoogleTest suite, which replays every saved input under
// tests/data/fuzz/<target>/ in every build. docs/fuzzing.md describes how to add a target.
//
// A target feeds its input to a parser and checks the project's contract for bad input: the
// parser either accepts it or throws a UserError whose message is one line and names the input
// file. Anything else -- another exception type ("internal error"), a crash, a sanitizer report, a
// hang -- is a finding. Targets report contract violations by throwing Finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace uvmsim::fuzz {

using Input = std::span<const std::uint8_t>;

/// A violated contract (not a UserError): the libFuzzer driver aborts on it, tests fail on it.
struct Finding : std::logic_error {
  using std::logic_error::logic_error;
};

struct Target {
  std::string name;  ///< binary fuzz_<name>, regression inputs tests/data/fuzz/<name>/
  std::string what;  ///< one line for docs and --list
  std::function<void(Input)> run;
  /// Optional structure-aware mutator (libFuzzer's LLVMFuzzerCustomMutator contract); empty: the
  /// default byte mutations.
  std::function<std::size_t(std::uint8_t* data, std::size_t size, std::size_t max_size,
                            unsigned seed)>
      mutate;
};

/// Every target linked into this binary, by name.
std::vector<const Target*> all_targets();
const Target* find_target(const std::string& name);

struct Registrar {
  explicit Registrar(Target t);
};

/// Runs `parse` and enforces the bad-input contract: a UserError, as the CLI prints it (one line,
/// core/error.h), must be non-empty and contain `must_name` (the input file's name; empty: not
/// checked). Any other exception becomes a Finding.
void expect_clean(const std::function<void()>& parse, const std::string& must_name);

/// A scratch file for parsers that take a path, private to this process and reused by every
/// call: writes `data` to it and returns its path. `name` is the file name (e.g. "input.uvt").
std::filesystem::path scratch_file(Input data, const std::string& name);

/// The default libFuzzer mutation (LLVMFuzzerMutate) in a libFuzzer build; a small random byte
/// mutation elsewhere (only the tests of the mutators call it there).
std::size_t default_mutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

}  // namespace uvmsim::fuzz

#define UVMSIM_FUZZ_CONCAT2(a, b) a##b
#define UVMSIM_FUZZ_CONCAT(a, b) UVMSIM_FUZZ_CONCAT2(a, b)
/// Registers a target from a static initialiser (one line per target file).
#define UVMSIM_FUZZ_TARGET(...)                                                              \
  static const ::uvmsim::fuzz::Registrar UVMSIM_FUZZ_CONCAT(uvmsim_fuzz_target_, __LINE__) { \
    ::uvmsim::fuzz::Target { __VA_ARGS__ }                                                   \
  }
