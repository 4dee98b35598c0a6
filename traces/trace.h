// The .uvt trace format: data model, writer and reader.
//
// A .uvt file is a self-describing, streamable, zstd-compressed memory-access trace written by the
// workload generators and by the CUPTI/Sanitizer collector. Layout (all integers little-endian):
//
//   header   : magic "UVMTRACE", u32 format version, u32 flags, u64 metadata length,
//              metadata JSON (UTF-8), u32 CRC-32 of everything before it
//   chunks   : each a zstd frame (with zstd's content checksum) holding either host events or the
//              threadblocks of one kernel launch; chunk boundaries fall between threadblocks
//   index    : one entry per chunk (type, launch, first threadblock, count, offset, sizes, CRC-32
//   of
//              the compressed bytes), plus per-launch totals
//   footer   : u64 index offset, u64 index length, u32 CRC-32 of the index, magic "UVTEND01"
//
// See docs/trace-format.md for the byte-level description.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/huge_page_allocator.h"
#include "core/types.h"
#include "traces/hints.h"
#include "traces/record_format.h"

namespace uvmsim::trace {

/// The newest format version this build reads and writes. A trace is written as the lowest
/// version that can hold it: version 1 unless it has a MemFree event (version 2) or names a GPU
/// other than GPU 0 or has a SetDevice event (version 3).
constexpr std::uint32_t kFormatVersion = 3;
/// The oldest version this build still reads.
constexpr std::uint32_t kMinFormatVersion = 1;
/// The first version with MemFree host events.
constexpr std::uint32_t kMemFreeVersion = 2;
/// The first version with SetDevice host events and GPU ordinals other than 0.
constexpr std::uint32_t kDeviceVersion = 3;

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  std::uint64_t count() const { return std::uint64_t{x} * y * z; }
  bool operator==(const Dim3&) const = default;
};

/// One allocation of the traced program (cudaMallocManaged, cudaMalloc, cudaMallocHost).
struct Allocation {
  std::uint32_t id = 0;
  std::string name;
  Addr base = 0;
  std::uint64_t size = 0;    ///< bytes requested by the program (the simulator applies rounding)
  bool managed = true;       ///< false: device-only (cudaMalloc) or host-pinned, see `host_pinned`
  bool host_pinned = false;  ///< non-managed host memory the GPU reads over the link
  /// System-allocated memory (malloc/mmap) on a platform whose GPU shares the CPU's page table
  /// (ATS: Grace Hopper). Pageable like managed memory (requires `managed`), but placed by first
  /// touch and read remotely where it lies; docs/platforms.md. Metadata key "system".
  bool system = false;
  bool operator==(const Allocation&) const = default;
};

struct KernelInfo {
  std::uint32_t id = 0;
  std::string name;
  Dim3 grid, block;
  std::uint32_t regs_per_thread = 0;   ///< 0 = unknown
  std::uint32_t shared_mem_bytes = 0;  ///< static + dynamic, 0 = unknown
  std::uint64_t threadblocks() const { return grid.count(); }
  std::uint32_t warps_per_block() const {
    return static_cast<std::uint32_t>((block.count() + 31) / 32);
  }
  bool operator==(const KernelInfo&) const = default;
};

struct Metadata {
  std::string workload;
  nlohmann::json params = nlohmann::json::object();  ///< generator / app parameters
  std::string captured_gpu;                          ///< empty for synthetic traces
  std::vector<Allocation> allocations;
  std::vector<KernelInfo> kernels;
  nlohmann::json extra = nlohmann::json::object();  ///< free-form (collector info, ...)
  /// Static access hints (docs/hints.md), metadata key "hints"; absent in older traces.
  std::optional<Hints> hints;

  nlohmann::json to_json() const;
  /// Throws UserError naming `where` and the offending field.
  static Metadata from_json(const nlohmann::json& j, const std::string& where);
  std::uint64_t managed_footprint() const;  ///< sum of managed allocation sizes (as requested)
  const KernelInfo* find_kernel(std::uint32_t id) const;      ///< nullptr if no kernel has that id
  const Allocation* find_allocation(std::uint32_t id) const;  ///< nullptr if none has that id
};

