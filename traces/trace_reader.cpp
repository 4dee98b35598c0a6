// TraceReader: validates header, footer and index when a file is opened, then decodes chunks on
// demand (zstd with its content checksum; the chunk CRC when zstd cannot vouch for a chunk).
// Nothing here trusts a length or count from the file before it has been bounds-checked against the
// file size, so random garbage yields a UserError, never UB.
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>

#include "core/error.h"
#include "core/json_input.h"
#include "traces/trace.h"
#include "traces/trace_codec.h"

namespace uvmsim::trace {

using namespace codec;

namespace {

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

/// The most bytes a zstd frame's blocks can decompress to, read from the frame and block headers
/// (RFC 8878 sections 3.1.1.1 and 3.1.1.2): raw and RLE blocks state their size, a compressed
/// block yields at most 128 KiB. Nullopt if the headers are malformed or run past the data. This
/// is what makes the frame's declared content size believable before a buffer that large is
/// allocated. (zstd's own ZSTD_frameHeaderSize is not part of its stable API.)
std::optional<std::uint64_t> frame_capacity(const std::uint8_t* p, std::size_t n) {
  constexpr std::uint64_t kMaxBlock = 128 * 1024;
  if (n < 5 || get_u32(p) != 0xFD2FB528u) return std::nullopt;
  const std::uint8_t fhd = p[4];
  const bool single_segment = (fhd >> 5) & 1;
  static constexpr std::size_t kDictIdBytes[] = {0, 1, 2, 4};
  static constexpr std::size_t kContentSizeBytes[] = {0, 2, 4, 8};
  const std::size_t fcs_flag = fhd >> 6;
  const std::size_t header = 5 + (single_segment ? 0 : 1) + kDictIdBytes[fhd & 3] +
                             (fcs_flag == 0 && single_segment ? 1 : kContentSizeBytes[fcs_flag]);
  if (n < header) return std::nullopt;
  std::size_t pos = header;
  std::uint64_t total = 0;
  for (;;) {
    if (n - pos < 3) return std::nullopt;
    const std::uint32_t bh =
        p[pos] | std::uint32_t{p[pos + 1]} << 8 | std::uint32_t{p[pos + 2]} << 16;
    pos += 3;
    const std::uint32_t size = bh >> 3;
    std::size_t stored = size;  // bytes of the block in the frame
    switch ((bh >> 1) & 3) {
      case 0:  // raw
        total += size;
        break;
      case 1:  // RLE: one byte, repeated `size` times
        total += size;
        stored = 1;
        break;
      case 2:  // compressed
        total += kMaxBlock;
        break;
      default:
        return std::nullopt;
    }
    if (n - pos < stored) return std::nullopt;
    pos += stored;
    if (bh & 1) return total;
  }
}

/// Whether a zstd frame's header sets Content_Checksum_flag (RFC 8878 section 3.1.1.1.1, bit 2
/// of the frame header descriptor): zstd then verifies XXH64 of the content as it decompresses.
bool frame_has_checksum(const std::uint8_t* p, std::size_t n) {
  return n >= 5 && get_u32(p) == 0xFD2FB528u && ((p[4] >> 2) & 1) != 0;
}

}  // namespace

struct TraceReader::Impl {
  std::filesystem::path path;
  std::string name;
  std::ifstream in;
  std::uint64_t size = 0;
  std::uint32_t version = 0;
  Metadata meta;
  std::vector<ChunkInfo> chunks;
  std::vector<LaunchSummary> launches;
  std::uint64_t host_total = 0;
  std::vector<std::size_t> host_chunks;
  std::vector<std::vector<std::size_t>> launch_chunks;
  ZSTD_DCtx* dctx = nullptr;
  std::vector<std::uint8_t> compressed;  // reused by every load_chunk
  // Chunk buffers of finished LaunchStreams (at most the most chunks one launch held at once).
  std::vector<ChunkBuffer> spare;

  // Host-event cursor.
  std::size_t host_pos = 0;  // next entry of host_chunks to load
  std::size_t host_chunk = 0;
  ChunkBuffer host_buf;
  std::size_t host_off = 0;
  std::uint64_t host_left = 0;  // events left in the loaded host chunk
  std::uint32_t next_launch = 0;

  ~Impl() {
    if (dctx != nullptr) ZSTD_freeDCtx(dctx);
  }

  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw UserError(name, field, msg);
  }

