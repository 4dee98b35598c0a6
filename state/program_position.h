// Where the traced program is: the current kernel launch, its host-loop iteration and how far
// the GPU has got through the launch's threadblocks. The simulator and GPU model keep it up to
// date; policies read it through PolicyEngine::position() (e.g. an oracle mapping the simulated
// present onto the trace's program order).
#pragma once

#include <cstdint>

namespace uvmsim {

struct ProgramPosition {
  std::int64_t launch = -1;  ///< launch index, -1 before the first launch
  std::uint32_t kernel_id = 0;
  std::int32_t iteration = -1;  ///< host-loop iteration of the launch (-1: not in a loop)
  bool in_kernel = false;
  std::uint64_t tbs_total = 0;    ///< threadblocks of the current launch
  std::uint64_t tbs_started = 0;  ///< dispatched so far (threadblocks start in id order)
  std::uint64_t tbs_done = 0;     ///< completed so far
};

}  // namespace uvmsim
