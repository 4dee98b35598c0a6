#include "sim/simulator.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "core/event_log.h"
#include "core/event_queue.h"
#include "models/access_counters.h"
#include "models/driver/uvm_driver.h"
#include "models/fault_buffer.h"
#include "models/gpu.h"
#include "models/interrupt.h"
#include "policies/eviction/opt/order_file.h"
#include "state/va_space.h"
#include "traces/trace.h"

namespace uvmsim {

namespace {

/// `--record-order`: hears every completed access and writes the order of their regions
/// (two-pass OPT), then passes everything on to the driver's policy facade.
class OrderRecorder final : public GpuListener {
 public:
  OrderRecorder(GpuListener& inner, opt::OrderWriter& out)
      : inner_(inner), out_(out), inner_wants_(inner.wants_accesses()) {}
  bool wants_accesses() const override { return true; }
  void on_access(const AccessEvent& a) override {
    out_.access(a.block.id, a.repeat);
    if (inner_wants_) inner_.on_access(a);
  }
  void on_threadblock_end(std::uint64_t tb, Tick now) override {
    inner_.on_threadblock_end(tb, now);
  }

 private:
  GpuListener& inner_;
  opt::OrderWriter& out_;
  bool inner_wants_;
};

std::string hex_addr(Addr a) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
  return buf;
}

/// A prefetch, advice or CPU access must not touch an allocation the trace has freed.
void check_not_freed(const VaSpace& va, const trace::HostEvent& ev, const std::string& where) {
  for (const auto& r : va.ranges()) {
    if (!r.freed || ev.va >= r.base + r.size || ev.va + ev.size <= r.base) continue;
    throw UserError(where, std::string("host event ") + trace::to_string(ev.type),
                    "touches allocation '" + r.name + "' after its MemFree (cudaFree)");
  }
}

/// The driver's per-process state, its thrashing detector set up for the machine: the node's
/// GPUs on an x86 host over PCIe or on a coherent link (system.coherent_host), with peer access
/// between every pair as system.peer says (without it each GPU maps only its own memory and the
/// host's, and a page moves between GPUs through host memory).
DriverShared driver_shared(const SimContext& ctx) {
  DriverShared s;
  s.topology =
      Topology::make(ctx.cfg.system.gpus, ctx.cfg.system.peer, ctx.cfg.system.coherent_host);
  s.thrashing.configure(ctx.cfg.thrashing, ctx.va.blocks().size(), s.topology);
  if (ctx.cfg.system.coherent_host) s.cpu_mapped.resize(ctx.va.blocks().size());
  return s;
}

/// One GPU of the machine and its instance of the driver, wired together: the GPU writes the
/// fault buffer and the access counters' notifications and raises the interrupt; the driver reads
/// them and answers through the VA space and replays; the driver's policy facade hears the GPU's
/// access and threadblock notifications. Every event the node's parts schedule carries its
/// ordinal (Event::gpu).
struct GpuNode {
  GpuNode(SimContext& ctx, DriverShared& shared, std::uint8_t ordinal,
          std::uint64_t capacity_chunks, const std::filesystem::path& trace,
          const trace::Hints* hints, opt::OrderWriter* order)
      : irq(ctx.queue, ns_to_ps(ctx.cfg.gpu.interrupt_latency_ns), ordinal),
        counters(irq, ctx.stats, ctx.cfg.access_counters, ctx.va.blocks().size()),
        driver(ctx, shared, buffer, counters, irq, capacity_chunks, trace, hints),
        gpu(ctx, buffer, counters, irq, ordinal) {
    if (order) recorder.emplace(driver.facade(), *order);
    gpu.set_listener(recorder ? static_cast<GpuListener*>(&*recorder) : &driver.facade());
    driver.facade().attach_gpu(&gpu);
  }
  FaultBuffer buffer;
  Interrupt irq;
  AccessCounters counters;
  UvmDriver driver;
  Gpu gpu;
  std::optional<OrderRecorder> recorder;
};

}  // namespace

