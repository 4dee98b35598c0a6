#include "fuzz/uvt_mutator.h"

#include <zstd.h>

#include <cstring>
#include <functional>
#include <memory>
#include <random>

#include "fuzz/fuzz_target.h"
#include "fuzz/json_mutator.h"
#include "traces/trace_codec.h"

namespace uvmsim::fuzz {

using namespace trace::codec;

namespace {

/// Bounds-checked little-endian reads; `ok` turns false on the first read past the end.
struct Cursor {
  const std::uint8_t* p;
  const std::uint8_t* end;
  bool ok = true;
  bool take(std::size_t n) {
    if (!ok || static_cast<std::size_t>(end - p) < n) ok = false;
    return ok;
  }
  std::uint8_t u8() { return take(1) ? *p++ : 0; }
  std::uint32_t u32() {
    if (!take(4)) return 0;
    const std::uint32_t v = get_u32(p);
    p += 4;
    return v;
  }
  std::uint64_t u64() {
    if (!take(8)) return 0;
    const std::uint64_t v = get_u64(p);
    p += 8;
    return v;
  }
};

std::vector<std::uint8_t> compress(const std::vector<std::uint8_t>& raw) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  std::vector<std::uint8_t> out(ZSTD_compressBound(raw.size()));
  const std::size_t n = ZSTD_compress2(cctx.get(), out.data(), out.size(), raw.data(), raw.size());
  if (ZSTD_isError(n)) return {};
  out.resize(n);
  return out;
}

/// The file laid out: header, compressed chunks with their index entries, the index.
struct Layout {
  std::vector<std::uint8_t> head_and_chunks;
  std::vector<std::uint8_t> index;
};

Layout lay_out(const UnpackedTrace& t) {
  Layout l;
  auto& out = l.head_and_chunks;
  put_bytes(out, kHeaderMagic, sizeof kHeaderMagic);
  put_u32(out, t.version);
  put_u32(out, t.flags);
  put_u64(out, t.metadata.size());
  put_bytes(out, t.metadata.data(), t.metadata.size());
  put_u32(out, crc32(out.data(), out.size()));

  std::vector<trace::ChunkInfo> infos;
  for (const auto& c : t.chunks) {
    const std::vector<std::uint8_t> z = c.frame ? *c.frame : compress(c.data);
    trace::ChunkInfo info = c.info;
    info.offset = out.size();
    info.compressed_bytes = z.size();
    if (!c.frame) info.raw_bytes = c.data.size();
    info.crc = crc32(z.data(), z.size());
    put_bytes(out, z.data(), z.size());
    infos.push_back(info);
  }

  auto& index = l.index;
  put_u64(index, t.host_total);
  put_u64(index, infos.size());
  for (const auto& c : infos) {
    put_u8(index, c.type);
    put_u32(index, c.launch_index);
    put_u64(index, c.first);
    put_u64(index, c.count);
    put_u64(index, c.offset);
    put_u64(index, c.compressed_bytes);
    put_u64(index, c.raw_bytes);
    put_u32(index, c.crc);
  }
  put_u64(index, t.launches.size());
  for (const auto& s : t.launches) {
    put_u32(index, s.launch_index);
    put_u32(index, s.kernel_id);
    put_u64(index, s.threadblocks);
    put_u64(index, s.records);
    put_u64(index, s.accesses);
  }
  return l;
}

std::vector<std::uint8_t> finish(std::vector<std::uint8_t> out,
                                 const std::vector<std::uint8_t>& index) {
  const std::uint64_t index_offset = out.size();
  put_bytes(out, index.data(), index.size());
  put_u64(out, index_offset);
  put_u64(out, index.size());
  put_u32(out, crc32(index.data(), index.size()));
  put_bytes(out, kFooterMagic, sizeof kFooterMagic);
  return out;
}

/// Mutates `bytes` with the fuzzer's byte mutations, allowing it to grow by `slack`.
void mutate_bytes(std::vector<std::uint8_t>& bytes, std::size_t slack) {
  const std::size_t size = bytes.size();
  bytes.resize(size + slack);
  bytes.resize(default_mutate(bytes.data(), size, bytes.size()));
}

/// Rewrites the raw (decompressed) bytes of a Blocks or Host chunk at one varint: the fields the
/// reader checks (threadblock ids, warp counts, record counts, lengths, VA deltas, repeats) are
/// all varints, and a boundary value there reaches more checks than a flipped bit.
void poke_varint(std::vector<std::uint8_t>& data, std::mt19937& rng) {
  if (data.empty()) return;
  std::size_t pos = rng() % data.size();
  // Move to the start of a varint: just after a byte without the continuation bit.
  while (pos > 0 && (data[pos - 1] & 0x80) != 0) --pos;
  std::size_t end = pos;
  while (end < data.size() && end - pos < 10 && (data[end] & 0x80) != 0) ++end;
  if (end < data.size()) ++end;
  static const std::uint64_t kValues[] = {0,          1,           2,          31,         32,
                                          33,         127,         128,        4095,       4096,
                                          0xffffffff, 0x100000000, 1ull << 52, ~0ull >> 1, ~0ull};
  const std::uint64_t v = rng() % 2 ? kValues[rng() % std::size(kValues)] : rng();
  std::vector<std::uint8_t> enc;
  put_varint(enc, v);
  data.erase(data.begin() + static_cast<std::ptrdiff_t>(pos),
             data.begin() + static_cast<std::ptrdiff_t>(end));
  data.insert(data.begin() + static_cast<std::ptrdiff_t>(pos), enc.begin(), enc.end());
}

}  // namespace

