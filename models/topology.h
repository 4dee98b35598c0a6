// Which processor can map which processor's memory, and which pairs share a fast link: the
// driver's per-VA-space processor masks (uvm_va_space_t: can_access, accessible_from,
// has_fast_link, has_native_atomics), which it fills as GPUs register and as peer access is
// enabled between them (uvm_va_space.c: va_space_register_gpu, enable_peers). The thrashing
// detector and, with several GPUs, the residency choice read them.
//
// Processor ids and masks (core/types.h) follow the driver's uvm_processor_id_t: 0 is the CPU,
// 1 + g is GPU g.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "core/config.h"
#include "core/types.h"

namespace uvmsim {

class Topology {
 public:
  /// How GPUs reach each other's memory (system.peer): not at all (copies are staged through
  /// host memory), over PCIe peer-to-peer, or over NVLink (a fast link with native atomics).
  using Peer = PeerAccess;

  /// `gpus` GPUs on a host. Over PCIe (`coherent_host` false, an x86 host) a GPU maps host
  /// memory, the CPU maps no GPU memory (it faults and migrates instead), and no GPU has a fast
  /// link to the CPU. Over a coherent link (NVLink-C2C, Grace Hopper) the driver also gives the
  /// CPU and each GPU a fast link with native atomics both ways, and lets the CPU map GPU memory
  /// (va_space_register_gpu: system_bus.link >= NVLINK_1 sets has_fast_link;
  /// uvm_parent_gpu_is_coherent sets the native atomics, and with the GPU's memory onlined as a
  /// NUMA node, can_access from the CPU). Peers as `peer` says, the same between every pair (a
  /// fully connected node).
  static Topology make(unsigned gpus, Peer peer, bool coherent_host = false) {
    Topology t;
    t.gpus_ = gpus;
    const ProcessorMask cpu = processor_bit(Processor::Cpu);
    ProcessorMask all_gpus = 0;
    for (unsigned g = 0; g < gpus; ++g) all_gpus |= processor_bit(gpu_processor(g));
    t.can_access_[0] = cpu | (coherent_host ? all_gpus : 0);
    t.fast_[0] = coherent_host ? all_gpus : 0;
    for (unsigned g = 0; g < gpus; ++g) {
      const ProcessorMask self = processor_bit(gpu_processor(g));
      const ProcessorMask peers = peer != Peer::None ? all_gpus & ~self : 0;
      t.can_access_[1 + g] = self | cpu | peers;
      t.fast_[1 + g] = (peer == Peer::Nvlink ? peers : 0) | (coherent_host ? cpu : 0);
    }
    for (unsigned to = 0; to <= gpus; ++to)
      for (unsigned from = 0; from <= gpus; ++from)
        if (t.can_access_[from] >> to & 1) t.accessible_from_[to] |= ProcessorMask{1} << from;
    return t;
  }

  unsigned gpus() const { return gpus_; }
  /// Processors that can map memory of processor `to`.
  ProcessorMask accessible_from(int to) const { return accessible_from_[to]; }
  /// Processors whose memory `from` can map.
  ProcessorMask can_access(int from) const { return can_access_[from]; }
  /// Processors `to` has a fast link with native atomics to (NVLink, NVLink-C2C):
  /// has_fast_link and has_native_atomics, which the thrashing detector combines.
  ProcessorMask fast_atomic_link(int to) const { return fast_[to]; }

  /// The processor of `candidates` closest to `src` (uvm_processor_mask_find_closest_id): `src`
  /// itself, else a GPU over a fast link (the lowest), else the CPU over one, else a processor
  /// `src` can map (GPUs first), else the first processor of the mask; -1 for an empty mask.
  int find_closest(ProcessorMask candidates, int src) const {
    if (candidates >> src & 1) return src;
    if (const ProcessorMask m = candidates & fast_[src]) return first_gpu_or_cpu(m);
    if (const ProcessorMask m = candidates & can_access_[src]) return first_gpu_or_cpu(m);
    return candidates ? std::countr_zero(candidates) : -1;
  }

 private:
  static int first_gpu_or_cpu(ProcessorMask m) {
    const ProcessorMask gpus = m & ~ProcessorMask{1};
    return gpus ? std::countr_zero(gpus) : 0;
  }

  unsigned gpus_ = 0;
  std::array<ProcessorMask, kMaxGpus + 1> can_access_{}, accessible_from_{}, fast_{};
};

}  // namespace uvmsim
