// TraceWriter: buffers host events and threadblocks into chunks, compresses each chunk as one zstd
// frame, and finishes the file with the index and footer (layout: docs/trace-format.md).
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "core/error.h"
#include "traces/trace.h"
#include "traces/trace_codec.h"

namespace uvmsim::trace {

using namespace codec;

namespace {

std::atomic<bool> g_background_compression{true};

}  // namespace

void codec::set_background_compression(bool on) { g_background_compression = on; }
bool codec::background_compression() { return g_background_compression; }

namespace {

[[noreturn]] void misuse(const std::string& msg) { throw std::logic_error("TraceWriter: " + msg); }

bool valid_kind(AccessKind k) { return static_cast<std::uint8_t>(k) <= 3; }

/// One warp of the threadblock being written. Records are encoded as they come, so a warp costs
/// a few bytes per record rather than a buffered AccessRecord each (gemm's warps have 2N records).
/// Two records wait: the first, whose VA delta is relative to the threadblock's VA base (the
/// first VA of its first non-empty warp), known only at end_block; and the last, into which a
/// same-page repeat may still fold. Every record in between depends only on its predecessor.
struct WarpState {
  AccessRecord first;
  AccessRecord last;
  std::uint32_t records = 0;  ///< including `first` and `last`
  RecordEncoder enc;          ///< state after the last record in `bytes`
  std::vector<std::uint8_t> bytes;
  std::size_t used = 0;  ///< bytes[0, used) hold records 2 .. records-1

  void reset() {
    records = 0;
    used = 0;
  }
  /// Moves `last` out of the foldable position: into `first` or into the encoded bytes.
  void commit_last() {
    if (records == 1) {
      first = last;
      enc.prev_va = first.va;
      enc.prev_ref = first.ref_id;
      enc.prev_bytes = first.bytes;
      return;
    }
    if (bytes.size() < used + kMaxRecordBytes) bytes.resize(2 * bytes.size() + kMaxRecordBytes);
    used = static_cast<std::size_t>(enc.encode(last, bytes.data() + used) - bytes.data());
  }
};

/// One chunk handed to the compression thread.
struct ChunkJob {
  ChunkInfo::Type type = ChunkInfo::Host;
  std::uint32_t launch = 0;
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::vector<std::uint8_t> raw;
};

}  // namespace

struct TraceWriter::Impl {
  std::filesystem::path path;
  std::string name;  // path as text, for error messages
  std::ofstream file;
  WriterOptions opts;
  std::unordered_map<std::uint32_t, KernelInfo> kernels;
  ZSTD_CCtx* cctx = nullptr;
  std::uint64_t offset = 0;  // bytes written so far
  std::vector<ChunkInfo> chunks;
  std::vector<LaunchSummary> launches;
  std::vector<std::uint8_t> compressed;
  bool finished = false;
  int exceptions_at_start = 0;
  /// The lowest version that holds what was written so far; the header says version 1 until
  /// finish() rewrites it (and its CRC) for a trace that needs more.
  std::uint32_t version = kMinFormatVersion;
  std::vector<std::uint8_t> header;

  // Host events not yet flushed.
  std::vector<std::uint8_t> host_buf;
  std::uint64_t host_total = 0;
  std::uint64_t host_chunk_first = 0;

  // Current launch.
  bool in_launch = false;
  std::uint32_t warps_per_block = 0;
  std::uint64_t tb_total = 0;
  std::uint64_t next_tb = 0;
  std::vector<std::uint8_t> block_buf;
  std::uint64_t block_chunk_first = 0;

  // Current threadblock.
  bool in_block = false;
  std::uint32_t num_warps = 0;
  std::vector<WarpState> warps;

