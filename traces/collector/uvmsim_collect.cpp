// uvmsim-collect: runs an unmodified CUDA application with the CUPTI collector injected and
// writes PREFIX.jsonl (measurements) and PREFIX.uvt (allocations, kernels, host events).
//
//   uvmsim-collect [-o PREFIX] [--preload] [--no-trace] [--buffer-mb N] -- ./app args...
//
// Fails with a clear message (exit 2) when no NVIDIA driver is present: the collector needs a
// GPU; on other machines, import nvprof / Nsight Systems data with `uvmsim calibrate import`.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

void usage(std::FILE* f) {
  std::fprintf(
      f,
      "usage: uvmsim-collect [options] -- PROGRAM [ARGS...]\n\n"
      "Runs PROGRAM with the uvmsim CUPTI collector (libuvmtrace.so) injected and writes\n"
      "PREFIX.jsonl (unified-memory counters, kernels, allocations, prefetch/advise calls,\n"
      "synchronisations) and PREFIX.uvt (the allocation/kernel/host-event part of a trace).\n"
      "Feed both to `uvmsim calibrate`; see docs/calibration.md.\n\n"
      "options:\n"
      "  -o, --output PREFIX   output prefix (default: uvmtrace)\n"
      "  --preload             inject with LD_PRELOAD instead of CUDA_INJECTION64_PATH\n"
      "                        (also traces child processes, each to PREFIX.<pid>.*)\n"
      "  --no-trace            write only the measurement file\n"
      "  --accesses            also record every warp's global accesses with the Compute\n"
      "                        Sanitizer tracer (libuvmtrace_accesses.so; built only when\n"
      "                        the toolkit has sanitizer.h) into the .uvt: very slow\n"
      "  --buffer-mb N         CUPTI activity buffer size (default 8)\n"
      "  --flush-ms N          flush activity buffers every N ms (default: at exit)\n"
      "  --library PATH        libuvmtrace.so to inject (default: next to this program,\n"
      "                        or $UVMSIM_COLLECTOR_LIB)\n"
      "  -h, --help            this help\n");
}

std::string self_dir() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

}  // namespace

int main(int argc, char** argv) {
  std::string prefix = "uvmtrace", library, buffer_mb, flush_ms;
  bool preload = false, no_trace = false, accesses = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "uvmsim-collect: error: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "-o" || a == "--output") {
      prefix = value("--output");
    } else if (a == "--preload") {
      preload = true;
    } else if (a == "--no-trace") {
      no_trace = true;
    } else if (a == "--accesses") {
      accesses = true;
    } else if (a == "--buffer-mb") {
      buffer_mb = value("--buffer-mb");
    } else if (a == "--flush-ms") {
      flush_ms = value("--flush-ms");
    } else if (a == "--library") {
      library = value("--library");
    } else {
      std::fprintf(stderr, "uvmsim-collect: error: unknown option '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "uvmsim-collect: error: no program given (uvmsim-collect -- ./app)\n");
    usage(stderr);
    return 2;
  }
  if (library.empty()) {
    const char* env = std::getenv("UVMSIM_COLLECTOR_LIB");
    library = env && *env ? env : self_dir() + "/libuvmtrace.so";
  }
  std::error_code ec;
  const fs::path lib = fs::absolute(library, ec);
  if (!fs::exists(lib)) {
    std::fprintf(stderr, "uvmsim-collect: error: collector library %s not found (--library)\n",
                 lib.c_str());
    return 2;
  }
  const fs::path access_lib = lib.parent_path() / "libuvmtrace_accesses.so";
  if (accesses && !fs::exists(access_lib)) {
    std::fprintf(
        stderr,
        "uvmsim-collect: error: --accesses: %s was not built: the CUDA toolkit used to "
        "build uvmsim has no Compute Sanitizer API (sanitizer.h); see docs/calibration.md\n",
        access_lib.c_str());
    return 2;
  }
  if (accesses && no_trace) {
    std::fprintf(stderr, "uvmsim-collect: error: --accesses needs the trace (drop --no-trace)\n");
    return 2;
  }
  // The collector needs the NVIDIA driver (libcuda.so.1): without it nothing can be measured.
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) {
    const char* why = dlerror();
    std::fprintf(
        stderr,
        "uvmsim-collect: error: no NVIDIA GPU driver found (libcuda.so.1 cannot be loaded: "
        "%s). The collector measures a real GPU and needs its driver; on this machine, "
        "import existing nvprof or Nsight Systems data instead "
        "(uvmsim calibrate import --help).\n",
        why ? why : "unknown reason");
    return 2;
  }
  dlclose(cuda);

  std::string command;
  for (int k = i; k < argc; ++k) {
    if (k > i) command += ' ';
    command += argv[k];
  }
  const std::string abs_prefix = fs::absolute(prefix, ec).string();
  const pid_t child = fork();
  if (child < 0) {
    std::perror("uvmsim-collect: fork");
    return 2;
  }
  if (child == 0) {
    setenv("UVMTRACE_OUT", abs_prefix.c_str(), 1);
    setenv("UVMTRACE_MAIN_PID", std::to_string(getpid()).c_str(), 1);
    setenv("UVMTRACE_COMMAND", command.c_str(), 1);
    if (no_trace) setenv("UVMTRACE_NO_TRACE", "1", 1);
    if (!buffer_mb.empty()) setenv("UVMTRACE_BUFFER_MB", buffer_mb.c_str(), 1);
    if (!flush_ms.empty()) setenv("UVMTRACE_FLUSH_MS", flush_ms.c_str(), 1);
    std::string pre;
    if (accesses) {
      setenv("UVMTRACE_ACCESS_DIR", (abs_prefix + ".accesses").c_str(), 1);
      pre = access_lib.string();
    }
    if (preload) pre = pre.empty() ? lib.string() : pre + ":" + lib.string();
    if (!pre.empty()) {
      const char* old = std::getenv("LD_PRELOAD");
      if (old && *old) pre += std::string(":") + old;
      setenv("LD_PRELOAD", pre.c_str(), 1);
    }
    if (!preload) {
      setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
      setenv("UVMTRACE_NO_CONSTRUCTOR", "1", 1);
    }
    execvp(argv[i], argv + i);
    std::fprintf(stderr, "uvmsim-collect: error: cannot run %s: %s\n", argv[i],
                 std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      std::perror("uvmsim-collect: waitpid");
      return 2;
    }
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const fs::path meas = abs_prefix + ".jsonl", trace = abs_prefix + ".uvt";
  if (!fs::exists(meas)) {
    std::fprintf(stderr,
                 "uvmsim-collect: error: %s was not written: the program never initialised CUDA, "
                 "or the collector could not attach (see the uvmtrace: messages above)\n",
                 meas.c_str());
    return code ? code : 1;
  }
  std::fprintf(stderr, "uvmsim-collect: wrote %s%s%s\n", meas.c_str(), no_trace ? "" : " and ",
               no_trace ? "" : trace.c_str());
  return code;
}
