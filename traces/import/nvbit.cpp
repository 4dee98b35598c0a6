#include "traces/import/nvbit.h"

#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "traces/import/lanes.h"
#include "traces/import/line_reader.h"
#include "traces/import/sass.h"
#include "traces/import/tokens.h"

namespace uvmsim::trace::import {

namespace {

constexpr std::string_view kPrefix = "MEMTRACE: ";
constexpr std::string_view kSep = " - ";
constexpr std::uint64_t kProgressLines = 1 << 14;
/// mem_trace prints no PC: ids then stand for (kernel, opcode), marked by this bit.
constexpr std::uint64_t kOpcodeRef = std::uint64_t{1} << 63;

/// Splits "a - b - c" into at most `max` fields; false if there are more.
template <std::size_t N>
std::size_t split_fields(std::string_view s, std::string_view (&out)[N]) {
  std::size_t n = 0;
  while (n < N) {
    const std::size_t p = s.find(kSep);
    out[n++] = s.substr(0, p);
    if (p == std::string_view::npos) return n;
    s.remove_prefix(p + kSep.size());
  }
  return N + 1;
}

/// "<key> <value>" -> value, when the field starts with key and a space.
std::optional<std::string_view> keyed(std::string_view field, std::string_view key) {
  if (field.size() > key.size() && field.substr(0, key.size()) == key && field[key.size()] == ' ') {
    return trim(field.substr(key.size() + 1));
  }
  return std::nullopt;
}

/// "x,y,z" where each component may be 0 (a CTA index).
std::optional<Dim3> parse_index3(std::string_view s) {
  Dim3 d;
  std::uint32_t* out[3] = {&d.x, &d.y, &d.z};
  for (int i = 0; i < 3; ++i) {
    const std::size_t comma = s.find(',');
    if ((comma == std::string_view::npos) != (i == 2)) return std::nullopt;
    const auto v = parse_digits(s.substr(0, comma), 10);
    if (!v || *v > 0xffffffffu) return std::nullopt;
    *out[i] = static_cast<std::uint32_t>(*v);
    if (comma != std::string_view::npos) s.remove_prefix(comma + 1);
  }
  return d;
}

}  // namespace

class NvbitParser::Impl {
 public:
  explicit Impl(ImportBuilder& b) : b_(b) {}

  void run(LineReader& r, const ProgressFn& progress) {
    r_ = &r;
    std::string_view line;
    while (r.next(line)) {
      if (progress && r.line_number() % kProgressLines == 0) progress(r.bytes_consumed());
      if (line.substr(0, kPrefix.size()) != kPrefix) continue;  // the application's own output
      const std::string_view rest = line.substr(kPrefix.size());
      if (rest.find(" - LAUNCH - ") != std::string_view::npos) {
        launch(rest);
      } else if (rest.substr(0, 4) == "CTA " || rest.find(" - CTA ") != std::string_view::npos) {
        access(rest);
      }
      // Anything else is one of mem_trace's informational lines (contexts, verbose output).
    }
    if (progress) progress(r.bytes_consumed());
  }

 private:
  struct Launch {
    std::uint32_t index;
    Dim3 grid;
    ImportBuilder::RefScope* scope;
    std::string kernel;
  };

  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw UserError(r_->where(), field, msg);
  }

