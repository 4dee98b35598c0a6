// LaunchStream: hands out the threadblocks of one launch in order while holding only the decoded
// chunks that still have threadblocks in flight. Decoded chunks live in slots whose buffers are
// recycled, so once the simulation reaches a steady state no chunk load allocates.
#include <zstd.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "traces/trace.h"
#include "traces/trace_codec.h"

namespace uvmsim::trace {

/// A chunk held paged: every warp's records cut into segments of about
/// LaunchStream::kPageSegmentBytes at record boundaries, each segment zstd-compressed into
/// `packed`, and one decoded segment per warp in `windows`. A kernel whose threadblocks are all
/// resident and loop long (mvt's row-wise kernel at 4 GB: 128 threadblocks of ~18 MB of records
/// each) would otherwise hold its whole launch decoded; paged, it holds the records compressed
/// (mvt: ~400x smaller) plus 16 KB per warp.
struct PagedChunk {
  struct Segment {
    std::size_t packed_at = 0;
    std::uint32_t packed_bytes = 0;
    std::uint32_t raw_bytes = 0;
    std::uint32_t records = 0;
  };
  struct WarpPages {
    std::uint32_t first_segment = 0;
    std::uint32_t next_segment = 0;  // the segment next_segment() decodes next
    std::uint32_t total_records = 0;
    std::size_t window_at = 0;  // its decoded segment's place in `windows`
  };
  std::vector<std::uint8_t> packed;
  std::vector<Segment> segments;
  std::vector<WarpPages> warps;
  std::vector<std::uint32_t> first_warp;  // per threadblock of the chunk
  std::vector<std::uint8_t> windows;
  ZSTD_DCtx* dctx = nullptr;  // the LaunchStream's

  std::size_t bytes() const { return packed.size() + windows.size(); }

  /// Decodes segment `si` into warp `w`'s window; returns the window.
  const std::uint8_t* decode(std::uint32_t si, const WarpPages& w) {
    const Segment& sg = segments[si];
    std::uint8_t* out = windows.data() + w.window_at;
    const std::size_t n =
        ZSTD_decompressDCtx(dctx, out, sg.raw_bytes, packed.data() + sg.packed_at, sg.packed_bytes);
    // The bytes were compressed by this process a moment ago: a failure is a bug, not bad input.
    if (ZSTD_isError(n) || n != sg.raw_bytes)
      throw std::logic_error("LaunchStream: a paged segment did not decode");
    return out;
  }
};

namespace codec {

void paged_warp_streams(const ThreadblockView& tb, std::vector<WarpStream>& out) {
  PagedChunk& pc = *tb.paged;
  out.resize(tb.num_warps);
  const std::uint32_t first = pc.first_warp[tb.paged_tb];
  for (std::uint32_t w = 0; w < tb.num_warps; ++w) {
    PagedChunk::WarpPages& wp = pc.warps[first + w];
    const PagedChunk::Segment& sg = pc.segments[wp.first_segment];
    const std::uint8_t* win = pc.decode(wp.first_segment, wp);
    wp.next_segment = wp.first_segment + 1;
    out[w] =
        WarpStream(win, win + sg.raw_bytes, sg.records, wp.total_records, tb.va_base, tb.source);
  }
}

void paged_next_segment(const ThreadblockView& tb, std::uint32_t warp, WarpStream& ws) {
  PagedChunk& pc = *tb.paged;
  PagedChunk::WarpPages& wp = pc.warps[pc.first_warp[tb.paged_tb] + warp];
  const std::uint32_t si = wp.next_segment++;
  const std::uint8_t* win = pc.decode(si, wp);
  ws.resume(win, win + pc.segments[si].raw_bytes, pc.segments[si].records);
}

}  // namespace codec

namespace {

struct Slot {
  ChunkBuffer buf;
  std::unique_ptr<PagedChunk> paged;  // kept (capacity and all) while the slot is recycled
  bool is_paged = false;
  std::vector<codec::TbEntry> tbs;
  std::vector<std::uint8_t> released;  // per threadblock of the chunk
  std::uint64_t first = 0;
  std::size_t handed = 0;       // threadblocks given out by next()
  std::size_t outstanding = 0;  // given out and not yet released
  bool live = false;
};

}  // namespace

struct LaunchStream::Impl {
  TraceReader* reader = nullptr;
  std::uint32_t launch = 0;
  const std::vector<std::size_t>* chunk_ids = nullptr;
  std::size_t next_chunk = 0;
  std::uint64_t next_tb = 0;
  std::uint64_t total = 0;
  std::uint32_t warps = 0;
  RecordCheck check = RecordCheck::AtLoad;
  // Records and accesses of the chunks loaded so far, checked against the index's totals.
  codec::ChunkTotals seen;
  // unique_ptr keeps a Slot's address stable when `slots` grows.
  std::vector<std::unique_ptr<Slot>> slots;
  std::vector<std::uint32_t> free_slots;
  std::uint32_t current = 0;
  bool has_current = false;
  std::size_t live = 0;
  std::size_t live_paged = 0;
  // Paging (the decoded-bytes budget): decoded bytes of the live chunks held whole, the
  // buffer a paged chunk is decoded into before it is packed, and the zstd contexts.
  std::uint64_t budget = LaunchStream::kNoBudget;
  std::uint64_t held_decoded = 0;
  ChunkBuffer scratch;
  std::vector<std::uint8_t> packing;  // one segment compressed, before it joins `packed`
  ZSTD_CCtx* cctx = nullptr;
  ZSTD_DCtx* dctx = nullptr;

