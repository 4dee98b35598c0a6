// Generator registry, parameter resolution and the helpers the generators share.
#include "traces/generators/generator.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <system_error>

#include "core/error.h"
#include "core/units.h"

namespace uvmsim::gen {

namespace {

// Function-local so that registrations from other translation units' static initialisers never
// run before the registry exists.
std::vector<Generator>& registry() {
  static std::vector<Generator> r;
  return r;
}

std::string join_names(const std::vector<ParamSpec>& specs) {
  std::string out;
  for (const auto& s : specs) out += (out.empty() ? "" : ", ") + s.name;
  return out.empty() ? "none" : out;
}

}  // namespace

// ---- registry ---------------------------------------------------------------------------------

void register_generator(Generator g) {
  if (find_generator(g.name) != nullptr) {
    throw std::logic_error("generator '" + g.name + "' registered twice");
  }
  registry().push_back(std::move(g));
}

std::vector<const Generator*> generators() {
  std::vector<const Generator*> out;
  for (const auto& g : registry()) out.push_back(&g);
  std::sort(out.begin(), out.end(),
            [](const Generator* a, const Generator* b) { return a->name < b->name; });
  return out;
}

const Generator* find_generator(const std::string& name) {
  for (const auto& g : registry()) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

const std::vector<ParamSpec>& common_params() {
  static const std::vector<ParamSpec> specs{
      {"alloc", "managed",
       "how the program allocates its arrays: managed (cudaMallocManaged) or system (malloc/mmap "
       "on a platform whose GPU shares the CPU page table, such as gh200: placed by first touch, "
       "read remotely where it lies; docs/platforms.md)"}};
  return specs;
}

bool takes_param(const Generator& g, const std::string& name) {
  const auto named = [&name](const ParamSpec& s) { return s.name == name; };
  return std::any_of(g.params.begin(), g.params.end(), named) ||
         std::any_of(common_params().begin(), common_params().end(), named);
}

std::string param_list(const Generator& g) {
  return "its parameters: " + join_names(g.params) +
         "; every generator's: " + join_names(common_params());
}

void generate(const std::string& name, std::uint64_t footprint, const ParamMap& params,
              std::uint64_t seed, const std::filesystem::path& output, trace::WriterOptions opts) {
  const Generator* g = find_generator(name);
  if (g == nullptr) {
    throw UserError("unknown generator '" + name + "' (uvmsim gen --list shows them all)");
  }
  for (const auto& [key, value] : params) {
    if (!takes_param(*g, key)) {
      throw UserError("--param " + key + ": unknown parameter of generator '" + name + "' (" +
                      param_list(*g) + ")");
    }
  }
  ParamMap values;
  nlohmann::json recorded = {{"footprint", footprint}, {"seed", seed}};
  // alloc: which allocator the program uses. Recorded only when it is not the default, so a
  // managed-memory trace is the same with or without the parameter.
  if (const auto it = params.find("alloc"); it != params.end()) {
    if (it->second != "managed" && it->second != "system") {
      throw UserError("--param alloc: '" + it->second + "' is not one of managed, system");
    }
    if (it->second == "system") {
      opts.system_allocations = true;
      recorded["alloc"] = "system";
    }
  }
  for (const ParamSpec& s : g->params) {
    const auto it = params.find(s.name);
    if (it != params.end()) {
      values[s.name] = it->second;
    } else if (s.required) {
      throw UserError("--param " + s.name + ": required by generator '" + name + "'");
    } else {
      values[s.name] = s.default_value;
    }
    // Typed getters overwrite this with the parsed value; the text is the fallback so that
    // every parameter is recorded even if a generator never reads it.
    recorded[s.name] = values[s.name];
  }

  const std::filesystem::path parent = output.parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    throw UserError(output.string(), "open", "directory '" + parent.string() + "' does not exist");
  }

  // Write next to the destination and rename at the end: a failed or interrupted run never
  // leaves a half-written trace under the requested name.
  std::filesystem::path partial = output;
  partial += ".partial";
  GenContext ctx{name,    footprint, seed, ResolvedParams(std::move(values), std::move(recorded)),
                 partial, opts};
  try {
    g->run(ctx);
    std::filesystem::rename(partial, output);
  } catch (...) {
    std::filesystem::remove(partial, ec);
    throw;
  }
}

// ---- parameters -------------------------------------------------------------------------------

ResolvedParams::ResolvedParams(ParamMap values, nlohmann::json recorded)
    : values_(std::move(values)), recorded_(std::move(recorded)) {}

void ResolvedParams::fail(const std::string& name, const std::string& msg) const {
  throw UserError("--param " + name + ": " + msg);
}

const std::string& ResolvedParams::text(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error("generator reads undeclared param " + name);
  return it->second;
}

std::uint64_t ResolvedParams::size(const std::string& name) {
  const std::uint64_t v = parse_size(text(name), "--param " + name);
  recorded_[name] = v;
  return v;
}

std::uint64_t ResolvedParams::integer(const std::string& name, std::uint64_t min,
                                      std::uint64_t max) {
  const std::string& t = text(name);
  std::uint64_t v = 0;
  bool ok = !t.empty() && t.size() <= 19 && t.find_first_not_of("0123456789") == std::string::npos;
  if (ok) v = std::stoull(t);
  if (!ok || v < min || v > max) {
    fail(name, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                   "], got '" + t + "'");
  }
  recorded_[name] = v;
  return v;
}

std::string ResolvedParams::choice(const std::string& name,
                                   const std::vector<std::string>& choices) {
  const std::string& t = text(name);
  if (std::find(choices.begin(), choices.end(), t) == choices.end()) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : "|") + c;
    fail(name, "expected one of " + list + ", got '" + t + "'");
  }
  recorded_[name] = t;
  return t;
}

