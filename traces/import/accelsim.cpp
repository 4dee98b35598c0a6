#include "traces/import/accelsim.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "traces/import/lanes.h"
#include "traces/import/line_reader.h"
#include "traces/import/sass.h"
#include "traces/import/tokens.h"

namespace uvmsim::trace::import {

namespace {

constexpr std::uint64_t kProgressLines = 1 << 16;
enum AddressMode : std::uint64_t { kListAll = 0, kBaseStride = 1, kBaseDelta = 2 };

/// "(x,y,z)" in a header value.
std::optional<Dim3> paren_dim3(std::string_view v) {
  v = trim(v);
  if (v.size() < 2 || v.front() != '(' || v.back() != ')') return std::nullopt;
  return parse_dim3(v.substr(1, v.size() - 2));
}

std::optional<Dim3> index3(std::string_view s) {
  Dim3 d;
  std::uint32_t* out[3] = {&d.x, &d.y, &d.z};
  for (int i = 0; i < 3; ++i) {
    const std::size_t comma = s.find(',');
    if ((comma == std::string_view::npos) != (i == 2)) return std::nullopt;
    const auto v = parse_digits(trim(s.substr(0, comma)), 10);
    if (!v || *v > 0xffffffffu) return std::nullopt;
    *out[i] = static_cast<std::uint32_t>(*v);
    if (comma != std::string_view::npos) s.remove_prefix(comma + 1);
  }
  return d;
}

/// "key = value" -> value when the line (after its leading marker) starts with `key`.
std::optional<std::string_view> assignment(std::string_view line, std::string_view key) {
  if (line.substr(0, key.size()) != key) return std::nullopt;
  std::string_view rest = trim(line.substr(key.size()));
  if (rest.empty() || rest[0] != '=') return std::nullopt;
  return trim(rest.substr(1));
}

std::ifstream open_input(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw UserError(p.string(), "open", std::string("cannot open: ") + std::strerror(errno));
  return in;
}

}  // namespace

class AccelsimParser::Impl {
 public:
  explicit Impl(ImportBuilder& b) : b_(b) {}

  void kernel(LineReader& r, const ProgressFn& progress) {
    r_ = &r;
    KernelInfo k;
    bool have_name = false, have_grid = false, have_block = false;
    std::uint64_t version = 0;  // Accel-Sim's parser: no version line means the oldest layout
    bool lineinfo = false;
    std::string_view line;
    bool have_line = false;
    // Header: "-key = value" lines up to the first non-header line.
    while (r.next(line)) {
      const std::string_view t = trim(line);
      if (t.empty()) continue;
      if (t[0] != '-') {
        have_line = true;
        break;
      }
      const std::string_view h = t.substr(1);
      if (auto v = assignment(h, "kernel name")) {
        k.name = std::string(*v);
        have_name = !k.name.empty();
      } else if (auto g = assignment(h, "grid dim")) {
        const auto d = paren_dim3(*g);
        if (!d) fail("header.grid_dim", "invalid " + quoted(*g) + " (expected (X,Y,Z))");
        k.grid = *d;
        have_grid = true;
      } else if (auto bl = assignment(h, "block dim")) {
        const auto d = paren_dim3(*bl);
        if (!d) fail("header.block_dim", "invalid " + quoted(*bl) + " (expected (X,Y,Z))");
        k.block = *d;
        have_block = true;
      } else if (auto s = assignment(h, "shmem")) {
        k.shared_mem_bytes = u32(*s, "header.shmem");
      } else if (auto n = assignment(h, "nregs")) {
        k.regs_per_thread = u32(*n, "header.nregs");
      } else if (auto v2 = assignment(h, "accelsim tracer version")) {
        version = u32(*v2, "header.accelsim_tracer_version");
      } else if (auto li = assignment(h, "enable lineinfo")) {
        lineinfo = u32(*li, "header.enable_lineinfo") != 0;
      }
      // Other header keys (kernel id, binary version, stream, base addresses) are not needed.
    }
    if (!have_name) fail(r.name(), "header", "missing '-kernel name = ...' (not a .traceg file?)");
    if (!have_grid) fail(r.name(), "header", "missing '-grid dim = (X,Y,Z)'");
    if (!have_block) fail(r.name(), "header", "missing '-block dim = (X,Y,Z)'");
    const std::uint32_t kid = b_.kernel(k, r.name());
    grid_ = k.grid;
    wpb_ = b_.kernel_info(kid).warps_per_block();
    launch_ = b_.launch(kid);
    scope_ = &b_.ref_scope(k.name);
    version_ = version;
    lineinfo_ = lineinfo;

    in_tb_ = false;
    have_tb_ = false;
    have_warp_ = false;
    while (have_line || r.next(line)) {
      have_line = false;
      if (progress && r.line_number() % kProgressLines == 0) progress(r.bytes_consumed());
      body_line(trim(line));
    }
    if (in_tb_) fail(r.name(), "body", "ends inside a threadblock (no #END_TB): truncated file");
    if (progress) progress(r.bytes_consumed());
  }