  ~Impl() {
    ZSTD_freeCCtx(cctx);
    ZSTD_freeDCtx(dctx);
    // The next launch's stream decodes into these (the reader outlives its streams). Spares this
    // launch did not take, it did not need: they are freed, so between launches the reader
    // keeps what the last launch held at once, not the most any launch ever held (mvt 4 GB:
    // its row-wise kernel's 4.6 GB of chunks would otherwise stay through the column-wise one).
    if (reader == nullptr) return;  // the constructor threw before naming its reader
    reader->drop_spare_buffers();
    for (auto& s : slots) reader->recycle_buffer(std::move(s->buf));
    reader->recycle_buffer(std::move(scratch));
  }

  std::uint32_t acquire_slot() {
    if (!free_slots.empty()) {
      const std::uint32_t s = free_slots.back();
      free_slots.pop_back();
      return s;
    }
    slots.push_back(std::make_unique<Slot>());
    slots.back()->buf = reader->spare_buffer();
    return static_cast<std::uint32_t>(slots.size() - 1);
  }

  /// "the index says N <what>, its chunks hold <held>": check_totals and check_accesses.
  [[noreturn]] void fail(const char* what, std::uint64_t index, const std::string& held) const {
    throw UserError(reader->display_name(), "index: launch " + std::to_string(launch),
                    std::string("the index says ") + std::to_string(index) + " " + what +
                        ", its chunks hold " + held);
  }

  /// The index's per-launch totals are shown before any chunk is read (trace info) and size
  /// OPT's pre-pass: they must be what the chunks hold. Checked as each chunk loads, so a launch
  /// never yields more records than its index entry announced. Accesses only with
  /// RecordCheck::AtLoad (otherwise the caller checks them: counting them takes every record's
  /// repeat).
  void check_totals(const codec::ChunkTotals& chunk, bool last) {
    const bool accesses = check == RecordCheck::AtLoad;
    const LaunchSummary& l = reader->launches()[launch];
    if (chunk.records > l.records - seen.records) fail("records", l.records, "more");
    if (accesses && chunk.accesses > l.accesses - seen.accesses)
      fail("accesses", l.accesses, "more");
    seen.records += chunk.records;
    seen.accesses += chunk.accesses;
    if (last && seen.records != l.records) {
      fail("records", l.records, std::to_string(seen.records));
    }
    if (accesses && last && seen.accesses != l.accesses) {
      fail("accesses", l.accesses, std::to_string(seen.accesses));
    }
  }

