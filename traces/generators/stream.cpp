// `stream`: the BabelStream triad kernel a[i] = b[i] + scalar * c[i] (Deakin et al., "GPU-STREAM
// v2.0", P^3MA workshop at ISC 2016), as used in UVM oversubscription studies: three arrays
// streamed once per iteration, one element (float, or double as in BabelStream's default build) per
// thread.
#include "core/error.h"
#include "traces/generators/compute_cost.h"
#include "traces/generators/generator.h"

namespace uvmsim::gen {
namespace {

// a[i] = b[i] + scalar * c[i]. Before the loads: the thread index and the guard (first element),
// or the grid-stride step (later elements), and the addresses of b[i] and c[i]; the two loads are
// independent and issue back to back. Before the store: the FFMA and the address of a[i].
constexpr Work kFirstLoads = kGlobalIndex + kGuard + 2 * kAddress;
constexpr Work kStrideLoads = kLoop + 2 * kAddress;  // i += gridDim.x * blockDim.x; i < n
constexpr Work kTriadStore = fp32(1) + kAddress;
constexpr Work kTriadStoreDouble = fp64(1) + kAddress;

void write_stream(GenContext& ctx) {
  const std::uint64_t block = ctx.params.integer("block", 1, 1024);
  const std::uint64_t iters = ctx.params.integer("iters", 1, 1000000);
  // grid = 0: one element per thread (BabelStream's launch). grid = G: G blocks run a
  // grid-stride loop (i += G * block), the other common way to write the kernel; each warp then
  // streams many elements, so the trace is dominated by TLB hits after the first iteration.
  const std::uint64_t grid_param = ctx.params.integer("grid", 0, 0x7fffffff);
  const std::string init = ctx.params.choice("init", {"cpu", "all", "none"});
  // BabelStream runs doubles unless built with --float; Allen & Ge's IPDPS'21 / SC'21 stream
  // (their uvm-eval repository, benchmarksv3/stream) is the double build.
  const std::uint64_t elem = ctx.params.choice("elem", {"4", "8"}) == "8" ? 8 : 4;
  const std::uint64_t n = ctx.footprint / 3 / elem;  // elements per array
  if (n == 0)
    throw UserError("--footprint: must be at least " + std::to_string(3 * elem) +
                    " bytes for this generator");
  const std::uint64_t grid = grid_param ? grid_param : (n + block - 1) / block;
  if (grid > 0x7fffffffu) throw UserError("--footprint: too large (grid exceeds 2^31-1 blocks)");

  trace::Metadata meta = ctx.metadata();
  const std::vector<Addr> bases =
      place_allocations(meta, {{"a", n * elem}, {"b", n * elem}, {"c", n * elem}});
  const Addr a = bases[0], b = bases[1], c = bases[2];
  trace::KernelInfo k;
  k.id = 0;
  k.name = "triad";
  k.grid = {static_cast<std::uint32_t>(grid), 1, 1};
  k.block = {static_cast<std::uint32_t>(block), 1, 1};
  meta.kernels.push_back(k);

  trace::TraceWriter w(ctx.output, meta, ctx.writer_options);
  // The host writes the inputs b and c (BabelStream's init), or all three arrays (a StreamTriad
  // whose host loop initialises a, b and c).
  std::vector<Addr> host_init;
  if (init == "cpu") host_init = {b, c};
  if (init == "all") host_init = {a, b, c};
  for (Addr base : host_init) {
    trace::HostEvent ev;
    ev.type = trace::HostEventType::CpuAccess;
    ev.va = base;
    ev.size = n * elem;
    ev.kind = AccessKind::Write;
    w.host_event(ev);
  }
  const std::uint32_t warps = k.warps_per_block();
  Addr lanes[32];
  for (std::uint64_t it = 0; it < iters; ++it) {
    w.begin_launch(0, static_cast<std::int32_t>(it));
    for (std::uint64_t tb = 0; tb < grid; ++tb) {
      w.begin_block(warps);
      for (std::uint32_t warp = 0; warp < warps; ++warp) {
        bool first_element = true;
        for (std::uint64_t first = tb * block; first < n; first += grid * block) {
          std::size_t lanes_active = 0;
          for (std::uint64_t lane = 0; lane < 32; ++lane) {
            const std::uint64_t local = warp * 32ull + lane;
            const std::uint64_t i = first + local;
            if (local >= block || i >= n) break;
            lanes[lanes_active++] = i * elem;  // byte offset, rebased per array below
          }
          if (lanes_active == 0) break;
          Addr va[32];
          auto emit = [&](Addr base, AccessKind kind, std::uint32_t ref, std::uint32_t gap) {
            for (std::size_t l = 0; l < lanes_active; ++l) va[l] = base + lanes[l];
            warp_instruction(w, warp, {va, lanes_active}, static_cast<std::uint32_t>(elem), kind,
                             ref, gap);
          };
          // load b[i] (the stride's multiply goes with the first element's index)
          emit(b, AccessKind::Read, 0,
               first_element ? (kFirstLoads + (grid_param ? imad(1) : kNoWork)).slots()
                             : kStrideLoads.slots());
          emit(c, AccessKind::Read, 1, 0);  // load c[i]: independent, issues right after
          // FFMA (DFMA for doubles), then store a[i]
          emit(a, AccessKind::Write, 2, (elem == 8 ? kTriadStoreDouble : kTriadStore).slots());
          first_element = false;
          if (!grid_param) break;  // one element per thread
        }
      }
      w.end_block();
    }
    trace::HostEvent sync;
    sync.type = trace::HostEventType::Synchronize;
    w.host_event(sync);
  }
  w.finish();
}

const Registrar kStream{Generator{
    "stream",
    "BabelStream triad a[i] = b[i] + s*c[i] over three arrays of footprint/3 each",
    {
        {"block", "1024", "threads per block (1..1024)"},
        {"iters", "1", "number of triad launches (iteration index 0..iters-1)"},
        {"grid", "0",
         "0: one element per thread; G > 0: G blocks with a grid-stride loop over the arrays"},
        {"init", "cpu",
         "cpu: the CPU writes b and c before the first launch; all: it writes a, b and c; none: "
         "no host initialisation"},
        {"elem", "4",
         "element bytes: 4 (float) or 8 (double, BabelStream's default build and Allen & Ge's "
         "runs)"},
    },
    write_stream,
    "streaming",
    std::uint64_t{64} << 20,
    "BabelStream triad",
}};

}  // namespace
}  // namespace uvmsim::gen