  /// Chunk `i`'s compressed bytes (in `compressed`) against the CRC-32 the index stores for them.
  void check_chunk_crc(std::size_t i) const {
    const ChunkInfo& c = chunks[i];
    const std::uint32_t crc = crc32(compressed.data(), compressed.size());
    if (crc != c.crc) {
      fail("chunk " + std::to_string(i),
           "CRC mismatch (stored " + hex32(c.crc) + ", computed " + hex32(crc) + ")");
    }
  }

  /// A problem with chunk `i`'s frame: a CRC mismatch is reported first, as the cause.
  [[noreturn]] void fail_chunk(std::size_t i, const std::string& msg) const {
    check_chunk_crc(i);
    fail("chunk " + std::to_string(i), msg);
  }

  void read_at(std::uint64_t offset, void* dst, std::uint64_t n, const char* field,
               std::uint64_t index = kNoIndex) {
    if (offset > size || n > size - offset) {
      throw UserError(error_text(&name, field, index, "truncated file"));
    }
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!in || static_cast<std::uint64_t>(in.gcount()) != n) {
      throw UserError(error_text(&name, field, index,
                                 "cannot read " + std::to_string(n) + " bytes at offset " +
                                     std::to_string(offset) + " (truncated file?)"));
    }
  }

  void open();
  std::uint64_t read_header();
  void read_index(std::uint64_t header_end);
  void validate_index(std::uint64_t header_end, std::uint64_t index_offset);
};