enum class HostEventType : std::uint8_t {
  KernelLaunch = 0,
  MemPrefetch = 1,  ///< cudaMemPrefetchAsync
  MemAdvise = 2,    ///< cudaMemAdvise
  Synchronize = 3,  ///< cudaDeviceSynchronize / stream sync
  CpuAccess = 4,    ///< the CPU reads/writes a managed range
  MemFree = 5,      ///< cudaFree of the allocation at `va` (format version 2)
  /// cudaSetDevice: later kernel launches run on GPU `device` (format version 3). Launches
  /// before the first one run on GPU 0.
  SetDevice = 6,
};

enum class Advice : std::uint8_t {
  SetPreferredLocation = 0,
  UnsetPreferredLocation = 1,
  SetAccessedBy = 2,
  UnsetAccessedBy = 3,
  SetReadMostly = 4,
  UnsetReadMostly = 5,
};

const char* to_string(HostEventType t);
const char* to_string(Advice a);

/// One event of the host-side program-order stream. Fields not used by a type stay default.
struct HostEvent {
  HostEventType type = HostEventType::Synchronize;
  // KernelLaunch
  std::uint32_t kernel_id = 0;
  std::uint32_t launch_index = 0;  ///< assigned by the writer: 0, 1, 2, ... in program order
  std::int32_t iteration = -1;     ///< host-loop iteration index, -1 if not in a loop
  // MemPrefetch / MemAdvise / CpuAccess; MemFree: the allocation's base address
  Addr va = 0;
  std::uint64_t size = 0;
  /// MemPrefetch destination / MemAdvise target (the CPU or a GPU); SetDevice: the GPU
  Processor device = Processor::Gpu;
  Advice advice = Advice::SetPreferredLocation;
  AccessKind kind = AccessKind::Read;  ///< CpuAccess
  bool operator==(const HostEvent&) const = default;
};

/// One warp memory access (or `repeat` consecutive identical accesses to the same page).
struct AccessRecord {
  Addr va = 0;
  std::uint32_t ref_id = 0;      ///< static instruction / PC id
  std::uint32_t gap_cycles = 0;  ///< issue slots of non-memory work since the previous access
  std::uint32_t repeat = 1;      ///< >= 1; repeats are `gap_cycles` apart
  std::uint32_t bytes = 4;
  AccessKind kind = AccessKind::Read;
  bool operator==(const AccessRecord&) const = default;
};

/// Totals kept in the index so `trace info` and the simulator need not decode everything.
struct LaunchSummary {
  std::uint32_t launch_index = 0;
  std::uint32_t kernel_id = 0;
  std::uint64_t threadblocks = 0;
  std::uint64_t records = 0;
  std::uint64_t accesses = 0;  ///< records expanded by repeat counts
};

struct ChunkInfo {
  enum Type : std::uint8_t { Host = 0, Blocks = 1 } type = Host;
  std::uint32_t launch_index = 0;  ///< Blocks only
  std::uint64_t first = 0;         ///< first threadblock (Blocks) or host event (Host) index
  std::uint64_t count = 0;
  std::uint64_t offset = 0;
  std::uint64_t compressed_bytes = 0;
  std::uint64_t raw_bytes = 0;
  std::uint32_t crc = 0;
};

/// A decompressed chunk (huge-page advised; see core/huge_page_allocator.h).
using ChunkBuffer = HugePageBytes;

struct WriterOptions {
  std::size_t chunk_raw_bytes = 1 << 20;  ///< target uncompressed chunk size
  int zstd_level = 3;
  bool fold_repeats = true;  ///< fold identical consecutive same-page accesses of a warp
  /// Mark every managed allocation as system-allocated (`uvmsim gen --param alloc=system`).
  bool system_allocations = false;
};

