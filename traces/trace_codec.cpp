// Encoding primitives of the .uvt format and the record decoder (WarpStream). See
// docs/trace-format.md for the byte layout these functions implement.
#include "traces/trace_codec.h"

#include <array>
#include <limits>

#include "core/error.h"

namespace uvmsim::trace {

const char* to_string(HostEventType t) {
  switch (t) {
    case HostEventType::KernelLaunch:
      return "KernelLaunch";
    case HostEventType::MemPrefetch:
      return "MemPrefetch";
    case HostEventType::MemAdvise:
      return "MemAdvise";
    case HostEventType::Synchronize:
      return "Synchronize";
    case HostEventType::CpuAccess:
      return "CpuAccess";
    case HostEventType::MemFree:
      return "MemFree";
  }
  return "?";
}

const char* to_string(Advice a) {
  switch (a) {
    case Advice::SetPreferredLocation:
      return "SetPreferredLocation";
    case Advice::UnsetPreferredLocation:
      return "UnsetPreferredLocation";
    case Advice::SetAccessedBy:
      return "SetAccessedBy";
    case Advice::UnsetAccessedBy:
      return "UnsetAccessedBy";
    case Advice::SetReadMostly:
      return "SetReadMostly";
    case Advice::UnsetReadMostly:
      return "UnsetReadMostly";
  }
  return "?";
}

namespace codec {

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void put_bytes(std::vector<std::uint8_t>& out, const void* data, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  out.insert(out.end(), p, p + n);
}

std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{p[i]} << (8 * i);
  return v;
}

std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

namespace {

// Slicing-by-8 tables of the reflected IEEE polynomial: table[k][b] is the CRC of byte b followed
// by k zero bytes, so eight input bytes fold into the CRC with eight lookups and no carried
// dependency between them (Kounavis & Berry, "A Systematic Approach to Building High Performance
// Software-Based CRC Generators", ISCC 2005). Same checksum as the bytewise form the format
// specifies (docs/trace-format.md), about 5x faster than boost::crc_32_type's byte loop.
constexpr std::array<std::array<std::uint32_t, 256>, 8> make_crc_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? 0xEDB88320u : 0u);
    t[0][b] = c;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  return t;
}
constexpr auto kCrcTables = make_crc_tables();

}  // namespace

std::uint32_t crc32(const void* data, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  const auto& t = kCrcTables;
  std::uint32_t c = 0xFFFFFFFFu;
  for (; n >= 8; n -= 8, p += 8) {
    const std::uint32_t lo = c ^ get_u32(p);
    const std::uint32_t hi = get_u32(p + 4);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
  }
  for (; n > 0; --n, ++p) c = (c >> 8) ^ t[0][(c ^ *p) & 0xff];
  return c ^ 0xFFFFFFFFu;
}

std::string error_text(const std::string* where, const char* field, std::uint64_t index,
                       const std::string& msg) {
  std::string s = where ? *where : std::string("<trace>");
  s += ": ";
  s += field;
  if (index != kNoIndex) {
    s += ' ';
    s += std::to_string(index);
  }
  s += ": ";
  s += msg;
  return s;
}

void ByteReader::fail(const std::string& msg) const {
  throw UserError(error_text(where_, field_, index_, msg));
}

std::uint8_t ByteReader::u8() {
  if (pos_ == end_) fail("unexpected end of data at byte " + std::to_string(offset()));
  return *pos_++;
}

std::uint32_t ByteReader::u32() {
  if (remaining() < 4) fail("unexpected end of data at byte " + std::to_string(offset()));
  const std::uint32_t v = get_u32(pos_);
  pos_ += 4;
  return v;
}

std::uint64_t ByteReader::u64() {
  if (remaining() < 8) fail("unexpected end of data at byte " + std::to_string(offset()));
  const std::uint64_t v = get_u64(pos_);
  pos_ += 8;
  return v;
}

std::uint64_t ByteReader::varint() {
  std::uint64_t v = 0;
  const std::uint8_t* next = get_varint(pos_, end_, v);
  if (next == nullptr) {
    fail("malformed varint at byte " + std::to_string(offset()) +
         " (runs past the end of the data or exceeds 64 bits)");
  }
  pos_ = next;
  return v;
}

