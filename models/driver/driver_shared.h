// What the UVM driver keeps once per process (per VA space) rather than per GPU: the thrashing
// detector (va_space_thrashing_info_t hangs off the VA space, and its page state names every
// processor), the first-fault flag (the process's first fault pays the VA space's one-time set-up)
// and the running fault-batch id that event-log rows and policies see. The simulator owns one and
// hands it to the driver of each GPU; with one GPU it is simply part of that driver.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/types.h"
#include "models/thrashing.h"
#include "models/topology.h"

namespace uvmsim {

class Residency;
class HostOperations;

struct DriverShared {
  /// Which processor maps which memory (system.gpus, system.peer): the residency choice reads it.
  Topology topology = Topology::make(1, PeerAccess::None);
  ThrashingDetector thrashing;
  std::uint32_t batch_id = 0;     ///< the latest fault batch's id (1, 2, ...), over all GPUs
  bool first_batch_done = false;  ///< the process's first fault batch was serviced
  /// Each GPU's driver instance registers its residency and host-side parts here, so that one
  /// GPU's migration can move another GPU's copy (uvm_va_block_make_resident works on every
  /// processor's state of the block) and a host operation reaches every GPU holding pages.
  std::array<Residency*, kMaxGpus> residency{};
  std::array<HostOperations*, kMaxGpus> host{};
  /// Per VA block, the pages the CPU maps in a GPU's memory: the driver kept them there on a
  /// CPU fault (block_select_processor_residency), so the CPU's later accesses do not fault.
  /// Sized to the VA space's blocks only when the CPU can map GPU memory
  /// (system.coherent_host), empty otherwise, so the PCIe machines' block state stays as it was.
  /// A mapping goes when its page leaves the GPU (Residency::clear_gpu_resident).
  std::vector<PageMask> cpu_mapped;
};

}  // namespace uvmsim
