// `regular`: Allen & Ge's page-touch kernel — thread i reads page i of one managed allocation.
#include "traces/generators/page_touch.h"

namespace uvmsim::gen {
namespace {

const Registrar kRegular{Generator{
    "regular",
    "page-touch kernel (Allen & Ge, IPDPS'21 §III-C): thread i reads 4 bytes of page i",
    page_touch_params(),
    [](GenContext& ctx) { write_page_touch(ctx, "page_touch_regular", false); },
    "streaming",
    std::uint64_t{64} << 20,
    "Allen & Ge page-touch micro-benchmark",
}};

}  // namespace
}  // namespace uvmsim::gen
