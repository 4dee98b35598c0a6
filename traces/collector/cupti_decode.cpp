#include "traces/collector/cupti_decode.h"

#include <cstddef>
#include <cstring>

namespace uvmsim::collector {

namespace {

// ---------------------------------------------------------------------------------------------
// Record versions. Each decoder reads through the oldest struct that has every field it needs;
// the asserts prove the newest version CUPTI fills has those fields at the same offsets.
using KernelRec = CUpti_ActivityKernel4;
using UmRec = CUpti_ActivityUnifiedMemoryCounter2;
using MemcpyRec = CUpti_ActivityMemcpy5;
using MemoryRec = CUpti_ActivityMemory3;
using SyncRec = CUpti_ActivitySynchronization;
using DeviceRec = CUpti_ActivityDevice4;

#define UVMSIM_SAME_FIELD(OLD, NEW, F)                                              \
  static_assert(offsetof(OLD, F) == offsetof(NEW, F) &&                             \
                    sizeof(std::declval<OLD>().F) == sizeof(std::declval<NEW>().F), \
                "CUPTI record layout changed: " #NEW "::" #F)

#if CUPTI_API_VERSION >= 130000
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, start);
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, end);
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, registersPerThread);
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, deviceId);
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, streamId);
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, gridX);
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, blockZ);
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, staticSharedMemory);
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, dynamicSharedMemory);
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, correlationId);
UVMSIM_SAME_FIELD(KernelRec, CUpti_ActivityKernel10, name);
UVMSIM_SAME_FIELD(UmRec, CUpti_ActivityUnifiedMemoryCounter3, counterKind);
UVMSIM_SAME_FIELD(UmRec, CUpti_ActivityUnifiedMemoryCounter3, value);
UVMSIM_SAME_FIELD(UmRec, CUpti_ActivityUnifiedMemoryCounter3, start);
UVMSIM_SAME_FIELD(UmRec, CUpti_ActivityUnifiedMemoryCounter3, end);
UVMSIM_SAME_FIELD(UmRec, CUpti_ActivityUnifiedMemoryCounter3, address);
UVMSIM_SAME_FIELD(UmRec, CUpti_ActivityUnifiedMemoryCounter3, srcId);
UVMSIM_SAME_FIELD(UmRec, CUpti_ActivityUnifiedMemoryCounter3, dstId);
UVMSIM_SAME_FIELD(UmRec, CUpti_ActivityUnifiedMemoryCounter3, flags);
UVMSIM_SAME_FIELD(MemcpyRec, CUpti_ActivityMemcpy6, copyKind);
UVMSIM_SAME_FIELD(MemcpyRec, CUpti_ActivityMemcpy6, srcKind);
UVMSIM_SAME_FIELD(MemcpyRec, CUpti_ActivityMemcpy6, dstKind);
UVMSIM_SAME_FIELD(MemcpyRec, CUpti_ActivityMemcpy6, bytes);
UVMSIM_SAME_FIELD(MemcpyRec, CUpti_ActivityMemcpy6, start);
UVMSIM_SAME_FIELD(MemcpyRec, CUpti_ActivityMemcpy6, end);
UVMSIM_SAME_FIELD(MemcpyRec, CUpti_ActivityMemcpy6, deviceId);
UVMSIM_SAME_FIELD(MemcpyRec, CUpti_ActivityMemcpy6, streamId);
UVMSIM_SAME_FIELD(MemcpyRec, CUpti_ActivityMemcpy6, correlationId);
UVMSIM_SAME_FIELD(MemoryRec, CUpti_ActivityMemory4, memoryOperationType);
UVMSIM_SAME_FIELD(MemoryRec, CUpti_ActivityMemory4, memoryKind);
UVMSIM_SAME_FIELD(MemoryRec, CUpti_ActivityMemory4, correlationId);
UVMSIM_SAME_FIELD(MemoryRec, CUpti_ActivityMemory4, address);
UVMSIM_SAME_FIELD(MemoryRec, CUpti_ActivityMemory4, bytes);
UVMSIM_SAME_FIELD(MemoryRec, CUpti_ActivityMemory4, timestamp);
UVMSIM_SAME_FIELD(MemoryRec, CUpti_ActivityMemory4, deviceId);
UVMSIM_SAME_FIELD(MemoryRec, CUpti_ActivityMemory4, streamId);
UVMSIM_SAME_FIELD(SyncRec, CUpti_ActivitySynchronization2, type);
UVMSIM_SAME_FIELD(SyncRec, CUpti_ActivitySynchronization2, start);
UVMSIM_SAME_FIELD(SyncRec, CUpti_ActivitySynchronization2, end);
UVMSIM_SAME_FIELD(SyncRec, CUpti_ActivitySynchronization2, correlationId);
UVMSIM_SAME_FIELD(SyncRec, CUpti_ActivitySynchronization2, streamId);
UVMSIM_SAME_FIELD(DeviceRec, CUpti_ActivityDevice5, globalMemoryBandwidth);
UVMSIM_SAME_FIELD(DeviceRec, CUpti_ActivityDevice5, globalMemorySize);
UVMSIM_SAME_FIELD(DeviceRec, CUpti_ActivityDevice5, coreClockRate);
UVMSIM_SAME_FIELD(DeviceRec, CUpti_ActivityDevice5, numMultiprocessors);
UVMSIM_SAME_FIELD(DeviceRec, CUpti_ActivityDevice5, computeCapabilityMajor);
UVMSIM_SAME_FIELD(DeviceRec, CUpti_ActivityDevice5, computeCapabilityMinor);
UVMSIM_SAME_FIELD(DeviceRec, CUpti_ActivityDevice5, id);
UVMSIM_SAME_FIELD(DeviceRec, CUpti_ActivityDevice5, name);
#endif
#undef UVMSIM_SAME_FIELD

