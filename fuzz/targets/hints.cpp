// Hints files (--hints FILE, docs/hints.md) and trace metadata JSON. What parses must print and
// parse back to the same value, and evaluate at any iteration without overflow.
#include <limits>

#include "core/json_input.h"
#include "fuzz/fuzz_target.h"
#include "fuzz/json_mutator.h"
#include "traces/hints.h"
#include "traces/trace.h"

namespace uvmsim::fuzz {

namespace {

void evaluate(const trace::Poly& p) {
  for (const std::int32_t it : {-1, 0, 1, 7, 65536, std::numeric_limits<std::int32_t>::max()})
    (void)p.at(it);
}

void hints(Input in) {
  const auto path = scratch_file(in, "input.hints.json");
  expect_clean(
      [&] {
        const trace::Hints h = trace::Hints::load(path);
        for (const auto& k : h.kernels) {
          for (const auto& u : k.uses) {
            for (const auto* p : {&u.reads, &u.writes, &u.bytes, &u.bytes_per_tb}) evaluate(*p);
          }
          for (const auto& r : k.refs) {
            evaluate(r.count);
            evaluate(r.bytes_per_tb);
            if (r.window) {
              evaluate(r.window->start);
              evaluate(r.window->span);
            }
          }
        }
        const trace::Hints back = trace::Hints::from_json(h.to_json(), "printed");
        if (!(back == h)) throw Finding("hints do not survive to_json / from_json");
      },
      path.string());
}

void metadata(Input in) {
  const std::string text(in.begin(), in.end());
  expect_clean(
      [&] {
        const trace::Metadata m = trace::Metadata::from_json(parse_json(text, "t.uvt"), "t.uvt");
        const trace::Metadata back = trace::Metadata::from_json(m.to_json(), "printed");
        if (!(back.to_json() == m.to_json())) {
          throw Finding("metadata does not survive to_json / from_json");
        }
        (void)m.to_json().dump();
      },
      "t.uvt");
}

}  // namespace

UVMSIM_FUZZ_TARGET("hints", "hints files (--hints, uvmsim analyze output)", hints, mutate_json);
UVMSIM_FUZZ_TARGET("metadata", "the metadata JSON of a .uvt header (schema and hints)", metadata,
                   mutate_json);

}  // namespace uvmsim::fuzz
