// Importers for unified-memory measurements users already have, into the measurement format:
//  * nvprof:  `nvprof --unified-memory-profiling per-process-device --print-gpu-trace --csv
//              --log-file trace.csv ./app` (CUDA <= 10.x tool, GPUs up to Volta/Turing);
//  * nsys:    Nsight Systems reports exported with `nsys export --type sqlite report.nsys-rep`
//             (tables CUDA_UM_GPU_PAGE_FAULT_EVENTS, CUDA_UM_CPU_PAGE_FAULT_EVENTS,
//              CUPTI_ACTIVITY_KIND_MEMCPY with unified-memory copy kinds,
//              CUPTI_ACTIVITY_KIND_KERNEL).
// docs/calibration.md ("Importing nvprof and Nsight Systems data") gives the exact commands.
#pragma once

#include <filesystem>
#include <string>

#include "traces/measurements/measurement.h"

namespace uvmsim::meas {

enum class InputFormat { Measurement, Nvprof, Nsys };
/// Sniffs a file: SQLite header, measurement header line, or an nvprof CSV header.
InputFormat detect_format(const std::filesystem::path& path);

Measurement import_nvprof(const std::filesystem::path& path);
Measurement import_nsys(const std::filesystem::path& path);

/// Reads any supported input as a measurement (importing when needed).
Measurement load_any(const std::filesystem::path& path);

}  // namespace uvmsim::meas
