// Internal building blocks of the .uvt encoding shared by the writer, the reader and the tests:
// little-endian integers, LEB128 varints, the access-record flag bits, host-event encoding and the
// structure of a Blocks chunk. Not part of the public trace API (see trace.h).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "traces/record_format.h"
#include "traces/trace.h"

namespace uvmsim::trace::codec {

// ---- file framing ----------------------------------------------------------------------------
inline constexpr char kHeaderMagic[8] = {'U', 'V', 'M', 'T', 'R', 'A', 'C', 'E'};
inline constexpr char kFooterMagic[8] = {'U', 'V', 'T', 'E', 'N', 'D', '0', '1'};
/// magic + u32 version + u32 flags + u64 metadata length
inline constexpr std::size_t kHeaderFixedBytes = 8 + 4 + 4 + 8;
/// u64 index offset + u64 index length + u32 index CRC + magic
inline constexpr std::size_t kFooterBytes = 8 + 8 + 4 + 8;
/// u8 type, u32 launch, u64 first, u64 count, u64 offset, u64 compressed, u64 raw, u32 crc
/// (49 bytes)
inline constexpr std::size_t kChunkEntryBytes = 1 + 4 + 8 * 5 + 4;
/// u32 launch, u32 kernel, u64 threadblocks, u64 records, u64 accesses
inline constexpr std::size_t kLaunchEntryBytes = 4 + 4 + 8 * 3;
/// Header flags are reserved: a reader rejects bits it does not know (see the versioning policy).
inline constexpr std::uint32_t kKnownHeaderFlags = 0;
/// Guards against allocating absurd buffers for a corrupt (but CRC-colliding) index.
inline constexpr std::uint64_t kMaxChunkRawBytes = std::uint64_t{1} << 32;

// ---- primitive encoders -----------------------------------------------------------------------
inline void put_u8(std::vector<std::uint8_t>& out, std::uint8_t v) { out.push_back(v); }
void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v);
void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v);
void put_bytes(std::vector<std::uint8_t>& out, const void* data, std::size_t n);
/// Little-endian load of an unsigned integer; on a little-endian host a single unaligned load.
template <class T>
inline T get_le(const std::uint8_t* p) {
  T v = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&v, p, sizeof v);
  } else {
    for (std::size_t i = 0; i < sizeof v; ++i) v |= static_cast<T>(T{p[i]} << (8 * i));
  }
  return v;
}
inline std::uint32_t get_u32(const std::uint8_t* p) { return get_le<std::uint32_t>(p); }
inline std::uint64_t get_u64(const std::uint8_t* p) { return get_le<std::uint64_t>(p); }

inline void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}
/// As above into a buffer with room for 10 bytes; returns the position after the varint.
inline std::uint8_t* put_varint(std::uint8_t* p, std::uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<std::uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<std::uint8_t>(v);
  return p;
}
inline constexpr std::uint64_t kNoIndex = ~std::uint64_t{0};

/// Builds "<where>: <field>[ <index>]: <msg>". Only called on failure, so the hot paths that
/// carry a (where, field, index) context never build strings.
std::string error_text(const std::string* where, const char* field, std::uint64_t index,
                       const std::string& msg);

/// Bounds-checked cursor for the non-hot parts of the format (index, host events, threadblock
/// headers). Every failure is a UserError "<where>: <field>[ <index>]: <message>". `where` must
/// outlive the reader; `field` is a string literal.
class ByteReader {
 public:
  ByteReader(const std::uint8_t* begin, const std::uint8_t* end, const std::string* where,
             const char* field, std::uint64_t index = kNoIndex)
      : begin_(begin), pos_(begin), end_(end), where_(where), field_(field), index_(index) {}
  bool at_end() const { return pos_ == end_; }
  std::size_t remaining() const { return static_cast<std::size_t>(end_ - pos_); }
  std::size_t offset() const { return static_cast<std::size_t>(pos_ - begin_); }
  const std::uint8_t* pos() const { return pos_; }
  std::uint8_t u8();
  std::uint32_t u32();
  std::uint64_t u64();
  // The three below parse every threadblock and warp header of a chunk as it loads: inline,
  // with the one-byte varint (nearly every header field) and the in-bounds skip tested first.
  std::uint64_t varint() {
    if (pos_ != end_ && *pos_ < 0x80) return *pos_++;
    return varint_slow();
  }
  /// A varint that must fit in 32 bits.
  std::uint32_t varint32(const char* what) {
    if (pos_ != end_ && *pos_ < 0x80) return *pos_++;
    return varint32_slow(what);
  }
  void skip(std::uint64_t n) {
    if (n > remaining()) skip_fail(n);
    pos_ += n;
  }
  [[noreturn]] void fail(const std::string& msg) const;

 private:
  std::uint64_t varint_slow();
  std::uint32_t varint32_slow(const char* what);
  [[noreturn]] void skip_fail(std::uint64_t n) const;

  const std::uint8_t* begin_;
  const std::uint8_t* pos_;
  const std::uint8_t* end_;
  const std::string* where_;
  const char* field_;
  std::uint64_t index_;
};

