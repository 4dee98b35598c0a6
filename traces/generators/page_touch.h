// Shared body of the `regular` and `random` page-touch generators (Allen & Ge, "Demystifying GPU
// UVM Cost with Deep Runtime and Workload Analysis", IPDPS 2021, §III-C).
#pragma once

#include "traces/generators/generator.h"

namespace uvmsim::gen {

/// Parameters common to both page-touch generators.
std::vector<ParamSpec> page_touch_params();

/// One managed allocation "data" of `footprint` bytes; thread i reads 4 bytes of page
/// `perm[i]` (page i if `random` is false).
void write_page_touch(GenContext& ctx, const char* kernel_name, bool random);

}  // namespace uvmsim::gen