std::optional<UnpackedTrace> unpack_trace(const std::uint8_t* data, std::size_t size,
                                          std::size_t max_raw) {
  UnpackedTrace t;
  Cursor head{data, data + size};
  if (!head.take(sizeof kHeaderMagic) ||
      std::memcmp(data, kHeaderMagic, sizeof kHeaderMagic) != 0) {
    return std::nullopt;
  }
  head.p += sizeof kHeaderMagic;
  t.version = head.u32();
  t.flags = head.u32();
  const std::uint64_t meta_len = head.u64();
  if (!head.ok || meta_len > size || !head.take(static_cast<std::size_t>(meta_len) + 4)) {
    return std::nullopt;
  }
  t.metadata.assign(reinterpret_cast<const char*>(head.p), static_cast<std::size_t>(meta_len));

  if (size < kFooterBytes) return std::nullopt;
  Cursor foot{data + size - kFooterBytes, data + size};
  const std::uint64_t index_offset = foot.u64();
  const std::uint64_t index_len = foot.u64();
  if (index_offset > size || index_len > size - index_offset) return std::nullopt;
  Cursor ix{data + index_offset, data + index_offset + index_len};
  t.host_total = ix.u64();
  const std::uint64_t nchunks = ix.u64();
  if (!ix.ok || nchunks > index_len / kChunkEntryBytes) return std::nullopt;
  std::size_t raw_total = 0;
  for (std::uint64_t i = 0; i < nchunks; ++i) {
    UnpackedTrace::Chunk c;
    c.info.type = static_cast<trace::ChunkInfo::Type>(ix.u8());
    c.info.launch_index = ix.u32();
    c.info.first = ix.u64();
    c.info.count = ix.u64();
    c.info.offset = ix.u64();
    c.info.compressed_bytes = ix.u64();
    c.info.raw_bytes = ix.u64();
    c.info.crc = ix.u32();
    if (!ix.ok || c.info.offset > size || c.info.compressed_bytes > size - c.info.offset) {
      return std::nullopt;
    }
    const std::uint8_t* z = data + c.info.offset;
    const unsigned long long n = ZSTD_getFrameContentSize(z, c.info.compressed_bytes);
    if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN || n > max_raw - raw_total) {
      return std::nullopt;
    }
    c.data.resize(n);
    const std::size_t got =
        ZSTD_decompress(c.data.data(), c.data.size(), z, c.info.compressed_bytes);
    if (ZSTD_isError(got) || got != n) return std::nullopt;
    raw_total += n;
    t.chunks.push_back(std::move(c));
  }
  const std::uint64_t nlaunches = ix.u64();
  if (!ix.ok || nlaunches > index_len / kLaunchEntryBytes) return std::nullopt;
  for (std::uint64_t i = 0; i < nlaunches; ++i) {
    trace::LaunchSummary s;
    s.launch_index = ix.u32();
    s.kernel_id = ix.u32();
    s.threadblocks = ix.u64();
    s.records = ix.u64();
    s.accesses = ix.u64();
    t.launches.push_back(s);
  }
  if (!ix.ok) return std::nullopt;
  return t;
}

