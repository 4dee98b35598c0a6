#include "core/units.h"

#include <cctype>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "core/types.h"

namespace uvmsim {

namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

}  // namespace

std::optional<std::uint64_t> try_parse_size(const std::string& text) {
  std::size_t pos = 0;
  std::uint64_t value = 0;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  // Hand-rolled rather than std::stoull: stoull accepts leading whitespace and a minus sign
  // (wrapping "-1" to 2^64-1), both of which would silently turn typos into huge sizes.
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    const auto digit = static_cast<std::uint64_t>(text[pos] - '0');
    if (value > (kMax - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++pos;
  }
  if (pos == 0) return std::nullopt;

  unsigned shift = 0;
  if (pos < text.size()) {
    switch (lower(text[pos])) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      case 't':
        shift = 40;
        break;
      default:
        break;
    }
    if (shift != 0) ++pos;
  }
  // Optional unit: "B" after a number or a suffix, "iB" only after a suffix ("2MiB", not "2iB").
  const std::string rest = text.substr(pos);
  std::string unit;
  for (char c : rest) unit += lower(c);
  if (!(unit.empty() || unit == "b" || (shift != 0 && unit == "ib"))) return std::nullopt;
  if (shift != 0 && value > (kMax >> shift)) return std::nullopt;
  return value << shift;
}

std::uint64_t parse_size(const std::string& text, const std::string& what) {
  const auto v = try_parse_size(text);
  if (!v) throw UserError(what + ": invalid size '" + text + "'");
  return *v;
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  unsigned unit = 0;
  std::uint64_t scale = 1024;
  while (unit + 1 < std::size(kUnits) && bytes / scale >= 1024) {
    scale *= 1024;
    ++unit;
  }
  // 1 GiB - 1 byte would print as "1024.0 MiB"; move up a unit when the rounding reaches it.
  if (bytes % scale != 0 && unit + 1 < std::size(kUnits) &&
      static_cast<double>(bytes) / static_cast<double>(scale) >= 1023.95) {
    scale *= 1024;
    ++unit;
  }
  char buf[48];
  if (bytes % scale == 0) {
    std::snprintf(buf, sizeof buf, "%llu %s", static_cast<unsigned long long>(bytes / scale),
                  kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s",
                  static_cast<double>(bytes) / static_cast<double>(scale), kUnits[unit]);
  }
  return buf;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(sep, start);
    if (end == std::string::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

const char* to_string(AccessKind k) {
  switch (k) {
    case AccessKind::Prefetch:
      return "prefetch";
    case AccessKind::Read:
      return "read";
    case AccessKind::Write:
      return "write";
    case AccessKind::Atomic:
      return "atomic";
  }
  return "?";
}

}  // namespace uvmsim
