// LaunchStream: hands out the threadblocks of one launch in order while holding only the decoded
// chunks that still have threadblocks in flight. Decoded chunks live in slots whose buffers are
// recycled, so once the simulation reaches a steady state no chunk load allocates.
#include <memory>
#include <stdexcept>

#include "core/error.h"
#include "traces/trace.h"
#include "traces/trace_codec.h"

namespace uvmsim::trace {

namespace {

struct Slot {
  ChunkBuffer buf;
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

  ~Impl() {
    // The next launch's stream decodes into these (the reader outlives its streams). Spares this
    // launch did not take, it did not need: they are freed, so between launches the reader
    // keeps what the last launch held at once, not the most any launch ever held (mvt 4 GB:
    // its row-wise kernel's 4.6 GB of chunks would otherwise stay through the column-wise one).
    if (reader == nullptr) return;  // the constructor threw before naming its reader
    reader->drop_spare_buffers();
    for (auto& s : slots) reader->recycle_buffer(std::move(s->buf));
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

  void load_next_chunk() {
    const std::uint32_t idx = acquire_slot();
    Slot& s = *slots[idx];
    const std::size_t ci = (*chunk_ids)[next_chunk];
    try {
      reader->load_chunk(ci, s.buf);
      const ChunkInfo& c = reader->chunks()[ci];
      codec::ChunkTotals totals;
      codec::parse_block_chunk(s.buf.data(), s.buf.size(), c.first, c.count, warps, s.tbs,
                               &reader->display_name(), ci, &totals, check == RecordCheck::AtLoad);
      check_totals(totals, next_chunk + 1 == chunk_ids->size());
      s.first = c.first;
    } catch (...) {
      free_slots.push_back(idx);
      throw;
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

LaunchStream::LaunchStream(TraceReader& reader, std::uint32_t launch_index, RecordCheck check)
    : impl_(std::make_unique<Impl>()) {
  if (launch_index >= reader.launches().size()) {
    throw std::out_of_range("LaunchStream: launch " + std::to_string(launch_index) +
                            " does not exist");
  }
  Impl& s = *impl_;
  s.reader = &reader;
  s.launch = launch_index;
  s.check = check;
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
  out.warps_begin = slot.buf.data() + tb.begin;
  out.warps_end = slot.buf.data() + tb.end;
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
    s.free_slots.push_back(tb.slot);
  }
}

}  // namespace uvmsim::trace