  void commands(LineReader& r, const std::filesystem::path& dir, const ProgressFn& progress) {
    std::string_view line;
    std::uint64_t done = 0;  // bytes of kernel traces already read
    while (r.next(line)) {
      const std::string_view t = trim(line);
      if (t.empty()) continue;
      const std::string where = r.where();
      if (t.substr(0, 10) == "MemcpyHtoD") {
        // "MemcpyHtoD,0x<dst>,<bytes>": the host fills a destination the GPU then reads; in a
        // managed-memory program that is the CPU writing the range.
        const std::size_t c1 = t.find(',');
        const std::size_t c2 = c1 == std::string_view::npos ? c1 : t.find(',', c1 + 1);
        if (c2 == std::string_view::npos) {
          fail(where, "memcpy", "expected MemcpyHtoD,0x<address>,<bytes>, got " + quoted(t));
        }
        const auto va = parse_hex(trim(t.substr(c1 + 1, c2 - c1 - 1)));
        const auto bytes = parse_digits(trim(t.substr(c2 + 1)), 10);
        if (!va) fail(where, "memcpy.address", "invalid " + quoted(t.substr(c1 + 1, c2 - c1 - 1)));
        if (!bytes) fail(where, "memcpy.bytes", "invalid " + quoted(t.substr(c2 + 1)));
        if (*bytes == 0) continue;  // a zero-byte copy does nothing
        if (*va + *bytes < *va) fail(where, "memcpy.bytes", "range overflows");
        HostEvent ev;
        ev.type = HostEventType::CpuAccess;
        ev.kind = AccessKind::Write;
        ev.va = *va;
        ev.size = *bytes;
        b_.touched(ev.va, ev.size);
        b_.host_event(ev);
      } else if (t.substr(0, 6) == "Memcpy") {
        b_.count(
            "command-list lines other than MemcpyHtoD and kernels (ignored, as Accel-Sim does)");
      } else if (t.ends_with(".traceg")) {
        const std::filesystem::path p = dir / std::string(t);
        std::ifstream in = open_input(p);
        LineReader kr(in, p.string());
        const std::uint64_t base = r.bytes_consumed() + done;
        kernel(kr,
               progress ? ProgressFn([&](std::uint64_t n) { progress(base + n); }) : ProgressFn());
        done += kr.bytes_consumed();
      } else if (t.ends_with(".trace")) {
        fail(where, "kernel",
             quoted(t) +
                 " is a raw trace: run Accel-Sim's post-traces-processing on the "
                 "kernelslist to get .traceg files and kernelslist.g");
      } else {
        fail(where, "command", "expected MemcpyHtoD,... or kernel-N.traceg, got " + quoted(t));
      }
    }
    if (progress) progress(r.bytes_consumed() + done);
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw UserError(r_->where(), field, msg);
  }
  [[noreturn]] static void fail(const std::string& where, const std::string& field,
                                const std::string& msg) {
    throw UserError(where, field, msg);
  }

  std::uint32_t u32(std::string_view v, const char* field) const {
    const auto n = parse_digits(v, 10);
    if (!n || *n > 0xffffffffu) fail(field, "invalid " + quoted(v));
    return static_cast<std::uint32_t>(*n);
  }

  void end_warp() {
    if (have_warp_ && seen_ != expected_) {
      fail("warp", "warp " + std::to_string(warp_) + " has " + std::to_string(seen_) +
                       " instructions, its 'insts =' line says " + std::to_string(expected_));
    }
    have_warp_ = false;
  }

