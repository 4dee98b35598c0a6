// Policy parameters (--set policy.NAME.KEY=VALUE, a preset's "policy" section) and policy names:
// checked by the policies themselves, so this target needs the policies linked in.
#include <sstream>

#include "core/config.h"
#include "fuzz/fuzz_target.h"
#include "policies/registry.h"

namespace uvmsim::fuzz {

namespace {

/// One assignment per line, applied in order to the GTX 1080 Ti preset, then checked as
/// `uvmsim run` checks them before simulating.
void policy_params(Input in) {
  static const SimConfig base = SimConfig::from_preset("gtx1080ti");
  const std::string text(in.begin(), in.end());
  expect_clean(
      [&] {
        SimConfig c = base;
        std::istringstream lines(text);
        std::string line;
        while (std::getline(lines, line)) c.set_from_string(line, "--set");
        validate_policy_params(c);
      },
      "--set");
}

}  // namespace

UVMSIM_FUZZ_TARGET("policy_params", "policy names and parameters (--set policy.NAME.KEY=VALUE)",
                   policy_params, nullptr);

}  // namespace uvmsim::fuzz
