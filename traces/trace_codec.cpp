// Encoding primitives of the .uvt format and the record decoder (WarpStream). See
// docs/trace-format.md for the byte layout these functions implement.
#include "traces/trace_codec.h"

#include <limits>
#include <stdexcept>

#include <zlib.h>

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
    case HostEventType::SetDevice:
      return "SetDevice";
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

std::uint32_t crc32(const void* data, std::size_t n) {
  // zlib's CRC-32 is the format's checksum (IEEE, as zip and PNG use; docs/trace-format.md) and
  // is ~2.8x faster than the slicing-by-8 table code this replaced (5.8 against 2.1 GB/s on this
  // project's machine), which made it 15 % of decoding a poorly compressible trace.
  return static_cast<std::uint32_t>(
      crc32_z(0, static_cast<const Bytef*>(data), static_cast<z_size_t>(n)));
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

std::uint64_t ByteReader::varint_slow() {
  std::uint64_t v = 0;
  const std::uint8_t* next = get_varint(pos_, end_, v);
  if (next == nullptr) {
    fail("malformed varint at byte " + std::to_string(offset()) +
         " (runs past the end of the data or exceeds 64 bits)");
  }
  pos_ = next;
  return v;
}

std::uint32_t ByteReader::varint32_slow(const char* what) {
  const std::size_t at = offset();
  const std::uint64_t v = varint_slow();
  if (v > std::numeric_limits<std::uint32_t>::max()) {
    fail(std::string(what) + " " + std::to_string(v) + " at byte " + std::to_string(at) +
         " does not fit in 32 bits");
  }
  return static_cast<std::uint32_t>(v);
}

void ByteReader::skip_fail(std::uint64_t n) const {
  fail("length " + std::to_string(n) + " at byte " + std::to_string(offset()) +
       " runs past the end of the data");
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
    case HostEventType::SetDevice:
      put_u8(out, static_cast<std::uint8_t>(ev.device));
      break;
  }
}