/// The machine of one run: the driver's per-process state and a GpuNode per GPU
/// (system.gpus), every one with the same memory size. The event loop finds an event's node by
/// its GPU.
struct Machine {
  Machine(SimContext& ctx, std::uint64_t capacity_chunks, const std::filesystem::path& trace,
          const trace::Hints* hints, opt::OrderWriter* order)
      : shared(driver_shared(ctx)) {
    const unsigned n = ctx.cfg.system.gpus;
    for (unsigned g = 0; g < n; ++g)
      owned.push_back(std::make_unique<GpuNode>(ctx, shared, static_cast<std::uint8_t>(g),
                                                capacity_chunks, trace, hints, order));
    for (std::size_t g = 0; g < owned.size(); ++g) nodes[g] = owned[g].get();
  }
  GpuNode& node(unsigned gpu) { return *nodes[gpu]; }
  unsigned gpus() const { return static_cast<unsigned>(owned.size()); }

  DriverShared shared;
  std::vector<std::unique_ptr<GpuNode>> owned;
  std::array<GpuNode*, kMaxGpus> nodes{};  ///< by ordinal: one load per event in the loop
  /// Per GPU: the latest event of that GPU the loop ran.
  std::array<Tick, kMaxGpus> last_event{};
};

Simulator::Simulator(SimConfig cfg, RunOptions opts)
    : cfg_(std::move(cfg)), opts_(std::move(opts)) {}
Simulator::~Simulator() = default;

std::uint64_t Simulator::size_memory(const VaSpace& va) {
  // Usable GPU memory in 2 MB root chunks. Device-only allocations (cudaMalloc) take their share
  // first; --oversub sizes memory against the managed footprint as the papers do with a
  // cudaMalloc "blocker".
  std::uint64_t managed_chunks = 0, device_bytes = 0;
  for (const auto& r : va.ranges()) {
    if (r.managed)
      managed_chunks += r.num_blocks;
    else if (!r.host_pinned)
      device_bytes += r.size;
  }
  std::uint64_t capacity_chunks;
  if (opts_.oversub_pct) {
    if (*opts_.oversub_pct < 0 || !std::isfinite(*opts_.oversub_pct))
      throw UserError("--oversub", "value", "must be >= 0");
    capacity_chunks = static_cast<std::uint64_t>(
        std::floor(static_cast<double>(managed_chunks) / (1.0 + *opts_.oversub_pct / 100.0)));
    cfg_.hbm.capacity = capacity_chunks * kBlockSize;
  } else {
    if (opts_.hbm_bytes) cfg_.hbm.capacity = *opts_.hbm_bytes;
    const std::uint64_t usable =
        cfg_.hbm.capacity > device_bytes ? cfg_.hbm.capacity - device_bytes : 0;
    capacity_chunks = usable / kBlockSize;
  }
  if (capacity_chunks == 0)
    throw UserError("hbm.capacity", "value",
                    "usable GPU memory is below one 2 MB chunk (capacity " +
                        std::to_string(cfg_.hbm.capacity) + " bytes)");
  memory_info_ = {
      {"capacity_chunks", capacity_chunks},
      {"capacity_bytes", capacity_chunks * kBlockSize},
      {"managed_footprint_bytes", va.managed_footprint()},
      {"managed_chunks", managed_chunks},
      {"device_alloc_bytes", device_bytes},
      {"oversubscription_pct",
       100.0 * (static_cast<double>(managed_chunks) / static_cast<double>(capacity_chunks) - 1.0)},
      // Memory is whole 2 MB chunks, so the achieved value above differs from what --oversub
      // asked for (e.g. 12 chunks at 75 % give 6 chunks: 100 %); figures label both.
      {"oversubscription_requested_pct",
       opts_.oversub_pct ? nlohmann::json(*opts_.oversub_pct) : nlohmann::json()}};
  // Every GPU of the node has the same usable memory. A trace's device-only allocations
  // (cudaMalloc) name no GPU; each GPU is charged them, as a data-parallel program allocates the
  // same buffers on every device (docs/multi-gpu.md).
  if (cfg_.system.gpus > 1) memory_info_["gpus"] = cfg_.system.gpus;
  return capacity_chunks;
}

