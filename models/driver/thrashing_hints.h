// The driver's calls into the thrashing detector (models/thrashing.h) with a VA block's state:
// the hint for a faulting processor, and the delayed unpinning of expired pins.
#pragma once

#include <cstdint>

#include "models/driver/driver_context.h"
#include "models/thrashing.h"

namespace uvmsim {

/// uvm_perf_thrashing_get_hint for `page` of `b`, with its residency on every processor of
/// the machine (`gpus` GPUs) and its preferred location.
inline ThrashingDetector::Result thrashing_hint(ThrashingDetector& t, const VaBlock& b,
                                                unsigned page, Processor requester, unsigned gpus,
                                                Tick now) {
  if (!t.tracks(b.id)) return {};  // the common case: no page of the block is tracked
  ProcessorMask resident = b.cpu_resident.test(page) ? ThrashingDetector::bit(Processor::Cpu) : 0;
  for (unsigned g = 0; g < gpus; ++g)
    if (b.gpu(g).resident.test(page)) resident |= ThrashingDetector::bit(gpu_processor(g));
  const Processor pref = static_cast<Processor>(b.preferred);  // the same encoding
  const Processor* pp = b.preferred != PreferredLocation::None ? &pref : nullptr;
  return t.get_hint(b.id, page, requester, resident, pp, now);
}

/// thrashing_unpin_pages, run when the driver next works rather than from a timer: expired pins
/// lose the GPU's remote mapping (uvm_perf_thrashing_unmap_remote_pinned_pages_all), so the next
/// GPU access faults and migrates normally; the CPU's mapping of a page pinned in GPU memory
/// (coherent host link) goes the same way. Mappings held for other reasons (preferred location
/// CPU, AccessedBy) stay.
inline void expire_thrashing_pins(ThrashingDetector& t, DriverContext& dc, Tick now) {
  t.expire_pins(now, [&](std::uint32_t block, unsigned page) {
    VaBlock& b = dc.block(block);
    if (b.preferred == PreferredLocation::Cpu) return;
    if (!dc.shared.cpu_mapped.empty() && !(b.accessed_by & processor_bit(Processor::Cpu)))
      dc.shared.cpu_mapped[block].reset(page);
    // The pins are the process's: every GPU that mapped the pinned copy loses the mapping,
    // unless it maps it for its own accessed-by advice.
    for (unsigned g = 0; g < dc.va().gpus(); ++g) {
      if (g != 0 && !b.has_peer_states()) break;
      if (b.accessed_by & processor_bit(gpu_processor(g))) continue;
      GpuBlockState& s = b.gpu(g);
      if (!s.remote_mapped.test(page)) continue;
      s.remote_mapped.reset(page);
      ++s.mapping_gen;
    }
  });
}

}  // namespace uvmsim
