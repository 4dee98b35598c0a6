// The CUPTI collector without a GPU: synthetic activity buffers laid out from the real CUPTI
// header structs, synthetic API-callback data, the collector's two outputs, and the wrapper's
// behaviour on a machine without the NVIDIA driver. Built when CMake found CUPTI.
#ifdef UVMSIM_HAVE_CUPTI

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>

#include "sim/calibrate/metrics.h"
#include "test_util.h"
#include "traces/collector/access_file.h"
#include "traces/collector/collector.h"
#include "traces/collector/cupti_decode.h"
#include "traces/trace.h"

namespace uvmsim::test {
namespace {

using collector::ApiCall;
using collector::Decoded;
using meas::RecordType;

constexpr std::uint64_t kBase = 0x7f0000000000;

/// An activity buffer as CUPTI hands it over: records back to back, each padded to the size
/// of its struct version, 8-byte aligned.
class ActivityBuffer {
 public:
  template <typename T>
  void put(const T& rec) {
    const std::size_t size = collector::activity_record_size(rec.kind);
    ASSERT_GE(size, sizeof(T));
    const std::size_t off = bytes_;
    bytes_ += size;
    words_.resize((bytes_ + 7) / 8);
    std::memcpy(reinterpret_cast<std::uint8_t*>(words_.data()) + off, &rec, sizeof(T));
  }
  std::vector<Decoded> decode_all() const {
    std::vector<Decoded> out;
    const auto* base = reinterpret_cast<const std::uint8_t*>(words_.data());
    for (std::size_t off = 0; off < bytes_;) {
      const auto* a = reinterpret_cast<const CUpti_Activity*>(base + off);
      const std::size_t size = collector::activity_record_size(a->kind);
      EXPECT_GT(size, 0u);
      if (size == 0) break;
      out.push_back(collector::decode_activity(a));
      off += size;
    }
    return out;
  }

 private:
  std::vector<std::uint64_t> words_;
  std::size_t bytes_ = 0;
};

CUpti_ActivityUnifiedMemoryCounter3 um(CUpti_ActivityUnifiedMemoryCounterKind kind,
                                       std::uint64_t value, std::uint64_t start, std::uint64_t end,
                                       std::uint64_t addr, std::uint32_t flags,
                                       std::uint32_t src = 0, std::uint32_t dst = 0) {
  CUpti_ActivityUnifiedMemoryCounter3 r{};
  r.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
  r.counterKind = kind;
  r.value = value;
  r.start = start;
  r.end = end;
  r.address = addr;
  r.flags = flags;
  r.srcId = src;
  r.dstId = dst;
  r.processId = 4242;
  return r;
}

ActivityBuffer sample_buffer() {
  ActivityBuffer b;
  CUpti_ActivityDevice5 dev{};
  dev.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  dev.name = "NVIDIA GeForce GTX 1080 Ti";
  dev.numMultiprocessors = 28;
  dev.coreClockRate = 1582000;
  dev.globalMemorySize = 11ull << 30;
  dev.globalMemoryBandwidth = 484000000;  // KB/s
  dev.computeCapabilityMajor = 6;
  dev.computeCapabilityMinor = 1;
  b.put(dev);
  CUpti_ActivityMemory4 mem{};
  mem.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  mem.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  mem.address = kBase;
  mem.bytes = 4 << 20;
  mem.timestamp = 100;
  b.put(mem);
  const auto cpu = CUPTI_UNIFIED_MEMORY_CPU_DEVICE_ID;
  b.put(um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, 1, 1900, 30000, kBase,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE));
  b.put(um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, 4096, 2000, 3760, kBase,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE, cpu, 0));
  b.put(um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, 61440, 3800, 9650,
           kBase + 4096, CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH, cpu, 0));
  b.put(um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH, 2 << 20, 31000, 200000,
           kBase + (2 << 20), CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION, 0, cpu));
  b.put(um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT, 0x401000, 50000, 0,
           kBase + 0x1234, 0));
  auto thrash = um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING, 65536, 60000, 0, kBase,
                   CUPTI_ACTIVITY_FLAG_THRASHING_IN_CPU, 0x3);
  thrash.processors[0] = 0x3;
  b.put(thrash);
  b.put(um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING, 0, 61000, 61500, kBase, 0));
  b.put(um(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP, 65536, 62000, 0, kBase,
           CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_THRASHING, cpu, 0));
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1500;
  k.end = 40000;
  k.gridX = 4;
  k.gridY = k.gridZ = 1;
  k.blockX = 256;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = 16;
  k.dynamicSharedMemory = 512;
  k.correlationId = 77;
  k.streamId = 7;
  k.name = "touch";
  b.put(k);
  CUpti_ActivityMemcpy6 c{};
  c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  c.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  c.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  c.bytes = 1 << 20;
  c.start = 500;
  c.end = 93500;
  b.put(c);
  CUpti_ActivitySynchronization2 s{};
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  s.start = 44000;
  s.end = 45000;
  b.put(s);
  return b;
}

