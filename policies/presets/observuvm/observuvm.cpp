// The configurations of ObservUVM's evaluation (§VII-A, Figure 9) as policy presets
// (`uvmsim run --policy-preset NAME`): UVM is the driver default, TM the Tournament eviction
// policy over LRU, LFU and CP, TM+ adds feedback-driven prefetching, TM++ region-grain
// prefetching as well. ACBM is the access-counter baseline of §VII-B.
#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {

UVMSIM_REGISTER_PRESET({"uvm", "the NVIDIA driver's defaults (LRM eviction, tree prefetcher)",
                        "driver", "tree", "driver"});
UVMSIM_REGISTER_PRESET({"tm", "ObservUVM TM: tournament of lru, lfu, cp; driver prefetching",
                        "tournament", "tree", "driver"});
UVMSIM_REGISTER_PRESET({"tm+", "ObservUVM TM+: tournament eviction + feedback-driven prefetching",
                        "tournament", "fdp", "driver"});
UVMSIM_REGISTER_PRESET({"tm++",
                        "ObservUVM TM++: tournament eviction + feedback-driven and region-grain "
                        "prefetching",
                        "tournament", "fdp+rgp", "driver"});
UVMSIM_REGISTER_PRESET({"acbm", "access-counter based migration baseline in its default setting",
                        "driver", "tree", "acbm"});

}  // namespace uvmsim
