#include "core/one_line.h"

namespace uvmsim {

std::string one_line(std::string_view text) {
  std::string s(text);
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return s;
}

}  // namespace uvmsim
