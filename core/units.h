// Human-facing quantities: byte sizes with binary suffixes, and small string helpers shared by the
// command line, the config loader and the workload generators.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace uvmsim {

/// Parses a byte size: a plain decimal integer, optionally followed by a binary suffix K, M, G or
/// T (1K = 1024), case-insensitive, optionally followed by "B" or "iB" ("4096", "64k", "2M",
/// "1GiB", "512KB"). Throws UserError(what + ": invalid size '" + text + "'") for anything else,
/// including values that do not fit in 64 bits.
std::uint64_t parse_size(const std::string& text, const std::string& what);
/// parse_size without the error: nullopt for anything it would reject.
std::optional<std::uint64_t> try_parse_size(const std::string& text);

/// Formats a byte count for people: "512 B", "64 KiB", "1.5 GiB" (one decimal unless exact).
std::string format_bytes(std::uint64_t bytes);

/// Splits on `sep`, keeping empty fields ("a,,b" -> {"a", "", "b"}; "" -> {""}).
std::vector<std::string> split(const std::string& text, char sep);

}  // namespace uvmsim
