// Sweep specs and expectation files (uvmsim check). Both resolve workloads and run settings, which
// link the whole simulator: these targets are in the full tier.
#include <fstream>
#include <iterator>

#include "fuzz/fuzz_target.h"
#include "fuzz/json_mutator.h"
#include "sim/check/expectations.h"
#include "sim/sweep/spec.h"

namespace uvmsim::fuzz {

namespace {

void sweep_spec(Input in) {
  const auto path = scratch_file(in, "spec.json");
  expect_clean(
      [&] {
        const sweep::SweepSpec s = sweep::SweepSpec::load(path);
        // Expanding is the product of the axes; only small products are expanded here (their
        // size is the spec's business, not the parser's).
        constexpr std::size_t kMaxPoints = 4096;
        std::size_t points = 1;
        auto times = [&](std::size_t n) {  // saturating: a product may exceed 64 bits
          n = std::max<std::size_t>(n, 1);
          points = points > kMaxPoints / n ? kMaxPoints + 1 : points * n;
        };
        for (std::size_t n :
             {s.workloads.size(), s.gpus.size(), s.policies.size(), s.eviction.size(),
              s.prefetch.size(), s.placement.size(), s.oversub.size(), s.seeds.size()})
          times(n);
        for (const auto& [k, v] : s.knobs) times(v.size());
        if (points <= kMaxPoints) (void)s.expand(path.parent_path() / "traces");
        (void)s.baseline_text();
      },
      path.string());
}

void expectations(Input in) {
  // The shipped files include common/workloads.json; the same file next to the input lets the
  // fuzzer's mutations of them get past the include.
  static const bool included = [] {
    std::ifstream src(std::filesystem::path(UVMSIM_SOURCE_DIR) /
                      "configs/expectations/common/workloads.json");
    const std::string text{std::istreambuf_iterator<char>(src), {}};
    scratch_file({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()},
                 "common/workloads.json");
    return true;
  }();
  (void)included;
  const auto path = scratch_file(in, "expect.json");
  expect_clean([&] { (void)check::ExpectationFile::load(path); }, path.string());
}

}  // namespace

UVMSIM_FUZZ_TARGET("sweep_spec", "sweep specs (uvmsim sweep SPEC.json), parsed and expanded",
                   sweep_spec, mutate_json);
UVMSIM_FUZZ_TARGET("expectations", "expectation files (uvmsim check FILE.json)", expectations,
                   mutate_json);

}  // namespace uvmsim::fuzz
