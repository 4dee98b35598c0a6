#include "core/utf8.h"

namespace uvmsim {

std::size_t invalid_utf8_at(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    // Lead byte: sequence length and the range of the second byte (RFC 3629, section 4).
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
      len = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
      len = 3;
      if (b == 0xe0) lo = 0xa0;  // no overlong forms
      if (b == 0xed) hi = 0x9f;  // no surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      len = 4;
      if (b == 0xf0) lo = 0x90;  // no overlong forms
      if (b == 0xf4) hi = 0x8f;  // nothing above U+10FFFF
    } else {
      return i;
    }
    if (s.size() - i < len) return i;
    const auto second = static_cast<unsigned char>(s[i + 1]);
    if (second < lo || second > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if (c < 0x80 || c > 0xbf) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace uvmsim
