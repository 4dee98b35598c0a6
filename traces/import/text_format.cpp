#include "traces/import/text_format.h"

#include <charconv>
#include <map>
#include <stdexcept>

#include "core/error.h"
#include "core/units.h"
#include "traces/import/line_reader.h"
#include "traces/import/tokens.h"

namespace uvmsim::trace::import {

namespace {

constexpr std::string_view kMagic = "uvmsim-access-list";
constexpr std::uint64_t kVersion = 1;
constexpr std::uint64_t kProgressLines = 1 << 16;

[[noreturn]] void fail(const std::string& where, const std::string& field, const std::string& msg) {
  throw UserError(where, field, msg);
}

std::uint64_t need_uint(std::string_view tok, const std::string& where, const char* field) {
  if (tok.empty()) fail(where, field, "missing");
  const auto v = parse_uint(tok);
  if (!v) fail(where, field, "invalid number " + quoted(tok) + " (decimal, or hex with 0x)");
  return *v;
}

std::uint64_t need_size(std::string_view tok, const std::string& where, const char* field) {
  if (tok.empty()) fail(where, field, "missing");
  if (has_hex_prefix(tok)) return need_uint(tok, where, field);
  try {
    return parse_size(std::string(tok), field);
  } catch (const UserError&) {
    fail(where, field, "invalid size " + quoted(tok) + " (bytes, K/M/G/T suffix, or 0x hex)");
  }
}

void no_more(std::string_view rest, const std::string& where, const char* what) {
  const std::string_view extra = next_token(rest);
  if (!extra.empty()) fail(where, what, "unexpected " + quoted(extra));
}

/// "gpu" (GPU 0), "gpuN" (device ordinal N) or "cpu".
Processor need_device(std::string_view tok, const std::string& where, const char* field) {
  if (tok == "cpu") return Processor::Cpu;
  if (tok.starts_with("gpu")) {
    const std::string_view n = tok.substr(3);
    if (n.empty()) return Processor::Gpu;
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (ec == std::errc() && end == n.data() + n.size() && v < kMaxGpus &&
        (n == "0" || n[0] != '0'))
      return gpu_processor(v);
  }
  fail(where, field,
       tok.empty() ? std::string("missing (gpu, gpuN or cpu)")
                   : "expected gpu, gpu0 ... gpu" + std::to_string(kMaxGpus - 1) + " or cpu, got " +
                         quoted(tok));
}

std::optional<AccessKind> access_kind(std::string_view t) {
  if (t == "r" || t == "read") return AccessKind::Read;
  if (t == "w" || t == "write") return AccessKind::Write;
  if (t == "a" || t == "atomic") return AccessKind::Atomic;
  if (t == "p" || t == "prefetch") return AccessKind::Prefetch;
  return std::nullopt;
}

std::optional<Advice> advice(std::string_view t) {
  static const std::map<std::string_view, Advice> names = {
      {"set-preferred-location", Advice::SetPreferredLocation},
      {"unset-preferred-location", Advice::UnsetPreferredLocation},
      {"set-accessed-by", Advice::SetAccessedBy},
      {"unset-accessed-by", Advice::UnsetAccessedBy},
      {"set-read-mostly", Advice::SetReadMostly},
      {"unset-read-mostly", Advice::UnsetReadMostly},
  };
  const auto it = names.find(t);
  if (it == names.end()) return std::nullopt;
  return it->second;
}

/// "key=value" with a known key; nullopt if `tok` has another key.
std::optional<std::string_view> option(std::string_view tok, std::string_view key) {
  if (tok.size() > key.size() && tok.substr(0, key.size()) == key && tok[key.size()] == '=') {
    return tok.substr(key.size() + 1);
  }
  return std::nullopt;
}

/// Parser state: the current launch and the kernel declarations in force.
}  // namespace

class TextParser::Impl {
 public:
  explicit Impl(ImportBuilder& b) : b_(b) {}

  void run(LineReader& r, const ProgressFn& progress) {
    r_ = &r;
    run(progress);
  }

 private:
  void run(const ProgressFn& progress) {
    std::string_view line;
    bool header = false;
    while (r_->next(line)) {
      if (progress && r_->line_number() % kProgressLines == 0) progress(r_->bytes_consumed());
      std::string_view rest = line;
      const std::string_view first = next_token(rest);
      if (first.empty() || first[0] == '#') continue;
      if (!header) {
        check_header(first, rest);
        header = true;
        continue;
      }
      if (first[0] >= '0' && first[0] <= '9') {
        access(first, rest);
      } else {
        directive(first, rest);
      }
    }
    if (!header) fail(r_->name(), "header", "empty input (expected 'uvmsim-access-list 1')");
    if (progress) progress(r_->bytes_consumed());
  }

