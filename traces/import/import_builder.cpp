#include "traces/import/import_builder.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/error.h"
#include "traces/import/spill_file.h"
#include "traces/import/tokens.h"

namespace uvmsim::trace::import {

namespace {

/// A host event as spilled: fixed layout, no padding left uninitialised.
struct HostEntry {
  std::uint64_t va = 0, size = 0;
  std::uint32_t kernel_id = 0;
  std::int32_t iteration = -1;
  std::uint8_t type = 0, device = 0, advice = 0, kind = 0;
  std::uint32_t reserved = 0;
};
static_assert(sizeof(HostEntry) == 32);

HostEntry pack(const HostEvent& ev) {
  HostEntry e;
  e.va = ev.va;
  e.size = ev.size;
  e.kernel_id = ev.kernel_id;
  e.iteration = ev.iteration;
  e.type = static_cast<std::uint8_t>(ev.type);
  e.device = static_cast<std::uint8_t>(ev.device);  // 0xFF the CPU, else the GPU's ordinal
  e.advice = static_cast<std::uint8_t>(ev.advice);
  e.kind = static_cast<std::uint8_t>(ev.kind);
  return e;
}

HostEvent unpack(const HostEntry& e) {
  HostEvent ev;
  ev.type = static_cast<HostEventType>(e.type);
  ev.va = e.va;
  ev.size = e.size;
  ev.kernel_id = e.kernel_id;
  ev.iteration = e.iteration;
  ev.device = static_cast<Processor>(static_cast<std::int8_t>(e.device));
  ev.advice = static_cast<Advice>(e.advice);
  ev.kind = static_cast<AccessKind>(e.kind);
  return ev;
}

std::string dims(const Dim3& d) {
  return std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z);
}

}  // namespace

/// Host events in program order: in memory while few, spilled to disk beyond that (a trace may
/// hold millions of CPU accesses or launches).
struct ImportBuilder::HostLog {
  static constexpr std::size_t kInMemory = 1 << 16;
  std::filesystem::path tmpdir;
  std::vector<HostEntry> mem;
  std::unique_ptr<SpillFile> file;
  std::uint64_t count = 0;
  std::size_t read_pos = 0;

  void add(const HostEvent& ev) {
    const HostEntry e = pack(ev);
    ++count;
    if (file) {
      file->write(&e, sizeof e);
      return;
    }
    mem.push_back(e);
    if (mem.size() == kInMemory) {
      file = std::make_unique<SpillFile>(tmpdir);
      file->write(mem.data(), mem.size() * sizeof(HostEntry));
      mem = std::vector<HostEntry>();
    }
  }
  void seal() {
    if (file) file->finish_writing();
  }
  bool next(HostEvent& out) {
    HostEntry e;
    if (file) {
      if (!file->read(&e, sizeof e)) return false;
    } else {
      if (read_pos == mem.size()) return false;
      e = mem[read_pos++];
    }
    out = unpack(e);
    return true;
  }
};

ImportBuilder::ImportBuilder(ImportOptions opts)
    : opts_(std::move(opts)),
      host_(std::make_unique<HostLog>()),
      sorter_(opts_.tmpdir, opts_.memory_bytes, opts_.max_runs) {
  host_->tmpdir = opts_.tmpdir;
}

ImportBuilder::~ImportBuilder() = default;

void ImportBuilder::add_allocation(Allocation a, const std::string& where) {
  if (!valid_utf8(a.name)) throw UserError(where, "alloc.name", "not valid UTF-8");
  if (a.size == 0) throw UserError(where, "alloc", "size must be positive");
  if (a.base > std::numeric_limits<Addr>::max() - a.size) {
    throw UserError(where, "alloc", "base + size overflows the 64-bit address space");
  }
  if (a.managed && a.host_pinned) throw UserError(where, "alloc", "managed memory is not pinned");
  for (const auto& o : meta_.allocations) {
    if (a.base < o.base + o.size && o.base < a.base + a.size) {
      throw UserError(where, "alloc",
                      "range overlaps allocation " + std::to_string(o.id) + " '" + o.name + "'");
    }
  }
  a.id = static_cast<std::uint32_t>(meta_.allocations.size());
  if (a.name.empty()) a.name = "alloc" + std::to_string(a.id);
  meta_.allocations.push_back(std::move(a));
  inferring_ = false;
}

