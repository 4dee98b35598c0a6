// Where a faulting processor's page should live: the driver's block_select_processor_residency
// (uvm_va_block.c), in its order, over the machine's access masks (models/topology.h). The GPU
// fault path asks it when GPUs have peer access (BlockService::peer_target), the CPU fault path
// when the CPU can map GPU memory (HostOperations::cpu_keeps_on_gpu). Without either, every
// answer is "the faulting processor", except the cases the GPU fault path already settles
// before it (a thrashing pin in host memory, a preferred location on the CPU).
#pragma once

#include "core/types.h"
#include "models/thrashing.h"
#include "models/topology.h"
#include "state/va_space.h"

namespace uvmsim {

/// The processor (0: the CPU, 1 + g: GPU g) whose memory should hold `page` of `b` when
/// `requester` faults on it with an access of `kind`, given the thrashing detector's `hint`.
/// `gpus` bounds the GPUs whose copies are looked at (VaBlock::gpu); `atomics_stay_remote` is
/// thrashing.map_remote_on_native_atomics.
inline int select_residency(const VaBlock& b, unsigned page, Processor requester, AccessKind kind,
                            const ThrashingDetector::Result& hint, const Topology& topo,
                            unsigned gpus, bool atomics_stay_remote) {
  const int req = processor_id(requester);
  const ProcessorMask req_bit = processor_bit(requester);
  // Read duplication (can_read_duplicate) gives the faulting processor a copy, a read or not;
  // so does a preferred location on it.
  if (b.read_mostly || b.preferred == preferred_on(requester)) return req;
  // A thrashing pin: where the detector chose (it pins only where the requester can map).
  if (hint.type == ThrashingDetector::Hint::Pin) return processor_id(hint.pin);
  const int preferred = b.preferred == PreferredLocation::None
                            ? -1
                            : processor_id(static_cast<Processor>(b.preferred));
  const bool reaches_preferred = preferred >= 0 && (topo.accessible_from(preferred) & req_bit);
  // uvm_va_block_page_get_closest_resident: the copies the requester does not have.
  ProcessorMask holders = b.cpu_resident.test(page) ? processor_bit(Processor::Cpu) : 0;
  for (unsigned g = 0; g < gpus; ++g)
    if (b.gpu(g).resident.test(page)) holders |= processor_bit(gpu_processor(g));
  holders &= ~req_bit;
  // Resident nowhere: the preferred location if the requester can map it.
  if (holders == 0) return reaches_preferred ? preferred : req;
  const int closest = topo.find_closest(holders, req);
  // Accessed-by: the page stays where it is and the requester maps it.
  if ((b.accessed_by & req_bit) && (topo.accessible_from(closest) & req_bit)) return closest;
  // map_remote_on_atomic_fault: a GPU's atomic stays remote on a GPU copy it has native atomics
  // to (a CPU write cannot be told from an atomic, so never for the CPU).
  if (atomics_stay_remote && kind == AccessKind::Atomic && req > 0 && closest > 0 &&
      (topo.fast_atomic_link(req) >> closest & 1))
    return closest;
  // A preferred location the requester can map: the page moves (or stays) there.
  if (reaches_preferred) return preferred;
  return req;
}

}  // namespace uvmsim