 private:
  void check_header(std::string_view first, std::string_view rest) {
    const std::string where = r_->where();
    if (first != kMagic) {
      fail(where, "header",
           "expected 'uvmsim-access-list 1' as the first line (not a uvmsim access list)");
    }
    const std::uint64_t v = need_uint(next_token(rest), where, "header.version");
    if (v != kVersion) {
      fail(where, "header.version",
           "unsupported access-list version " + std::to_string(v) +
               " (this build of uvmsim reads version 1)");
    }
    no_more(rest, where, "header");
  }

  void directive(std::string_view d, std::string_view rest) {
    const std::string where = r_->where();
    if (d == "alloc") {
      b_.add_allocation(parse_alloc_args(rest, where), where);
    } else if (d == "kernel") {
      kernel(rest, where);
    } else if (d == "launch") {
      launch(rest, where);
    } else if (d == "prefetch") {
      HostEvent ev;
      ev.type = HostEventType::MemPrefetch;
      ev.va = need_uint(next_token(rest), where, "prefetch.address");
      ev.size = need_size(next_token(rest), where, "prefetch.size");
      ev.device = need_device(next_token(rest), where, "prefetch.destination");
      no_more(rest, where, "prefetch");
      range_event(ev, where, "prefetch");
    } else if (d == "advise") {
      HostEvent ev;
      ev.type = HostEventType::MemAdvise;
      ev.va = need_uint(next_token(rest), where, "advise.address");
      ev.size = need_size(next_token(rest), where, "advise.size");
      const std::string_view a = next_token(rest);
      const auto adv = advice(a);
      if (!adv) {
        fail(where, "advise.advice",
             (a.empty() ? std::string("missing") : "unknown advice " + quoted(a)) +
                 " (set-preferred-location, unset-preferred-location, set-accessed-by, "
                 "unset-accessed-by, set-read-mostly, unset-read-mostly)");
      }
      ev.advice = *adv;
      ev.device = need_device(next_token(rest), where, "advise.device");
      no_more(rest, where, "advise");
      range_event(ev, where, "advise");
    } else if (d == "free") {
      // cudaFree(ptr): the base address of an allocation (the simulator checks that it is one).
      HostEvent ev;
      ev.type = HostEventType::MemFree;
      ev.va = need_uint(next_token(rest), where, "free.address");
      no_more(rest, where, "free");
      b_.host_event(ev);
    } else if (d == "device") {
      // cudaSetDevice(N): the launches that follow run on GPU N.
      HostEvent ev;
      ev.type = HostEventType::SetDevice;
      const std::string_view n = next_token(rest);
      unsigned v = 0;
      const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
      if (n.empty() || ec != std::errc() || end != n.data() + n.size() || v >= kMaxGpus)
        fail(where, "device",
             (n.empty() ? std::string("missing") : "got " + quoted(n)) +
                 " (a GPU's device ordinal, 0 ... " + std::to_string(kMaxGpus - 1) + ")");
      ev.device = gpu_processor(v);
      no_more(rest, where, "device");
      b_.host_event(ev);
    } else if (d == "sync") {
      no_more(rest, where, "sync");
      HostEvent ev;
      ev.type = HostEventType::Synchronize;
      b_.host_event(ev);
    } else if (d == "cpu") {
      HostEvent ev;
      ev.type = HostEventType::CpuAccess;
      const std::string_view k = next_token(rest);
      const auto kind = access_kind(k);
      if (!kind || *kind == AccessKind::Prefetch) {
        fail(where, "cpu.kind",
             (k.empty() ? std::string("missing") : "unknown kind " + quoted(k)) +
                 " (read, write or atomic)");
      }
      ev.kind = *kind;
      ev.va = need_uint(next_token(rest), where, "cpu.address");
      ev.size = need_size(next_token(rest), where, "cpu.size");
      no_more(rest, where, "cpu");
      range_event(ev, where, "cpu");
    } else if (d == "workload") {
      const std::string_view name = trim(rest);
      if (name.empty()) fail(where, "workload", "missing name");
      if (!valid_utf8(name)) fail(where, "workload", "not valid UTF-8");
      b_.metadata().workload = std::string(name);
    } else if (d == "gpu") {
      if (!valid_utf8(trim(rest))) fail(where, "gpu", "not valid UTF-8");
      b_.metadata().captured_gpu = std::string(trim(rest));
    } else {
      fail(where, "directive",
           "unknown directive " + quoted(d) +
               " (alloc, kernel, launch, prefetch, advise, sync, cpu, free, workload, gpu, or an "
               "access line starting with its threadblock)");
    }
  }

