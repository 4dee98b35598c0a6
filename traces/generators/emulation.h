// Kernel emulation layer shared by the benchmark generators. A generator describes its program the
// way a compiler sees it — managed allocations, kernels (grid, block, a body run per threadblock),
// static memops with what a compiler pass would know about them, and the host's launch sequence —
// and `Workload::write()` derives the static hints (docs/hints.md) from that description, writes
// them into the trace metadata and then replays the launch sequence, calling each kernel body once
// per threadblock. Bodies express per-thread index expressions: `warp.op(ref, work, fn)` evaluates
// `fn(thread)` for every lane and coalesces the warp's addresses into records with
// warp_instruction. Nothing but the current threadblock is buffered, so generation streams.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/generators/compute_cost.h"
#include "traces/generators/generator.h"
#include "traces/hints.h"
#include "traces/trace.h"

namespace uvmsim::gen {

using trace::AccessPattern;
using trace::Dim3;
using trace::IterationWindow;
using trace::Poly;

/// Returned by an index function for a lane that does not execute the instruction (its guard or
/// branch is false).
inline constexpr std::uint64_t kOff = ~std::uint64_t{0};

/// threadIdx of one lane.
struct Thread {
  std::uint32_t x = 0, y = 0, z = 0;
};

/// A static load/store instruction bound to its allocation. Element `e` is at
/// base + offset + e * stride and the instruction moves `bytes` bytes per thread.
struct Ref {
  std::uint32_t id = 0;
  Addr base = 0;
  std::uint32_t bytes = 4;
  std::uint32_t stride = 4;
  std::uint32_t offset = 0;
  AccessKind kind = AccessKind::Read;
};

/// One warp of the threadblock being emitted.
class Warp {
 public:
  Warp(trace::TraceWriter& w, std::uint32_t index, const Thread* lanes, std::uint32_t n)
      : w_(w), index_(index), lanes_(lanes), n_(n) {}
  std::uint32_t index() const { return index_; }
  std::uint32_t size() const { return n_; }  ///< threads of this warp (32 but in a partial warp)
  const Thread& lane(std::uint32_t i) const { return lanes_[i]; }

  /// One warp-wide execution of `r`: `idx(thread)` is the element the thread accesses, or kOff.
  /// `work` (compute_cost.h) is the per-thread computation since the warp's previous access; if
  /// no lane is active it carries over to the next op.
  template <class F>
  void op(const Ref& r, const Work& work, F&& idx) {
    op_slots(r, work.slots(), std::forward<F>(idx));
  }
  /// As op(), but `idx(lane)` receives the lane number (0..size()-1), for kernels whose per-lane
  /// state (loop bounds, loaded values) the body computed beforehand.
  template <class F>
  void op_lane(const Ref& r, const Work& work, F&& idx) {
    std::uint32_t lane = 0;
    op(r, work, [&](const Thread&) { return idx(lane++); });
  }
  /// As op_lane(), for `repeat` executions of the instruction at the addresses of the first, each
  /// after `work` (a record's repeat count, trace-format.md): how k-sampling (matmul.cpp) writes
  /// a run of loop steps as its first step. Work pending from compute() would be repeated too, so
  /// there must be none.
  template <class F>
  void op_lane_repeat(const Ref& r, const Work& work, std::uint32_t repeat, F&& idx) {
    if (repeat > 1 && pending_gap_ != 0) {
      throw std::logic_error("Warp::op_lane_repeat with compute pending");
    }
    Addr va[32];
    std::size_t n = 0;
    for (std::uint32_t l = 0; l < n_; ++l) {
      const std::uint64_t e = idx(l);
      if (e != kOff) va[n++] = r.base + r.offset + e * r.stride;
    }
    pending_gap_ += work.slots();
    if (n == 0) return;
    warp_instruction(w_, index_, {va, n}, r.bytes, r.kind, r.id, pending_gap_, repeat);
    pending_gap_ = 0;
  }
  /// Adds computation before the warp's next access (e.g. a loop's arithmetic).
  void compute(const Work& work) { pending_gap_ += work.slots(); }

 private:
  /// op() with the work already in issue slots.
  template <class F>
  void op_slots(const Ref& r, std::uint32_t gap, F&& idx) {
    Addr va[32];
    std::size_t n = 0;
    for (std::uint32_t l = 0; l < n_; ++l) {
      const std::uint64_t e = idx(lanes_[l]);
      if (e != kOff) va[n++] = r.base + r.offset + e * r.stride;
    }
    pending_gap_ += gap;
    if (n == 0) return;
    warp_instruction(w_, index_, {va, n}, r.bytes, r.kind, r.id, pending_gap_);
    pending_gap_ = 0;
  }

