#include "fuzz/fuzz_target.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <random>

#include "core/error.h"

namespace uvmsim::fuzz {

namespace {

std::map<std::string, Target>& registry() {
  static std::map<std::string, Target> r;
  return r;
}

}  // namespace

Registrar::Registrar(Target t) {
  const std::string name = t.name;
  if (!registry().emplace(name, std::move(t)).second) {
    throw std::logic_error("fuzz target '" + name + "' registered twice");
  }
}

std::vector<const Target*> all_targets() {
  std::vector<const Target*> out;
  for (const auto& [name, t] : registry()) out.push_back(&t);
  return out;
}

const Target* find_target(const std::string& name) {
  const auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

void expect_clean(const std::function<void()>& parse, const std::string& must_name) {
  try {
    parse();
  } catch (const UserError& e) {
    // What the CLI prints (sim/cli/cli.cpp): control characters shown as '?'.
    const std::string msg = one_line(e.what());
    if (msg.empty()) throw Finding("empty UserError message");
    if (!must_name.empty() && msg.find(must_name) == std::string::npos) {
      throw Finding("UserError message does not name '" + must_name + "': " + msg);
    }
  } catch (const Finding&) {
    throw;
  } catch (const std::bad_alloc&) {
    // Reported by the CLI as "out of memory"; under the fuzzer's -rss_limit_mb it is a finding
    // of its own (an input that makes a parser allocate without bound).
    throw Finding("std::bad_alloc");
  } catch (const std::exception& e) {
    throw Finding(std::string("not a UserError (the CLI reports \"internal error\"): ") + e.what());
  }
}

std::filesystem::path scratch_file(Input data, const std::string& name) {
  // One directory per process (libFuzzer's -fork/-jobs workers and parallel ctest runs each get
  // their own), removed at exit.
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::error_code ec;
      const std::filesystem::path shm = "/dev/shm";
      const auto base =
          std::filesystem::is_directory(shm, ec) ? shm : std::filesystem::temp_directory_path();
      path = base / ("uvmsim-fuzz-" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  const auto p = dir.path / name;
  if (name.find('/') != std::string::npos) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) throw std::runtime_error("fuzz: cannot write " + p.string());
  return p;
}

#ifdef UVMSIM_LIBFUZZER
extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);
std::size_t default_mutate(std::uint8_t* data, std::size_t size, std::size_t max_size) {
  return LLVMFuzzerMutate(data, size, max_size);
}
#else
std::size_t default_mutate(std::uint8_t* data, std::size_t size, std::size_t max_size) {
  static std::mt19937 rng(1);
  if (size == 0) {
    if (max_size == 0) return 0;
    data[0] = static_cast<std::uint8_t>(rng());
    return 1;
  }
  data[rng() % size] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
  return std::min(size, max_size);
}
#endif

}  // namespace uvmsim::fuzz