TEST(CuptiDecode, UnifiedMemoryKernelMemcpyMemorySyncDeviceRecords) {
  const auto d = sample_buffer().decode_all();
  ASSERT_EQ(d.size(), 13u);
  EXPECT_EQ(d[0].kind, Decoded::Device);
  EXPECT_EQ(d[0].device["name"], "NVIDIA GeForce GTX 1080 Ti");
  EXPECT_EQ(d[0].device["sms"], 28);
  EXPECT_DOUBLE_EQ(d[0].device["memory_bandwidth_gbps"].get<double>(), 484.0);
  EXPECT_EQ(d[0].device["compute_capability"], "6.1");
  const auto& alloc = d[1].record;
  EXPECT_EQ(alloc.type, RecordType::Alloc);
  EXPECT_TRUE(alloc.managed);
  EXPECT_EQ(alloc.bytes, 4u << 20);
  const auto& fault = d[2].record;
  EXPECT_EQ(fault.type, RecordType::GpuFault);
  EXPECT_EQ(fault.duration(), 28100u);
  EXPECT_EQ(fault.access, "write");
  const auto& h1 = d[3].record;
  EXPECT_EQ(h1.type, RecordType::Transfer);
  EXPECT_EQ(h1.dir, meas::Direction::HtoD);
  EXPECT_EQ(h1.cause, meas::Cause::Coherence);
  EXPECT_EQ(h1.src, meas::kCpuDevice);
  EXPECT_EQ(h1.dst, 0);
  EXPECT_EQ(d[4].record.cause, meas::Cause::Prefetch);
  EXPECT_EQ(d[5].record.dir, meas::Direction::DtoH);
  EXPECT_EQ(d[5].record.cause, meas::Cause::Eviction);
  EXPECT_EQ(d[6].record.type, RecordType::CpuFault);
  EXPECT_EQ(d[6].record.pc, 0x401000u);
  EXPECT_EQ(d[6].record.end, d[6].record.start);  // end is undefined for CPU faults
  EXPECT_EQ(d[7].record.type, RecordType::Thrashing);
  EXPECT_TRUE(d[7].record.in_cpu);
  EXPECT_EQ(d[7].record.processors, 3u);
  EXPECT_EQ(d[8].record.type, RecordType::Throttling);
  EXPECT_EQ(d[9].record.type, RecordType::RemoteMap);
  EXPECT_EQ(d[9].record.name, "thrashing");
  const auto& k = d[10].record;
  EXPECT_EQ(k.type, RecordType::Kernel);
  EXPECT_EQ(k.name, "touch");
  EXPECT_EQ(k.grid, (trace::Dim3{4, 1, 1}));
  EXPECT_EQ(k.block, (trace::Dim3{256, 1, 1}));
  EXPECT_EQ(k.smem, 512u);
  EXPECT_EQ(k.correlation, 77u);
  EXPECT_EQ(d[11].record.type, RecordType::Memcpy);
  EXPECT_EQ(d[11].record.kind, "pageable->device");
  EXPECT_EQ(d[12].record.type, RecordType::Sync);
  EXPECT_EQ(d[12].record.name, "context");
}

/// Synthetic CUPTI callback data at API exit.
template <typename P>
ApiCall call(CUpti_CallbackDomain dom, CUpti_CallbackId id, const P& params, std::uint32_t corr,
             std::uint64_t t, int rv = 0, CUpti_ApiCallbackSite site = CUPTI_API_EXIT) {
  CUpti_CallbackData cb{};
  cb.callbackSite = site;
  cb.functionParams = &params;
  cb.functionReturnValue = &rv;
  cb.correlationId = corr;
  return collector::decode_callback(dom, id, &cb, t);
}