  trace::TraceWriter& w_;
  std::uint32_t index_;
  const Thread* lanes_;
  std::uint32_t n_;
  std::uint32_t pending_gap_ = 0;
};

/// The threadblock being emitted: blockIdx, blockDim and gridDim, and its warps.
class Block {
 public:
  Block(trace::TraceWriter& w, const std::vector<Thread>& lanes, Dim3 dim, Dim3 grid,
        std::uint64_t id)
      : w_(w),
        lanes_(lanes),
        dim(dim),
        grid(grid),
        id(id),
        x(static_cast<std::uint32_t>(id % grid.x)),
        y(static_cast<std::uint32_t>(id / grid.x % grid.y)),
        z(static_cast<std::uint32_t>(id / (std::uint64_t{grid.x} * grid.y))) {}

  /// Calls f(Warp&) for each warp in order; each warp's records are its program order.
  template <class F>
  void warps(F&& f) {
    const std::uint32_t threads = static_cast<std::uint32_t>(lanes_.size());
    for (std::uint32_t first = 0, w = 0; first < threads; first += 32, ++w) {
      Warp warp(w_, w, lanes_.data() + first, std::min<std::uint32_t>(32, threads - first));
      f(warp);
    }
  }
  /// Linear thread id within the block (threadIdx.x + threadIdx.y * blockDim.x + ...).
  std::uint64_t local(const Thread& t) const {
    return t.x + std::uint64_t{dim.x} * (t.y + std::uint64_t{dim.y} * t.z);
  }
  /// blockIdx.x * blockDim.x + threadIdx.x, the usual 1-D global index.
  std::uint64_t gx(const Thread& t) const { return std::uint64_t{x} * dim.x + t.x; }
  std::uint64_t gy(const Thread& t) const { return std::uint64_t{y} * dim.y + t.y; }

 private:
  trace::TraceWriter& w_;
  const std::vector<Thread>& lanes_;

 public:
  const Dim3 dim, grid;
  const std::uint64_t id;
  const std::uint32_t x, y, z;
};

/// Runs once per threadblock of a launch; `iteration` is the host-loop index (-1 outside loops).
using KernelBody = std::function<void(Block&, std::int32_t iteration)>;

/// What a compiler pass knows about one static memop (docs/hints.md, "refs"). The constructor
/// takes what every memop has; the chained setters the rest.
struct Access {
  std::uint32_t alloc = 0;
  AccessKind kind = AccessKind::Read;
  Poly count;         ///< thread-level executions per launch
  Poly bytes_per_tb;  ///< extent of one TB's addresses (max - min + bytes), max over TBs
  AccessPattern pattern = AccessPattern::Streaming;
  std::uint32_t bytes = 4;      ///< bytes per thread access
  bool data_dependent = false;  ///< address depends on loaded data
  bool conditional = false;     ///< under a data-dependent branch (count is an upper bound)
  std::optional<IterationWindow> window;  ///< iteration-dependent offset window
  std::uint32_t stride = 0;               ///< bytes between consecutive elements; 0 = `bytes`
  std::uint32_t offset = 0;               ///< byte offset of the field within an element

  Access(std::uint32_t alloc_, AccessKind kind_, Poly count_, Poly bytes_per_tb_,
         AccessPattern pattern_ = AccessPattern::Streaming)
      : alloc(alloc_), kind(kind_), count(count_), bytes_per_tb(bytes_per_tb_), pattern(pattern_) {}
  Access& size(std::uint32_t b) {
    bytes = b;
    return *this;
  }
  Access& indirect() {
    data_dependent = true;
    return *this;
  }
  Access& guarded() {
    conditional = true;
    return *this;
  }
  Access& iterates(Poly start, Poly span) {
    window = IterationWindow{start, span};
    return *this;
  }
  Access& field(std::uint32_t stride_, std::uint32_t offset_) {
    stride = stride_;
    offset = offset_;
    return *this;
  }
};

class Workload {
 public:
  explicit Workload(GenContext& ctx);

  /// A managed allocation (2 MB-aligned, guard gap; see place_allocations). Returns its id.
  std::uint32_t alloc(const std::string& name, std::uint64_t size);
  Addr base(std::uint32_t alloc) const { return meta_.allocations.at(alloc).base; }
  std::uint64_t size(std::uint32_t alloc) const { return meta_.allocations.at(alloc).size; }

