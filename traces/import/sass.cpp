#include "traces/import/sass.h"

#include <array>

namespace uvmsim::trace::import {

namespace {

bool digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

unsigned to_uint(std::string_view s) {
  unsigned v = 0;
  for (char c : s) v = v * 10 + static_cast<unsigned>(c - '0');
  return v;
}

/// Bytes per thread from the opcode's modifiers: a bare bit width ("64", "128") or a typed one
/// ("U8", "S16", "F64"); 4 when there is none (the 32-bit default of every SASS load and store).
std::uint32_t width(std::string_view modifiers) {
  while (!modifiers.empty()) {
    const std::size_t dot = modifiers.find('.');
    const std::string_view tok = modifiers.substr(0, dot);
    modifiers = dot == std::string_view::npos ? std::string_view{} : modifiers.substr(dot + 1);
    std::string_view bits;
    if (digits(tok)) {
      bits = tok;
    } else if (tok.size() > 1 && (tok[0] == 'U' || tok[0] == 'S' || tok[0] == 'F') &&
               digits(tok.substr(1))) {
      bits = tok.substr(1);
    } else {
      continue;
    }
    if (bits.size() > 4) continue;
    const unsigned b = to_uint(bits);
    if (b >= 8 && b % 8 == 0 && b <= 1024) return b / 8;
  }
  return 4;
}

struct Entry {
  std::string_view base;
  MemSpace space;
  AccessKind kind;
};

// Base opcodes (before the first '.') of the SASS memory instructions from Maxwell to Hopper.
constexpr std::array<Entry, 27> kTable{{
    {"LDG", MemSpace::Global, AccessKind::Read},
    {"LD", MemSpace::Global, AccessKind::Read},
    {"LDGSTS", MemSpace::Global, AccessKind::Read},  // async global -> shared copy: reads global
    {"LDGDEPBAR", MemSpace::None, AccessKind::Read},
    {"TEX", MemSpace::Global, AccessKind::Read},
    {"TLD", MemSpace::Global, AccessKind::Read},
    {"TLD4", MemSpace::Global, AccessKind::Read},
    {"TXD", MemSpace::Global, AccessKind::Read},
    {"SULD", MemSpace::Global, AccessKind::Read},
    {"STG", MemSpace::Global, AccessKind::Write},
    {"ST", MemSpace::Global, AccessKind::Write},
    {"SUST", MemSpace::Global, AccessKind::Write},
    {"ATOMG", MemSpace::Global, AccessKind::Atomic},
    {"ATOM", MemSpace::Global, AccessKind::Atomic},
    {"RED", MemSpace::Global, AccessKind::Atomic},
    {"REDG", MemSpace::Global, AccessKind::Atomic},
    {"SUATOM", MemSpace::Global, AccessKind::Atomic},
    {"SURED", MemSpace::Global, AccessKind::Atomic},
    {"LDS", MemSpace::Shared, AccessKind::Read},
    {"LDSM", MemSpace::Shared, AccessKind::Read},
    {"STS", MemSpace::Shared, AccessKind::Write},
    {"ATOMS", MemSpace::Shared, AccessKind::Atomic},
    {"LDL", MemSpace::Local, AccessKind::Read},
    {"STL", MemSpace::Local, AccessKind::Write},
    {"LDC", MemSpace::Constant, AccessKind::Read},
    {"ULDC", MemSpace::Constant, AccessKind::Read},
    {"CCTL", MemSpace::None, AccessKind::Read},
}};

}  // namespace

SassAccess classify_sass(std::string_view opcode) {
  const std::size_t dot = opcode.find('.');
  const std::string_view base = opcode.substr(0, dot);
  const std::string_view modifiers =
      dot == std::string_view::npos ? std::string_view{} : opcode.substr(dot + 1);
  SassAccess a;
  for (const Entry& e : kTable) {
    if (e.base != base) continue;
    a.space = e.space;
    a.kind = e.kind;
    a.bytes = width(modifiers);
    return a;
  }
  return a;  // MemSpace::None
}

}  // namespace uvmsim::trace::import