std::uint32_t ImportBuilder::kernel(const KernelInfo& k, const std::string& where) {
  if (k.name.empty()) throw UserError(where, "kernel", "empty kernel name");
  if (!valid_utf8(k.name)) throw UserError(where, "kernel.name", "not valid UTF-8");
  if (k.grid.count() == 0 || k.block.count() == 0) {
    throw UserError(where, "kernel", "grid and block dimensions must be positive");
  }
  if (k.block.count() > 1024) {
    throw UserError(where, "kernel",
                    "block " + dims(k.block) + " has more than 1024 threads (CUDA's limit)");
  }
  if (k.grid.x > 0x7fffffffu || k.grid.y > 65535 || k.grid.z > 65535) {
    throw UserError(where, "kernel",
                    "grid " + dims(k.grid) + " exceeds CUDA's limits (2^31-1, 65535, 65535)");
  }
  if (k.grid.count() > opts_.max_threadblocks) {
    throw UserError(where, "kernel",
                    "grid " + dims(k.grid) + " has " + std::to_string(k.grid.count()) +
                        " threadblocks, more than the importer's limit of " +
                        std::to_string(opts_.max_threadblocks));
  }
  const std::string key = k.name + '\0' + dims(k.grid) + '\0' + dims(k.block) + '\0' +
                          std::to_string(k.regs_per_thread) + '\0' +
                          std::to_string(k.shared_mem_bytes);
  const auto it = kernel_ids_.find(key);
  if (it != kernel_ids_.end()) return it->second;
  KernelInfo copy = k;
  copy.id = static_cast<std::uint32_t>(meta_.kernels.size());
  meta_.kernels.push_back(copy);
  kernel_ids_.emplace(key, copy.id);
  return copy.id;
}

std::uint32_t ImportBuilder::new_ref(RefScope& scope, std::uint64_t pc) {
  if (next_ref_ == std::numeric_limits<std::uint32_t>::max()) {
    throw UserError("import", "pc", "more than 2^32-1 distinct static instructions");
  }
  scope.emplace(pc, next_ref_);
  return next_ref_++;
}

std::uint32_t ImportBuilder::launch(std::uint32_t kernel_id, std::int32_t iteration) {
  if (kernel_id >= meta_.kernels.size()) throw std::logic_error("launch of an unknown kernel");
  if (launches_ == std::numeric_limits<std::uint32_t>::max()) {
    throw UserError("import: more than 2^32-1 kernel launches");
  }
  HostEvent ev;
  ev.type = HostEventType::KernelLaunch;
  ev.kernel_id = kernel_id;
  ev.launch_index = launches_;
  ev.iteration = iteration;
  host_->add(ev);
  return launches_++;
}

void ImportBuilder::host_event(const HostEvent& ev) {
  if (ev.type == HostEventType::KernelLaunch) throw std::logic_error("use launch()");
  host_->add(ev);
}

/// Turns the regrouped access stream into TraceWriter calls, one launch at a time: per warp,
/// cycles become gaps and lines of one instruction on one page become one record.
struct ImportBuilder::Emitter {
  TraceWriter& w;
  AccessSorter& sorter;
  const std::vector<Allocation>& allocs;  // sorted by base
  ImportReport& report;
  std::map<std::string, std::uint64_t>& counters;
  const ProgressFn& progress;

  Emitter(TraceWriter& w_, AccessSorter& s_, const std::vector<Allocation>& a_, ImportReport& r_,
          std::map<std::string, std::uint64_t>& c_, const ProgressFn& p_)
      : w(w_), sorter(s_), allocs(a_), report(r_), counters(c_), progress(p_) {}

  PendingAccess cur;
  bool have = false;
  std::size_t alloc_hint = 0;
  std::uint64_t consumed = 0;  // records taken from the sorter

  // The record being built for the current warp (held back to merge same-instruction lines).
  bool pending = false;
  AccessRecord rec;
  bool warp_started = false;
  std::uint64_t prev_cycle = 0;