const trace::Hints* Simulator::load_hints(trace::TraceReader& reader,
                                          std::optional<trace::Hints>& file_hints) {
  // Static hints for the placement policies: a hints file (--hints / engine.hints) replaces the
  // trace's embedded hints; it must describe this trace (docs/hints.md).
  const auto& meta = reader.metadata();
  const trace::Hints* hints = meta.hints ? &*meta.hints : nullptr;
  trace_info_["hints"] = hints ? std::string("embedded (") + trace::to_string(hints->source) + ")"
                               : std::string("none");
  if (cfg_.engine.hints.empty()) return hints;
  file_hints = trace::Hints::load(cfg_.engine.hints);
  std::vector<std::uint32_t> launch_kernels;
  for (const auto& l : reader.launches()) launch_kernels.push_back(l.kernel_id);
  file_hints->check_against(meta, cfg_.engine.hints, &launch_kernels);
  trace_info_["hints"] = cfg_.engine.hints + " (" + trace::to_string(file_hints->source) + ")";
  return &*file_hints;
}

const Stats& Simulator::run() {
  const auto wall0 = std::chrono::steady_clock::now();
  trace::TraceReader reader(opts_.trace);
  const auto& meta = reader.metadata();

  VaSpace va;
  va.build(meta.allocations, cfg_.driver.managed_tail_pow2);
  va.set_gpus(cfg_.system.gpus);
  if (cfg_.system.gpus > 1 && !opts_.record_order.empty())
    throw UserError("--record-order", "system.gpus",
                    "the two-pass OPT records one GPU's access order; run it with system.gpus=1");
  const std::uint64_t capacity_chunks = size_memory(va);
  trace_info_ = {{"path", opts_.trace.string()},
                 {"workload", meta.workload},
                 {"params", meta.params},
                 {"format_version", reader.version()}};
  std::optional<trace::Hints> file_hints;
  const trace::Hints* hints = load_hints(reader, file_hints);

  stats_ = Stats{};
  stats_.gpus = cfg_.system.gpus;
  stats_.per_gpu.assign(cfg_.system.gpus, GpuStats{});
  if (cfg_.system.peer != PeerAccess::None && cfg_.system.gpus > 1) {
    stats_.peer_copy_bytes.assign(std::size_t{cfg_.system.gpus} * cfg_.system.gpus, 0);
    stats_.peer_remote_bytes.assign(std::size_t{cfg_.system.gpus} * cfg_.system.gpus, 0);
  }
  EventQueue queue;
  EventLog log;
  if (!opts_.events_out.empty()) log = EventLog(opts_.events_out);
  if (opts_.event_sink) log.set_sink(opts_.event_sink);
  SimContext ctx{cfg_, queue, va, stats_, log};
  if (!opts_.interval_out.empty()) intervals_ = IntervalLog(opts_.interval_out, opts_.interval);
  std::optional<opt::OrderWriter> order;
  if (!opts_.record_order.empty())
    order.emplace(opts_.record_order,
                  opts_.record_order_name.empty() ? opts_.record_order : opts_.record_order_name,
                  va.blocks().size(), capacity_chunks);
  Machine m(ctx, capacity_chunks, opts_.trace, hints, order ? &*order : nullptr);
  replay_host_events(reader, ctx, m);
  m.node(0).driver.finish_stats();
  if (order) order->finish();
  intervals_.finish(stats_.sim_time, stats_);
  log.close();
  stats_.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return stats_;
}