std::vector<ApiCall> sample_calls() {
  void* p = reinterpret_cast<void*>(kBase);
  const cudaMallocManaged_v6000_params mm{&p, 4 << 20, 1};
  cuMemAdvise_v2_params adv{};
  adv.devPtr = kBase;
  adv.count = 2 << 20;
  adv.advice = CU_MEM_ADVISE_SET_READ_MOSTLY;
  adv.location.type = CU_MEM_LOCATION_TYPE_HOST;
  cudaMemPrefetchAsync_v12020_params pf{};
  pf.devPtr = reinterpret_cast<void*>(kBase + (2 << 20));
  pf.count = 2 << 20;
  pf.location.type = cudaMemLocationTypeDevice;
  pf.location.id = 0;
  const cudaLaunchKernel_v7000_params launch{};
  const int none = 0;
  return {call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, mm, 1,
               100),
          call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAdvise_v2, adv, 2, 200),
          call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_v12020,
               pf, 3, 300),
          call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, launch,
               77, 1000),
          call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
               none, 5, 45000)};
}

TEST(CuptiDecode, ApiCallbacksRuntimeAndDriver) {
  const auto c = sample_calls();
  EXPECT_EQ(c[0].kind, ApiCall::Alloc);
  EXPECT_EQ(c[0].record.address, kBase);
  EXPECT_EQ(c[0].record.bytes, 4u << 20);
  EXPECT_EQ(c[0].record.name, "cudaMallocManaged");
  EXPECT_EQ(c[1].kind, ApiCall::Advise);
  EXPECT_EQ(c[1].record.name, "set_read_mostly");
  EXPECT_EQ(c[1].record.device, meas::kCpuDevice);
  EXPECT_TRUE(c[1].driver);
  EXPECT_EQ(c[2].kind, ApiCall::Prefetch);
  EXPECT_EQ(c[2].record.device, 0);
  EXPECT_EQ(c[2].record.start, 300u);
  EXPECT_EQ(c[3].kind, ApiCall::Launch);
  EXPECT_EQ(c[3].correlation, 77u);
  EXPECT_EQ(c[4].kind, ApiCall::Sync);
  // The CUDA <= 12 signature: int device, cudaCpuDeviceId = -1 is the CPU.
  struct {
    const void* p;
    size_t n;
    int dev;
    cudaStream_t s;
  } old{reinterpret_cast<void*>(kBase), 4096, -1, nullptr};
  const auto o = call(CUPTI_CB_DOMAIN_RUNTIME_API,
                      CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_v8000, old, 9, 1);
  EXPECT_EQ(o.kind, ApiCall::Prefetch);
  EXPECT_EQ(o.record.device, meas::kCpuDevice);
  // Failed calls and API entry are not recorded.
  void* p = nullptr;
  const cudaMallocManaged_v6000_params mm{&p, 4096, 1};
  EXPECT_EQ(call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, mm,
                 1, 1, /*rv=*/2)
                .kind,
            ApiCall::None);
  EXPECT_EQ(call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, mm,
                 1, 1, 0, CUPTI_API_ENTER)
                .kind,
            ApiCall::None);
}