/// Writes a .uvt file. Usage: construct, then in program order call host events and
/// begin_launch/begin_block/access/end_block..., then finish(). Threadblocks of a launch must be
/// written in id order 0..N-1, and all of them before the next host event.
class TraceWriter {
 public:
  TraceWriter(const std::filesystem::path& path, const Metadata& meta, WriterOptions opts = {});
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void host_event(const HostEvent& ev);  ///< any type but KernelLaunch
  /// Appends a KernelLaunch host event and returns its launch index.
  std::uint32_t begin_launch(std::uint32_t kernel_id, std::int32_t iteration = -1);
  void begin_block(std::uint32_t num_warps);  ///< next threadblock of the current launch
  void access(std::uint32_t warp, const AccessRecord& rec);
  void end_block();
  void finish();  ///< writes the index and footer; the destructor calls it if needed

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Sequential decoder over one warp's records, pointing into a decoded chunk. No allocation.
class WarpStream {
 public:
  WarpStream() = default;
  WarpStream(const std::uint8_t* begin, const std::uint8_t* end, std::uint32_t records)
      : pos_(begin), end_(end), remaining_(records), total_(records) {}
  /// As above; `va_base` is the VA the first record's delta is relative to (the threadblock's
  /// base, see ThreadblockView::va_base) and `source` (the trace file name, must outlive the
  /// stream) prefixes error messages.
  WarpStream(const std::uint8_t* begin, const std::uint8_t* end, std::uint32_t records,
             Addr va_base, const std::string* source)
      : pos_(begin),
        end_(end),
        remaining_(records),
        prev_va_(va_base),
        total_(records),
        source_(source) {}
  /// The first of a warp's segments (a paged threadblock, LaunchStream's decoded-bytes budget):
  /// [begin, end) holds `records` of the warp's `total` records; resume() continues with the
  /// next segment, the decoder's state (previous VA, ref, byte count) carried over.
  WarpStream(const std::uint8_t* begin, const std::uint8_t* end, std::uint32_t records,
             std::uint32_t total, Addr va_base, const std::string* source)
      : pos_(begin),
        end_(end),
        remaining_(records),
        later_(total - records),
        prev_va_(va_base),
        total_(total),
        source_(source) {}
  /// No record is left in this segment or any later one.
  bool done() const { return remaining_ == 0 && later_ == 0; }
  /// Records left in the current segment (the whole warp unless it is paged).
  std::uint32_t remaining() const { return remaining_; }
  /// next() returned false at the end of a segment that is not the warp's last: the owner of
  /// the segments (ThreadblockView::next_segment) must resume() the stream with the next one.
  bool has_more() const { return later_ != 0; }
  /// Continues with the next segment, [begin, end) holding its `records` records.
  void resume(const std::uint8_t* begin, const std::uint8_t* end, std::uint32_t records) {
    pos_ = begin;
    end_ = end;
    remaining_ = records;
    later_ -= records;
  }
  /// Records decoded so far, over all segments.
  std::uint32_t consumed() const { return total_ - later_ - remaining_; }
  /// Decodes the next record; returns false at the end. Throws UserError on malformed data.
  bool next(AccessRecord& out);
  /// Where the next record's bytes are: a caller about to run this warp soon can prefetch them
  /// (a warp's records are read only when it wakes, long after its line left the caches).
  const std::uint8_t* position() const { return pos_; }