void TraceReader::Impl::open() {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail("open", "is a directory");
  in.open(path, std::ios::binary);
  if (!in) fail("open", std::string("cannot open file: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (end < 0) fail("open", "cannot determine the file size");
  size = static_cast<std::uint64_t>(end);

  const std::uint64_t header_end = read_header();
  read_index(header_end);
  dctx = ZSTD_createDCtx();
  if (dctx == nullptr) throw std::bad_alloc();
}

std::uint64_t TraceReader::Impl::read_header() {
  std::uint8_t fixed[kHeaderFixedBytes];
  if (size >= sizeof kHeaderMagic) {
    read_at(0, fixed, sizeof kHeaderMagic, "header");
    if (std::memcmp(fixed, kHeaderMagic, sizeof kHeaderMagic) != 0) {
      fail("header", "bad magic: not a .uvt trace file");
    }
  }
  if (size < kHeaderFixedBytes) {
    fail("header", "truncated file (" + std::to_string(size) + " bytes; the header alone takes " +
                       std::to_string(kHeaderFixedBytes) + ")");
  }
  read_at(0, fixed, kHeaderFixedBytes, "header");
  version = get_u32(fixed + 8);
  if (version < kMinFormatVersion || version > kFormatVersion) {
    fail("header", "unsupported format version " + std::to_string(version) +
                       " (this build of uvmsim supports versions " +
                       std::to_string(kMinFormatVersion) + " to " + std::to_string(kFormatVersion) +
                       ")");
  }
  const std::uint32_t flags = get_u32(fixed + 12);
  if ((flags & ~kKnownHeaderFlags) != 0) fail("header", "unknown flags " + hex32(flags));
  const std::uint64_t meta_len = get_u64(fixed + 16);
  const std::uint64_t min_rest = 4 + kFooterBytes;  // header CRC + footer
  if (meta_len > size - kHeaderFixedBytes || size - kHeaderFixedBytes - meta_len < min_rest) {
    fail("header", "truncated file (metadata length " + std::to_string(meta_len) + " but only " +
                       std::to_string(size) + " bytes in the file)");
  }

  std::vector<std::uint8_t> head(kHeaderFixedBytes + meta_len + 4);
  read_at(0, head.data(), head.size(), "header");
  const std::uint32_t stored = get_u32(head.data() + head.size() - 4);
  const std::uint32_t computed = crc32(head.data(), head.size() - 4);
  if (stored != computed) {
    fail("header", "CRC mismatch (stored " + hex32(stored) + ", computed " + hex32(computed) + ")");
  }
  const std::string_view text(reinterpret_cast<const char*>(head.data()) + kHeaderFixedBytes,
                              static_cast<std::size_t>(meta_len));
  nlohmann::json j;
  try {
    j = parse_json(text, name + ": metadata");
  } catch (const JsonTooDeep&) {
    throw;
  } catch (const UserError&) {
    // The wording the Python reader (python/uvmsim/reader.py) gives too: its parser's reasons
    // differ from nlohmann's.
    fail("metadata", "invalid JSON");
  }
  meta = Metadata::from_json(j, name);
  return head.size();
}

void TraceReader::Impl::read_index(std::uint64_t header_end) {
  std::uint8_t footer[kFooterBytes];
  if (size - header_end < kFooterBytes) fail("footer", "truncated file");
  read_at(size - kFooterBytes, footer, kFooterBytes, "footer");
  if (std::memcmp(footer + 20, kFooterMagic, sizeof kFooterMagic) != 0) {
    fail("footer", "missing end marker (the file is truncated or was not finished)");
  }
  const std::uint64_t index_offset = get_u64(footer);
  const std::uint64_t index_len = get_u64(footer + 8);
  const std::uint32_t index_crc = get_u32(footer + 16);
  const std::uint64_t index_end = size - kFooterBytes;
  if (index_offset < header_end || index_offset > index_end ||
      index_len != index_end - index_offset) {
    fail("footer", "index location out of range (the file is truncated or corrupt)");
  }
  std::vector<std::uint8_t> index(index_len);
  read_at(index_offset, index.data(), index_len, "index");
  const std::uint32_t computed = crc32(index.data(), index.size());
  if (computed != index_crc) {
    fail("index",
         "CRC mismatch (stored " + hex32(index_crc) + ", computed " + hex32(computed) + ")");
  }

  ByteReader r(index.data(), index.data() + index.size(), &name, "index");
  host_total = r.u64();
  const std::uint64_t nchunks = r.u64();
  if (nchunks > r.remaining() / kChunkEntryBytes) r.fail("chunk count exceeds the index size");
  chunks.resize(nchunks);
  for (ChunkInfo& c : chunks) {
    const std::uint8_t type = r.u8();
    if (type > ChunkInfo::Blocks) r.fail("unknown chunk type " + std::to_string(type));
    c.type = static_cast<ChunkInfo::Type>(type);
    c.launch_index = r.u32();
    c.first = r.u64();
    c.count = r.u64();
    c.offset = r.u64();
    c.compressed_bytes = r.u64();
    c.raw_bytes = r.u64();
    c.crc = r.u32();
  }
  const std::uint64_t nlaunches = r.u64();
  if (nlaunches > r.remaining() / kLaunchEntryBytes) r.fail("launch count exceeds the index size");
  launches.resize(nlaunches);
  for (LaunchSummary& l : launches) {
    l.launch_index = r.u32();
    l.kernel_id = r.u32();
    l.threadblocks = r.u64();
    l.records = r.u64();
    l.accesses = r.u64();
  }
  if (!r.at_end()) r.fail(std::to_string(r.remaining()) + " trailing bytes");
  validate_index(header_end, index_offset);
}

void TraceReader::Impl::validate_index(std::uint64_t header_end, std::uint64_t index_offset) {
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const LaunchSummary& l = launches[i];
    const std::string field = "index: launch " + std::to_string(i);
    if (l.launch_index != i)
      fail(field, "out of order (numbered " + std::to_string(l.launch_index) + ")");
    const KernelInfo* k = meta.find_kernel(l.kernel_id);
    if (k == nullptr) fail(field, "unknown kernel id " + std::to_string(l.kernel_id));
    if (l.threadblocks != k->threadblocks()) {
      fail(field, std::to_string(l.threadblocks) + " threadblocks but kernel '" + k->name +
                      "' has a grid of " + std::to_string(k->threadblocks()));
    }
    if (l.accesses < l.records) fail(field, "fewer accesses than records");
  }
  if (meta.hints) {
    std::vector<std::uint32_t> kernels;
    for (const LaunchSummary& l : launches) kernels.push_back(l.kernel_id);
    meta.hints->check_against(meta, name, &kernels);
  }

  launch_chunks.assign(launches.size(), {});
  std::vector<std::uint64_t> next_tb(launches.size(), 0);
  std::uint64_t next_host = 0;
  std::uint64_t prev_end = header_end;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const ChunkInfo& c = chunks[i];
    const std::string field = "index: chunk " + std::to_string(i);
    if (c.count == 0) fail(field, "empty chunk");
    if (c.raw_bytes == 0 || c.raw_bytes > kMaxChunkRawBytes) {
      fail(field, "implausible uncompressed size " + std::to_string(c.raw_bytes));
    }
    // Chunks are stored back to back in index order between the header and the index.
    if (c.offset < prev_end || c.compressed_bytes == 0 || c.offset > index_offset ||
        c.compressed_bytes > index_offset - c.offset) {
      fail(field, "byte range out of bounds or overlapping another chunk");
    }
    prev_end = c.offset + c.compressed_bytes;
    if (c.type == ChunkInfo::Host) {
      if (c.first != next_host) fail(field, "host events out of order");
      if (c.count > host_total - next_host) fail(field, "more host events than the index total");
      next_host += c.count;
      host_chunks.push_back(i);
    } else {
      if (c.launch_index >= launches.size()) {
        fail(field, "unknown launch " + std::to_string(c.launch_index));
      }
      std::uint64_t& expect = next_tb[c.launch_index];
      if (c.first != expect) fail(field, "threadblocks out of order");
      if (c.count > launches[c.launch_index].threadblocks - expect) {
        fail(field, "more threadblocks than the launch has");
      }
      expect += c.count;
      launch_chunks[c.launch_index].push_back(i);
    }
  }
  if (next_host != host_total) {
    fail("index", "host chunks hold " + std::to_string(next_host) + " events, expected " +
                      std::to_string(host_total));
  }
  for (std::size_t l = 0; l < launches.size(); ++l) {
    if (next_tb[l] != launches[l].threadblocks) {
      fail("index: launch " + std::to_string(l),
           "chunks hold " + std::to_string(next_tb[l]) + " of its " +
               std::to_string(launches[l].threadblocks) + " threadblocks");
    }
  }
}

