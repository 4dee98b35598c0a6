// The GPU's fault interrupt line, shared in this model by replayable faults and access-counter
// notifications (uvm-driver.md §2, §4). The GPU raises it after writing a fault-buffer entry or a
// notification; the top half masks it and schedules the bottom half `interrupt_latency` later. It
// stays masked while the bottom half runs or is scheduled (the driver re-enables it when its
// service loop ends), so raising a masked line does nothing: the pending entries are found by the
// running bottom half or, at its end, re-trigger it.
#pragma once

#include "core/event_queue.h"
#include "core/types.h"

namespace uvmsim {

class Interrupt {
 public:
  /// The line of GPU `gpu`: the bottom half it wakes is that GPU's (the driver runs one per GPU,
  /// uvm_gpu_isr.c).
  Interrupt(EventQueue& queue, Tick latency, std::uint8_t gpu = 0)
      : queue_(queue), latency_(latency), gpu_(gpu) {}

  /// The GPU signals new work at `t`: if the line is enabled, the driver wakes at t + latency.
  void raise(Tick t) {
    if (masked_) return;
    masked_ = true;
    queue_.schedule(t + latency_, EventType::DriverWake, 0, gpu_);
  }
  bool masked() const { return masked_; }
  /// The driver's own wake-ups (a policy asked for service, the next batch): they keep the line
  /// masked until the service loop ends.
  void mask() { masked_ = true; }
  void unmask() { masked_ = false; }
  Tick latency() const { return latency_; }
  std::uint8_t gpu() const { return gpu_; }

 private:
  EventQueue& queue_;
  Tick latency_;
  std::uint8_t gpu_;
  bool masked_ = false;
};

}  // namespace uvmsim