std::int64_t device_id(std::uint32_t id) {
  return id == CUPTI_UNIFIED_MEMORY_CPU_DEVICE_ID ? meas::kCpuDevice
                                                  : static_cast<std::int64_t>(id);
}

const char* access_name(std::uint32_t flags) {
  switch (flags) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ:
      return "read";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE:
      return "write";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_ATOMIC:
      return "atomic";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_PREFETCH:
      return "prefetch";
    default:
      return "unknown";
  }
}

const char* remote_map_cause(std::uint32_t flags) {
  switch (flags) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_COHERENCE:
      return "coherence";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_THRASHING:
      return "thrashing";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_POLICY:
      return "policy";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_OUT_OF_MEMORY:
      return "out_of_memory";
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_EVICTION:
      return "eviction";
    default:
      return "unknown";
  }
}

meas::Cause migration_cause(std::uint32_t flags) {
  // CUpti_ActivityUnifiedMemoryMigrationCause values 0..5 map one to one.
  return flags <= CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_ACCESS_COUNTERS
             ? static_cast<meas::Cause>(flags)
             : meas::Cause::Unknown;
}

Decoded decode_um(const UmRec* u, const CUpti_ActivityUnifiedMemoryCounter3* u3) {
  Decoded d;
  d.kind = Decoded::Measurement;
  meas::Record& r = d.record;
  r.start = u->start;
  r.end = u->end >= u->start ? u->end : u->start;
  r.address = u->address;
  switch (u->counterKind) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD:
      r.type = meas::RecordType::Transfer;
      r.dir = u->counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD
                  ? meas::Direction::HtoD
              : u->counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH
                  ? meas::Direction::DtoH
                  : meas::Direction::DtoD;
      r.bytes = u->value;
      r.cause = migration_cause(u->flags);
      r.src = device_id(u->srcId);
      r.dst = device_id(u->dstId);
      break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
      // value = number of fault groups for the page; [start, end] = service window (the driver
      // starts processing .. replay queued): the fault-group time of calibration-facts.md.
      r.type = meas::RecordType::GpuFault;
      r.count = u->value;
      r.access = access_name(u->flags);
      r.device = device_id(u->srcId);
      break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT:
      r.type = meas::RecordType::CpuFault;
      r.pc = u->value;  // the faulting instruction's PC; end is undefined
      r.end = r.start;
      break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING:
      r.type = meas::RecordType::Thrashing;
      r.bytes = u->value;
      r.end = r.start;
      r.in_cpu = (u->flags & CUPTI_ACTIVITY_FLAG_THRASHING_IN_CPU) != 0;
      r.processors = u3 ? u3->processors[0] : u->srcId;
      break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING:
      r.type = meas::RecordType::Throttling;
      r.in_cpu = (u->flags & CUPTI_ACTIVITY_FLAG_THROTTLING_IN_CPU) != 0;
      break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP:
      r.type = meas::RecordType::RemoteMap;
      r.bytes = u->value;
      r.end = r.start;
      r.name = remote_map_cause(u->flags);
      r.src = device_id(u->srcId);
      r.dst = device_id(u->dstId);
      break;
    default:
      d.kind = Decoded::None;
  }
  return d;
}