  void body_line(std::string_view t) {
    if (t.empty()) return;
    if (t[0] == '#') {
      if (t.substr(0, 9) == "#BEGIN_TB") {
        if (in_tb_) fail("tb", "#BEGIN_TB inside a threadblock (no #END_TB before it)");
        in_tb_ = true;
        have_tb_ = false;
      } else if (t.substr(0, 7) == "#END_TB") {
        if (!in_tb_) fail("tb", "#END_TB without #BEGIN_TB");
        end_warp();
        in_tb_ = false;
      }
      return;  // other comments (the "#traces format" line)
    }
    if (auto v = assignment(t, "thread block")) {
      if (!in_tb_) fail("tb", "'thread block' outside #BEGIN_TB / #END_TB");
      const auto d = index3(*v);
      if (!d) fail("tb", "invalid thread block " + quoted(*v) + " (x,y,z)");
      if (d->x >= grid_.x || d->y >= grid_.y || d->z >= grid_.z) {
        fail("tb", "thread block " + std::string(*v) + " outside the grid");
      }
      tb_ = d->x + std::uint64_t{d->y} * grid_.x + std::uint64_t{d->z} * grid_.x * grid_.y;
      have_tb_ = true;
      return;
    }
    if (auto v = assignment(t, "warp")) {
      if (!have_tb_) fail("warp", "'warp' line before 'thread block'");
      end_warp();
      warp_ = u32(*v, "warp");
      if (warp_ >= wpb_) {
        fail("warp", "warp " + std::to_string(warp_) + " outside the block (" +
                         std::to_string(wpb_) + " warps)");
      }
      have_warp_ = true;
      expected_ = std::numeric_limits<std::uint64_t>::max();
      seen_ = 0;
      gap_ = 0;
      return;
    }
    if (auto v = assignment(t, "insts")) {
      if (!have_warp_) fail("insts", "'insts' line before 'warp'");
      expected_ = u32(*v, "insts");
      return;
    }
    if (!have_warp_) fail("instruction", "instruction line outside a warp");
    if (++seen_ > expected_) {
      fail("instruction",
           "more instructions than the warp's 'insts = " + std::to_string(expected_) + "'");
    }
    instruction(t);
  }

  std::string_view token(std::string_view& rest, const char* field) const {
    const std::string_view tok = next_token(rest);
    if (tok.empty()) fail(field, "missing (truncated instruction line)");
    return tok;
  }