std::vector<std::uint64_t> ResolvedParams::size_list(const std::string& name) {
  const std::string& t = text(name);
  if (t.empty()) fail(name, "expected a comma-separated list of sizes");
  std::vector<std::uint64_t> out;
  for (const std::string& item : split(t, ',')) {
    out.push_back(parse_size(item, "--param " + name));
  }
  recorded_[name] = out;
  return out;
}

trace::Metadata GenContext::metadata() const {
  trace::Metadata m;
  m.workload = generator;
  m.params = params.recorded();
  m.extra = {{"generator", "uvmsim gen " + generator}};
  return m;
}

// ---- helpers ----------------------------------------------------------------------------------

std::vector<Addr> place_allocations(
    trace::Metadata& meta, const std::vector<std::pair<std::string, std::uint64_t>>& allocs,
    bool managed) {
  std::vector<Addr> bases;
  Addr next = kFirstAllocationBase;
  for (const auto& a : meta.allocations) {
    next = std::max(next, ((a.base + a.size + kBlockSize - 1) & ~(kBlockSize - 1)) + kBlockSize);
  }
  for (const auto& [name, size] : allocs) {
    trace::Allocation a;
    a.id = static_cast<std::uint32_t>(meta.allocations.size());
    a.name = name;
    a.base = next;
    a.size = size;
    a.managed = managed;
    meta.allocations.push_back(a);
    bases.push_back(next);
    // Round up to the next 2 MB VA block and leave one empty block as a guard, so that no two
    // allocations share a VA block (as with real cudaMallocManaged allocations of this size).
    next = ((next + size + kBlockSize - 1) & ~(kBlockSize - 1)) + kBlockSize;
  }
  return bases;
}

void warp_instruction(trace::TraceWriter& w, std::uint32_t warp, std::span<const Addr> lane_va,
                      std::uint32_t lane_bytes, AccessKind kind, std::uint32_t ref,
                      std::uint32_t gap, std::uint32_t repeat) {
  const std::size_t lanes = std::min<std::size_t>(lane_va.size(), 32);
  if (lanes == 0) return;
  trace::AccessRecord r;
  r.ref_id = ref;
  r.kind = kind;
  r.repeat = repeat;
  // Most instructions are coalesced or a broadcast: every lane in lane 0's page. Testing that
  // first is a branch-free OR-reduction the compiler vectorises, instead of the page search
  // below: (a ^ b) >> kPageShift is nonzero exactly when a and b are in different pages.
  Addr differ = 0;
  for (std::size_t i = 1; i < lanes; ++i) differ |= (lane_va[i] ^ lane_va[0]) >> kPageShift;
  if (differ == 0) {
    r.va = lane_va[0];
    r.gap_cycles = gap;
    r.bytes = static_cast<std::uint32_t>(lanes) * lane_bytes;
    w.access(warp, r);
    return;
  }
  // At most 32 lanes, so a search over a fixed array beats any allocation. Consecutive lanes
  // usually share a page or move on to a new one, so the previous lane's page is tried first.
  Addr page_va[32];
  std::uint32_t lanes_in_page[32];
  std::size_t pages = 0, last = 0;
  for (std::size_t i = 0; i < lanes; ++i) {
    const Addr page = lane_va[i] >> kPageShift;
    std::size_t p = last;
    if (pages == 0 || (page_va[p] >> kPageShift) != page) {
      p = 0;
      while (p < pages && (page_va[p] >> kPageShift) != page) ++p;
      if (p == pages) {
        page_va[pages] = lane_va[i];
        lanes_in_page[pages] = 0;
        ++pages;
      }
    }
    ++lanes_in_page[p];
    last = p;
  }
  for (std::size_t p = 0; p < pages; ++p) {
    r.va = page_va[p];
    r.gap_cycles = p == 0 ? gap : 0;
    r.bytes = lanes_in_page[p] * lane_bytes;
    w.access(warp, r);
  }
}

std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  // Reject the lowest (2^64 mod n) values so that the remaining range is a multiple of n.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t x = rng();
    if (x >= threshold) return x % n;
  }
}

std::vector<std::uint64_t> random_permutation(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::uint64_t> perm(n);
  for (std::uint64_t i = 0; i < n; ++i) perm[i] = i;
  std::mt19937_64 rng(seed);
  for (std::uint64_t i = n; i > 1; --i) {
    const std::uint64_t j = uniform_below(rng, i);
    std::swap(perm[i - 1], perm[j]);
  }
  return perm;
}

}  // namespace uvmsim::gen