 private:
  const std::uint8_t* pos_ = nullptr;
  const std::uint8_t* end_ = nullptr;
  std::uint32_t remaining_ = 0;
  std::uint32_t later_ = 0;  // records in the segments after the current one (paged warps)
  Addr prev_va_ = 0;
  std::uint32_t prev_ref_ = 0;
  std::uint32_t prev_bytes_ = 4;  // records omit `bytes` when it equals the previous record's
  std::uint32_t total_ = 0;       // for error messages ("record 3 of 32")
  const std::string* source_ = nullptr;
  // Static, taking the fields it reports by value: a member function would let `this` escape
  // from next(), and a decoder loop over a local copy of the stream could then not keep the
  // stream's fields in registers (docs/speed-history.md, "Decoding: the chunk CRC and the decoder's
  // registers").
  [[noreturn]] static void fail(const std::string* source, std::uint32_t index, std::uint32_t total,
                                const char* what, std::uint64_t value = ~std::uint64_t{0});
  [[noreturn]] void fail(const char* what, std::uint64_t value = ~std::uint64_t{0}) const {
    fail(source_, consumed(), total_, what, value);
  }
};

struct PagedChunk;

/// A decoded threadblock. Valid until released back to its LaunchStream.
struct ThreadblockView {
  std::uint64_t tb_id = 0;
  std::uint32_t num_warps = 0;
  std::uint32_t slot = 0;                     ///< internal: which decoded chunk holds it
  const std::uint8_t* warps_begin = nullptr;  ///< internal
  const std::uint8_t* warps_end = nullptr;    ///< internal
  const std::string* source = nullptr;        ///< internal: file name for error messages
  Addr va_base = 0;  ///< internal: every warp's first VA delta is relative to this
  /// internal: set when the LaunchStream holds this threadblock paged (its decoded-bytes budget
  /// was reached): its warps' records are kept re-compressed in segments, decoded one segment
  /// per warp at a time, and warps_begin/warps_end are null.
  PagedChunk* paged = nullptr;
  std::uint32_t paged_tb = 0;  ///< internal: the threadblock's index in `paged`
  /// Streams for all warps, in warp order. Fills `out` (resized; reuse it to avoid allocation).
  /// Of a paged threadblock, each stream covers its warp's first segment: when next() returns
  /// false and has_more() is true, next_segment() continues it.
  void warp_streams(std::vector<WarpStream>& out) const;
  /// Decodes warp `warp`'s next segment and resumes `ws` (that warp's stream) on it.
  void next_segment(std::uint32_t warp, WarpStream& ws) const;
};

class TraceReader;

/// When a LaunchStream checks the records of a chunk it loads.
enum class RecordCheck : std::uint8_t {
  /// Every record is checked as its chunk loads (errors come in the order the Python reader
  /// reports them), and the chunks' access totals against the index's. Each record is then
  /// read twice: skimmed at load, decoded by WarpStream::next when its warp runs.
  AtLoad,
  /// A chunk's structure and record counts are checked as it loads; each record is checked by
  /// WarpStream::next when it is decoded (same rules, same one-line errors, so nothing malformed
  /// gets through), and the caller checks the launch's access total (LaunchSummary::accesses)
  /// once it has decoded every record. The simulator's path: one pass over the records.
  WhenDecoded,
};

/// Streams the threadblocks of one launch in id order, decoding a chunk only when the first of
/// its threadblocks is requested, and freeing it when all of its threadblocks are released, so
/// memory is bounded by the threadblocks in flight.
class LaunchStream {
 public:
  /// No budget: every chunk is held decoded until its threadblocks are released.
  static constexpr std::uint64_t kNoBudget = ~std::uint64_t{0};
  /// `decoded_budget`: decoded chunk bytes the stream holds at once. A chunk that would take it
  /// past the budget is held paged instead, if its records compress at least 4x (else whole):
  /// its warps' records re-compressed in segments of kPageSegmentBytes, decoded one segment
  /// per warp as the warp reads it. The records and
  /// errors are the same; memory is then bounded by the compressed records plus one segment
  /// per warp, not by the decoded launch (a kernel whose long threadblocks are all resident
  /// at once, e.g. mvt at GB footprints; docs/trace-format.md, "Reading: memory and streaming").
  LaunchStream(TraceReader& reader, std::uint32_t launch_index,
               RecordCheck check = RecordCheck::AtLoad, std::uint64_t decoded_budget = kNoBudget);
  ~LaunchStream();
  LaunchStream(LaunchStream&&) noexcept;
  std::uint64_t threadblocks() const;
  /// Next threadblock in id order; false when all have been handed out.
  bool next(ThreadblockView& out);
  void release(const ThreadblockView& tb);
  std::size_t decoded_chunks() const;  ///< chunks currently held in memory (paged or not)
  std::size_t paged_chunks() const;    ///< of those, the chunks held paged
  std::uint64_t held_bytes() const;    ///< bytes the held chunks take (buffers' sizes)
  /// Decoded bytes per segment of a paged warp (a segment ends at the first record boundary
  /// at or past it).
  static constexpr std::size_t kPageSegmentBytes = 16 * 1024;
  /// With RecordCheck::WhenDecoded: the caller, having decoded every record of the launch,
  /// passes the accesses they expand to (repeats included); a total other than the index's is
  /// the error RecordCheck::AtLoad reports at the last chunk ("index: launch N: ...").
  void check_accesses(std::uint64_t decoded) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Opens and validates a .uvt file (header CRC, footer, index CRC; chunks when loaded).
/// Every problem is a UserError "<file>: <field>: <message>".
class TraceReader {
 public:
  explicit TraceReader(const std::filesystem::path& path);
  ~TraceReader();