  bool inside_allocation(Addr va) {
    if (alloc_hint < allocs.size() && va >= allocs[alloc_hint].base &&
        va - allocs[alloc_hint].base < allocs[alloc_hint].size) {
      return true;
    }
    auto it = std::upper_bound(allocs.begin(), allocs.end(), va,
                               [](Addr v, const Allocation& a) { return v < a.base; });
    if (it == allocs.begin()) return false;
    --it;
    if (va - it->base >= it->size) return false;
    alloc_hint = static_cast<std::size_t>(it - allocs.begin());
    return true;
  }

  void flush(std::uint32_t warp) {
    if (!pending) return;
    w.access(warp, rec);
    pending = false;
  }

  /// Adds one access to the current warp stream (records of one input warp, in order).
  void add(std::uint32_t warp, const PendingAccess& a) {
    std::uint64_t gap = a.time;
    if (a.flags & PendingAccess::kHasCycle) {
      if (!warp_started) {
        gap = 0;  // the warp's start time is not in the input
      } else if (a.time < prev_cycle) {
        ++counters["accesses whose cycle is earlier than their warp's previous access (gap 0)"];
        gap = 0;
      } else {
        gap = a.time - prev_cycle;
      }
      // Same instruction (pc) at the same cycle on the same page: one record of the summed
      // bytes, as the generators write a warp instruction's lanes.
      if (pending && a.time == prev_cycle && a.ref == rec.ref_id &&
          static_cast<AccessKind>(a.kind) == rec.kind &&
          (a.va >> kPageShift) == (rec.va >> kPageShift)) {
        rec.bytes = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(std::uint64_t{rec.bytes} + a.bytes, 0xffffffffu));
        return;
      }
      prev_cycle = a.time;
    }
    warp_started = true;
    if (gap > 0xffffffffu) {
      ++counters["compute gaps longer than 2^32-1 cycles (clamped)"];
      gap = 0xffffffffu;
    }
    flush(warp);
    rec.va = a.va;
    rec.ref_id = a.ref;
    rec.gap_cycles = static_cast<std::uint32_t>(gap);
    rec.repeat = 1;
    rec.bytes = a.bytes;
    rec.kind = static_cast<AccessKind>(a.kind);
    pending = true;
    if (!inside_allocation(a.va)) ++report.outside_allocations;
  }

  /// Writes every threadblock of launch `index` (empty ones too: a .uvt lists the whole grid).
  void launch(std::uint32_t index, const KernelInfo& k) {
    const std::uint64_t tbs = k.threadblocks();
    const std::uint32_t wpb = k.warps_per_block();
    for (std::uint64_t tb = 0; tb < tbs; ++tb) {
      w.begin_block(wpb);
      std::uint32_t slots = 0;  // NVBit: distinct warp slots seen in this threadblock
      while (have && cur.launch == index && cur.tb == tb) {
        const std::uint16_t raw = cur.warp;
        std::uint32_t warp = raw;
        if (cur.flags & PendingAccess::kHwWarp) {
          // Warp slots of a threadblock are numbered in ascending order: the hardware hands a
          // block consecutive slots, so this recovers the warp index in the usual case.
          if (slots == wpb) {
            ++counters
                ["threadblocks with more warp ids than warps per block (extra ids folded "
                 "onto warps 0, 1, ...)"];
          }
          warp = slots++ % wpb;
        }
        warp_started = false;
        while (have && cur.launch == index && cur.tb == tb && cur.warp == raw) {
          add(warp, cur);
          have = sorter.next(cur);
          if ((++consumed & 0xfffff) == 0 && progress) progress(consumed);
        }
        flush(warp);
      }
      w.end_block();
    }
    if (have && cur.launch == index) {
      throw std::logic_error("import: access of threadblock " + std::to_string(cur.tb) +
                             " beyond the grid of launch " + std::to_string(index));
    }
  }
};

