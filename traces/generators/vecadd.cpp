// `vecadd`: c[i] = a[i] + b[i] with one 4 KB page per element, so every thread faults its own
// pages. With threads=32 this is the 32-thread vector add Allen & Ge use to dissect a single
// fault batch.
#include <limits>

#include "core/error.h"
#include "traces/generators/compute_cost.h"
#include "traces/generators/generator.h"

namespace uvmsim::gen {
namespace {

// i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i], one page per element:
// the index, the guard and both load addresses before the loads (which then issue back to back);
// the FADD and the store address before the store.
constexpr Work kLoadsWork = kGlobalIndex + kGuard + 2 * kAddress;
constexpr Work kStoreWork = fp32(1) + kAddress;

void write_vecadd(GenContext& ctx) {
  const std::uint64_t block_param = ctx.params.integer("block", 1, 1024);
  std::uint64_t threads = 0;
  if (ctx.params.text("threads") == "auto") {
    threads = ctx.footprint / 3 / kPageSize;
    if (threads == 0) throw UserError("--footprint: must be at least 12K for this generator");
  } else {
    threads = ctx.params.integer("threads", 1, std::uint64_t{1} << 40);
  }
  const std::uint64_t block = std::min(block_param, threads);
  const std::uint64_t grid = (threads + block - 1) / block;
  if (grid > 0x7fffffffu) throw UserError("--param threads: too large (grid exceeds 2^31-1)");
  const std::uint64_t bytes = threads * kPageSize;

  trace::Metadata meta = ctx.metadata();
  meta.params["threads"] = threads;
  const std::vector<Addr> bases =
      place_allocations(meta, {{"a", bytes}, {"b", bytes}, {"c", bytes}});
  trace::KernelInfo k;
  k.id = 0;
  k.name = "vecadd";
  k.grid = {static_cast<std::uint32_t>(grid), 1, 1};
  k.block = {static_cast<std::uint32_t>(block), 1, 1};
  meta.kernels.push_back(k);

  trace::TraceWriter w(ctx.output, meta, ctx.writer_options);
  for (int i = 0; i < 2; ++i) {  // the host initialises the inputs a and b
    trace::HostEvent ev;
    ev.type = trace::HostEventType::CpuAccess;
    ev.va = bases[i];
    ev.size = bytes;
    ev.kind = AccessKind::Write;
    w.host_event(ev);
  }
  w.begin_launch(0);
  const std::uint32_t warps = k.warps_per_block();
  std::uint64_t idx[32];
  Addr va[32];
  for (std::uint64_t tb = 0; tb < grid; ++tb) {
    w.begin_block(warps);
    for (std::uint32_t warp = 0; warp < warps; ++warp) {
      std::size_t active = 0;
      for (std::uint64_t lane = 0; lane < 32; ++lane) {
        const std::uint64_t local = warp * 32ull + lane;
        const std::uint64_t t = tb * block + local;
        if (local >= block || t >= threads) break;
        idx[active++] = t;
      }
      if (active == 0) continue;
      auto emit = [&](Addr base, AccessKind kind, std::uint32_t ref, std::uint32_t gap) {
        for (std::size_t l = 0; l < active; ++l) va[l] = base + idx[l] * kPageSize;
        warp_instruction(w, warp, {va, active}, 4, kind, ref, gap);
      };
      emit(bases[0], AccessKind::Read, 0, kLoadsWork.slots());  // load a[i]
      emit(bases[1], AccessKind::Read, 1, 0);  // load b[i]: independent of a[i], issues right after
      emit(bases[2], AccessKind::Write, 2, kStoreWork.slots());  // FADD, then store c[i]
    }
    w.end_block();
  }
  trace::HostEvent sync;
  sync.type = trace::HostEventType::Synchronize;
  w.host_event(sync);
  w.finish();
}

const Registrar kVecadd{Generator{
    "vecadd",
    "vector add c = a + b with one page per element (Allen & Ge's 32-thread vecadd: threads=32)",
    {
        {"threads", "auto",
         "number of threads / elements; auto = footprint/3/4K (each array is threads*4K bytes)"},
        {"block", "256", "threads per block (1..1024; capped at threads)"},
    },
    write_vecadd,
    "streaming",
    std::uint64_t{64} << 20,
    "Allen & Ge vector add",
}};

}  // namespace
}  // namespace uvmsim::gen