  void launch(std::string_view rest) {
    std::string_view f[16];
    const std::size_t n = split_fields(rest, f);
    if (n > 16) fail("launch", "too many fields");
    KernelInfo k;
    std::optional<std::uint64_t> id;
    bool have_name = false, have_grid = false, have_block = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (auto v = keyed(f[i], "Kernel name")) {
        k.name = std::string(*v);
        have_name = !k.name.empty();
      } else if (auto g = keyed(f[i], "grid size")) {
        const auto d = parse_dim3(*g);
        if (!d) fail("launch.grid", "invalid grid size " + quoted(*g));
        k.grid = *d;
        have_grid = true;
      } else if (auto bl = keyed(f[i], "block size")) {
        const auto d = parse_dim3(*bl);
        if (!d) fail("launch.block", "invalid block size " + quoted(*bl));
        k.block = *d;
        have_block = true;
      } else if (auto r = keyed(f[i], "nregs")) {
        const auto v2 = parse_digits(*r, 10);
        if (!v2 || *v2 > 0xffffffffu) fail("launch.nregs", "invalid " + quoted(*r));
        k.regs_per_thread = static_cast<std::uint32_t>(*v2);
      } else if (auto s = keyed(f[i], "shmem")) {
        const auto v2 = parse_digits(*s, 10);
        if (!v2 || *v2 > 0xffffffffu) fail("launch.shmem", "invalid " + quoted(*s));
        k.shared_mem_bytes = static_cast<std::uint32_t>(*v2);
      } else if (auto gid = keyed(f[i], "grid launch id")) {
        id = parse_digits(*gid, 10);
        if (!id) fail("launch.grid_launch_id", "invalid " + quoted(*gid));
      }
    }
    if (!have_name) fail("launch", "no 'Kernel name' field");
    if (!have_grid) fail("launch", "no 'grid size' field");
    if (!have_block) fail("launch", "no 'block size' field");
    const std::uint32_t kid = b_.kernel(k, r_->where());
    Launch l{b_.launch(kid), k.grid, &b_.ref_scope(k.name), k.name};
    if (id) by_grid_id_[*id] = l;
    current_ = l;
    have_current_ = true;
  }

  void access(std::string_view rest) {
    std::string_view f[8];
    const std::size_t n = split_fields(rest, f);
    if (n > 8 || n < 4) fail("access", "expected 'CTA x,y,z - warp W - OPCODE - addresses'");
    const Launch* l = have_current_ ? &current_ : nullptr;
    std::optional<Dim3> cta;
    std::optional<std::uint64_t> warp, pc;
    for (std::size_t i = 0; i + 2 < n; ++i) {
      if (auto v = keyed(f[i], "grid_launch_id")) {
        const auto id = parse_digits(*v, 10);
        if (!id) fail("access.grid_launch_id", "invalid " + quoted(*v));
        const auto it = by_grid_id_.find(*id);
        if (it == by_grid_id_.end()) {
          fail("access.grid_launch_id",
               "grid launch " + std::to_string(*id) + " has no LAUNCH line before it");
        }
        l = &it->second;
      } else if (auto c = keyed(f[i], "CTA")) {
        cta = parse_index3(*c);
        if (!cta) fail("access.cta", "invalid CTA " + quoted(*c) + " (x,y,z)");
      } else if (auto w = keyed(f[i], "warp")) {
        warp = parse_digits(*w, 10);
        if (!warp || *warp > 0xffff) fail("access.warp", "invalid warp " + quoted(*w));
      } else if (auto p = keyed(f[i], "pc")) {
        pc = parse_hex(*p);
        if (!pc) fail("access.pc", "invalid pc " + quoted(*p));
      }
    }
    if (!cta) fail("access", "no 'CTA x,y,z' field");
    if (!warp) fail("access", "no 'warp W' field");
    if (l == nullptr) fail("access", "access line before any LAUNCH line");
    if (cta->x >= l->grid.x || cta->y >= l->grid.y || cta->z >= l->grid.z) {
      fail("access.cta", "CTA " + std::to_string(cta->x) + "," + std::to_string(cta->y) + "," +
                             std::to_string(cta->z) + " outside the launch's grid");
    }
    const std::string_view opcode = trim(f[n - 2]);
    if (opcode.empty()) fail("access.opcode", "missing");
    SassAccess sass = classify_sass(opcode);
    if (sass.space == MemSpace::Shared || sass.space == MemSpace::Local ||
        sass.space == MemSpace::Constant) {
      b_.count("warp accesses to shared, local or constant memory (not UVM memory; dropped)");
      return;
    }
    if (sass.space == MemSpace::None) {
      b_.count("warp accesses with an unknown opcode (imported as global reads)");
      sass.space = MemSpace::Global;
    }

    // Addresses of the 32 lanes. mem_trace prints all 32 whether or not a lane was active;
    // inactive lanes read as 0 (or repeat an active lane's address, which the page grouping
    // absorbs), so 0 is skipped.
    pages_.clear();
    std::string_view addrs = f[n - 1];
    unsigned lanes = 0;
    for (std::string_view t = next_token(addrs); !t.empty(); t = next_token(addrs)) {
      if (++lanes > 32) fail("access.addresses", "more than 32 addresses");
      const auto va = parse_hex(t);
      if (!va) fail("access.addresses", "invalid address " + quoted(t));
      if (*va != 0) pages_.add(*va);
    }
    if (lanes == 0) fail("access.addresses", "no addresses");

    std::uint64_t key = 0;
    if (pc) {
      key = *pc & ~kOpcodeRef;
    } else {
      key = kOpcodeRef | opcode_index(opcode);
    }
    PendingAccess a;
    a.launch = l->index;
    a.tb =
        cta->x + std::uint64_t{cta->y} * l->grid.x + std::uint64_t{cta->z} * l->grid.x * l->grid.y;
    a.warp = static_cast<std::uint16_t>(*warp);
    a.kind = static_cast<std::uint8_t>(sass.kind);
    a.flags = PendingAccess::kHwWarp;
    a.ref = b_.ref(*l->scope, key);
    for (unsigned p = 0; p < pages_.count; ++p) {
      a.va = pages_.va[p];
      const std::uint64_t bytes = std::uint64_t{pages_.lanes[p]} * sass.bytes;
      a.bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(bytes, 0xffffffffu));
      b_.access(a);
    }
  }

  /// A program has a few dozen distinct memory opcodes: a linear scan, no allocation per line.
  std::uint64_t opcode_index(std::string_view opcode) {
    for (std::size_t i = 0; i < opcodes_.size(); ++i) {
      if (opcodes_[i] == opcode) return i;
    }
    opcodes_.emplace_back(opcode);
    return opcodes_.size() - 1;
  }

  ImportBuilder& b_;
  LineReader* r_ = nullptr;
  std::unordered_map<std::uint64_t, Launch> by_grid_id_;
  Launch current_{};
  bool have_current_ = false;
  std::vector<std::string> opcodes_;
  LanePages pages_;
};

NvbitParser::NvbitParser(ImportBuilder& b) : impl_(std::make_unique<Impl>(b)) {}
NvbitParser::~NvbitParser() = default;

void NvbitParser::read(std::istream& in, const std::string& name, const ProgressFn& progress) {
  LineReader r(in, name);
  impl_->run(r, progress);
}

void import_nvbit(std::istream& in, const std::string& name, ImportBuilder& b,
                  const ProgressFn& progress) {
  NvbitParser(b).read(in, name, progress);
}

}  // namespace uvmsim::trace::import