void ImportBuilder::emit(const std::filesystem::path& path, const std::vector<Allocation>& sorted,
                         ImportReport& report, const ProgressFn& progress) {
  TraceWriter w(path, meta_, opts_.writer);
  if (opts_.cpu_init) {
    for (const auto& a : meta_.allocations) {
      if (!a.managed) continue;
      HostEvent ev;
      ev.type = HostEventType::CpuAccess;
      ev.va = a.base;
      ev.size = a.size;
      ev.kind = AccessKind::Write;
      w.host_event(ev);
      ++report.host_events;
    }
  }
  Emitter em{w, sorter_, sorted, report, counters_, progress};
  em.have = sorter_.next(em.cur);
  HostEvent ev;
  while (host_->next(ev)) {
    ++report.host_events;
    if (ev.type == HostEventType::KernelLaunch) {
      const std::uint32_t index = w.begin_launch(ev.kernel_id, ev.iteration);
      em.launch(index, meta_.kernels[ev.kernel_id]);
    } else {
      w.host_event(ev);
    }
  }
  if (em.have) throw std::logic_error("import: accesses left after the last launch");
  w.finish();
  if (progress) progress(em.consumed);
}

ImportReport ImportBuilder::write(const std::filesystem::path& output, const ProgressFn& progress) {
  if (written_) throw std::logic_error("ImportBuilder::write called twice");
  written_ = true;
  ImportReport report;
  report.input_records = sorter_.total();

  if (meta_.allocations.empty() && !inference_.empty()) {
    meta_.allocations = inference_.ranges();
    std::uint64_t bytes = 0;
    for (const auto& a : meta_.allocations) bytes += a.size;
    alloc_source_ = "inferred";
    warnings_.push_back(
        "no allocations given: inferred " + std::to_string(meta_.allocations.size()) +
        " managed range(s) (" + std::to_string(bytes) +
        " bytes) from the touched addresses; extents less than 1 MB apart are merged and "
        "untouched parts are missing (give the real ranges: --allocations FILE, or alloc lines)");
  } else if (meta_.allocations.empty()) {
    warnings_.push_back("the trace has no allocations and touches no memory");
  }
  if (alloc_source_.empty()) alloc_source_ = "declared";
  report.allocations_source = alloc_source_;
  if (meta_.extra.is_object()) meta_.extra["allocations"] = alloc_source_;

  // The writer treats invalid metadata as a bug in its caller; check it here so a bad input is a
  // user error naming the field. Names the parsers took from the input are checked as UTF-8
  // there; this catches the rest (e.g. a file name in extra.inputs).
  try {
    (void)meta_.to_json().dump();
  } catch (const nlohmann::json::type_error&) {
    throw UserError(output.string(), "metadata",
                    "a name taken from the input or the command line is not valid UTF-8");
  }
  (void)Metadata::from_json(meta_.to_json(), output.string());

  std::vector<Allocation> sorted = meta_.allocations;
  std::sort(sorted.begin(), sorted.end(),
            [](const Allocation& a, const Allocation& b) { return a.base < b.base; });

  host_->seal();
  sorter_.seal();
  report.spill_runs = sorter_.runs();
  report.spill_merges = sorter_.compactions();
  report.spill_bytes = sorter_.spilled_bytes();

  std::filesystem::path partial = output;
  partial += ".partial";
  try {
    emit(partial, sorted, report, progress);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(partial, ec);  // never leave a half-written trace behind
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(partial, output, ec);
  if (ec) {
    std::filesystem::remove(partial, ec);
    throw UserError(output.string(), "output", "cannot rename the finished trace into place");
  }

  report.allocations = meta_.allocations.size();
  report.kernels = meta_.kernels.size();
  report.launches = launches_;
  {
    TraceReader r(output);
    for (const auto& l : r.launches()) report.accesses += l.accesses;
    for (const auto& l : r.launches()) report.records += l.records;
  }
  if (report.outside_allocations > 0) {
    warnings_.push_back(std::to_string(report.outside_allocations) +
                        " access records lie outside every allocation (simulated as device "
                        "memory, which never faults)");
  }
  for (const auto& [what, n] : counters_) warnings_.push_back(std::to_string(n) + " " + what);
  report.warnings = warnings_;
  return report;
}

}  // namespace uvmsim::trace::import
