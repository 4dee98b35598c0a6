// Listing every knob (the engine's and each registered policy's) from their declarations:
// `uvmsim run --list-knobs [--format text|markdown|json]`. The markdown form is docs/knobs.md
// (tests/test_knobs.cpp checks that the file equals it), so the documentation cannot drift.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "core/knob.h"

namespace uvmsim::cli {

/// {"name", "type", "default", "range", "doc"} of one knob (`name` as given).
nlohmann::json knob_json(const Knob& k, const std::string& name);

/// One knob as a line of `uvmsim policies` and `uvmsim run --list-knobs`:
/// "      NAME  TYPE  default D  [RANGE]  DOC".
void print_knob_line(std::ostream& out, const Knob& k, const std::string& name);

/// Writes every knob in `format` ("text", "markdown" or "json"); UserError for another format.
void print_knobs(std::ostream& out, const std::string& format);

}  // namespace uvmsim::cli
