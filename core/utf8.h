// UTF-8 validation for text that comes from outside JSON (CSV columns, SQLite strings, command
// lines): JSON output (nlohmann::json::dump) throws on invalid UTF-8, so such text is checked
// where it is read, and reported there with its file and field.
#pragma once

#include <cstddef>
#include <string_view>

namespace uvmsim {

/// Offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong forms,
/// no surrogates, nothing above U+10FFFF), or npos if all of `s` is.
std::size_t invalid_utf8_at(std::string_view s);

inline bool is_valid_utf8(std::string_view s) {
  return invalid_utf8_at(s) == std::string_view::npos;
}

}  // namespace uvmsim