TEST(Collector, WritesMeasurementAndTraceFromSyntheticBuffers) {
  TempDir d;
  const auto mpath = d.file("app.jsonl"), tpath = d.file("app.uvt");
  {
    collector::Collector c({mpath, tpath, "./app --size 4M", {}});
    for (const auto& call : sample_calls()) c.on_api(call);
    for (const auto& rec : sample_buffer().decode_all()) c.on_activity(rec);
    c.add_dropped(5);
    const auto rep = c.finish();
    EXPECT_EQ(rep.records, 16u);  // 12 activity records + alloc, advise, prefetch, sync calls
    EXPECT_EQ(rep.dropped, 5u);
    EXPECT_EQ(rep.launches, 1u);
    EXPECT_EQ(rep.allocations, 1u);  // the callback and the MEMORY2 record are one allocation
    EXPECT_EQ(rep.inferred_cpu_accesses, 3u);
  }
  EXPECT_FALSE(std::filesystem::exists(mpath + ".part"));
  const auto m = meas::read(mpath);
  EXPECT_EQ(m.header.source, "cupti");
  EXPECT_EQ(m.header.gpu, "NVIDIA GeForce GTX 1080 Ti");
  EXPECT_EQ(m.header.app, "./app --size 4M");
  EXPECT_EQ(m.records.size(), 16u);
  EXPECT_EQ(m.summary.dropped_records, 5u);
  ASSERT_FALSE(m.summary.warnings.empty());
  EXPECT_NE(m.summary.warnings.back().find("5 CUPTI activity records were dropped"),
            std::string::npos);
  const auto r = calib::from_measurement(m);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_DOUBLE_EQ(r.groups[0].duration_ns, 28100);
  EXPECT_EQ(r.bytes[calib::kHtoD].at("demand"), 4096u);
  EXPECT_EQ(r.bytes[calib::kHtoD].at("prefetch"), 61440u);
  EXPECT_EQ(r.bytes[calib::kDtoH].at("eviction"), 2u << 20);
  EXPECT_EQ(r.cpu_faults, 1u);
  EXPECT_EQ(r.thrashing, 1u);
  EXPECT_EQ(r.throttling, 1u);
  EXPECT_EQ(r.remote_maps, 1u);
  EXPECT_EQ(r.kernel_ns, std::vector<double>{38500});

  trace::TraceReader t(tpath);
  const auto& meta = t.metadata();
  EXPECT_EQ(meta.workload, "app");
  EXPECT_EQ(meta.captured_gpu, "NVIDIA GeForce GTX 1080 Ti");
  ASSERT_EQ(meta.allocations.size(), 1u);
  EXPECT_EQ(meta.allocations[0].base, kBase);
  EXPECT_EQ(meta.allocations[0].size, 4u << 20);
  EXPECT_TRUE(meta.allocations[0].managed);
  ASSERT_EQ(meta.kernels.size(), 1u);
  EXPECT_EQ(meta.kernels[0].name, "touch");
  EXPECT_EQ(meta.kernels[0].grid, (trace::Dim3{4, 1, 1}));
  EXPECT_EQ(meta.kernels[0].shared_mem_bytes, 512u);
  std::vector<std::string> seq;
  trace::HostEvent e;
  while (t.next_host_event(e)) {
    std::string s = trace::to_string(e.type);
    if (e.type == trace::HostEventType::CpuAccess)
      s += std::string(e.kind == AccessKind::Write ? ":write@" : ":read@") +
           std::to_string(e.va - kBase) + "+" + std::to_string(e.size);
    seq.push_back(s);
  }
  // Program order: advise, prefetch, the CPU writes that must precede the faulting launch
  // (inferred from the HtoD migrations), the launch, the synchronisation, the CPU fault.
  EXPECT_EQ(seq, (std::vector<std::string>{"MemAdvise", "MemPrefetch", "CpuAccess:write@0+4096",
                                           "CpuAccess:write@4096+61440", "KernelLaunch",
                                           "Synchronize", "CpuAccess:read@4096+4096"}));
  // The trace is valid input for the simulator.
  cli_ok({"run", "--gpu", "gtx1080ti", "--trace", tpath, "--quiet"});
}

TEST(Collector, ALaunchOnAnotherGpuIsPrecededByASetDevice) {
  // The sample's kernel ran on device 0; the same kernel again on device 1 after it, and once
  // more on device 1: one SetDevice before the first launch on GPU 1 (format version 3).
  TempDir d;
  const auto mpath = d.file("app.jsonl"), tpath = d.file("app.uvt");
  {
    collector::Collector c({mpath, tpath, "./app", {}});
    for (const auto& call : sample_calls()) c.on_api(call);
    auto recs = sample_buffer().decode_all();
    for (const auto& rec : recs) c.on_activity(rec);
    for (const auto& rec : recs) {
      if (rec.kind != collector::Decoded::Measurement ||
          rec.record.type != meas::RecordType::Kernel)
        continue;
      for (std::uint64_t i = 1; i <= 2; ++i) {
        auto again = rec;
        again.record.device = 1;
        again.record.correlation = 900 + static_cast<std::uint32_t>(i);  // no launch call
        again.record.start += i * 1000000;
        again.record.end += i * 1000000;
        c.on_activity(again);
      }
    }
    EXPECT_EQ(c.finish().launches, 3u);
  }
  trace::TraceReader t(tpath);
  EXPECT_EQ(t.version(), trace::kDeviceVersion);
  std::vector<std::string> launches;
  trace::HostEvent e;
  while (t.next_host_event(e)) {
    if (e.type == trace::HostEventType::KernelLaunch) launches.push_back("launch");
    if (e.type == trace::HostEventType::SetDevice)
      launches.push_back("gpu" + std::to_string(gpu_ordinal(e.device)));
  }
  EXPECT_EQ(launches, (std::vector<std::string>{"launch", "gpu1", "launch", "launch"}));
}