  std::uint32_t kernel(const std::string& name, Dim3 grid, Dim3 block,
                       std::uint32_t smem_bytes = 0);
  /// Declares a static memop of `kernel` with a trace-wide unique ref id, or, with `same`, the
  /// same instruction as `same` in another entry of the same kernel function (another launch
  /// configuration or pointer binding), which keeps its ref id.
  Ref ref(std::uint32_t kernel, const Access& a, const Ref* same = nullptr);
  void body(std::uint32_t kernel, KernelBody fn);

  // ---- the host program, replayed by write() ----
  void cpu_write(std::uint32_t alloc) { cpu(alloc, AccessKind::Write, 0, size(alloc)); }
  void cpu_read(std::uint32_t alloc) { cpu(alloc, AccessKind::Read, 0, size(alloc)); }
  void cpu(std::uint32_t alloc, AccessKind kind, std::uint64_t offset, std::uint64_t bytes);
  /// The host initialises several allocations.
  void cpu_write(std::initializer_list<std::uint32_t> allocs) {
    for (std::uint32_t a : allocs) cpu_write(a);
  }
  /// cudaMemPrefetchAsync of `bytes` of `alloc` from `offset` (default: all of it) to `dest`.
  void prefetch(std::uint32_t alloc, Processor dest, std::uint64_t offset = 0,
                std::uint64_t bytes = ~std::uint64_t{0});
  /// cudaMemAdvise(alloc, size, advice, device) over the whole allocation.
  void advise(std::uint32_t alloc, trace::Advice advice, Processor device);
  /// cudaFree(alloc): a MemFree host event (the trace becomes format version 2).
  void free(std::uint32_t alloc);
  /// A kernel launch followed by cudaDeviceSynchronize.
  void launch(std::uint32_t kernel, std::int32_t iteration = -1);
  /// A kernel launch the host does not wait for (no Synchronize after it): launches on
  /// different GPUs then run concurrently until the next synchronize() (docs/multi-gpu.md).
  void launch_async(std::uint32_t kernel, std::int32_t iteration = -1);
  /// cudaDeviceSynchronize: the host waits for every GPU.
  void synchronize();
  /// cudaSetDevice(gpu): the following launches run on GPU `gpu` (a SetDevice host event, trace
  /// format version 3).
  void set_device(unsigned gpu);
  /// A host loop: for it in 0..iters-1, launch each of `kernels` in order with iteration it.
  void loop(std::uint64_t iters, std::initializer_list<std::uint32_t> kernels) {
    for (std::uint64_t it = 0; it < iters; ++it) {
      for (std::uint32_t k : kernels) launch(k, static_cast<std::int32_t>(it));
    }
  }
  std::size_t launches() const { return launches_; }

  trace::Metadata& metadata() { return meta_; }
  /// Builds the hints, writes the trace and replays the host program.
  void write();

 private:
  struct KernelDef {
    std::vector<Thread> lanes;  // threadIdx of every thread of the block, in linear order
    KernelBody body;
    trace::KernelHint hint;  // refs only; uses are derived in build_hints()
  };
  struct Step {
    bool launch = false;
    bool sync = true;  ///< launch: a Synchronize follows it
    std::uint32_t kernel = 0;
    std::int32_t iteration = -1;
    trace::HostEvent event;
  };
  trace::Hints build_hints() const;

  GenContext& ctx_;
  trace::Metadata meta_;
  std::vector<KernelDef> kernels_;
  std::vector<Step> script_;
  std::size_t launches_ = 0;
  std::uint32_t next_ref_ = 0;
};

// ---- sizing helpers ---------------------------------------------------------------------------

inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

/// Largest n, a multiple of `align` and >= `align`, with count * n * n * elem <= footprint.
std::uint64_t square_order(std::uint64_t footprint, std::uint64_t count, std::uint64_t elem,
                           std::uint64_t align);

/// An iteration-limit parameter: 0 means all `max` iterations, otherwise at most `max`.
std::uint64_t iteration_limit(GenContext& ctx, const std::string& param, std::uint64_t max);

/// Largest n = k * align (k >= 1) with bytes(n) <= footprint, for increasing `bytes`; `align`
/// when even that does not fit.
std::uint64_t fit(std::uint64_t footprint, std::uint64_t align,
                  const std::function<std::uint64_t(std::uint64_t)>& bytes);

/// A 1-D grid covering n threads with blocks of `block` (throws UserError if it exceeds CUDA's
/// limit).
Dim3 grid_1d(std::uint64_t n, std::uint32_t block);

}  // namespace uvmsim::gen