Tick Simulator::drain(EventQueue& queue, Machine& m, Tick limit, Tick& last_event, int wait_gpu,
                      Tick until) {
  while (!queue.empty()) {
    if (wait_gpu >= 0 && queue.pending(static_cast<unsigned>(wait_gpu)) == 0 &&
        m.node(static_cast<unsigned>(wait_gpu)).gpu.done())
      break;
    if (until != kTickMax && queue.next_time() > until) break;
    const Event e = queue.pop();
    // A warp's next record is decoded when it wakes, by then long out of the caches: fetch the
    // warp's state for the event 8 places ahead and its record bytes for the one 4 ahead (the
    // state fetched 4 events earlier). Pure prefetching; the order of events is untouched.
    if (const Event* a = queue.ahead(8); a && a->type == EventType::WarpWake)
      m.node(a->gpu).gpu.prefetch_warp(a->arg, 0);
    if (const Event* a = queue.ahead(4); a && a->type == EventType::WarpWake)
      m.node(a->gpu).gpu.prefetch_warp(a->arg, 1);
    if (e.time > limit) {
      stats_.truncated = true;
      break;
    }
    last_event = e.time;
    intervals_.advance(e.time, stats_);
    GpuNode& n = m.node(e.gpu);
    Gpu& gpu = n.gpu;
    UvmDriver& driver = n.driver;
    switch (e.type) {
      case EventType::WarpWake:
        gpu.on_warp_wake(e.arg, e.time);
        break;
      case EventType::DriverWake:
        driver.on_driver_wake(e.time);
        break;
      case EventType::BatchEnd:
        driver.on_batch_end(e.arg, e.time);
        check_progress(e.time);
        break;
      case EventType::Replay:
        gpu.on_replay(e.time);
        break;
      case EventType::FaultReport:
        gpu.on_fault_report(e.arg, e.time);
        break;
      case EventType::GmmuFree:
        // The GMMU may write on past this event's time while nothing else is due, up to the
        // run's time limit, the interval log's next boundary (whose counters must not see a
        // later write) and the host's next action.
        last_event =
            gpu.on_gmmu_free(e.time, std::min({limit, intervals_.next_boundary() - 1, until}));
        break;
    }
    m.last_event[e.gpu] = last_event;
  }
  return last_event;
}

/// Simulated time in seconds, four significant digits, for messages.
static std::string sim_seconds(Tick t) {
  std::ostringstream os;
  os << std::setprecision(4) << static_cast<double>(t) / kPsPerNs / 1e9 << " s";
  return os.str();
}

void Simulator::check_progress(Tick now) {
  if (stats_.accesses != progress_accesses_) {
    progress_accesses_ = stats_.accesses;
    progress_batches_ = stats_.fault_batches;
    progress_time_ = now;
    return;
  }
  const std::uint64_t limit = cfg_.engine.livelock_batches;
  const std::uint64_t stuck = stats_.fault_batches - progress_batches_;
  if (limit == 0 || stuck < limit) return;
  // A run that only services faults and never completes an access would go on to the clock's
  // horizon (1e6 s) while its copy backlog grows. It happens when each batch evicts the pages
  // the previous one brought in before the replay lets their warps retry: e.g. replay policies
  // that do not wait for the replay (driver.replay_policy=batch|block) under heavy thrash.
  throw UserError(opts_.trace.string(), "engine.livelock_batches",
                  "livelock: " + std::to_string(stuck) +
                      " fault batches in a row completed no warp access (" +
                      (stats_.accesses == 0 ? std::string("none yet")
                                            : "none since " + sim_seconds(progress_time_)) +
                      "; " + std::to_string(stats_.accesses) + " accesses completed, " +
                      std::to_string(stats_.evictions) + " evictions, simulated time " +
                      sim_seconds(now) + "); set engine.livelock_batches=0 to run on regardless");
}