  void range_event(const HostEvent& ev, const std::string& where, const char* what) {
    if (ev.size == 0) fail(where, std::string(what) + ".size", "must be positive");
    if (ev.va + ev.size < ev.va) fail(where, std::string(what) + ".size", "range overflows");
    b_.touched(ev.va, ev.size);
    b_.host_event(ev);
  }

  void kernel(std::string_view rest, const std::string& where) {
    KernelInfo k;
    const std::string_view name = next_token(rest);
    if (name.empty()) fail(where, "kernel.name", "missing");
    k.name = std::string(name);
    for (auto [field, dim] :
         {std::pair{"kernel.grid", &k.grid}, std::pair{"kernel.block", &k.block}}) {
      const std::string_view t = next_token(rest);
      if (t.empty()) fail(where, field, "missing (X[,Y[,Z]])");
      const auto d = parse_dim3(t);
      if (!d) fail(where, field, "invalid dimensions " + quoted(t) + " (X[,Y[,Z]], positive)");
      *dim = *d;
    }
    for (std::string_view t = next_token(rest); !t.empty(); t = next_token(rest)) {
      if (const auto v = option(t, "regs")) {
        const std::uint64_t n = need_uint(*v, where, "kernel.regs");
        if (n > 0xffffffffu) fail(where, "kernel.regs", "out of range");
        k.regs_per_thread = static_cast<std::uint32_t>(n);
      } else if (const auto s = option(t, "smem")) {
        const std::uint64_t n = need_size(*s, where, "kernel.smem");
        if (n > 0xffffffffu) fail(where, "kernel.smem", "out of range");
        k.shared_mem_bytes = static_cast<std::uint32_t>(n);
      } else {
        fail(where, "kernel", "unexpected " + quoted(t) + " (regs=N, smem=BYTES)");
      }
    }
    kernels_[k.name] = b_.kernel(k, where);
  }

  void launch(std::string_view rest, const std::string& where) {
    const std::string_view name = next_token(rest);
    if (name.empty()) fail(where, "launch.kernel", "missing kernel name");
    const auto it = kernels_.find(std::string(name));
    if (it == kernels_.end()) {
      fail(where, "launch.kernel", "kernel " + quoted(name) + " is not declared by a kernel line");
    }
    std::int32_t iteration = -1;
    for (std::string_view t = next_token(rest); !t.empty(); t = next_token(rest)) {
      const auto v = option(t, "iteration");
      if (!v) fail(where, "launch", "unexpected " + quoted(t) + " (iteration=N)");
      const std::uint64_t n = need_uint(*v, where, "launch.iteration");
      if (n > 0x7fffffffu) fail(where, "launch.iteration", "out of range (0..2^31-1)");
      iteration = static_cast<std::int32_t>(n);
    }
    const KernelInfo& k = b_.kernel_info(it->second);
    launch_ = b_.launch(it->second, iteration);
    in_launch_ = true;
    grid_ = k.grid;
    tbs_ = k.threadblocks();
    wpb_ = k.warps_per_block();
    scope_ = &b_.ref_scope(k.name);
  }

  std::uint64_t threadblock(std::string_view t) {
    if (t.find(',') == std::string_view::npos) {
      const auto v = parse_uint(t);
      if (!v) fail(r_->where(), "access.tb", "invalid threadblock " + quoted(t));
      if (*v >= tbs_) {
        fail(r_->where(), "access.tb",
             "threadblock " + std::to_string(*v) + " outside the grid (" + std::to_string(tbs_) +
                 " threadblocks)");
      }
      return *v;
    }
    std::uint64_t c[3] = {0, 0, 0};
    const std::uint32_t lim[3] = {grid_.x, grid_.y, grid_.z};
    std::string_view s = t;
    for (int i = 0; i < 3; ++i) {
      const std::size_t comma = s.find(',');
      const auto v = parse_digits(s.substr(0, comma), 10);
      if (!v) fail(r_->where(), "access.tb", "invalid threadblock " + quoted(t) + " (X,Y,Z)");
      if (*v >= lim[i]) {
        fail(r_->where(), "access.tb",
             "threadblock " + std::string(t) + " outside the grid " + std::to_string(grid_.x) +
                 "," + std::to_string(grid_.y) + "," + std::to_string(grid_.z));
      }
      c[i] = *v;
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
      if (i == 2) fail(r_->where(), "access.tb", "invalid threadblock " + quoted(t) + " (X,Y,Z)");
    }
    return c[0] + c[1] * grid_.x + c[2] * std::uint64_t{grid_.x} * grid_.y;
  }