std::uint32_t ByteReader::varint32(const char* what) {
  const std::size_t at = offset();
  const std::uint64_t v = varint();
  if (v > std::numeric_limits<std::uint32_t>::max()) {
    fail(std::string(what) + " " + std::to_string(v) + " at byte " + std::to_string(at) +
         " does not fit in 32 bits");
  }
  return static_cast<std::uint32_t>(v);
}

void ByteReader::skip(std::uint64_t n) {
  if (n > remaining()) {
    fail("length " + std::to_string(n) + " at byte " + std::to_string(offset()) +
         " runs past the end of the data");
  }
  pos_ += n;
}

void RecordEncoder::encode(const AccessRecord& rec, std::vector<std::uint8_t>& out) {
  const std::size_t at = out.size();
  out.resize(at + kMaxRecordBytes);
  out.resize(static_cast<std::size_t>(encode(rec, out.data() + at) - out.data()));
}

std::uint8_t* RecordEncoder::encode(const AccessRecord& rec, std::uint8_t* p) {
  auto flags = static_cast<std::uint8_t>(rec.kind);
  // Deltas wrap modulo 2^64 so every VA pair is representable; page-aligned deltas (the common
  // case for page-touch traces) are stored in pages, which usually makes them one byte.
  const std::uint64_t delta = rec.va - prev_va;
  std::uint64_t va_field;
  if ((delta & (kPageSize - 1)) == 0) {
    flags |= kVaPages;
    va_field = zigzag(static_cast<std::int64_t>(delta) >> kPageShift);
  } else {
    va_field = zigzag(static_cast<std::int64_t>(delta));
  }
  if (rec.ref_id != prev_ref) flags |= kHasRef;
  if (rec.bytes != prev_bytes) flags |= kHasBytes;
  if (rec.gap_cycles != 0) flags |= kHasGap;
  if (rec.repeat != 1) flags |= kHasRepeat;
  *p++ = flags;
  p = put_varint(p, va_field);
  if (flags & kHasRef) p = put_varint(p, rec.ref_id);
  if (flags & kHasBytes) p = put_varint(p, rec.bytes);
  if (flags & kHasGap) p = put_varint(p, rec.gap_cycles);
  if (flags & kHasRepeat) p = put_varint(p, rec.repeat - 1);
  prev_va = rec.va;
  prev_ref = rec.ref_id;
  prev_bytes = rec.bytes;
  return p;
}

void encode_host_event(const HostEvent& ev, std::vector<std::uint8_t>& out) {
  put_u8(out, static_cast<std::uint8_t>(ev.type));
  switch (ev.type) {
    case HostEventType::KernelLaunch:
      put_varint(out, ev.kernel_id);
      put_varint(out, ev.launch_index);
      put_varint(out, zigzag(ev.iteration));
      break;
    case HostEventType::MemPrefetch:
      put_varint(out, ev.va);
      put_varint(out, ev.size);
      put_u8(out, static_cast<std::uint8_t>(ev.device));
      break;
    case HostEventType::MemAdvise:
      put_varint(out, ev.va);
      put_varint(out, ev.size);
      put_u8(out, static_cast<std::uint8_t>(ev.advice));
      put_u8(out, static_cast<std::uint8_t>(ev.device));
      break;
    case HostEventType::Synchronize:
      break;
    case HostEventType::CpuAccess:
      put_varint(out, ev.va);
      put_varint(out, ev.size);
      put_u8(out, static_cast<std::uint8_t>(ev.kind));
      break;
    case HostEventType::MemFree:
      put_varint(out, ev.va);
      break;
  }
}

namespace {

Processor decode_processor(ByteReader& in) {
  const std::uint8_t raw = in.u8();
  if (raw == 0) return Processor::Gpu;
  if (raw == 0xff) return Processor::Cpu;
  in.fail("unknown processor id " + std::to_string(raw));
}

}  // namespace

namespace {

/// VA and size of a prefetch, advice or CPU access: a range that wraps around the address space is
/// corruption (the driver model would silently skip it).
void decode_range(ByteReader& in, HostEvent& ev) {
  ev.va = in.varint();
  ev.size = in.varint();
  if (ev.size > ~ev.va) {
    in.fail(std::string(to_string(ev.type)) + " of " + std::to_string(ev.size) + " bytes at " +
            std::to_string(ev.va) + " wraps around the 64-bit address space");
  }
}

}  // namespace