  /// Calls f(records, begin, end) for every warp of the chunk decoded in `data` (its
  /// threadblocks in `tbs`, whose warp headers parse_block_chunk checked) and, before each
  /// threadblock's first warp, `on_tb()`. Stops when f returns false.
  template <class OnTb, class F>
  static void for_each_warp(const std::uint8_t* data, const std::vector<codec::TbEntry>& tbs,
                            OnTb on_tb, F f) {
    for (const codec::TbEntry& tb : tbs) {
      on_tb();
      const std::uint8_t* p = data + tb.begin;
      const std::uint8_t* const tb_end = data + tb.end;
      for (std::uint32_t w = 0; w < tb.num_warps; ++w) {
        std::uint64_t records = 0, len = 0;
        p = codec::get_varint(p, tb_end, records);
        p = codec::get_varint(p, tb_end, len);
        if (!f(records, p, p + len)) return;
        p += len;
      }
    }
  }

  /// Compresses [b, b + raw) into `packing`; returns the compressed size. Level 1: mvt's
  /// records compress ~400x in 16 KB segments at 2.5 GB/s, as well as at level 3 or 6 and faster.
  std::size_t compress(const std::uint8_t* b, std::size_t raw) {
    if (cctx == nullptr && (cctx = ZSTD_createCCtx()) == nullptr) throw std::bad_alloc();
    if (packing.size() < ZSTD_compressBound(raw)) packing.resize(ZSTD_compressBound(raw));
    const std::size_t n = ZSTD_compressCCtx(cctx, packing.data(), packing.size(), b, raw, 1);
    if (ZSTD_isError(n)) throw std::runtime_error("LaunchStream: packing a segment failed");
    return n;
  }

  /// Cuts every warp of the chunk decoded in `data` (its threadblocks in `tbs`) into segments
  /// at record boundaries and compresses them into `pc`. A segment ends at the first record
  /// boundary at or past kPageSegmentBytes; the last one holds the rest of the warp, and so
  /// does the segment where a record does not parse: WarpStream::next then reports it, at the
  /// same record index and with the same message as if the warp were not paged.
  void pack(const std::uint8_t* data, const std::vector<codec::TbEntry>& tbs, PagedChunk& pc) {
    if (dctx == nullptr && (dctx = ZSTD_createDCtx()) == nullptr) throw std::bad_alloc();
    pc.dctx = dctx;
    pc.packed.clear();
    pc.segments.clear();
    pc.warps.clear();
    pc.first_warp.clear();
    std::size_t windows = 0;
    auto add_segment = [&](const std::uint8_t* b, const std::uint8_t* e, std::uint32_t records) {
      const auto raw = static_cast<std::size_t>(e - b);
      // Compressed aside and appended: reserving the bound in `packed` itself would leave its
      // capacity at about twice the bound per segment (the records compress 300x or more, so
      // that capacity would be most of the chunk's memory).
      const std::size_t n = compress(b, raw);
      pc.segments.push_back({pc.packed.size(), static_cast<std::uint32_t>(n),
                             static_cast<std::uint32_t>(raw), records});
      pc.packed.insert(pc.packed.end(), packing.begin(),
                       packing.begin() + static_cast<std::ptrdiff_t>(n));
      return raw;
    };
    auto on_tb = [&] { pc.first_warp.push_back(static_cast<std::uint32_t>(pc.warps.size())); };
    for_each_warp(data, tbs, on_tb,
                  [&](std::uint64_t records, const std::uint8_t* p, const std::uint8_t* end) {
                    PagedChunk::WarpPages wp;
                    wp.first_segment = static_cast<std::uint32_t>(pc.segments.size());
                    wp.total_records = static_cast<std::uint32_t>(records);
                    std::size_t widest = 0;
                    const std::uint8_t* seg = p;
                    std::uint32_t done = 0, in_seg = 0;
                    std::uint64_t accesses = 0;
                    for (const std::uint8_t* q = p; done + in_seg < records;) {
                      q = codec::skim_record(q, end, accesses);
                      if (q == nullptr) break;  // malformed: the rest goes into the last segment
                      ++in_seg;
                      if (static_cast<std::size_t>(q - seg) >= LaunchStream::kPageSegmentBytes &&
                          done + in_seg < records) {
                        widest = std::max(widest, add_segment(seg, q, in_seg));
                        seg = q;
                        done += in_seg;
                        in_seg = 0;
                      }
                    }
                    widest = std::max(widest, add_segment(seg, end, wp.total_records - done));
                    wp.window_at = windows;
                    windows += widest;
                    pc.warps.push_back(wp);
                    return true;
                  });
    pc.windows.resize(windows);
    // What is held until the chunk's threadblocks are released: no spare capacity from growth.
    pc.packed.shrink_to_fit();
  }