TEST(Collector, MergesTheSanitizerTracersAccessFilesIntoTheTrace) {
  TempDir d;
  const auto dir = std::filesystem::path(d.file("app.accesses"));
  std::filesystem::create_directories(dir);
  // Launch 0: block 0 warp 0 reads two pages, block 3 warp 7 writes one; a record for a block
  // outside the grid is ignored.
  collector::write_access_file(collector::access_file(dir, 0),
                               {{kBase + 8, 0, 0, 1, 4},
                                {kBase + 4096 * 9, 3, 7, 2, 8},
                                {kBase + 4096, 0, 0, 1, 4},
                                {kBase, 99, 0, 1, 4}},
                               /*dropped=*/2);
  const auto tpath = d.file("app.uvt");
  collector::Collector c({d.file("app.jsonl"), tpath, "./app", dir});
  for (const auto& call : sample_calls()) c.on_api(call);
  for (const auto& rec : sample_buffer().decode_all()) c.on_activity(rec);
  const auto rep = c.finish();
  EXPECT_EQ(rep.access_records, 4u);
  EXPECT_EQ(rep.access_records_dropped, 2u);
  trace::TraceReader t(tpath);
  auto stream = t.launch(0);
  trace::ThreadblockView tb;
  std::vector<trace::WarpStream> warps;
  std::vector<std::string> got;
  while (stream.next(tb)) {
    tb.warp_streams(warps);
    for (std::size_t w = 0; w < warps.size(); ++w) {
      trace::AccessRecord r;
      while (warps[w].next(r))
        got.push_back(std::to_string(tb.tb_id) + "/" + std::to_string(w) + ":" +
                      std::to_string(r.va - kBase) + (r.kind == AccessKind::Write ? "w" : "r"));
    }
    stream.release(tb);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"0/0:8r", "0/0:4096r", "3/7:36864w"}));
  const auto m = meas::read(d.file("app.jsonl"));
  EXPECT_NE(m.summary.warnings.back().find("2 access records dropped"), std::string::npos);
}

bool have_driver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

std::pair<int, std::string> run_shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  const int st = p ? pclose(p) : -1;
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(CollectWrapper, ClearErrorWithoutGpuDriver) {
  if (have_driver()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  const auto [code, out] = run_shell(std::string(UVMSIM_COLLECT_BINARY) + " -- /bin/true");
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("uvmsim-collect: error: no NVIDIA GPU driver found (libcuda.so.1"),
            std::string::npos)
      << out;
  const auto [c2, o2] = run_shell(std::string(UVMSIM_COLLECT_BINARY));
  EXPECT_EQ(c2, 2);
  EXPECT_NE(o2.find("no program given"), std::string::npos) << o2;
  const auto [c3, o3] = run_shell(std::string(UVMSIM_COLLECT_BINARY) + " --help");
  EXPECT_EQ(c3, 0);
  EXPECT_NE(o3.find("CUDA_INJECTION64_PATH"), std::string::npos);
  if (!std::filesystem::exists(std::filesystem::path(UVMSIM_COLLECTOR_LIB).parent_path() /
                               "libuvmtrace_accesses.so")) {
    const auto [c4, o4] =
        run_shell(std::string(UVMSIM_COLLECT_BINARY) + " --accesses -- /bin/true");
    EXPECT_EQ(c4, 2);
    EXPECT_NE(o4.find("no Compute Sanitizer API (sanitizer.h)"), std::string::npos) << o4;
  }
}

TEST(CollectWrapper, InjectedLibraryNeverBreaksTheApplication) {
  if (have_driver()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  // Preloaded into a program while CUPTI cannot start: it says so and the program's exit code
  // is unchanged.
  TempDir d;
  const auto [code, out] =
      run_shell("UVMTRACE_OUT=" + d.file("x") + " LD_PRELOAD=" + std::string(UVMSIM_COLLECTOR_LIB) +
                " /bin/sh -c 'exit 3'");
  EXPECT_EQ(code, 3);
  EXPECT_NE(out.find("uvmtrace: CUPTI unavailable"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(d.file("x.jsonl")));
}

}  // namespace
}  // namespace uvmsim::test

#endif  // UVMSIM_HAVE_CUPTI
