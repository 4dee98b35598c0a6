// The access-record encoding's primitives that the inline record decoder (WarpStream::next in
// trace.h) needs: the flags byte, zigzag, and LEB128 varint decoding. Internal to the .uvt
// encoding, like trace_codec.h, which includes this; docs/trace-format.md has the byte layout.
#pragma once

#include <cstdint>

namespace uvmsim::trace::codec {

// ---- access-record flags byte -----------------------------------------------------------------
inline constexpr std::uint8_t kKindMask = 0x07;   ///< AccessKind; values 4..7 are invalid
inline constexpr std::uint8_t kVaPages = 0x08;    ///< VA delta is stored in 4 KB pages
inline constexpr std::uint8_t kHasRef = 0x10;     ///< ref id follows (else previous record's)
inline constexpr std::uint8_t kHasBytes = 0x20;   ///< byte count follows (else previous record's)
inline constexpr std::uint8_t kHasGap = 0x40;     ///< gap cycles follow (else 0)
inline constexpr std::uint8_t kHasRepeat = 0x80;  ///< repeat-1 follows (else repeat is 1)

inline std::uint64_t zigzag(std::int64_t v) {
  // Unsigned arithmetic throughout: the signed formula's left shift overflows for large |v|.
  const auto u = static_cast<std::uint64_t>(v);
  return (u << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0);
}
inline std::int64_t unzigzag(std::uint64_t u) {
  return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
}

/// Decodes a varint at `p` (not past `end`) into `out`. Returns the position after it, or nullptr
/// if it runs past `end` or does not fit in 64 bits.
inline const std::uint8_t* get_varint(const std::uint8_t* p, const std::uint8_t* end,
                                      std::uint64_t& out) {
  std::uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p == end) return nullptr;
    const std::uint8_t b = *p++;
    // The 10th byte may only contribute the top bit of a u64.
    if (shift == 63 && b > 1) return nullptr;
    v |= std::uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) {
      out = v;
      return p;
    }
  }
  return nullptr;
}

/// get_varint with the short encodings unrolled: one to four bytes cover nearly every field of
/// an access record (flags aside), so the record decoders call this. Four: a VA delta between
/// two arrays a few MB apart (every other record of `gemm`, whose warps alternate between A and
/// B) is a 22-28 bit zigzag, and the loop took ~70 instructions per such record.
inline const std::uint8_t* get_short_varint(const std::uint8_t* p, const std::uint8_t* end,
                                            std::uint64_t& out) {
  if (end - p >= 4) {
    const std::uint64_t b0 = p[0];
    if (b0 < 0x80) {
      out = b0;
      return p + 1;
    }
    const std::uint64_t b1 = p[1];
    if (b1 < 0x80) {
      out = (b0 & 0x7f) | (b1 << 7);
      return p + 2;
    }
    const std::uint64_t b2 = p[2];
    if (b2 < 0x80) {
      out = (b0 & 0x7f) | ((b1 & 0x7f) << 7) | (b2 << 14);
      return p + 3;
    }
    const std::uint64_t b3 = p[3];
    if (b3 < 0x80) {
      out = (b0 & 0x7f) | ((b1 & 0x7f) << 7) | ((b2 & 0x7f) << 14) | (b3 << 21);
      return p + 4;
    }
  }
  return get_varint(p, end, out);
}

}  // namespace uvmsim::trace::codec