void Simulator::replay_host_events(trace::TraceReader& reader, SimContext& ctx, Machine& m) {
  const auto& meta = reader.metadata();
  const std::string where = opts_.trace.string();
  const Tick limit = sim_time_limit(cfg_.engine);
  const unsigned n = m.gpus();
  Tick host = 0, last_event = 0;
  trace::HostEvent ev;
  unsigned device = 0;  // cudaSetDevice's current GPU
  // A kernel runs on its GPU while the host goes on (a launch is asynchronous); it is closed
  // when the host next waits for that GPU and finds it idle: its GPU done, no event of that GPU
  // queued (so its driver's bottom half is idle too).
  struct Running {
    const trace::KernelInfo* kernel = nullptr;
    std::optional<trace::LaunchStream> stream;
    KernelStats ks;
    std::size_t slot = 0;  ///< its place in stats_.kernels (launch order)
    std::uint64_t batches0 = 0;
  };
  std::array<std::optional<Running>, kMaxGpus> running;
  std::array<std::int32_t, kMaxGpus> iteration;
  iteration.fill(-1);

  auto close = [&](unsigned d) {
    if (!running[d]) return;
    Running& r = *running[d];
    GpuNode& nd = m.node(d);
    if (!nd.gpu.done() && !stats_.truncated)
      throw std::runtime_error(
          "simulation stalled with " + std::to_string(nd.gpu.unfinished_threadblocks()) +
          " threadblocks unfinished in launch " + std::to_string(r.ks.launch_index));
    // The trace's records were checked as they were decoded (RecordCheck::WhenDecoded); what
    // they add up to must be the index's total.
    if (!stats_.truncated) r.stream->check_accesses(r.ks.accesses);
    r.ks.end = nd.gpu.end_time();
    nd.driver.on_kernel_end(*r.kernel, r.ks.launch_index, r.ks.iteration,
                            std::max(r.ks.end, m.last_event[d]));
    r.ks.fault_batches = nd.driver.batches() - r.batches0;
    stats_.kernels[r.slot] = std::move(r.ks);
    host = std::max(host, std::max(stats_.kernels[r.slot].end, nd.driver.host_ready()));
    running[d].reset();
  };
  // The host waits for GPU `d` (its next launch), or for every GPU (a synchronisation; and, as
  // uvmsim replays them, prefetches, advice, CPU accesses and frees).
  auto wait_for = [&](unsigned d) {
    if (!running[d]) return;
    drain(ctx.queue, m, limit, last_event, static_cast<int>(d), kTickMax);
    close(d);
  };
  auto wait_all = [&] {
    drain(ctx.queue, m, limit, last_event, -1, kTickMax);
    for (unsigned d = 0; d < n; ++d) close(d);
  };
  // With several GPUs, the host acts at `t` only after every event up to `t` ran, and no GPU
  // runs ahead of it on its own (Gpu::set_inline_horizon). One GPU has nothing queued here.
  auto advance_to = [&](Tick t) {
    if (n == 1 || ctx.queue.empty()) return;
    for (unsigned g = 0; g < n; ++g) m.node(g).gpu.set_inline_horizon(t);
    drain(ctx.queue, m, limit, last_event, -1, t);
    for (unsigned g = 0; g < n; ++g) m.node(g).gpu.set_inline_horizon(kTickMax);
  };
  const std::string machine =
      "the machine has " + std::to_string(n) +
      (n == 1 ? " GPU (system.gpus=1)" : " GPUs (system.gpus=" + std::to_string(n) + ")");
  auto check_gpu = [&](Processor p, const char* what) {
    if (is_gpu(p) && gpu_ordinal(p) >= n)
      throw UserError(where, std::string("host event ") + what,
                      "names GPU " + std::to_string(gpu_ordinal(p)) + ", but " + machine);
  };
  // Host operations on memory reach every GPU's copy through GPU 0's driver instance.
  UvmDriver& host_driver = m.node(0).driver;

  while (!stats_.truncated && reader.next_host_event(ev)) {
    if (ev.type == trace::HostEventType::SetDevice) {
      device = gpu_ordinal(ev.device);
      continue;
    }
    if (ev.type == trace::HostEventType::KernelLaunch) {
      if (device >= n)
        throw UserError(where, "host event KernelLaunch",
                        "launch " + std::to_string(ev.launch_index) + " runs on GPU " +
                            std::to_string(device) + " (SetDevice), but " + machine);
      wait_for(device);
    } else {
      wait_all();
    }
    if (stats_.truncated) break;
    intervals_.advance(std::max(host, last_event), stats_);
    switch (ev.type) {
      case trace::HostEventType::KernelLaunch: {
        if (ev.kernel_id >= meta.kernels.size())
          throw UserError(where, "host event kernel_id",
                          "launch " + std::to_string(ev.launch_index) + " names kernel " +
                              std::to_string(ev.kernel_id) + " not in the metadata");
        const auto& k = meta.kernels[ev.kernel_id];
        GpuNode& nd = m.node(device);
        Running& r = running[device].emplace();
        r.kernel = &k;
        r.ks.launch_index = ev.launch_index;
        r.ks.kernel_id = k.id;
        r.ks.name = k.name;
        r.ks.iteration = ev.iteration;
        r.ks.gpu = static_cast<std::uint8_t>(device);
        r.batches0 = nd.driver.batches();
        r.slot = stats_.kernels.size();
        stats_.kernels.emplace_back();
        host = std::max(host, m.last_event[device]) +
               static_cast<Tick>(cfg_.cost.launch_overhead_ns * kPsPerNs);
        advance_to(host);
        r.ks.start = host;
        if (ev.iteration != iteration[device]) {
          iteration[device] = ev.iteration;
          nd.driver.on_iteration(ev.iteration, host);
        }
        nd.driver.on_kernel_start(k, ev.launch_index, ev.iteration, host);
        host = std::max(host, nd.driver.host_ready());  // placement actions run before the launch
        advance_to(host);
        r.stream.emplace(reader.launch(ev.launch_index, trace::RecordCheck::WhenDecoded,
                                       cfg_.engine.decoded_trace_mb << 20));
        nd.gpu.launch(k, *r.stream, host, r.ks);
        break;
      }
      case trace::HostEventType::SetDevice:
        break;
      case trace::HostEventType::MemPrefetch: {
        check_gpu(ev.device, "MemPrefetch");
        check_not_freed(ctx.va, ev, where);
        // To a GPU: that GPU's driver instance (its copy engine, its memory); to the host: every
        // GPU's copy comes back.
        UvmDriver& d = is_gpu(ev.device) ? m.node(gpu_ordinal(ev.device)).driver : host_driver;
        host = d.user_prefetch(ev.va, ev.size, ev.device, std::max(host, last_event));
        break;
      }
      case trace::HostEventType::MemAdvise:
        check_gpu(ev.device, "MemAdvise");
        check_not_freed(ctx.va, ev, where);
        host_driver.advise(ev.va, ev.size, ev.advice, ev.device);
        break;
      case trace::HostEventType::Synchronize:
        host = std::max(host, last_event);
        break;
      case trace::HostEventType::CpuAccess:
        check_not_freed(ctx.va, ev, where);
        host = host_driver.cpu_access(ev.va, ev.size, ev.kind, std::max(host, last_event));
        break;
      case trace::HostEventType::MemFree: {
        // cudaFree waits for the device (kernels have completed here), then the driver
        // releases the allocation. Device-only and pinned host allocations are only marked.
        VaRange* r = nullptr;
        for (const auto& a : meta.allocations)
          if (a.base == ev.va) r = ctx.va.range_of_allocation(a.id);
        if (!r)
          throw UserError(where, "host event MemFree",
                          "va " + hex_addr(ev.va) + " is not the base of an allocation");
        if (r->freed)
          throw UserError(where, "host event MemFree", "allocation '" + r->name + "' freed twice");
        host = std::max(host, last_event);
        if (r->managed)
          host = host_driver.free_allocation(*r, host);
        else
          r->freed = true;
        break;
      }
    }
    if (host > limit) stats_.truncated = true;
  }
  wait_all();
  stats_.sim_time = std::max(host, last_event);
}

nlohmann::json Simulator::to_json() const {
  nlohmann::json j = stats_.to_json();
  j["trace"] = trace_info_;
  j["memory"] = memory_info_;
  j["config"] = cfg_.to_json();
  return j;
}

}  // namespace uvmsim