HostEvent decode_host_event(ByteReader& in, std::uint32_t version) {
  HostEvent ev;
  const std::uint8_t type = in.u8();
  constexpr auto kFree = static_cast<std::uint8_t>(HostEventType::MemFree);
  if (type > kFree || (type == kFree && version < kMemFreeVersion)) {
    in.fail("unknown host event type " + std::to_string(type) +
            (type == kFree
                 ? " in a version " + std::to_string(version) + " trace (MemFree needs version " +
                       std::to_string(kMemFreeVersion) + ")"
                 : std::string()));
  }
  ev.type = static_cast<HostEventType>(type);
  switch (ev.type) {
    case HostEventType::KernelLaunch: {
      ev.kernel_id = in.varint32("kernel id");
      ev.launch_index = in.varint32("launch index");
      // -1 is "not in a host loop"; other iterations count from 0 (the hints use the same range).
      const std::int64_t it = unzigzag(in.varint());
      if (it < -1 || it > std::numeric_limits<std::int32_t>::max()) {
        in.fail("iteration " + std::to_string(it) + " (must be -1, no loop, or 0..2147483647)");
      }
      ev.iteration = static_cast<std::int32_t>(it);
      break;
    }
    case HostEventType::MemPrefetch:
      decode_range(in, ev);
      ev.device = decode_processor(in);
      break;
    case HostEventType::MemAdvise: {
      decode_range(in, ev);
      const std::uint8_t advice = in.u8();
      if (advice > static_cast<std::uint8_t>(Advice::UnsetReadMostly)) {
        in.fail("unknown advice " + std::to_string(advice));
      }
      ev.advice = static_cast<Advice>(advice);
      ev.device = decode_processor(in);
      break;
    }
    case HostEventType::Synchronize:
      break;
    case HostEventType::CpuAccess: {
      decode_range(in, ev);
      const std::uint8_t kind = in.u8();
      if (kind > static_cast<std::uint8_t>(AccessKind::Atomic)) {
        in.fail("unknown access kind " + std::to_string(kind));
      }
      ev.kind = static_cast<AccessKind>(kind);
      break;
    }
    case HostEventType::MemFree:
      ev.va = in.varint();
      break;
  }
  return ev;
}

void parse_block_chunk(const std::uint8_t* data, std::size_t size, std::uint64_t first,
                       std::uint64_t count, std::uint32_t warps_per_block,
                       std::vector<TbEntry>& out, const std::string* where,
                       std::uint64_t chunk_index, ChunkTotals* totals) {
  out.clear();
  if (totals != nullptr) *totals = {};
  ByteReader in(data, data + size, where, "chunk", chunk_index);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t expect = first + i;
    const std::uint64_t tb = in.varint();
    if (tb != expect) {
      in.fail("threadblock id " + std::to_string(tb) + " where " + std::to_string(expect) +
              " was expected");
    }
    const std::uint32_t warps = in.varint32("warp count");
    if (warps != warps_per_block) {
      in.fail("threadblock " + std::to_string(tb) + " has " + std::to_string(warps) +
              " warps, the kernel's block has " + std::to_string(warps_per_block));
    }
    const Addr va_base = in.varint();
    const std::size_t begin = in.offset();
    for (std::uint32_t w = 0; w < warps; ++w) {
      const std::uint32_t records = in.varint32("record count");
      const std::uint64_t len = in.varint();
      // Every record takes at least two bytes (flags + VA delta): a count that cannot fit is
      // corruption, caught here rather than deep inside the simulation.
      if (len / 2 < records) {
        in.fail("threadblock " + std::to_string(tb) + " warp " + std::to_string(w) + " claims " +
                std::to_string(records) + " records in " + std::to_string(len) + " bytes");
      }
      in.skip(len);
    }
    out.push_back(TbEntry{tb, warps, va_base, begin, in.offset()});
  }
  if (!in.at_end()) {
    in.fail(std::to_string(in.remaining()) + " trailing bytes after the last threadblock");
  }
  if (totals == nullptr) return;
  // A second pass once the structure is known to be sound: errors come in the order of a reader
  // that decodes the records as it goes (structure first, then records in threadblock and warp
  // order), which is what the Python reader (python/uvmsim/records.py) reports too.
  for (const TbEntry& e : out) {
    ByteReader warps(data + e.begin, data + e.end, where, "chunk", chunk_index);
    for (std::uint32_t w = 0; w < e.num_warps; ++w) {
      const std::uint32_t records = warps.varint32("record count");
      const std::uint64_t len = warps.varint();
      const std::uint8_t* p = warps.pos();
      warps.skip(len);
      WarpStream s(p, p + len, records, e.va_base, where);
      AccessRecord r;
      while (s.next(r)) totals->accesses += r.repeat;
      totals->records += records;
    }
  }
}

}  // namespace codec