namespace {

/// A processor byte: 0xFF the CPU, 0 ... kMaxGpus-1 a GPU's device ordinal (other than 0 only
/// from version 3 on).
Processor decode_processor(ByteReader& in, std::uint32_t version) {
  const std::uint8_t raw = in.u8();
  if (raw == 0xff) return Processor::Cpu;
  if (raw < kMaxGpus && (raw == 0 || version >= kDeviceVersion)) return gpu_processor(raw);
  in.fail("unknown processor id " + std::to_string(raw) +
          (raw < kMaxGpus
               ? " in a version " + std::to_string(version) + " trace (GPU " + std::to_string(raw) +
                     " needs version " + std::to_string(kDeviceVersion) + ")"
               : " (0xFF is the CPU, 0 ... " + std::to_string(kMaxGpus - 1) + " a GPU)"));
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
  constexpr auto kSetDevice = static_cast<std::uint8_t>(HostEventType::SetDevice);
  const std::uint32_t needs = type == kFree ? kMemFreeVersion : kDeviceVersion;
  if (type > kSetDevice || (type >= kFree && version < needs)) {
    in.fail("unknown host event type " + std::to_string(type) +
            (type >= kFree && type <= kSetDevice
                 ? " in a version " + std::to_string(version) + " trace (" +
                       to_string(static_cast<HostEventType>(type)) + " needs version " +
                       std::to_string(needs) + ")"
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
      ev.device = decode_processor(in, version);
      break;
    case HostEventType::MemAdvise: {
      decode_range(in, ev);
      const std::uint8_t advice = in.u8();
      if (advice > static_cast<std::uint8_t>(Advice::UnsetReadMostly)) {
        in.fail("unknown advice " + std::to_string(advice));
      }
      ev.advice = static_cast<Advice>(advice);
      ev.device = decode_processor(in, version);
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
    case HostEventType::SetDevice:
      ev.device = decode_processor(in, version);
      if (!is_gpu(ev.device)) in.fail("SetDevice names the CPU (a kernel runs on a GPU)");
      break;
  }
  return ev;
}

namespace {

/// parse_block_chunk with totals in one pass over the chunk, for the common case of a sound one:
/// each warp's records are skimmed right after its header. Returns false at the first problem of
/// any kind, without saying what: the caller then re-parses in the reporting order.
bool parse_sound_block_chunk(const std::uint8_t* data, std::size_t size, std::uint64_t first,
                             std::uint64_t count, std::uint32_t warps_per_block,
                             std::vector<TbEntry>& out, ChunkTotals& totals, bool skim) {
  const std::uint8_t* p = data;
  const std::uint8_t* const end = data + size;
  std::uint64_t v = 0;
  auto read = [&]() -> bool {
    if (p != end && *p < 0x80) {
      v = *p++;
      return true;
    }
    p = get_varint(p, end, v);
    return p != nullptr;
  };
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!read() || v != first + i) return false;
    if (!read() || v != warps_per_block) return false;
    if (!read()) return false;
    const Addr va_base = v;
    const std::size_t begin = static_cast<std::size_t>(p - data);
    for (std::uint32_t w = 0; w < warps_per_block; ++w) {
      if (!read() || v > std::numeric_limits<std::uint32_t>::max()) return false;
      const auto records = static_cast<std::uint32_t>(v);
      if (!read() || v / 2 < records || v > static_cast<std::uint64_t>(end - p)) return false;
      const std::uint8_t* warp = p;
      p += v;
      if (skim) {
        std::uint64_t accesses = 0;
        if (!skim_warp(warp, p, records, accesses)) return false;
        totals.accesses += accesses;
      }
      totals.records += records;
    }
    out.push_back(
        TbEntry{first + i, warps_per_block, va_base, begin, static_cast<std::size_t>(p - data)});
  }
  return p == end;
}

}  // namespace

void parse_block_chunk(const std::uint8_t* data, std::size_t size, std::uint64_t first,
                       std::uint64_t count, std::uint32_t warps_per_block,
                       std::vector<TbEntry>& out, const std::string* where,
                       std::uint64_t chunk_index, ChunkTotals* totals, bool skim_records) {
  out.clear();
  if (totals != nullptr) {
    *totals = {};
    if (parse_sound_block_chunk(data, size, first, count, warps_per_block, out, *totals,
                                skim_records))
      return;
    out.clear();
    *totals = {};
  }
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
      if (totals != nullptr) totals->records += records;
    }
    out.push_back(TbEntry{tb, warps, va_base, begin, in.offset()});
  }
  if (!in.at_end()) {
    in.fail(std::to_string(in.remaining()) + " trailing bytes after the last threadblock");
  }
  if (totals == nullptr || !skim_records) return;
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
      std::uint64_t accesses = 0;
      if (!skim_warp(p, p + len, records, accesses)) {
        // Something is wrong with this warp: the decoder proper finds it and says what.
        WarpStream s(p, p + len, records, e.va_base, where);
        AccessRecord r;
        while (s.next(r)) {
        }
        throw std::logic_error("skim_warp rejected a warp that WarpStream accepts");
      }
      totals->accesses += accesses;
    }
  }
}

bool skim_warp(const std::uint8_t* p, const std::uint8_t* end, std::uint32_t records,
               std::uint64_t& accesses) {
  // A warp of no records is never read (WarpStream::next returns false at once), whatever its
  // length says.
  if (records == 0) {
    accesses = 0;
    return true;
  }
  std::uint64_t n = 0;
  for (std::uint32_t r = 0; r < records; ++r)
    if ((p = skim_record(p, end, n)) == nullptr) return false;
  if (p != end) return false;
  accesses = n;
  return true;
}

}  // namespace codec

void WarpStream::fail(const std::string* source, std::uint32_t index, std::uint32_t total,
                      const char* what, std::uint64_t value) {
  std::string msg =
      "record " + std::to_string(index) + " of " + std::to_string(total) + ": " + what;
  if (value != ~std::uint64_t{0}) msg += " " + std::to_string(value);
  throw UserError(codec::error_text(source, "access record", codec::kNoIndex, msg));
}

}  // namespace uvmsim::trace
