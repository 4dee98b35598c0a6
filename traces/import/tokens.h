// Token-level parsing shared by the text importers: whitespace splitting and strict integer
// parsing (decimal, or hexadecimal with 0x) without allocation. Each returns nullopt on anything
// malformed; the importers turn that into a "<file>:<line>: <field>: ..." UserError.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "traces/trace.h"

namespace uvmsim::trace::import {

inline bool is_space(char c) { return c == ' ' || c == '\t'; }

/// Removes and returns the next whitespace-separated token of `rest` ("" when none is left).
inline std::string_view next_token(std::string_view& rest) {
  std::size_t i = 0;
  while (i < rest.size() && is_space(rest[i])) ++i;
  std::size_t j = i;
  while (j < rest.size() && !is_space(rest[j])) ++j;
  const std::string_view tok = rest.substr(i, j - i);
  rest.remove_prefix(j);
  return tok;
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points above U+10FFFF). The
/// trace metadata is JSON, so names taken from an input must be valid UTF-8.
inline bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n;
    unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return false;
    }
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) return false;
    }
    i += n + 1;
  }
  return true;
}

/// `s` (at most 64 characters of it) in single quotes, for error messages.
inline std::string quoted(std::string_view s) {
  std::string q;
  q.reserve(66);
  q += '\'';
  q.append(s.substr(0, 64));  // appended, not concatenated: GCC 12 warns on the + chain
  q += '\'';
  return q;
}

inline bool has_hex_prefix(std::string_view s) {
  return s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

/// All of `s` as an unsigned integer in `base`; nullopt if empty, not all digits, or > 64 bits.
inline std::optional<std::uint64_t> parse_digits(std::string_view s, int base) {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

/// Decimal, or hexadecimal with a 0x prefix.
inline std::optional<std::uint64_t> parse_uint(std::string_view s) {
  return has_hex_prefix(s) ? parse_digits(s.substr(2), 16) : parse_digits(s, 10);
}

/// Hexadecimal with or without a 0x prefix (addresses and PCs in NVBit / Accel-Sim output).
inline std::optional<std::uint64_t> parse_hex(std::string_view s) {
  return parse_digits(has_hex_prefix(s) ? s.substr(2) : s, 16);
}

/// A signed decimal integer (Accel-Sim address deltas and strides).
inline std::optional<std::int64_t> parse_int(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

/// "X", "X,Y" or "X,Y,Z" (missing components are 1); every component a positive 32-bit decimal.
inline std::optional<Dim3> parse_dim3(std::string_view s) {
  Dim3 d;
  std::uint32_t* out[3] = {&d.x, &d.y, &d.z};
  for (int i = 0; i < 3; ++i) {
    const std::size_t comma = s.find(',');
    const auto v = parse_digits(s.substr(0, comma), 10);
    if (!v || *v == 0 || *v > 0xffffffffu) return std::nullopt;
    *out[i] = static_cast<std::uint32_t>(*v);
    if (comma == std::string_view::npos) return d;
    s.remove_prefix(comma + 1);
  }
  return std::nullopt;  // more than three components
}

}  // namespace uvmsim::trace::import
