// libuvmtrace.so: the CUPTI collector injected into an unmodified CUDA application.
//
// Loading: CUDA_INJECTION64_PATH=/abs/libuvmtrace.so (the driver calls InitializeInjection once
// while it initialises) or LD_PRELOAD=libuvmtrace.so (the constructor below). Both paths run
// init() exactly once. `uvmsim-collect -- ./app` sets everything up.
//
// Environment:
//   UVMTRACE_OUT=PREFIX        outputs PREFIX.jsonl (measurements) and PREFIX.uvt (trace);
//                              processes other than UVMTRACE_MAIN_PID add ".<pid>"
//   UVMTRACE_NO_TRACE=1        measurements only
//   UVMTRACE_BUFFER_MB=N       activity buffer size (default 8); raise it if records drop
//   UVMTRACE_DEVICE_BUFFER_MB  CUPTI device-side buffer (CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE)
//   UVMTRACE_FLUSH_MS=N        periodic flush (cuptiActivityFlushPeriod), 0 = only at exit
//   UVMTRACE_QUIET=1           no summary on stderr
//   UVMTRACE_ACCESS_DIR=DIR    merge the Sanitizer tracer's per-launch access files into the .uvt
//
// Nothing here may break the application: every CUPTI error is reported once on stderr and the
// collector degrades (no unified-memory counters -> kernel-only tracing; no CUPTI -> nothing).
#include <cupti.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "traces/collector/collector.h"
#include "traces/collector/cupti_decode.h"

namespace {

using uvmsim::collector::ApiCall;
using uvmsim::collector::Collector;

// Deliberately never destroyed: CUPTI's worker thread may still hand over a buffer while static
// destructors run; after finish() the collector ignores it.
Collector* g_collector = nullptr;
std::once_flag g_init_once, g_um_once, g_finish_once;
CUpti_SubscriberHandle g_subscriber = nullptr;
std::size_t g_buffer_bytes = 8u << 20;
bool g_quiet = false;
thread_local int t_runtime_depth = 0;  // inside a hooked runtime API call on this thread

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : ("CUPTI error " + std::to_string(static_cast<int>(r)));
}

void report(const std::string& msg) {
  if (g_collector) g_collector->warn(msg);
  std::fprintf(stderr, "uvmtrace: %s\n", msg.c_str());
}

std::size_t env_size(const char* name, std::size_t dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  return (end && *end == '\0') ? static_cast<std::size_t>(x) : dflt;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // CUPTI requires 8-byte alignment; aligned_alloc needs a multiple of the alignment.
  *size = g_buffer_bytes;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, g_buffer_bytes));
  *max_records = 0;
  if (*buffer == nullptr) *size = 0;  // declined: CUPTI counts the records it drops
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t,
                               size_t valid) {
  if (g_collector && buffer) {
    try {
      CUpti_Activity* rec = nullptr;
      for (;;) {
        const CUptiResult st = cuptiActivityGetNextRecord(buffer, valid, &rec);
        if (st == CUPTI_SUCCESS) {
          g_collector->on_activity(uvmsim::collector::decode_activity(rec));
        } else {
          if (st != CUPTI_ERROR_MAX_LIMIT_REACHED)
            report("activity buffer: " + cupti_error(st) + " (rest of the buffer skipped)");
          break;
        }
      }
      std::size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS &&
          dropped > 0)
        g_collector->add_dropped(dropped);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "uvmtrace: %s\n", e.what());
    }
  }
  std::free(buffer);
}

/// Configures the eight unified-memory counters (after the driver is up: first context).
void enable_unified_memory() {
  std::vector<CUpti_ActivityUnifiedMemoryCounterConfig> cfg;
  for (auto kind : uvmsim::collector::kUmCounterKinds) {
    CUpti_ActivityUnifiedMemoryCounterConfig c{};
    c.scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;  // deprecated
    c.kind = kind;
    c.deviceId = 0;  // deprecated
    c.enable = 1;
    cfg.push_back(c);
  }
  // Some kinds are unsupported on some systems (e.g. DtoD without peer GPUs): drop the last
  // kind until the configuration is accepted, reporting each one dropped.
  CUptiResult st = CUPTI_SUCCESS;
  while (!cfg.empty()) {
    st = cuptiActivityConfigureUnifiedMemoryCounter(cfg.data(), static_cast<uint32_t>(cfg.size()));
    if (st == CUPTI_SUCCESS) break;
    if (st == CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED ||
        st == CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE ||
        st == CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES) {
      report("unified-memory profiling not supported here (" + cupti_error(st) +
             "): kernel-only tracing");
      return;
    }
    report("unified-memory counter kind " + std::to_string(cfg.back().kind) + " not accepted (" +
           cupti_error(st) + "): not recorded");
    cfg.pop_back();
  }
  if (cfg.empty()) return;
  st = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
  if (st != CUPTI_SUCCESS)
    report("cannot enable unified-memory counters (" + cupti_error(st) + "): kernel-only tracing");
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  if (!g_collector) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
      std::call_once(g_um_once, enable_unified_memory);
    return;
  }
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (runtime && cb->callbackSite == CUPTI_API_ENTER) {
    ++t_runtime_depth;
    return;
  }
  if (cb->callbackSite != CUPTI_API_EXIT) return;
  try {
    uint64_t ts = 0;
    cuptiGetTimestamp(&ts);
    ApiCall call = uvmsim::collector::decode_callback(domain, cbid, cb, ts);
    // The runtime implements cudaMallocManaged & co. with the driver calls hooked here too:
    // record the outer runtime call only. Launches keep both (their correlation ids differ and
    // the kernel record carries one of them).
    const bool nested = !runtime && t_runtime_depth > 0;
    if (!nested || call.kind == ApiCall::Launch) g_collector->on_api(call);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "uvmtrace: %s\n", e.what());
  }
  if (runtime && t_runtime_depth > 0) --t_runtime_depth;
}