void WarpStream::fail(const char* what, std::uint64_t value) const {
  std::string msg = "record " + std::to_string(total_ - remaining_) + " of " +
                    std::to_string(total_) + ": " + what;
  if (value != ~std::uint64_t{0}) msg += " " + std::to_string(value);
  throw UserError(codec::error_text(source_, "access record", codec::kNoIndex, msg));
}

bool WarpStream::next(AccessRecord& out) {
  using namespace codec;
  if (remaining_ == 0) return false;
  const std::uint8_t* p = pos_;
  if (p == end_) fail("runs past the end of the warp's data");
  const std::uint8_t flags = *p++;
  const std::uint8_t kind = flags & kKindMask;
  if (kind > static_cast<std::uint8_t>(AccessKind::Atomic)) fail("unknown access kind", kind);

  // One-byte varints are by far the most common; test for them before the general decoder.
  std::uint64_t v;
  auto read = [&](const char* what) {
    if (p != end_ && *p < 0x80) {
      v = *p++;
      return;
    }
    p = get_varint(p, end_, v);
    if (p == nullptr) fail(what);
  };
  auto read32 = [&](const char* what) -> std::uint32_t {
    read(what);
    if (v > std::numeric_limits<std::uint32_t>::max()) fail(what);
    return static_cast<std::uint32_t>(v);
  };

  read("malformed VA delta (varint runs past the end of the warp's data or overflows)");
  const auto delta = static_cast<std::uint64_t>(unzigzag(v));
  out.va = prev_va_ + ((flags & kVaPages) ? (delta << kPageShift) : delta);
  out.ref_id = (flags & kHasRef) ? read32("malformed ref id") : prev_ref_;
  out.bytes = (flags & kHasBytes) ? read32("malformed byte count") : prev_bytes_;
  if (out.bytes == 0) fail("access of 0 bytes");
  out.gap_cycles = (flags & kHasGap) ? read32("malformed gap") : 0;
  if (flags & kHasRepeat) {
    const std::uint32_t extra = read32("malformed repeat count");
    if (extra == std::numeric_limits<std::uint32_t>::max()) fail("repeat count overflows");
    out.repeat = extra + 1;
  } else {
    out.repeat = 1;
  }
  out.kind = static_cast<AccessKind>(kind);
  prev_va_ = out.va;
  prev_ref_ = out.ref_id;
  prev_bytes_ = out.bytes;
  pos_ = p;
  if (--remaining_ == 0 && pos_ != end_) fail("trailing bytes after the warp's last record");
  return true;
}

void ThreadblockView::warp_streams(std::vector<WarpStream>& out) const {
  out.resize(num_warps);
  const std::uint8_t* p = warps_begin;
  for (std::uint32_t w = 0; w < num_warps; ++w) {
    std::uint64_t records = 0, len = 0;
    // The LaunchStream validated this structure when it loaded the chunk; re-checking costs two
    // comparisons per warp and keeps a hand-built or stale view from reading out of bounds.
    if (p != nullptr) p = codec::get_varint(p, warps_end, records);
    if (p != nullptr) p = codec::get_varint(p, warps_end, len);
    if (p == nullptr || records > std::numeric_limits<std::uint32_t>::max() ||
        len > static_cast<std::uint64_t>(warps_end - p)) {
      throw UserError(codec::error_text(source, "threadblock", tb_id,
                                        "malformed header of warp " + std::to_string(w)));
    }
    out[w] = WarpStream(p, p + len, static_cast<std::uint32_t>(records), va_base, source);
    p += len;
  }
}

}  // namespace uvmsim::trace
