// `touch`: prefetch micro-tests. A single GPU thread reads a list of offsets of one CPU-initialised
// managed allocation, waiting `delay_us` between reads so that each fault (and the prefetching it
// triggers) completes before the next — the methodology of the UVM prefetcher reverse-engineering
// experiments (Ganguly et al., "Interplay between Hardware Prefetcher and Page Eviction Policy in
// CPU-GPU Unified Virtual Memory", ISCA 2019).
#include <limits>

#include "core/error.h"
#include "core/units.h"
#include "traces/generators/compute_cost.h"
#include "traces/generators/generator.h"

namespace uvmsim::gen {
namespace {

void write_touch(GenContext& ctx) {
  const std::uint64_t size = ctx.params.size("size");
  const std::vector<std::uint64_t> offsets = ctx.params.size_list("offsets");
  const std::uint64_t delay_us = ctx.params.integer("delay_us", 0, 1000000000);
  const std::uint64_t clock_mhz = ctx.params.integer("clock_mhz", 1, 100000);
  if (size < 4) ctx.params.fail("size", "must be at least 4 bytes");
  for (std::uint64_t off : offsets) {
    if (off > size - 4) {
      ctx.params.fail("offsets", "offset " + std::to_string(off) + " (" + format_bytes(off) +
                                     ") does not leave a 4-byte read inside size " +
                                     format_bytes(size));
    }
  }
  // The delay is a spin-wait on the clock counter, which issues about one instruction per cycle,
  // so its issue slots are its cycles: 1 us at f MHz = f cycles.
  const std::uint64_t delay_cycles = delay_us * clock_mhz;
  if (delay_cycles > std::numeric_limits<std::uint32_t>::max()) {
    ctx.params.fail("delay_us", "delay_us * clock_mhz = " + std::to_string(delay_cycles) +
                                    " cycles does not fit the 32-bit gap field");
  }

  trace::Metadata meta = ctx.metadata();
  meta.extra["delay_cycles"] = delay_cycles;
  const Addr base = place_allocations(meta, {{"buf", size}})[0];
  trace::KernelInfo k;
  k.id = 0;
  k.name = "touch";
  k.grid = {1, 1, 1};
  k.block = {1, 1, 1};
  meta.kernels.push_back(k);

  trace::TraceWriter w(ctx.output, meta, ctx.writer_options);
  trace::HostEvent init;
  init.type = trace::HostEventType::CpuAccess;
  init.va = base;
  init.size = size;
  init.kind = AccessKind::Write;
  w.host_event(init);
  w.begin_launch(0);
  w.begin_block(1);
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    trace::AccessRecord r;
    r.va = base + offsets[i];
    r.bytes = 4;
    r.kind = AccessKind::Read;
    r.ref_id = 0;
    // The first read needs only its address (buf + offsets[0]).
    r.gap_cycles = i == 0 ? kAddress.slots() : static_cast<std::uint32_t>(delay_cycles);
    w.access(0, r);
  }
  w.end_block();
  trace::HostEvent sync;
  sync.type = trace::HostEventType::Synchronize;
  w.host_event(sync);
  w.finish();
}

const Registrar kTouch{Generator{
    "touch",
    "prefetch micro-test: one GPU thread reads the given offsets of a CPU-initialised buffer, "
    "delay_us apart",
    {
        {"size", "2M", "allocation size (need not be a multiple of 2M, e.g. 2240K)"},
        {"offsets", "", "comma-separated byte offsets to read, in order (e.g. 0K,64K,128K)", true},
        {"delay_us", "500", "delay between reads in microseconds (turned into compute cycles)"},
        {"clock_mhz", "1500", "GPU clock used to convert delay_us into cycles"},
    },
    write_touch,
    "micro",
    std::uint64_t{64} << 20,
    "prefetcher micro-test",
}};

}  // namespace
}  // namespace uvmsim::gen