TraceReader::TraceReader(const std::filesystem::path& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->name = path.string();
  impl_->open();
}

TraceReader::~TraceReader() = default;

const std::filesystem::path& TraceReader::path() const { return impl_->path; }
const std::string& TraceReader::display_name() const { return impl_->name; }
std::uint32_t TraceReader::version() const { return impl_->version; }
const Metadata& TraceReader::metadata() const { return impl_->meta; }
const std::vector<ChunkInfo>& TraceReader::chunks() const { return impl_->chunks; }
const std::vector<LaunchSummary>& TraceReader::launches() const { return impl_->launches; }
std::uint64_t TraceReader::host_event_count() const { return impl_->host_total; }
std::uint64_t TraceReader::file_bytes() const { return impl_->size; }

const std::vector<std::size_t>& TraceReader::launch_chunks(std::uint32_t launch_index) const {
  return impl_->launch_chunks.at(launch_index);
}

void TraceReader::load_chunk(std::size_t i, ChunkBuffer& out) {
  Impl& r = *impl_;
  const ChunkInfo& c = r.chunks.at(i);
  r.compressed.resize(c.compressed_bytes);
  r.read_at(c.offset, r.compressed.data(), c.compressed_bytes, "chunk", i);
  // The chunk's CRC-32 guards the compressed bytes; zstd's content checksum (XXH64, verified
  // while decompressing) guards what they decode to. When the frame carries that checksum and
  // decompresses cleanly, the content is proven, so the CRC is computed only when zstd cannot
  // vouch for the chunk: a frame without a checksum, or any problem below (fail_chunk reports a
  // CRC mismatch first, as the cause). A clean chunk skips a pass over its bytes (~10 % of
  // decoding `random`; docs/trace-format.md, "Validation and errors"). Messages are built only
  // on failure: steady-state streaming must not allocate per chunk.
  if (!frame_has_checksum(r.compressed.data(), r.compressed.size())) r.check_chunk_crc(i);
  const unsigned long long frame_size =
      ZSTD_getFrameContentSize(r.compressed.data(), r.compressed.size());
  if (frame_size == ZSTD_CONTENTSIZE_ERROR) r.fail_chunk(i, "zstd: not a valid zstd frame");
  if (frame_size != c.raw_bytes) {
    r.fail_chunk(i, "zstd frame declares " +
                        (frame_size == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("no")
                                                                : std::to_string(frame_size)) +
                        " uncompressed bytes, the index " + std::to_string(c.raw_bytes));
  }
  // Declared sizes are only claims: a 150 KB file can declare 4 GB. Nothing is allocated for more
  // than the frame's blocks can actually produce.
  const auto capacity = frame_capacity(r.compressed.data(), r.compressed.size());
  if (!capacity) r.fail_chunk(i, "zstd: truncated or malformed frame");
  if (*capacity < c.raw_bytes) {
    r.fail_chunk(i, "zstd frame declares " + std::to_string(c.raw_bytes) +
                        " uncompressed bytes but its blocks hold at most " +
                        std::to_string(*capacity));
  }
  if (out.capacity() < c.raw_bytes) {
    // A fresh buffer with some slack, not vector growth: growth would copy the old chunk's bytes
    // only to overwrite them, and its doubling sends a ~1 MB chunk to a 2 MB huge-page
    // allocation whose first touch the kernel zeroes (gemm 4 MB at 50 %: page clearing was ~10 %
    // of a run whose chunks differ by a few bytes). The size was checked against the frame above.
    ChunkBuffer fresh;
    fresh.reserve(c.raw_bytes + c.raw_bytes / 8);
    out.swap(fresh);
  }
  out.resize(c.raw_bytes);
  const std::size_t n =
      ZSTD_decompressDCtx(r.dctx, out.data(), out.size(), r.compressed.data(), r.compressed.size());
  if (ZSTD_isError(n)) r.fail_chunk(i, std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n != c.raw_bytes) {
    r.fail_chunk(i, "decompressed to " + std::to_string(n) + " bytes, expected " +
                        std::to_string(c.raw_bytes));
  }
}