  // Background compression (codec::set_background_compression). Compressing is a third of
  // the time of writing a generated trace; a second thread overlaps it with the generation.
  // Chunks are compressed and written in the order they were handed over, each with the same
  // parameters, so the file is byte-identical to a synchronous write. At most one chunk waits
  // while another is compressed, which bounds memory to three raw chunks.
  bool background = true;
  std::thread worker;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<ChunkJob> queue;                     // guarded by mu
  std::vector<std::vector<std::uint8_t>> spares;  // emptied raw buffers; guarded by mu
  bool busy = false;                              // the worker holds a job; guarded by mu
  bool stop = false;                              // guarded by mu
  std::exception_ptr error;                       // the worker's failure; guarded by mu

  ~Impl() {
    stop_worker();
    if (cctx != nullptr) ZSTD_freeCCtx(cctx);
  }

  void stop_worker() {
    if (!worker.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    worker.join();
  }

  void worker_loop() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty() || error) {
        if (stop) return;
        queue.clear();  // after a failure nothing more is written
        cv.notify_all();
        continue;
      }
      ChunkJob job = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      cv.notify_all();
      std::exception_ptr failed;
      try {
        compress_and_write(job.type, job.launch, job.first, job.count, job.raw);
      } catch (...) {
        failed = std::current_exception();
      }
      job.raw.clear();
      lock.lock();
      busy = false;
      if (failed && !error) error = failed;
      spares.push_back(std::move(job.raw));
      cv.notify_all();
    }
  }

  /// Rethrows the worker's failure (on the caller's thread, where the writer's user sees it).
  void rethrow_locked() {
    if (error) std::rethrow_exception(error);
  }

  /// Waits until every handed-over chunk is written.
  void drain() {
    if (!worker.joinable()) return;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return (queue.empty() && !busy) || error; });
    rethrow_locked();
  }

  void write_raw(const void* data, std::size_t n) {
    file.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    if (!file) {
      throw UserError(name, "write", std::string("cannot write: ") + std::strerror(errno));
    }
    offset += n;
  }

  void compress_and_write(ChunkInfo::Type type, std::uint32_t launch, std::uint64_t first,
                          std::uint64_t count, const std::vector<std::uint8_t>& raw) {
    compressed.resize(ZSTD_compressBound(raw.size()));
    const std::size_t n =
        ZSTD_compress2(cctx, compressed.data(), compressed.size(), raw.data(), raw.size());
    if (ZSTD_isError(n)) {
      throw std::runtime_error(std::string("TraceWriter: zstd: ") + ZSTD_getErrorName(n));
    }
    ChunkInfo c;
    c.type = type;
    c.launch_index = launch;
    c.first = first;
    c.count = count;
    c.offset = offset;
    c.compressed_bytes = n;
    c.raw_bytes = raw.size();
    c.crc = crc32(compressed.data(), n);
    write_raw(compressed.data(), n);
    chunks.push_back(c);
  }

  /// Compresses and writes `raw` as the next chunk, or hands it to the compression thread; either
  /// way `raw` is left empty (with capacity) for the caller to refill.
  void write_chunk(ChunkInfo::Type type, std::uint32_t launch, std::uint64_t first,
                   std::uint64_t count, std::vector<std::uint8_t>& raw) {
    if (!background) {
      compress_and_write(type, launch, first, count, raw);
      raw.clear();
      return;
    }
    if (!worker.joinable()) worker = std::thread([this] { worker_loop(); });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return queue.empty() || error; });
    rethrow_locked();
    queue.push_back(ChunkJob{type, launch, first, count, std::move(raw)});
    raw.clear();
    if (!spares.empty()) {
      raw.swap(spares.back());
      spares.pop_back();
    }
    lock.unlock();
    cv.notify_all();
  }

  void flush_host() {
    if (host_buf.empty()) return;
    write_chunk(ChunkInfo::Host, 0, host_chunk_first, host_total - host_chunk_first, host_buf);
    host_chunk_first = host_total;
  }

  void flush_blocks() {
    if (block_buf.empty()) return;
    write_chunk(ChunkInfo::Blocks, launches.back().launch_index, block_chunk_first,
                next_tb - block_chunk_first, block_buf);
    block_chunk_first = next_tb;
  }

  void add_host(const HostEvent& ev) {
    if (ev.type == HostEventType::MemFree) version = std::max(version, kMemFreeVersion);
    const bool names_device =
        ev.type == HostEventType::MemPrefetch || ev.type == HostEventType::MemAdvise;
    if (ev.type == HostEventType::SetDevice ||
        (names_device && is_gpu(ev.device) && ev.device != Processor::Gpu))
      version = std::max(version, kDeviceVersion);
    encode_host_event(ev, host_buf);
    ++host_total;
    if (host_buf.size() >= opts.chunk_raw_bytes) flush_host();
  }

  void require_no_open_launch(const char* what) const {
    if (in_launch) {
      misuse(std::string(what) + " while launch " + std::to_string(launches.back().launch_index) +
             " has only " + std::to_string(next_tb) + " of its " + std::to_string(tb_total) +
             " threadblocks written");
    }
  }
};

