// libuvmtrace_accesses.so: the optional per-access tracer on the Compute Sanitizer API. Built only
// when the toolkit ships sanitizer.h (see ../CMakeLists.txt); `uvmsim-collect --accesses` preloads
// it next to the CUPTI collector. For every kernel launch it patches global memory accesses
// (patches.cu), collects one record per warp instruction and 4 KB page in a device buffer, and
// at the end of the launch writes UVMTRACE_ACCESS_DIR/launch_<N>.bin (access_file.h), which the
// CUPTI collector merges into the .uvt at exit.
//
// Environment: UVMTRACE_ACCESS_DIR (required), UVMTRACE_ACCESS_BUFFER_MB (default 256: records
// beyond it are counted as dropped), UVMTRACE_PATCHES (default: uvmtrace_patches.fatbin next to
// this library).
//
// Cost: launches are serialised (the buffer is drained at each launch end) and every global
// access runs the patch: expect tens to hundreds of times slower kernels.
#include <dlfcn.h>
#include <sanitizer.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/collector/access_file.h"

namespace {

using uvmsim::collector::AccessRec;

struct DeviceHeader {  // == UvmtraceBuffer (patches.cu)
  AccessRec* records;
  unsigned long long capacity;
  unsigned long long count;
  unsigned long long dropped;
};

struct Pending {
  CUcontext ctx;
  void* header;
  void* records;
  unsigned long long capacity;
  std::uint64_t ordinal;
};

std::mutex g_mu;
std::string g_dir, g_patches;
std::size_t g_buffer_bytes = std::size_t{256} << 20;
std::uint64_t g_launches = 0;
std::unordered_map<CUfunction, Pending> g_pending;  // launches are serialised per function
std::set<CUcontext> g_patched_ctx;
Sanitizer_SubscriberHandle g_handle = nullptr;

void warn(const char* what, SanitizerResult r) {
  const char* s = nullptr;
  sanitizerGetResultString(r, &s);
  std::fprintf(stderr, "uvmtrace-accesses: %s: %s\n", what, s ? s : "error");
}

void module_loaded(const Sanitizer_ResourceModuleData* m) {
  std::lock_guard lock(g_mu);
  if (g_patched_ctx.insert(m->context).second) {
    if (auto r = sanitizerAddPatchesFromFile(g_patches.c_str(), m->context); r != SANITIZER_SUCCESS)
      return warn(("loading patches " + g_patches).c_str(), r);
  }
  if (auto r = sanitizerPatchInstructions(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, m->module,
                                          "uvmtrace_global_access");
      r != SANITIZER_SUCCESS)
    return warn("sanitizerPatchInstructions", r);
  if (auto r = sanitizerPatchModule(m->module); r != SANITIZER_SUCCESS)
    warn("sanitizerPatchModule", r);
}

void launch_begin(const Sanitizer_LaunchData* l) {
  std::lock_guard lock(g_mu);
  Pending p{l->context, nullptr, nullptr, g_buffer_bytes / sizeof(AccessRec), g_launches++};
  if (sanitizerAlloc(l->context, &p.records, p.capacity * sizeof(AccessRec)) != SANITIZER_SUCCESS ||
      sanitizerAlloc(l->context, &p.header, sizeof(DeviceHeader)) != SANITIZER_SUCCESS) {
    std::fprintf(stderr,
                 "uvmtrace-accesses: cannot allocate the device buffer: launch %llu "
                 "not traced\n",
                 static_cast<unsigned long long>(p.ordinal));
    return;
  }
  DeviceHeader h{static_cast<AccessRec*>(p.records), p.capacity, 0, 0};
  sanitizerMemcpyHostToDeviceAsync(p.header, &h, sizeof h, l->hStream);
  sanitizerSetCallbackData(l->function, p.header);
  g_pending[l->function] = p;
}

void launch_end(const Sanitizer_LaunchData* l) {
  std::lock_guard lock(g_mu);
  const auto it = g_pending.find(l->function);
  if (it == g_pending.end()) return;
  const Pending p = it->second;
  g_pending.erase(it);
  sanitizerStreamSynchronize(l->hStream);
  DeviceHeader h{};
  sanitizerMemcpyDeviceToHost(&h, p.header, sizeof h, l->hStream);
  const unsigned long long n = h.count < p.capacity ? h.count : p.capacity;
  std::vector<AccessRec> recs(n);
  if (n) sanitizerMemcpyDeviceToHost(recs.data(), p.records, n * sizeof(AccessRec), l->hStream);
  uvmsim::collector::write_access_file(uvmsim::collector::access_file(g_dir, p.ordinal), recs,
                                       h.dropped + (h.count - n));
  sanitizerFree(p.ctx, p.records);
  sanitizerFree(p.ctx, p.header);
}

void SANITIZERAPI on_callback(void*, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid,
                              const void* data) {
  if (domain == SANITIZER_CB_DOMAIN_RESOURCE && cbid == SANITIZER_CBID_RESOURCE_MODULE_LOADED)
    module_loaded(static_cast<const Sanitizer_ResourceModuleData*>(data));
  else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_BEGIN)
    launch_begin(static_cast<const Sanitizer_LaunchData*>(data));
  else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_END)
    launch_end(static_cast<const Sanitizer_LaunchData*>(data));
}

__attribute__((constructor)) void on_load() {
  const char* dir = std::getenv("UVMTRACE_ACCESS_DIR");
  if (!dir || !*dir) return;  // loaded without the wrapper: stay inert
  g_dir = dir;
  std::error_code ec;
  std::filesystem::create_directories(g_dir, ec);
  if (const char* mb = std::getenv("UVMTRACE_ACCESS_BUFFER_MB"))
    g_buffer_bytes = std::max<std::size_t>(1, std::strtoull(mb, nullptr, 10)) << 20;
  if (const char* p = std::getenv("UVMTRACE_PATCHES")) {
    g_patches = p;
  } else {
    Dl_info info{};
    dladdr(reinterpret_cast<void*>(&on_load), &info);
    g_patches = (std::filesystem::path(info.dli_fname ? info.dli_fname : ".").parent_path() /
                 "uvmtrace_patches.fatbin")
                    .string();
  }
  if (auto r = sanitizerSubscribe(&g_handle, on_callback, nullptr); r != SANITIZER_SUCCESS)
    return warn("sanitizerSubscribe", r);
  sanitizerEnableDomain(1, g_handle, SANITIZER_CB_DOMAIN_RESOURCE);
  sanitizerEnableDomain(1, g_handle, SANITIZER_CB_DOMAIN_LAUNCH);
}

}  // namespace