  void instruction(std::string_view rest) {
    if (version_ < 3) {
      for (int i = 0; i < 4; ++i) token(rest, "instruction.ids");  // tb x, y, z, warp
    }
    if (lineinfo_) token(rest, "instruction.line");
    const std::string_view pc_tok = token(rest, "instruction.pc");
    const auto pc = parse_hex(pc_tok);
    if (!pc) fail("instruction.pc", "invalid " + quoted(pc_tok));
    const std::string_view mask_tok = token(rest, "instruction.mask");
    const auto mask = parse_hex(mask_tok);
    if (!mask || *mask > 0xffffffffu) fail("instruction.mask", "invalid " + quoted(mask_tok));
    skip_registers(rest, "instruction.dest_num");
    const std::string_view opcode = token(rest, "instruction.opcode");
    skip_registers(rest, "instruction.src_num");
    const std::string_view width_tok = token(rest, "instruction.mem_width");
    const auto width = parse_digits(width_tok, 10);
    if (!width) fail("instruction.mem_width", "invalid " + quoted(width_tok));
    ++gap_;  // every instruction takes an issue cycle; memory ones reset it below
    if (*width == 0) return;

    const auto mode_tok = token(rest, "instruction.address_mode");
    const auto mode = parse_digits(mode_tok, 10);
    if (!mode || *mode > kBaseDelta)
      fail("instruction.address_mode", "invalid " + quoted(mode_tok));
    const unsigned active = static_cast<unsigned>(std::popcount(*mask));
    pages_.clear();
    if (*mode == kListAll) {
      for (unsigned i = 0; i < active; ++i) {
        const std::string_view a = token(rest, "instruction.address");
        const auto va = parse_hex(a);
        if (!va) fail("instruction.address", "invalid " + quoted(a));
        pages_.add(*va);
      }
    } else {
      const std::string_view b = token(rest, "instruction.base");
      const auto base = parse_hex(b);
      if (!base) fail("instruction.base", "invalid " + quoted(b));
      Addr va = *base;
      if (active > 0) pages_.add(va);
      if (*mode == kBaseStride) {
        const std::string_view s = token(rest, "instruction.stride");
        const auto stride = parse_int(s);
        if (!stride) fail("instruction.stride", "invalid " + quoted(s));
        for (unsigned i = 1; i < active; ++i) pages_.add(va += static_cast<Addr>(*stride));
      } else {
        for (unsigned i = 1; i < active; ++i) {
          const std::string_view d = token(rest, "instruction.delta");
          const auto delta = parse_int(d);
          if (!delta) fail("instruction.delta", "invalid " + quoted(d));
          pages_.add(va += static_cast<Addr>(*delta));
        }
      }
    }
    // Anything after the addresses (tracer version 5's immediate) carries no memory access.

    SassAccess sass = classify_sass(opcode);
    if (sass.space == MemSpace::Shared || sass.space == MemSpace::Local ||
        sass.space == MemSpace::Constant || sass.space == MemSpace::None) {
      if (sass.space == MemSpace::None) {
        b_.count(
            "memory instructions with an opcode not known to access global memory "
            "(dropped)");
      } else {
        b_.count("warp accesses to shared, local or constant memory (not UVM memory; dropped)");
      }
      return;
    }
    if (active == 0) return;  // predicated off: no access, but it took its issue cycle
    PendingAccess a;
    a.launch = launch_;
    a.tb = tb_;
    a.warp = static_cast<std::uint16_t>(warp_);
    a.kind = static_cast<std::uint8_t>(sass.kind);
    a.ref = b_.ref(*scope_, *pc);
    // Instructions since the warp's previous memory access, this one excluded: one issue
    // cycle each, the compute gap.
    a.time = gap_ - 1;
    gap_ = 0;
    for (unsigned p = 0; p < pages_.count; ++p) {
      a.va = pages_.va[p];
      a.bytes = pages_.lanes[p] * sass.bytes;
      b_.access(a);
      a.time = 0;  // the other pages of the same instruction
    }
  }

  void skip_registers(std::string_view& rest, const char* field) {
    const std::string_view n_tok = token(rest, field);
    const auto n = parse_digits(n_tok, 10);
    if (!n || *n > 64) fail(field, "invalid register count " + quoted(n_tok));
    for (std::uint64_t i = 0; i < *n; ++i) token(rest, field);
  }

  ImportBuilder& b_;
  LineReader* r_ = nullptr;
  Dim3 grid_;
  std::uint32_t wpb_ = 0, launch_ = 0;
  ImportBuilder::RefScope* scope_ = nullptr;
  std::uint64_t version_ = 0;
  bool lineinfo_ = false;
  bool in_tb_ = false, have_tb_ = false, have_warp_ = false;
  std::uint64_t tb_ = 0;
  std::uint32_t warp_ = 0;
  std::uint64_t expected_ = 0, seen_ = 0, gap_ = 0;
  LanePages pages_;
};

AccelsimParser::AccelsimParser(ImportBuilder& b) : impl_(std::make_unique<Impl>(b)) {}
AccelsimParser::~AccelsimParser() = default;

void AccelsimParser::read_kernel(std::istream& in, const std::string& name,
                                 const ProgressFn& progress) {
  LineReader r(in, name);
  impl_->kernel(r, progress);
}

void AccelsimParser::read_commands(std::istream& in, const std::string& name,
                                   const std::filesystem::path& dir, const ProgressFn& progress) {
  LineReader r(in, name);
  impl_->commands(r, dir, progress);
}

bool is_accelsim_kernel_trace(const std::filesystem::path& input) {
  return input.extension() == ".traceg";
}

std::vector<std::filesystem::path> accelsim_files(const std::filesystem::path& input) {
  std::vector<std::filesystem::path> files{input};
  if (is_accelsim_kernel_trace(input)) return files;
  std::ifstream in(input, std::ios::binary);
  if (!in) return files;
  try {
    LineReader r(in, input.string());
    std::string_view line;
    while (r.next(line)) {
      const std::string_view t = trim(line);
      if (t.ends_with(".traceg")) files.push_back(input.parent_path() / std::string(t));
    }
  } catch (const UserError&) {
    // Reported when the list is parsed for real.
  }
  return files;
}

}  // namespace uvmsim::trace::import
