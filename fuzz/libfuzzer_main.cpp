// The libFuzzer entry points of the `uvmsim_fuzz` binary, which holds every target: the target is
// chosen by the environment variable UVMSIM_FUZZ_TARGET or, failing that, by the program's name
// (fuzz_<target>, a link to uvmsim_fuzz). Either survives libFuzzer's -fork/-jobs child
// processes. UVMSIM_FUZZ_TARGET=list prints the targets and exits.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz/fuzz_target.h"

namespace {

const uvmsim::fuzz::Target* target = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  std::string name;
  if (const char* env = std::getenv("UVMSIM_FUZZ_TARGET")) {
    name = env;
  } else if (*argc > 0) {
    const char* base = std::strrchr((*argv)[0], '/');
    base = base ? base + 1 : (*argv)[0];
    if (std::strncmp(base, "fuzz_", 5) == 0) name = base + 5;
  }
  if (name == "list") {
    for (const auto* t : uvmsim::fuzz::all_targets()) {
      std::printf("%-14s %s\n", t->name.c_str(), t->what.c_str());
    }
    std::exit(0);
  }
  target = uvmsim::fuzz::find_target(name);
  if (target == nullptr) {
    std::fprintf(stderr,
                 "uvmsim_fuzz: unknown target '%s': set UVMSIM_FUZZ_TARGET or run it as "
                 "fuzz_<target> (UVMSIM_FUZZ_TARGET=list lists them)\n",
                 name.c_str());
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    target->run({data, size});
  } catch (const uvmsim::fuzz::Finding& f) {
    std::fprintf(stderr, "==uvmsim_fuzz== FINDING in target %s: %s\n", target->name.c_str(),
                 f.what());
    std::abort();
  }
  return 0;
}

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned seed) {
  if (target->mutate) return target->mutate(data, size, max_size, seed);
  return uvmsim::fuzz::default_mutate(data, size, max_size);
}