TraceWriter::TraceWriter(const std::filesystem::path& path, const Metadata& meta,
                         WriterOptions opts)
    : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.path = path;
  w.name = path.string();
  w.opts = opts;
  w.exceptions_at_start = std::uncaught_exceptions();
  w.background = background_compression();
  if (opts.zstd_level < ZSTD_minCLevel() || opts.zstd_level > ZSTD_maxCLevel()) {
    misuse("zstd level " + std::to_string(opts.zstd_level) + " out of range");
  }
  if (w.opts.chunk_raw_bytes == 0) w.opts.chunk_raw_bytes = 1;

  // Round-trip the metadata through the reader's validation so that the writer can never produce
  // a file its own reader rejects; invalid metadata is a bug in the caller.
  nlohmann::json mj = meta.to_json();
  if (opts.system_allocations) {
    for (auto& a : mj["allocations"])
      if (a["managed"].get<bool>()) a["system"] = true;
  }
  try {
    (void)Metadata::from_json(mj, w.name);
  } catch (const UserError& e) {
    misuse(std::string("invalid metadata: ") + e.what());
  }
  for (const auto& k : meta.kernels) w.kernels.emplace(k.id, k);

  w.cctx = ZSTD_createCCtx();
  if (w.cctx == nullptr) throw std::bad_alloc();
  ZSTD_CCtx_setParameter(w.cctx, ZSTD_c_compressionLevel, opts.zstd_level);
  ZSTD_CCtx_setParameter(w.cctx, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(w.cctx, ZSTD_c_contentSizeFlag, 1);

  w.file.open(path, std::ios::binary | std::ios::trunc);
  if (!w.file) {
    throw UserError(w.name, "open", std::string("cannot create file: ") + std::strerror(errno));
  }
  const std::string text = mj.dump();
  std::vector<std::uint8_t>& header = w.header;
  put_bytes(header, kHeaderMagic, sizeof kHeaderMagic);
  put_u32(header, w.version);
  put_u32(header, 0);  // flags
  put_u64(header, text.size());
  put_bytes(header, text.data(), text.size());
  put_u32(header, crc32(header.data(), header.size()));
  w.write_raw(header.data(), header.size());
}

TraceWriter::~TraceWriter() {
  // Finish a file that was completely written but not explicitly finished. If the writer is being
  // destroyed by an exception, or a launch is incomplete, leave the footer out on purpose: the
  // reader then reports the file as truncated instead of accepting a partial trace.
  if (!impl_ || impl_->finished) return;
  if (std::uncaught_exceptions() > impl_->exceptions_at_start || impl_->in_launch) return;
  try {
    finish();
  } catch (...) {
    // A destructor must not throw; the missing footer marks the file as unusable.
  }
}