std::vector<std::uint8_t> trace_index_bytes(const UnpackedTrace& t) { return lay_out(t).index; }

std::vector<std::uint8_t> pack_trace(const UnpackedTrace& t,
                                     const std::vector<std::uint8_t>* index_override) {
  Layout l = lay_out(t);
  return finish(std::move(l.head_and_chunks), index_override ? *index_override : l.index);
}

std::size_t mutate_uvt(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed) {
  std::mt19937 rng(seed);
  std::optional<UnpackedTrace> t;
  // Now and then plain byte mutations, for the framing checks (magic, lengths, CRCs).
  if (rng() % 8 != 0) t = unpack_trace(data, size);
  if (!t) return default_mutate(data, size, max_size);

  std::vector<std::uint8_t> out;
  switch (rng() % 6) {
    case 0:  // the metadata: one JSON value, or its bytes
      if (rng() % 4 == 0 || !mutate_json_text(t->metadata, rng)) {
        std::vector<std::uint8_t> m(t->metadata.begin(), t->metadata.end());
        mutate_bytes(m, 64);
        t->metadata.assign(m.begin(), m.end());
      }
      out = pack_trace(*t);
      break;
    case 1: {  // the index, consistent framing but any numbers
      std::vector<std::uint8_t> index = trace_index_bytes(*t);
      mutate_bytes(index, 64);
      out = pack_trace(*t, &index);
      break;
    }
    case 2: {  // the per-launch totals or chunk counts, by a boundary value
      if (!t->launches.empty() && rng() % 2 == 0) {
        auto& l = t->launches[rng() % t->launches.size()];
        std::uint64_t* f[] = {&l.threadblocks, &l.records, &l.accesses};
        std::uint64_t& v = *f[rng() % 3];
        v = rng() % 2 ? v + 1 - 2 * (rng() % 2) : (rng() % 2 ? 0 : ~0ull);
      } else if (!t->chunks.empty()) {
        auto& c = t->chunks[rng() % t->chunks.size()].info;
        std::uint64_t* f[] = {&c.first, &c.count};
        *f[rng() % 2] += rng() % 2 ? 1 : ~0ull;
      }
      out = pack_trace(*t);
      break;
    }
    case 3:  // a chunk's decompressed bytes
    case 4: {
      if (t->chunks.empty()) return default_mutate(data, size, max_size);
      auto& c = t->chunks[rng() % t->chunks.size()].data;
      if (rng() % 2 == 0) {
        poke_varint(c, rng);
      } else {
        mutate_bytes(c, 64);
      }
      out = pack_trace(*t);
      break;
    }
    default: {  // chunk structure: drop, duplicate or swap chunks
      if (t->chunks.empty()) return default_mutate(data, size, max_size);
      auto& cs = t->chunks;
      const std::size_t i = rng() % cs.size();
      switch (rng() % 3) {
        case 0:
          cs.erase(cs.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        case 1:
          cs.insert(cs.begin() + static_cast<std::ptrdiff_t>(i), cs[i]);
          break;
        default:
          std::swap(cs[i], cs[rng() % cs.size()]);
          break;
      }
      out = pack_trace(*t);
      break;
    }
  }
  if (out.empty() || out.size() > max_size) return default_mutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace uvmsim::fuzz
