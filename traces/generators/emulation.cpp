// Kernel emulation layer: hint derivation and replay of the host program (see emulation.h).
#include "traces/generators/emulation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/error.h"

namespace uvmsim::gen {

Workload::Workload(GenContext& ctx) : ctx_(ctx), meta_(ctx.metadata()) {}

std::uint32_t Workload::alloc(const std::string& name, std::uint64_t size) {
  if (size == 0) throw std::logic_error("allocation '" + name + "' of size 0");
  place_allocations(meta_, {{name, size}});
  return meta_.allocations.back().id;
}

std::uint32_t Workload::kernel(const std::string& name, Dim3 grid, Dim3 block,
                               std::uint32_t smem_bytes) {
  trace::KernelInfo k;
  k.id = static_cast<std::uint32_t>(meta_.kernels.size());
  k.name = name;
  k.grid = grid;
  k.block = block;
  k.shared_mem_bytes = smem_bytes;
  meta_.kernels.push_back(k);
  KernelDef def;
  for (std::uint32_t z = 0; z < block.z; ++z) {
    for (std::uint32_t y = 0; y < block.y; ++y) {
      for (std::uint32_t x = 0; x < block.x; ++x) def.lanes.push_back({x, y, z});
    }
  }
  def.hint.kernel = k.id;
  def.hint.name = name;
  kernels_.push_back(std::move(def));
  return k.id;
}

Ref Workload::ref(std::uint32_t kernel, const Access& a, const Ref* same) {
  trace::RefHint h;
  h.id = same != nullptr ? same->id : next_ref_++;
  h.alloc = a.alloc;
  h.kind = a.kind;
  h.bytes = a.bytes;
  h.count = a.count;
  h.pattern = a.pattern;
  h.bytes_per_tb = a.bytes_per_tb;
  h.data_dependent = a.data_dependent;
  h.conditional = a.conditional;
  h.window = a.window;
  kernels_.at(kernel).hint.refs.push_back(h);
  Ref r;
  r.id = h.id;
  r.base = base(a.alloc);
  r.bytes = a.bytes;
  r.stride = a.stride ? a.stride : a.bytes;
  r.offset = a.offset;
  r.kind = a.kind;
  return r;
}

void Workload::body(std::uint32_t kernel, KernelBody fn) {
  kernels_.at(kernel).body = std::move(fn);
}

void Workload::cpu(std::uint32_t alloc, AccessKind kind, std::uint64_t offset,
                   std::uint64_t bytes) {
  Step s;
  s.event.type = trace::HostEventType::CpuAccess;
  s.event.va = base(alloc) + offset;
  s.event.size = bytes;
  s.event.kind = kind;
  script_.push_back(s);
}

void Workload::prefetch(std::uint32_t alloc, Processor dest, std::uint64_t offset,
                        std::uint64_t bytes) {
  if (offset > size(alloc)) throw std::logic_error("prefetch past the end of an allocation");
  Step s;
  s.event.type = trace::HostEventType::MemPrefetch;
  s.event.va = base(alloc) + offset;
  s.event.size = std::min(bytes, size(alloc) - offset);
  s.event.device = dest;
  script_.push_back(s);
}

void Workload::advise(std::uint32_t alloc, trace::Advice advice, Processor device) {
  Step s;
  s.event.type = trace::HostEventType::MemAdvise;
  s.event.va = base(alloc);
  s.event.size = size(alloc);
  s.event.advice = advice;
  s.event.device = device;
  script_.push_back(s);
}

void Workload::free(std::uint32_t alloc) {
  Step s;
  s.event.type = trace::HostEventType::MemFree;
  s.event.va = base(alloc);
  script_.push_back(s);
}

void Workload::launch(std::uint32_t kernel, std::int32_t iteration) {
  Step s;
  s.launch = true;
  s.kernel = kernel;
  s.iteration = iteration;
  script_.push_back(s);
  ++launches_;
}

void Workload::launch_async(std::uint32_t kernel, std::int32_t iteration) {
  launch(kernel, iteration);
  script_.back().sync = false;
}

void Workload::synchronize() {
  Step s;
  s.event.type = trace::HostEventType::Synchronize;
  script_.push_back(s);
}

void Workload::set_device(unsigned gpu) {
  if (gpu >= kMaxGpus) throw std::logic_error("set_device past the last GPU ordinal");
  Step s;
  s.event.type = trace::HostEventType::SetDevice;
  s.event.device = gpu_processor(gpu);
  script_.push_back(s);
}

trace::Hints Workload::build_hints() const {
  trace::Hints h;
  h.source = trace::HintSource::Static;
  h.workload = meta_.workload;
  for (const auto& a : meta_.allocations) h.allocations.push_back({a.id, a.name, a.size});
  for (const KernelDef& k : kernels_) {
    trace::KernelHint kh = k.hint;
    // Per allocation, in order of first reference: totals are sums over the memops (what SUV-Host's
    // injected code adds up); the working set per TB is the largest memop extent; the pattern is
    // that of the memop with the most accesses.
    std::vector<std::uint64_t> top_count;
    for (const trace::RefHint& r : kh.refs) {
      std::size_t u = 0;
      while (u < kh.uses.size() && kh.uses[u].alloc != r.alloc) ++u;
      if (u == kh.uses.size()) {
        trace::UseHint nu;
        nu.alloc = r.alloc;
        nu.pattern = r.pattern;
        kh.uses.push_back(nu);
        top_count.push_back(0);
      }
      trace::UseHint& use = kh.uses[u];
      (r.kind == AccessKind::Read ? use.reads : use.writes) =
          (r.kind == AccessKind::Read ? use.reads : use.writes) + r.count;
      use.bytes = use.bytes + r.count * r.bytes;
      if (r.bytes_per_tb.at(0) > use.bytes_per_tb.at(0)) use.bytes_per_tb = r.bytes_per_tb;
      if (r.count.at(0) > top_count[u]) {
        top_count[u] = r.count.at(0);
        use.pattern = r.pattern;
      }
      use.data_dependent |= r.data_dependent;
      use.iteration_dependent |= r.window.has_value();
      use.estimated |= r.data_dependent || r.conditional;
    }
    h.kernels.push_back(std::move(kh));
  }
  // Next use of each allocation after each launch, by a backward scan of the launch sequence.
  std::vector<std::int64_t> next(meta_.allocations.size(), -1);
  std::vector<const Step*> launch_steps;
  for (const Step& s : script_) {
    if (s.launch) launch_steps.push_back(&s);
  }
  h.launches.resize(launch_steps.size());
  for (std::size_t i = launch_steps.size(); i-- > 0;) {
    trace::LaunchHint& l = h.launches[i];
    l.launch = static_cast<std::uint32_t>(i);
    l.kernel = launch_steps[i]->kernel;
    l.iteration = launch_steps[i]->iteration;
    for (const trace::UseHint& u : h.kernels[l.kernel].uses) {
      l.next_use.emplace_back(u.alloc, next[u.alloc]);
      next[u.alloc] = static_cast<std::int64_t>(i);
    }
  }
  return h;
}

void Workload::write() {
  meta_.hints = build_hints();
  trace::TraceWriter w(ctx_.output, meta_, ctx_.writer_options);
  trace::HostEvent sync;
  sync.type = trace::HostEventType::Synchronize;
  for (const Step& s : script_) {
    if (!s.launch) {
      w.host_event(s.event);
      continue;
    }
    const KernelDef& k = kernels_[s.kernel];
    const trace::KernelInfo& info = meta_.kernels[s.kernel];
    if (!k.body) throw std::logic_error("kernel '" + info.name + "' has no body");
    w.begin_launch(s.kernel, s.iteration);
    const std::uint32_t warps = info.warps_per_block();
    for (std::uint64_t tb = 0; tb < info.threadblocks(); ++tb) {
      w.begin_block(warps);
      Block b(w, k.lanes, info.block, info.grid, tb);
      k.body(b, s.iteration);
      w.end_block();
    }
    if (s.sync) w.host_event(sync);
  }
  w.finish();
}

std::uint64_t square_order(std::uint64_t footprint, std::uint64_t count, std::uint64_t elem,
                           std::uint64_t align) {
  const auto n = static_cast<std::uint64_t>(
      std::sqrt(static_cast<double>(footprint) / static_cast<double>(count * elem)));
  return std::max(align, n / align * align);
}

std::uint64_t iteration_limit(GenContext& ctx, const std::string& param, std::uint64_t max) {
  const std::uint64_t v = ctx.params.integer(param, 0, 0x7fffffff);
  return v == 0 ? max : std::min(v, max);
}

std::uint64_t fit(std::uint64_t footprint, std::uint64_t align,
                  const std::function<std::uint64_t(std::uint64_t)>& bytes) {
  std::uint64_t lo = 1, hi = 2;  // bytes(lo * align) fits (or lo = 1), bytes(hi * align) does not
  while (hi < (std::uint64_t{1} << 40) / align && bytes(hi * align) <= footprint) lo = hi, hi *= 2;
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    (bytes(mid * align) <= footprint ? lo : hi) = mid;
  }
  return lo * align;
}

Dim3 grid_1d(std::uint64_t n, std::uint32_t block) {
  const std::uint64_t g = std::max<std::uint64_t>(1, ceil_div(n, block));
  if (g > 0x7fffffffu) throw UserError("--footprint: too large (grid exceeds 2^31-1 blocks)");
  return {static_cast<std::uint32_t>(g), 1, 1};
}

}  // namespace uvmsim::gen