void TraceWriter::host_event(const HostEvent& ev) {
  Impl& w = *impl_;
  if (w.finished) misuse("host_event after finish");
  if (ev.type == HostEventType::KernelLaunch) misuse("use begin_launch for kernel launches");
  if (static_cast<std::uint8_t>(ev.type) > static_cast<std::uint8_t>(HostEventType::SetDevice) ||
      static_cast<std::uint8_t>(ev.advice) > static_cast<std::uint8_t>(Advice::UnsetReadMostly) ||
      !valid_kind(ev.kind) ||
      (ev.device != Processor::Cpu && (!is_gpu(ev.device) || gpu_ordinal(ev.device) >= kMaxGpus))) {
    misuse("host event with an out-of-range enum value");
  }
  if (ev.type == HostEventType::SetDevice && !is_gpu(ev.device))
    misuse("SetDevice to the CPU (kernels run on a GPU)");
  w.require_no_open_launch("host_event");
  w.add_host(ev);
}

std::uint32_t TraceWriter::begin_launch(std::uint32_t kernel_id, std::int32_t iteration) {
  Impl& w = *impl_;
  if (w.finished) misuse("begin_launch after finish");
  w.require_no_open_launch("begin_launch");
  const auto it = w.kernels.find(kernel_id);
  if (it == w.kernels.end())
    misuse("begin_launch of unknown kernel id " + std::to_string(kernel_id));
  if (iteration < -1) misuse("begin_launch iteration " + std::to_string(iteration) + " < -1");
  const auto index = static_cast<std::uint32_t>(w.launches.size());
  HostEvent ev;
  ev.type = HostEventType::KernelLaunch;
  ev.kernel_id = kernel_id;
  ev.launch_index = index;
  ev.iteration = iteration;
  w.add_host(ev);
  w.launches.push_back(LaunchSummary{index, kernel_id, 0, 0, 0});
  w.in_launch = true;
  w.warps_per_block = it->second.warps_per_block();
  w.tb_total = it->second.threadblocks();
  w.next_tb = 0;
  w.block_chunk_first = 0;
  return index;
}

void TraceWriter::begin_block(std::uint32_t num_warps) {
  Impl& w = *impl_;
  if (!w.in_launch) misuse("begin_block outside a launch");
  if (w.in_block) misuse("begin_block inside a threadblock (missing end_block)");
  if (num_warps != w.warps_per_block) {
    misuse("begin_block with " + std::to_string(num_warps) + " warps; the kernel's block has " +
           std::to_string(w.warps_per_block));
  }
  w.in_block = true;
  w.num_warps = num_warps;
  if (w.warps.size() < num_warps) w.warps.resize(num_warps);
  for (std::uint32_t i = 0; i < num_warps; ++i) w.warps[i].reset();
}

void TraceWriter::access(std::uint32_t warp, const AccessRecord& rec) {
  Impl& w = *impl_;
  if (!w.in_block) misuse("access outside a threadblock");
  if (warp >= w.num_warps) {
    misuse("access by warp " + std::to_string(warp) + " of a " + std::to_string(w.num_warps) +
           "-warp threadblock");
  }
  if (rec.repeat == 0) misuse("access with repeat 0");
  if (rec.bytes == 0) misuse("access of 0 bytes");
  if (!valid_kind(rec.kind)) misuse("access with an out-of-range kind");
  LaunchSummary& launch = w.launches.back();
  launch.accesses += rec.repeat;
  WarpState& s = w.warps[warp];
  if (s.records > 0) {
    AccessRecord& p = s.last;
    if (w.opts.fold_repeats && (p.va >> kPageShift) == (rec.va >> kPageShift) &&
        p.kind == rec.kind && p.bytes == rec.bytes && p.ref_id == rec.ref_id &&
        p.gap_cycles == rec.gap_cycles && p.repeat <= 0xffffffffu - rec.repeat) {
      p.repeat += rec.repeat;  // keeps the first VA: the page is what the simulator needs
      return;
    }
    if (s.records == 0xffffffffu) misuse("more than 2^32-1 records in one warp");
    s.commit_last();
  }
  s.last = rec;
  ++s.records;
}