ChunkBuffer TraceReader::spare_buffer() {
  Impl& r = *impl_;
  if (r.spare.empty()) return {};
  ChunkBuffer b = std::move(r.spare.back());
  r.spare.pop_back();
  return b;
}

void TraceReader::recycle_buffer(ChunkBuffer&& b) {
  if (b.capacity() > 0) impl_->spare.push_back(std::move(b));
}

void TraceReader::drop_spare_buffers() { impl_->spare.clear(); }

std::size_t TraceReader::spare_buffers() const { return impl_->spare.size(); }

bool TraceReader::next_host_event(HostEvent& out) {
  Impl& r = *impl_;
  while (r.host_left == 0) {
    if (r.host_pos > 0 && r.host_off != r.host_buf.size()) {
      r.fail(
          "chunk " + std::to_string(r.host_chunk),
          std::to_string(r.host_buf.size() - r.host_off) + " trailing bytes after the last event");
    }
    if (r.host_pos == r.host_chunks.size()) {
      if (r.next_launch != r.launches.size()) {
        r.fail("host events", std::to_string(r.next_launch) + " kernel launches, the index has " +
                                  std::to_string(r.launches.size()));
      }
      return false;
    }
    r.host_chunk = r.host_chunks[r.host_pos++];
    load_chunk(r.host_chunk, r.host_buf);
    r.host_off = 0;
    r.host_left = r.chunks[r.host_chunk].count;
  }
  ByteReader in(r.host_buf.data() + r.host_off, r.host_buf.data() + r.host_buf.size(), &r.name,
                "chunk", r.host_chunk);
  HostEvent ev = decode_host_event(in, r.version);
  if (ev.type == HostEventType::KernelLaunch) {
    if (ev.launch_index != r.next_launch || ev.launch_index >= r.launches.size()) {
      in.fail("kernel launch numbered " + std::to_string(ev.launch_index) + ", expected " +
              std::to_string(r.next_launch));
    }
    if (ev.kernel_id != r.launches[ev.launch_index].kernel_id) {
      in.fail("launch " + std::to_string(ev.launch_index) + " of kernel " +
              std::to_string(ev.kernel_id) + " but the index says kernel " +
              std::to_string(r.launches[ev.launch_index].kernel_id));
    }
    ++r.next_launch;
  }
  r.host_off += in.offset();
  --r.host_left;
  out = ev;
  return true;
}

void TraceReader::rewind_host() {
  Impl& r = *impl_;
  r.host_pos = 0;
  r.host_left = 0;
  r.host_off = 0;
  r.host_buf.clear();
  r.next_launch = 0;
}

LaunchStream TraceReader::launch(std::uint32_t launch_index, RecordCheck check,
                                 std::uint64_t decoded_budget) {
  return LaunchStream(*this, launch_index, check, decoded_budget);
}

}  // namespace uvmsim::trace