  const std::filesystem::path& path() const;
  const std::string& display_name() const;  ///< path as text; prefixes every error message
  std::uint32_t version() const;
  const Metadata& metadata() const;
  const std::vector<ChunkInfo>& chunks() const;
  const std::vector<LaunchSummary>& launches() const;
  std::uint64_t host_event_count() const;
  std::uint64_t file_bytes() const;

  /// Host events in program order (decodes host chunks lazily). Call rewind_host() to restart.
  bool next_host_event(HostEvent& out);
  void rewind_host();

  LaunchStream launch(std::uint32_t launch_index, RecordCheck check = RecordCheck::AtLoad,
                      std::uint64_t decoded_budget = LaunchStream::kNoBudget);
  /// Indices into chunks() of the Blocks chunks of a launch, in threadblock order.
  const std::vector<std::size_t>& launch_chunks(std::uint32_t launch_index) const;

  /// Reads, checks (zstd content checksum; the chunk CRC when zstd cannot vouch for the chunk)
  /// and decompresses chunk `i` into `out` (reusing its capacity).
  void load_chunk(std::size_t i, ChunkBuffer& out);
  /// A decoded-chunk buffer a finished LaunchStream handed back (empty if none): the next
  /// launch's streams decode into memory the process has already touched.
  ChunkBuffer spare_buffer();
  void recycle_buffer(ChunkBuffer&& b);
  /// Frees the spare buffers (a finished stream drops those it did not take before handing
  /// back its own).
  void drop_spare_buffers();
  std::size_t spare_buffers() const;  ///< how many the reader holds (for tests)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The record decoder is inline: it runs once per access record, in the simulator's warp loop
// and in every trace tool. Inlining it and unrolling the short varints (get_short_varint) took
// BM_WarpStreamOnly on `random` from 2.32 to 1.55 ms. Only its error path, fail(), is out of line.
inline bool WarpStream::next(AccessRecord& out) {
  using namespace codec;
  if (remaining_ == 0) return false;
  const std::uint8_t* p = pos_;
  if (p == end_) fail("runs past the end of the warp's data");
  const std::uint8_t flags = *p++;
  const std::uint8_t kind = flags & kKindMask;
  if (kind > static_cast<std::uint8_t>(AccessKind::Atomic)) fail("unknown access kind", kind);

  // One- to four-byte varints are by far the most common (get_short_varint).
  std::uint64_t v;
  auto read = [&](const char* what) {
    p = get_short_varint(p, end_, v);
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
  if ((flags & (kHasRef | kHasBytes | kHasGap | kHasRepeat)) == 0) {
    // The common record (31 of 32 in a page-touch warp): every field as the previous record's,
    // no gap, one access. One test instead of four, and prev_bytes_ is never 0 (it starts at 4
    // and only takes checked values), so the zero-byte check is not needed either.
    out.ref_id = prev_ref_;
    out.bytes = prev_bytes_;
    out.gap_cycles = 0;
    out.repeat = 1;
  } else {
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
  }
  out.kind = static_cast<AccessKind>(kind);
  prev_va_ = out.va;
  prev_ref_ = out.ref_id;
  prev_bytes_ = out.bytes;
  pos_ = p;
  if (--remaining_ == 0 && pos_ != end_) fail("trailing bytes after the warp's last record");
  return true;
}

}  // namespace uvmsim::trace
