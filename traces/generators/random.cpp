// `random`: the page-touch kernel with a seeded random permutation, so every page is touched
// exactly once but in no spatial order (Allen & Ge's "random" access pattern).
#include "traces/generators/page_touch.h"

namespace uvmsim::gen {
namespace {

const Registrar kRandom{Generator{
    "random",
    "page-touch kernel over a random permutation: thread i reads one random, unique page",
    page_touch_params(),
    [](GenContext& ctx) { write_page_touch(ctx, "page_touch_random", true); },
    "irregular",
    std::uint64_t{64} << 20,
    "Allen & Ge page-touch micro-benchmark",
}};

}  // namespace
}  // namespace uvmsim::gen