meas::Direction memcpy_dir(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return meas::Direction::HtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return meas::Direction::DtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return meas::Direction::DtoD;
    default:
      return meas::Direction::Unknown;
  }
}

const char* memory_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "device_static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "managed_static";
    default:
      return "unknown";
  }
}

const char* sync_kind(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "stream";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "context";
    default:
      return "unknown";
  }
}

}  // namespace

Decoded decode_activity(const CUpti_Activity* a) {
  Decoded d;
  if (a == nullptr) return d;
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
      return decode_um(reinterpret_cast<const UmRec*>(a),
#if CUPTI_API_VERSION >= 130000
                       reinterpret_cast<const CUpti_ActivityUnifiedMemoryCounter3*>(a)
#else
                       nullptr
#endif
      );
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const KernelRec*>(a);
      meas::Record& r = d.record;
      d.kind = Decoded::Measurement;
      r.type = meas::RecordType::Kernel;
      r.start = k->start;
      r.end = k->end >= k->start ? k->end : k->start;  // 0 timestamps: no timing available
      r.name = k->name ? k->name : "kernel";
      auto dim = [](std::int32_t v) { return v > 0 ? static_cast<std::uint32_t>(v) : 1u; };
      r.grid = {dim(k->gridX), dim(k->gridY), dim(k->gridZ)};
      r.block = {dim(k->blockX), dim(k->blockY), dim(k->blockZ)};
      r.regs = k->registersPerThread;
      r.smem = static_cast<std::uint32_t>(std::max(0, k->staticSharedMemory) +
                                          std::max(0, k->dynamicSharedMemory));
      r.stream = k->streamId;
      r.correlation = k->correlationId;
      r.device = k->deviceId;
      return d;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* c = reinterpret_cast<const MemcpyRec*>(a);
      meas::Record& r = d.record;
      d.kind = Decoded::Measurement;
      r.type = meas::RecordType::Memcpy;
      r.start = c->start;
      r.end = c->end >= c->start ? c->end : c->start;
      r.bytes = c->bytes;
      r.dir = memcpy_dir(c->copyKind);
      r.kind = std::string(memory_kind(c->srcKind)) + "->" + memory_kind(c->dstKind);
      r.stream = c->streamId;
      r.correlation = c->correlationId;
      r.device = c->deviceId;
      return d;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      const auto* m = reinterpret_cast<const MemoryRec*>(a);
      meas::Record& r = d.record;
      const bool alloc = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
      const bool release = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
      if (!alloc && !release) return d;
      d.kind = Decoded::Measurement;
      r.type = alloc ? meas::RecordType::Alloc : meas::RecordType::Free;
      r.start = r.end = m->timestamp;
      r.address = m->address;
      r.bytes = alloc ? m->bytes : 0;
      r.managed = m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED ||
                  m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC;
      r.device = m->deviceId;
      r.correlation = m->correlationId;
      r.name = std::string("activity:") + memory_kind(static_cast<std::uint8_t>(m->memoryKind));
      return d;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const SyncRec*>(a);
      meas::Record& r = d.record;
      d.kind = Decoded::Measurement;
      r.type = meas::RecordType::Sync;
      r.start = s->start;
      r.end = s->end >= s->start ? s->end : s->start;
      r.name = sync_kind(s->type);
      r.stream = s->streamId;
      r.correlation = s->correlationId;
      return d;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto* v = reinterpret_cast<const DeviceRec*>(a);
      d.kind = Decoded::Device;
      d.device = {{"id", v->id},
                  {"name", v->name ? v->name : ""},
                  {"sms", v->numMultiprocessors},
                  {"clock_khz", v->coreClockRate},
                  {"memory_bytes", v->globalMemorySize},
                  // CUPTI reports the memory bandwidth in KB/s.
                  {"memory_bandwidth_gbps", static_cast<double>(v->globalMemoryBandwidth) / 1e6},
                  {"compute_capability", std::to_string(v->computeCapabilityMajor) + "." +
                                             std::to_string(v->computeCapabilityMinor)},
                  {"max_warps_per_sm", v->maxWarpsPerMultiprocessor},
                  {"max_blocks_per_sm", v->maxBlocksPerMultiprocessor},
                  {"regs_per_sm", v->maxRegistersPerMultiprocessor},
                  {"smem_per_sm", v->maxSharedMemoryPerMultiprocessor}};
      return d;
    }
    default:
      return d;
  }
}

