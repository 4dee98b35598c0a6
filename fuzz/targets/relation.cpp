// Relation expressions of expectation files (uvmsim check): parsed and evaluated.
#include "sim/check/relation.h"
#include "fuzz/fuzz_target.h"

namespace uvmsim::fuzz {

namespace {

void relation(Input in) {
  const std::string text(in.begin(), in.end());
  expect_clean(
      [&] {
        const check::Relation r = check::Relation::parse(text, "relations[0]");
        double x = 0;
        (void)r.evaluate([&x](const check::Relation::Ref&) { return x += 1.5; });
      },
      "relations[0]");
}

}  // namespace

UVMSIM_FUZZ_TARGET("relation", "relation expressions of expectation files", relation, nullptr);

}  // namespace uvmsim::fuzz
