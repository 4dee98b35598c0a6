// Device patch of the per-access tracer: called by the Compute Sanitizer for every global
// memory access of every thread (sanitizerPatchInstructions(SANITIZER_INSTRUCTION_GLOBAL_
// MEMORY_ACCESS, ...)). The lanes of one warp instruction that touch the same 4 KB page are
// merged on the device (one record per warp, instruction and page), which is what the UVM model
// needs and keeps the volume bounded. Compiled with `nvcc --fatbin --compile-as-tools-patch`.
#include <sanitizer_patching.h>

#include <cstdint>

struct UvmtraceRecord {  // == uvmsim::collector::AccessRec (access_file.h)
  uint64_t va;
  uint32_t block;
  uint16_t warp;
  uint8_t kind;
  uint8_t bytes;
};

struct UvmtraceBuffer {  // == the host's DeviceHeader (access_tracer.cpp)
  UvmtraceRecord* records;
  unsigned long long capacity;
  unsigned long long count;
  unsigned long long dropped;
};

static __device__ __forceinline__ unsigned lane_id() {
  unsigned l;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

extern "C" __device__ __noinline__ SanitizerPatchResult uvmtrace_global_access(
    void* userdata, uint64_t pc, void* ptr, uint32_t accessSize, uint32_t flags
#if UVMTRACE_PATCH_NEWVALUE
    ,
    const void* newValue
#endif
) {
  (void)pc;
#if UVMTRACE_PATCH_NEWVALUE
  (void)newValue;
#endif
  auto* buf = static_cast<UvmtraceBuffer*>(userdata);
  if (buf == nullptr) return SANITIZER_PATCH_SUCCESS;
  const uint64_t va = reinterpret_cast<uint64_t>(ptr);
  const unsigned active = __activemask();
  const unsigned same_page = __match_any_sync(active, va >> 12);
  if (lane_id() != static_cast<unsigned>(__ffs(same_page) - 1)) return SANITIZER_PATCH_SUCCESS;
  const unsigned long long slot = atomicAdd(&buf->count, 1ULL);
  if (slot >= buf->capacity) {
    atomicAdd(&buf->dropped, 1ULL);
    return SANITIZER_PATCH_SUCCESS;
  }
  const unsigned tid =
      threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  UvmtraceRecord r;
  r.va = va;
  r.block = blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;
  r.warp = static_cast<uint16_t>(tid / 32);
  r.kind = (flags & SANITIZER_MEMORY_DEVICE_FLAG_ATOMIC)  ? 3
           : (flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE) ? 2
                                                          : 1;
  r.bytes = static_cast<uint8_t>(accessSize > 255 ? 255 : accessSize);
  buf->records[slot] = r;
  return SANITIZER_PATCH_SUCCESS;
}