std::size_t activity_record_size(CUpti_ActivityKind kind) {
  auto aligned = [](std::size_t s) { return (s + 7) & ~std::size_t{7}; };
  switch (kind) {
#if CUPTI_API_VERSION >= 130000
    case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
      return aligned(sizeof(CUpti_ActivityUnifiedMemoryCounter3));
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return aligned(sizeof(CUpti_ActivityKernel10));
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return aligned(sizeof(CUpti_ActivityMemcpy6));
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return aligned(sizeof(CUpti_ActivityMemory4));
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return aligned(sizeof(CUpti_ActivitySynchronization2));
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return aligned(sizeof(CUpti_ActivityDevice5));
#else
    case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
      return aligned(sizeof(UmRec));
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return aligned(sizeof(KernelRec));
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return aligned(sizeof(MemcpyRec));
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return aligned(sizeof(MemoryRec));
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return aligned(sizeof(SyncRec));
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return aligned(sizeof(DeviceRec));
#endif
    default:
      return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// API callbacks.

namespace {

/// The CUDA <= 12 (and CUDA 13 "removed") parameter structs of cudaMemPrefetchAsync_v8000 and
/// cudaMemAdvise_v8000, as in generated_cudart_removed_meta.h (which needs cudart_removed.h, not
/// shipped with every toolkit). An application built against CUDA <= 12 still calls these.
struct PrefetchV8000 {
  const void* devPtr;
  size_t count;
  int dstDevice;
  cudaStream_t stream;
};
struct AdviseV8000 {
  const void* devPtr;
  size_t count;
  enum cudaMemoryAdvise advice;
  int device;
};

std::uint64_t ptr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

std::int64_t location_device(int type, int id) {
  // cudaMemLocationTypeDevice / CU_MEM_LOCATION_TYPE_DEVICE = 1; host kinds (2..4) = the CPU.
  return type == 1 ? id : meas::kCpuDevice;
}

const char* advice_name(int advice) {
  switch (advice) {
    case 1:
      return "set_read_mostly";
    case 2:
      return "unset_read_mostly";
    case 3:
      return "set_preferred_location";
    case 4:
      return "unset_preferred_location";
    case 5:
      return "set_accessed_by";
    case 6:
      return "unset_accessed_by";
    default:
      return "unknown";
  }
}

ApiCall prefetch(std::uint64_t addr, std::uint64_t bytes, std::int64_t dev, const char* api) {
  ApiCall c;
  c.kind = ApiCall::Prefetch;
  c.record.type = meas::RecordType::Prefetch;
  c.record.address = addr;
  c.record.bytes = bytes;
  c.record.device = dev;
  c.record.name = api;
  return c;
}

ApiCall advise(std::uint64_t addr, std::uint64_t bytes, int advice, std::int64_t dev) {
  ApiCall c;
  c.kind = ApiCall::Advise;
  c.record.type = meas::RecordType::Advise;
  c.record.address = addr;
  c.record.bytes = bytes;
  c.record.name = advice_name(advice);
  c.record.device = dev;
  return c;
}

ApiCall alloc(std::uint64_t addr, std::uint64_t bytes, const char* api) {
  ApiCall c;
  c.kind = ApiCall::Alloc;
  c.record.type = meas::RecordType::Alloc;
  c.record.address = addr;
  c.record.bytes = bytes;
  c.record.managed = true;
  c.record.name = api;
  return c;
}

ApiCall free_call(std::uint64_t addr, const char* api) {
  ApiCall c;
  c.kind = ApiCall::Free;
  c.record.type = meas::RecordType::Free;
  c.record.address = addr;
  c.record.name = api;
  return c;
}

ApiCall sync_call(const char* kind) {
  ApiCall c;
  c.kind = ApiCall::Sync;
  c.record.type = meas::RecordType::Sync;
  c.record.name = kind;
  return c;
}

ApiCall decode_runtime(CUpti_CallbackId id, const void* p) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
      const auto* a = static_cast<const cudaMallocManaged_v6000_params*>(p);
      return alloc(a->devPtr ? ptr(*a->devPtr) : 0, a->size, "cudaMallocManaged");
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
      return free_call(ptr(static_cast<const cudaFree_v3020_params*>(p)->devPtr), "cudaFree");
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_v8000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_ptsz_v8000: {
      const auto* a = static_cast<const PrefetchV8000*>(p);
      return prefetch(ptr(a->devPtr), a->count, a->dstDevice < 0 ? meas::kCpuDevice : a->dstDevice,
                      "cudaMemPrefetchAsync");
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_v12020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_ptsz_v12020: {
      const auto* a = static_cast<const cudaMemPrefetchAsync_v12020_params*>(p);
      return prefetch(ptr(a->devPtr), a->count, location_device(a->location.type, a->location.id),
                      "cudaMemPrefetchAsync");
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemAdvise_v8000: {
      const auto* a = static_cast<const AdviseV8000*>(p);
      return advise(ptr(a->devPtr), a->count, a->advice,
                    a->device < 0 ? meas::kCpuDevice : a->device);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemAdvise_v12020: {
      const auto* a = static_cast<const cudaMemAdvise_v12020_params*>(p);
      return advise(ptr(a->devPtr), a->count, a->advice,
                    location_device(a->location.type, a->location.id));
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
      return sync_call("device");
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
      return sync_call("stream");
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      ApiCall c;
      c.kind = ApiCall::Launch;
      return c;
    }
    default:
      return {};
  }
}

ApiCall decode_driver(CUpti_CallbackId id, const void* p) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto* a = static_cast<const cuMemAllocManaged_params*>(p);
      return alloc(a->dptr ? *a->dptr : 0, a->bytesize, "cuMemAllocManaged");
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      return free_call(static_cast<const cuMemFree_v2_params*>(p)->dptr, "cuMemFree");
    case CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync_ptsz: {
      const auto* a = static_cast<const cuMemPrefetchAsync_params*>(p);
      return prefetch(a->devPtr, a->count, a->dstDevice < 0 ? meas::kCpuDevice : a->dstDevice,
                      "cuMemPrefetchAsync");
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync_v2_ptsz: {
      const auto* a = static_cast<const cuMemPrefetchAsync_v2_params*>(p);
      return prefetch(a->devPtr, a->count, location_device(a->location.type, a->location.id),
                      "cuMemPrefetchAsync");
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAdvise: {
      const auto* a = static_cast<const cuMemAdvise_params*>(p);
      return advise(a->devPtr, a->count, a->advice, a->device < 0 ? meas::kCpuDevice : a->device);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAdvise_v2: {
      const auto* a = static_cast<const cuMemAdvise_v2_params*>(p);
      return advise(a->devPtr, a->count, a->advice,
                    location_device(a->location.type, a->location.id));
    }
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
      return sync_call("context");
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      return sync_call("stream");
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      ApiCall c;
      c.kind = ApiCall::Launch;
      return c;
    }
    default:
      return {};
  }
}

bool failed(CUpti_CallbackDomain domain, const CUpti_CallbackData* cb) {
  if (cb->functionReturnValue == nullptr) return false;
  // cudaError_t and CUresult are both int-sized enums with 0 = success.
  int rv = 0;
  std::memcpy(&rv, cb->functionReturnValue, sizeof rv);
  (void)domain;
  return rv != 0;
}

}  // namespace

ApiCall decode_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                        const CUpti_CallbackData* cb, std::uint64_t timestamp) {
  if (cb == nullptr || cb->callbackSite != CUPTI_API_EXIT || cb->functionParams == nullptr)
    return {};
  if (failed(domain, cb)) return {};
  ApiCall c = domain == CUPTI_CB_DOMAIN_RUNTIME_API  ? decode_runtime(cbid, cb->functionParams)
              : domain == CUPTI_CB_DOMAIN_DRIVER_API ? decode_driver(cbid, cb->functionParams)
                                                     : ApiCall{};
  c.correlation = cb->correlationId;
  c.driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  c.record.start = c.record.end = timestamp;
  c.record.correlation = cb->correlationId;
  return c;
}

const std::vector<CUpti_CallbackId>& runtime_callbacks() {
  static const std::vector<CUpti_CallbackId> v = {
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
      CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_v8000,
      CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_ptsz_v8000,
      CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_v12020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_ptsz_v12020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMemAdvise_v8000,
      CUPTI_RUNTIME_TRACE_CBID_cudaMemAdvise_v12020,
      CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000};
  return v;
}

const std::vector<CUpti_CallbackId>& driver_callbacks() {
  static const std::vector<CUpti_CallbackId> v = {
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
      CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync_v2_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemAdvise,
      CUPTI_DRIVER_TRACE_CBID_cuMemAdvise_v2,
      CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
      CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
      CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
  return v;
}

}  // namespace uvmsim::collector
