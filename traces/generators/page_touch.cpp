#include "traces/generators/page_touch.h"

#include "core/error.h"
#include "traces/generators/compute_cost.h"

namespace uvmsim::gen {

// i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) v = data[i * 1024]: the index, the guard
// and the page's address (a LEA with shift 12).
constexpr Work kPageTouchWork = kGlobalIndex + kGuard + kAddress;

std::vector<ParamSpec> page_touch_params() {
  return {
      {"block", "256", "threads per block (1..1024)"},
      {"init", "none",
       "none: the GPU touches every page first; cpu: a CPU write of the whole allocation "
       "precedes the launch, so every page starts resident on the host"},
  };
}

void write_page_touch(GenContext& ctx, const char* kernel_name, bool random) {
  const std::uint64_t block = ctx.params.integer("block", 1, 1024);
  const bool cpu_init = ctx.params.choice("init", {"none", "cpu"}) == "cpu";
  const std::uint64_t pages = ctx.footprint / kPageSize;
  if (pages == 0) throw UserError("--footprint: must be at least 4K for this generator");
  const std::uint64_t grid = (pages + block - 1) / block;
  if (grid > 0x7fffffffu) throw UserError("--footprint: too large (grid exceeds 2^31-1 blocks)");

  trace::Metadata meta = ctx.metadata();
  const Addr base = place_allocations(meta, {{"data", ctx.footprint}})[0];
  trace::KernelInfo k;
  k.id = 0;
  k.name = kernel_name;
  k.grid = {static_cast<std::uint32_t>(grid), 1, 1};
  k.block = {static_cast<std::uint32_t>(block), 1, 1};
  meta.kernels.push_back(k);
  const std::vector<std::uint64_t> perm =
      random ? random_permutation(pages, ctx.seed) : std::vector<std::uint64_t>{};

  trace::TraceWriter w(ctx.output, meta, ctx.writer_options);
  if (cpu_init) {
    trace::HostEvent ev;
    ev.type = trace::HostEventType::CpuAccess;
    ev.va = base;
    ev.size = ctx.footprint;
    ev.kind = AccessKind::Write;
    w.host_event(ev);
  }
  w.begin_launch(0);
  const std::uint32_t warps = k.warps_per_block();
  Addr lanes[32];
  for (std::uint64_t tb = 0; tb < grid; ++tb) {
    w.begin_block(warps);
    for (std::uint32_t warp = 0; warp < warps; ++warp) {
      std::size_t n = 0;
      for (std::uint64_t lane = 0; lane < 32; ++lane) {
        const std::uint64_t local = warp * 32ull + lane;
        const std::uint64_t thread = tb * block + local;
        if (local >= block || thread >= pages) break;  // the kernel's `if (i < n)` guard
        lanes[n++] = base + (random ? perm[thread] : thread) * kPageSize;
      }
      if (n > 0)
        warp_instruction(w, warp, {lanes, n}, 4, AccessKind::Read, 0, kPageTouchWork.slots());
    }
    w.end_block();
  }
  trace::HostEvent sync;
  sync.type = trace::HostEventType::Synchronize;
  w.host_event(sync);
  w.finish();
}

}  // namespace uvmsim::gen