void finish() {
  std::call_once(g_finish_once, [] {
    if (!g_collector) return;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    try {
      const auto rep = g_collector->finish();
      if (!g_quiet) {
        std::fprintf(stderr,
                     "uvmtrace: %llu measurement records, %llu dropped; trace: %llu allocations, "
                     "%llu launches, %llu host events (%llu inferred CPU accesses)\n",
                     static_cast<unsigned long long>(rep.records),
                     static_cast<unsigned long long>(rep.dropped),
                     static_cast<unsigned long long>(rep.allocations),
                     static_cast<unsigned long long>(rep.launches),
                     static_cast<unsigned long long>(rep.host_events),
                     static_cast<unsigned long long>(rep.inferred_cpu_accesses));
        if (rep.dropped)
          std::fprintf(stderr,
                       "uvmtrace: WARNING: %llu records dropped; rerun with a larger "
                       "UVMTRACE_BUFFER_MB\n",
                       static_cast<unsigned long long>(rep.dropped));
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "uvmtrace: cannot write outputs: %s\n", e.what());
    }
    if (g_subscriber) cuptiUnsubscribe(g_subscriber);
  });
}

void init() {
  std::call_once(g_init_once, [] {
    g_quiet = std::getenv("UVMTRACE_QUIET") != nullptr;
    g_buffer_bytes = std::max<std::size_t>(1, env_size("UVMTRACE_BUFFER_MB", 8)) << 20;
    const char* out = std::getenv("UVMTRACE_OUT");
    std::string prefix = out && *out ? out : "uvmtrace";
    const char* main_pid = std::getenv("UVMTRACE_MAIN_PID");
    if (!main_pid || std::to_string(getpid()) != main_pid) {
      if (main_pid || !(out && *out)) {
        prefix += '.';
        prefix += std::to_string(getpid());
      }
    }
    uvmsim::collector::Options opts;
    opts.measurement = prefix + ".jsonl";
    if (!std::getenv("UVMTRACE_NO_TRACE")) opts.trace = prefix + ".uvt";
    if (const char* cmd = std::getenv("UVMTRACE_COMMAND")) opts.app = cmd;
    if (const char* dir = std::getenv("UVMTRACE_ACCESS_DIR"); dir && *dir) opts.access_dir = dir;

    CUptiResult st = cuptiSubscribe(&g_subscriber, on_callback, nullptr);
    if (st != CUPTI_SUCCESS) {
      std::fprintf(stderr, "uvmtrace: CUPTI unavailable (%s): not collecting\n",
                   cupti_error(st).c_str());
      return;
    }
    try {
      g_collector = new Collector(opts);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "uvmtrace: %s: not collecting\n", e.what());
      cuptiUnsubscribe(g_subscriber);
      return;
    }
    st = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (st != CUPTI_SUCCESS) report("cuptiActivityRegisterCallbacks: " + cupti_error(st));
    if (const std::size_t mb = env_size("UVMTRACE_DEVICE_BUFFER_MB", 0)) {
      std::size_t bytes = mb << 20, sz = sizeof bytes;
      cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &sz, &bytes);
    }
    for (auto kind : uvmsim::collector::kActivityKinds) {
      st = cuptiActivityEnable(kind);
      if (st != CUPTI_SUCCESS)
        report("activity kind " + std::to_string(kind) + ": " + cupti_error(st));
    }
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                        CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    for (auto id : uvmsim::collector::runtime_callbacks())
      cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
    for (auto id : uvmsim::collector::driver_callbacks())
      cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    if (const std::size_t ms = env_size("UVMTRACE_FLUSH_MS", 0))
      cuptiActivityFlushPeriod(static_cast<uint32_t>(ms));
    std::atexit(finish);
  });
}

// LD_PRELOAD: initialise when the library is loaded. With CUDA_INJECTION64_PATH the driver
// loads the library and then calls InitializeInjection; the constructor runs first and the
// once-flag makes the second call a no-op. UVMTRACE_NO_CONSTRUCTOR=1 leaves it to the driver.
__attribute__((constructor)) void on_load() {
  if (!std::getenv("UVMTRACE_NO_CONSTRUCTOR")) init();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  init();
  return 1;
}
