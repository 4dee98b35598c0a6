// What the UVM driver keeps once per process (per VA space) rather than per GPU: the thrashing
// detector (va_space_thrashing_info_t hangs off the VA space, and its page state names every
// processor), the first-fault flag (the process's first fault pays the VA space's one-time set-up)
// and the running fault-batch id that event-log rows and policies see. The simulator owns one and
// hands it to the driver of each GPU; with one GPU it is simply part of that driver.
#pragma once

#include <cstdint>

#include "models/thrashing.h"

namespace uvmsim {

struct DriverShared {
  ThrashingDetector thrashing;
  std::uint32_t batch_id = 0;     ///< the latest fault batch's id (1, 2, ...), over all GPUs
  bool first_batch_done = false;  ///< the process's first fault batch was serviced
};

}  // namespace uvmsim