  /// A number on an access line; the error message (and its "<file>:<line>") is only built
  /// when the number is bad, keeping the per-line path free of allocations.
  std::uint64_t field(std::string_view tok, const char* name) {
    const auto v = parse_uint(tok);
    if (!v) {
      need_uint(tok, r_->where(), name);  // throws the precise error
      throw std::logic_error("unreachable");
    }
    return *v;
  }

  void access(std::string_view first, std::string_view rest) {
    if (!in_launch_) fail(r_->where(), "access", "access line before the first launch line");
    PendingAccess a;
    a.launch = launch_;
    a.tb = threadblock(first);
    const std::string_view w = next_token(rest);
    const auto warp = parse_uint(w);
    if (!warp) fail(r_->where(), "access.warp", w.empty() ? "missing" : "invalid " + quoted(w));
    if (*warp >= wpb_) {
      fail(r_->where(), "access.warp",
           "warp " + std::to_string(*warp) + " outside the block (" + std::to_string(wpb_) +
               " warps)");
    }
    a.warp = static_cast<std::uint16_t>(*warp);
    const std::string_view k = next_token(rest);
    const auto kind = access_kind(k);
    if (!kind) {
      fail(r_->where(), "access.kind",
           (k.empty() ? std::string("missing") : "unknown kind " + quoted(k)) + " (r, w, a or p)");
    }
    a.kind = static_cast<std::uint8_t>(*kind);
    a.va = field(next_token(rest), "access.address");
    const std::uint64_t bytes = field(next_token(rest), "access.bytes");
    if (bytes == 0 || bytes > 0xffffffffu) {
      fail(r_->where(), "access.bytes", "out of range (1..2^32-1)");
    }
    a.bytes = static_cast<std::uint32_t>(bytes);
    a.ref = b_.ref(*scope_, field(next_token(rest), "access.pc"));
    const std::string_view cycle = next_token(rest);
    if (!cycle.empty()) {
      a.time = field(cycle, "access.cycle");
      a.flags = PendingAccess::kHasCycle;
      no_more(rest, r_->where(), "access");
    }
    b_.access(a);
  }

  LineReader* r_ = nullptr;
  ImportBuilder& b_;
  std::map<std::string, std::uint32_t> kernels_;  // name -> latest declaration's kernel id
  bool in_launch_ = false;
  std::uint32_t launch_ = 0;
  Dim3 grid_;
  std::uint64_t tbs_ = 0;
  std::uint32_t wpb_ = 0;
  ImportBuilder::RefScope* scope_ = nullptr;
};

Allocation parse_alloc_args(std::string_view args, const std::string& where) {
  Allocation a;
  a.base = need_uint(next_token(args), where, "alloc.base");
  a.size = need_size(next_token(args), where, "alloc.size");
  const std::string_view kind = next_token(args);
  if (kind == "managed" || kind.empty()) {
    a.managed = true;
  } else if (kind == "device") {
    a.managed = false;
  } else if (kind == "host-pinned") {
    a.managed = false;
    a.host_pinned = true;
  } else if (kind == "system") {
    a.managed = true;
    a.system = true;
  } else {
    fail(where, "alloc.kind",
         "expected managed, device, host-pinned or system, got " + quoted(kind));
  }
  const std::string_view name = next_token(args);
  a.name = std::string(name);
  no_more(args, where, "alloc");
  return a;
}

void read_allocations(std::istream& in, const std::string& name, ImportBuilder& b) {
  LineReader r(in, name);
  std::string_view line;
  while (r.next(line)) {
    std::string_view rest = line;
    const std::string_view first = next_token(rest);
    if (first.empty() || first[0] == '#') continue;
    if (first != "alloc") {
      fail(r.where(), "directive",
           "expected an alloc line (alloc BASE SIZE [managed|device|host-pinned] [NAME]), got " +
               quoted(first));
    }
    b.add_allocation(parse_alloc_args(rest, r.where()), r.where());
  }
  if (b.allocation_count() == 0) fail(name, "allocations", "the file lists no allocation");
  b.set_allocation_source(name);
}

TextParser::TextParser(ImportBuilder& b) : impl_(std::make_unique<Impl>(b)) {}
TextParser::~TextParser() = default;

void TextParser::read(std::istream& in, const std::string& name, const ProgressFn& progress) {
  LineReader r(in, name);
  impl_->run(r, progress);
}

void import_text(std::istream& in, const std::string& name, ImportBuilder& b,
                 const ProgressFn& progress) {
  TextParser(b).read(in, name, progress);
}

}  // namespace uvmsim::trace::import
