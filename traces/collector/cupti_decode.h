// Decoding of CUPTI activity records and API callbacks into measurement records. Pure functions
// over the real CUPTI header structs: no CUPTI library call, so they are unit-tested on machines
// without a GPU (tests/test_collector.cpp builds synthetic activity buffers).
//
// Record versions: CUPTI fills the newest struct version of its release (CUDA 13.0:
// CUpti_ActivityKernel10, ...UnifiedMemoryCounter3, ...Memory4, ...Memcpy6, ...Synchronization2,
// ...Device5). The decoder reads only the leading fields those share with older versions (the
// static_asserts in cupti_decode.cpp prove the offsets are equal), so one build reads what any
// supported CUPTI delivers.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "traces/measurements/measurement.h"

namespace uvmsim::collector {

/// Activity kinds the collector enables (besides the unified-memory counter).
inline constexpr CUpti_ActivityKind kActivityKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMORY2,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_DEVICE};

/// The eight unified-memory counter kinds, each configured in its own entry.
inline constexpr CUpti_ActivityUnifiedMemoryCounterKind kUmCounterKinds[] = {
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD};

/// What one activity record decodes to.
struct Decoded {
  enum Kind { None, Measurement, Device } kind = None;
  meas::Record record;    ///< Measurement
  nlohmann::json device;  ///< Device: name, sms, clock_khz, memory_bytes, ...
};

/// Decodes one activity record. Kinds the collector does not use decode to None.
Decoded decode_activity(const CUpti_Activity* a);

/// Size in bytes of the record struct CUPTI of this toolkit delivers for `kind` (8-byte
/// aligned), or 0 for kinds the decoder does not know. Used to lay out synthetic buffers.
std::size_t activity_record_size(CUpti_ActivityKind kind);

/// A host-side API call seen by the callback API (program order).
struct ApiCall {
  enum Kind { None, Alloc, Free, Prefetch, Advise, Launch, Sync } kind = None;
  meas::Record record;  ///< Alloc / Free / Prefetch / Advise / Sync as a measurement
  std::uint32_t correlation = 0;
  bool driver = false;  ///< from the driver API domain
};

/// Decodes an API callback at CUPTI_API_EXIT (allocation results are only known then).
/// `timestamp` is the cuptiGetTimestamp() of the call. Calls that failed decode to None.
ApiCall decode_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                        const CUpti_CallbackData* cb, std::uint64_t timestamp);

/// Runtime and driver callback ids the collector subscribes to.
const std::vector<CUpti_CallbackId>& runtime_callbacks();
const std::vector<CUpti_CallbackId>& driver_callbacks();

}  // namespace uvmsim::collector