  /// Whether paging the chunk saves memory: the first warp with a segment's worth of records
  /// must compress that segment at least kMinPagingRatio times. Records whose deltas change
  /// every step do not (mvt's column-wise kernel, which alternates between A and y: ~1.9x in
  /// 16 KB segments, compressed at ~100 MB/s), and paging them would cost time for little
  /// memory; mvt's row-wise kernel compresses ~400x. No such warp (short threadblocks): no.
  bool worth_paging(const std::uint8_t* data, const std::vector<codec::TbEntry>& tbs) {
    static constexpr std::size_t kMinPagingRatio = 4;
    constexpr std::size_t kSeg = LaunchStream::kPageSegmentBytes;
    bool worth = false;
    for_each_warp(
        data, tbs, [] {},
        [&](std::uint64_t, const std::uint8_t* p, const std::uint8_t* end) {
          if (static_cast<std::size_t>(end - p) < kSeg) return true;  // the next warp
          worth = compress(p, kSeg) * kMinPagingRatio <= kSeg;
          return false;
        });
    return worth;
  }

  void load_next_chunk() {
    const std::uint32_t idx = acquire_slot();
    Slot& s = *slots[idx];
    const std::size_t ci = (*chunk_ids)[next_chunk];
    const ChunkInfo& c = reader->chunks()[ci];
    // Held whole unless that would take the decoded bytes past the budget.
    bool paged = budget != LaunchStream::kNoBudget && held_decoded + c.raw_bytes > budget;
    try {
      ChunkBuffer& buf = paged ? scratch : s.buf;
      reader->load_chunk(ci, buf);
      codec::ChunkTotals totals;
      codec::parse_block_chunk(buf.data(), buf.size(), c.first, c.count, warps, s.tbs,
                               &reader->display_name(), ci, &totals, check == RecordCheck::AtLoad);
      check_totals(totals, next_chunk + 1 == chunk_ids->size());
      s.first = c.first;
      if (paged && worth_paging(buf.data(), s.tbs)) {
        if (!s.paged) s.paged = std::make_unique<PagedChunk>();
        pack(buf.data(), s.tbs, *s.paged);
        // A slot's whole-chunk buffer is not needed while it is paged (nor, past the budget,
        // kept for later).
        ChunkBuffer{}.swap(s.buf);
      } else if (paged) {
        paged = false;  // held whole after all: the slot takes the decoded chunk
        s.buf.swap(scratch);
      }
    } catch (...) {
      free_slots.push_back(idx);
      throw;
    }
    s.is_paged = paged;
    if (paged) {
      ++live_paged;
    } else {
      held_decoded += c.raw_bytes;
    }
    ++next_chunk;
    s.released.assign(s.tbs.size(), 0);
    s.handed = 0;
    s.outstanding = 0;
    s.live = true;
    ++live;
    current = idx;
    has_current = true;
  }
};

LaunchStream::LaunchStream(TraceReader& reader, std::uint32_t launch_index, RecordCheck check,
                           std::uint64_t decoded_budget)
    : impl_(std::make_unique<Impl>()) {
  if (launch_index >= reader.launches().size()) {
    throw std::out_of_range("LaunchStream: launch " + std::to_string(launch_index) +
                            " does not exist");
  }
  Impl& s = *impl_;
  s.reader = &reader;
  s.launch = launch_index;
  s.check = check;
  s.budget = decoded_budget;
  s.chunk_ids = &reader.launch_chunks(launch_index);
  const LaunchSummary& l = reader.launches()[launch_index];
  s.total = l.threadblocks;
  // The reader validated that every launch's kernel exists.
  s.warps = reader.metadata().find_kernel(l.kernel_id)->warps_per_block();
}

LaunchStream::~LaunchStream() = default;
LaunchStream::LaunchStream(LaunchStream&&) noexcept = default;

std::uint64_t LaunchStream::threadblocks() const { return impl_->total; }

std::size_t LaunchStream::decoded_chunks() const { return impl_->live; }

std::size_t LaunchStream::paged_chunks() const { return impl_->live_paged; }

std::uint64_t LaunchStream::held_bytes() const {
  std::uint64_t n = 0;
  for (const auto& s : impl_->slots) {
    if (!s->live) continue;
    n += s->is_paged ? s->paged->bytes() : s->buf.size();
  }
  return n;
}

void LaunchStream::check_accesses(std::uint64_t decoded) const {
  const Impl& s = *impl_;
  const std::uint64_t index = s.reader->launches()[s.launch].accesses;
  if (decoded != index) s.fail("accesses", index, std::to_string(decoded));
}

bool LaunchStream::next(ThreadblockView& out) {
  Impl& s = *impl_;
  if (s.next_tb == s.total) return false;
  if (!s.has_current || !s.slots[s.current]->live ||
      s.slots[s.current]->handed == s.slots[s.current]->tbs.size()) {
    s.load_next_chunk();
  }
  Slot& slot = *s.slots[s.current];
  const codec::TbEntry& tb = slot.tbs[slot.handed++];
  ++slot.outstanding;
  ++s.next_tb;
  out.tb_id = tb.tb_id;
  out.num_warps = tb.num_warps;
  out.slot = s.current;
  if (slot.is_paged) {
    out.warps_begin = out.warps_end = nullptr;
    out.paged = slot.paged.get();
    out.paged_tb = static_cast<std::uint32_t>(slot.handed - 1);
  } else {
    out.warps_begin = slot.buf.data() + tb.begin;
    out.warps_end = slot.buf.data() + tb.end;
    out.paged = nullptr;
  }
  out.source = &s.reader->display_name();
  out.va_base = tb.va_base;
  return true;
}

void LaunchStream::release(const ThreadblockView& tb) {
  Impl& s = *impl_;
  auto misuse = [&] {
    throw std::logic_error("LaunchStream: release of threadblock " + std::to_string(tb.tb_id) +
                           " that is not outstanding in this stream");
  };
  if (tb.slot >= s.slots.size()) misuse();
  Slot& slot = *s.slots[tb.slot];
  if (!slot.live || tb.tb_id < slot.first || tb.tb_id - slot.first >= slot.handed) misuse();
  std::uint8_t& released = slot.released[tb.tb_id - slot.first];
  if (released != 0) misuse();
  released = 1;
  --slot.outstanding;
  if (slot.handed == slot.tbs.size() && slot.outstanding == 0) {
    slot.live = false;
    --s.live;
    if (slot.is_paged) {
      --s.live_paged;
    } else {
      s.held_decoded -= slot.buf.size();
    }
    s.free_slots.push_back(tb.slot);
  }
}

void ThreadblockView::warp_streams(std::vector<WarpStream>& out) const {
  if (paged != nullptr) {
    codec::paged_warp_streams(*this, out);
    return;
  }
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

void ThreadblockView::next_segment(std::uint32_t warp, WarpStream& ws) const {
  if (paged == nullptr || warp >= num_warps || !ws.has_more()) {
    throw std::logic_error("ThreadblockView::next_segment: warp " + std::to_string(warp) +
                           " of threadblock " + std::to_string(tb_id) + " has no next segment");
  }
  codec::paged_next_segment(*this, warp, ws);
}

}  // namespace uvmsim::trace