void TraceWriter::end_block() {
  Impl& w = *impl_;
  if (!w.in_block) misuse("end_block without begin_block");
  LaunchSummary& launch = w.launches.back();
  for (std::uint32_t i = 0; i < w.num_warps; ++i) {
    if (w.warps[i].records > 0) w.warps[i].commit_last();
  }
  // Each warp's VA deltas start from a per-threadblock base rather than 0, so that a warp with
  // few records (e.g. one coalesced access per array) does not pay for a full 47-bit address.
  Addr va_base = 0;
  for (std::uint32_t i = 0; i < w.num_warps; ++i) {
    if (w.warps[i].records > 0) {
      va_base = w.warps[i].first.va;
      break;
    }
  }
  put_varint(w.block_buf, w.next_tb);
  put_varint(w.block_buf, w.num_warps);
  put_varint(w.block_buf, va_base);
  for (std::uint32_t i = 0; i < w.num_warps; ++i) {
    const WarpState& s = w.warps[i];
    std::uint8_t head[kMaxRecordBytes];
    std::size_t head_len = 0;
    if (s.records > 0) {
      RecordEncoder enc;
      enc.prev_va = va_base;
      head_len = static_cast<std::size_t>(enc.encode(s.first, head) - head);
    }
    put_varint(w.block_buf, s.records);
    put_varint(w.block_buf, head_len + s.used);
    put_bytes(w.block_buf, head, head_len);
    put_bytes(w.block_buf, s.bytes.data(), s.used);
    launch.records += s.records;
  }
  w.in_block = false;
  ++w.next_tb;
  ++launch.threadblocks;
  if (w.block_buf.size() >= w.opts.chunk_raw_bytes) w.flush_blocks();
  if (w.next_tb == w.tb_total) {
    // The launch is complete: its last chunk is written now so that chunks never mix launches.
    w.flush_blocks();
    w.in_launch = false;
  }
}

void TraceWriter::finish() {
  Impl& w = *impl_;
  if (w.finished) return;
  if (w.in_block) misuse("finish inside a threadblock");
  w.require_no_open_launch("finish");
  w.flush_host();
  w.drain();
  w.stop_worker();

  std::vector<std::uint8_t> index;
  put_u64(index, w.host_total);
  put_u64(index, w.chunks.size());
  for (const ChunkInfo& c : w.chunks) {
    put_u8(index, c.type);
    put_u32(index, c.launch_index);
    put_u64(index, c.first);
    put_u64(index, c.count);
    put_u64(index, c.offset);
    put_u64(index, c.compressed_bytes);
    put_u64(index, c.raw_bytes);
    put_u32(index, c.crc);
  }
  put_u64(index, w.launches.size());
  for (const LaunchSummary& l : w.launches) {
    put_u32(index, l.launch_index);
    put_u32(index, l.kernel_id);
    put_u64(index, l.threadblocks);
    put_u64(index, l.records);
    put_u64(index, l.accesses);
  }
  const std::uint64_t index_offset = w.offset;
  w.write_raw(index.data(), index.size());

  std::vector<std::uint8_t> footer;
  put_u64(footer, index_offset);
  put_u64(footer, index.size());
  put_u32(footer, crc32(index.data(), index.size()));
  put_bytes(footer, kFooterMagic, sizeof kFooterMagic);
  w.write_raw(footer.data(), footer.size());
  if (w.version != kMinFormatVersion) {
    // A MemFree needs version 2, a second GPU version 3: rewrite the version and the header's
    // CRC in place, so that traces without them stay readable by builds that know version 1.
    std::vector<std::uint8_t>& h = w.header;
    h.resize(h.size() - 4);
    for (int i = 0; i < 4; ++i) h[8 + i] = static_cast<std::uint8_t>(w.version >> (8 * i));
    put_u32(h, crc32(h.data(), h.size()));
    w.file.seekp(0);
    w.file.write(reinterpret_cast<const char*>(h.data()), static_cast<std::streamsize>(h.size()));
    if (!w.file)
      throw UserError(w.name, "write", std::string("cannot write: ") + std::strerror(errno));
  }
  w.file.close();
  if (!w.file) throw UserError(w.name, "write", "cannot close file");
  w.finished = true;
}

}  // namespace uvmsim::trace