/// The longest encoding of one record: flags, a 64-bit VA delta (10 bytes) and four 32-bit
/// fields (5 bytes each).
inline constexpr std::size_t kMaxRecordBytes = 1 + 10 + 4 * 5;

/// Per-warp encoder state, mirroring WarpStream's decoder state.
struct RecordEncoder {
  Addr prev_va = 0;
  std::uint32_t prev_ref = 0;
  std::uint32_t prev_bytes = 4;
  void encode(const AccessRecord& rec, std::vector<std::uint8_t>& out);
  /// Writes the record at `p`, which must have room for kMaxRecordBytes; returns the position
  /// after it. The writer's hot path: no per-byte capacity check.
  std::uint8_t* encode(const AccessRecord& rec, std::uint8_t* p);
};

void encode_host_event(const HostEvent& ev, std::vector<std::uint8_t>& out);

/// Whether TraceWriters constructed from now on compress chunks on a second thread while the
/// caller produces the next ones (default: yes). The file is byte-identical either way; the
/// switch exists so that tests can compare the two.
void set_background_compression(bool on);
bool background_compression();
/// Decodes and range-checks one host event of a version-`version` trace (enum values, field
/// widths, event types the version has).
HostEvent decode_host_event(ByteReader& in, std::uint32_t version = kFormatVersion);

/// Location of one threadblock inside a decoded Blocks chunk.
struct TbEntry {
  std::uint64_t tb_id = 0;
  std::uint32_t num_warps = 0;
  Addr va_base = 0;
  std::size_t begin = 0;  ///< offset of the first warp header
  std::size_t end = 0;    ///< offset one past the threadblock
};

/// What a Blocks chunk holds, for checking the index's per-launch totals.
struct ChunkTotals {
  std::uint64_t records = 0;
  std::uint64_t accesses = 0;  ///< records expanded by their repeat counts
};

/// Splits a decoded Blocks chunk into threadblocks, checking its structure: `count` threadblocks
/// with ids first, first+1, ..., each with `warps_per_block` warps whose data lies inside the
/// chunk, and no trailing bytes. Fills `out` (cleared; its capacity is reused).
/// With `totals`, returns the chunk's record count and, if `skim_records`, also checks every
/// record (so a malformed one is reported when the chunk is loaded) and counts its accesses
/// (RecordCheck::AtLoad); without it `totals->accesses` stays 0 (RecordCheck::WhenDecoded).
/// Errors name "chunk <chunk_index>".
void parse_block_chunk(const std::uint8_t* data, std::size_t size, std::uint64_t first,
                       std::uint64_t count, std::uint32_t warps_per_block,
                       std::vector<TbEntry>& out, const std::string* where,
                       std::uint64_t chunk_index, ChunkTotals* totals = nullptr,
                       bool skim_records = true);

/// One record at `p` by the rules WarpStream::next applies: returns the position after it and
/// adds its accesses (its repeat count) to `accesses`, or nullptr if it is malformed or runs
/// past `end`.
inline const std::uint8_t* skim_record(const std::uint8_t* p, const std::uint8_t* end,
                                       std::uint64_t& accesses) {
  constexpr std::uint64_t kMax32 = 0xffffffffu;
  std::uint64_t v = 0;
  // As WarpStream::next's reads, without the error text: one-byte varints first.
  auto read = [&]() -> bool {
    p = get_short_varint(p, end, v);
    return p != nullptr;
  };
  if (p == end) return nullptr;
  const std::uint8_t flags = *p++;
  if ((flags & kKindMask) > static_cast<std::uint8_t>(AccessKind::Atomic)) return nullptr;
  if (!read()) return nullptr;  // VA delta: any 64-bit value
  if ((flags & kHasRef) && (!read() || v > kMax32)) return nullptr;
  // An omitted byte count repeats the previous one, which was checked (or is the initial 4).
  if ((flags & kHasBytes) && (!read() || v > kMax32 || v == 0)) return nullptr;
  if ((flags & kHasGap) && (!read() || v > kMax32)) return nullptr;
  if (flags & kHasRepeat) {
    if (!read() || v >= kMax32) return nullptr;
    accesses += v + 1;
  } else {
    ++accesses;
  }
  return p;
}

/// Checks one warp's `records` records in [p, end) by the rules WarpStream::next applies, and
/// counts their accesses (repeats expanded), without producing them: the load-time validation
/// of parse_block_chunk, ~1.3x faster than decoding (`random`). Returns false if the data is
/// malformed (WarpStream then says how).
bool skim_warp(const std::uint8_t* p, const std::uint8_t* end, std::uint32_t records,
               std::uint64_t& accesses);

/// A paged threadblock's streams and segments (ThreadblockView::paged; launch_stream.cpp).
void paged_warp_streams(const ThreadblockView& tb, std::vector<WarpStream>& out);
void paged_next_segment(const ThreadblockView& tb, std::uint32_t warp, WarpStream& ws);

/// CRC-32 (IEEE, as used by zip/PNG), computed by zlib.
std::uint32_t crc32(const void* data, std::size_t n);

}  // namespace uvmsim::trace::codec
