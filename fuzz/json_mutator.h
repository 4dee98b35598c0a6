// A structure-aware mutator for JSON inputs. Byte mutations mostly break the syntax, so the
// schema checks behind the parser (ranges, types, cross-references) are reached slowly; this one
// parses the input and changes one value: a number to a boundary value (0, -1, 2^32, 2^63, 2^64-1,
// 4097, 1e300, ...), a string, a member or an element added, dropped or duplicated, a value's type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

namespace uvmsim::fuzz {

/// Mutates the JSON text `text` in place (one value), drawing from `rng`; false if it is not JSON
/// (the caller then falls back to byte mutations).
bool mutate_json_text(std::string& text, std::mt19937& rng, bool comments = false);

/// libFuzzer custom-mutator contract, for targets whose whole input is one JSON document.
std::size_t mutate_json(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed);
/// As mutate_json, for JSON Lines (one document per line: measurement files).
std::size_t mutate_json_lines(std::uint8_t* data, std::size_t size, std::size_t max_size,
                              unsigned seed);

}  // namespace uvmsim::fuzz
