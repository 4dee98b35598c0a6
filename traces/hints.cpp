// Hints <-> JSON, validation and the consistency check against a trace's metadata.
#include "traces/hints.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "core/error.h"
#include "core/json_input.h"
#include "traces/json_fields.h"
#include "traces/trace.h"

namespace uvmsim::trace {

using detail::Fields;
using nlohmann::json;

namespace {

constexpr const char* kFormatName = "uvmsim-hints";

const char* const kPatternNames[] = {"streaming", "strided", "tiled", "shared", "irregular"};

json poly_to_json(const Poly& a) {
  if (a.per_iteration == 0 && a.per_iteration_squared == 0) return a.base;
  json j{{"base", a.base}, {"per_iteration", a.per_iteration}};
  if (a.per_iteration_squared != 0) j["per_iteration_squared"] = a.per_iteration_squared;
  return j;
}

/// Hint-specific readers on top of the shared field reader.
struct HintFields : Fields {
  using Fields::Fields;

  Poly poly(const std::string& key, bool required) const {
    const json* v = find(key, required);
    if (v == nullptr) return {};
    if (v->is_number_integer()) return {to_i64(*v, field(key)), 0};
    if (!v->is_object()) {
      fail(field(key), "expected an integer or {\"base\": B, \"per_iteration\": S}");
    }
    const Fields f(*v, where(), field(key));
    return {f.i64("base", true), f.i64("per_iteration", false),
            f.i64("per_iteration_squared", false)};
  }

  AccessPattern pattern(const std::string& key) const {
    const std::string s = str(key, true);
    for (std::size_t i = 0; i < std::size(kPatternNames); ++i) {
      if (s == kPatternNames[i]) return static_cast<AccessPattern>(i);
    }
    fail(field(key), "unknown access pattern '" + s +
                         "' (expected streaming, strided, tiled, shared or irregular)");
  }

  AccessKind kind(const std::string& key) const {
    const std::string s = str(key, true);
    if (s == "read") return AccessKind::Read;
    if (s == "write") return AccessKind::Write;
    if (s == "atomic") return AccessKind::Atomic;
    fail(field(key), "unknown access kind '" + s + "' (expected read, write or atomic)");
  }
};

}  // namespace

const char* to_string(HintSource s) { return s == HintSource::Static ? "static" : "profile"; }

const char* to_string(AccessPattern p) { return kPatternNames[static_cast<std::size_t>(p)]; }

namespace {

std::int64_t add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw PolyOverflow();
  return r;
}

std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw PolyOverflow();
  return r;
}

}  // namespace

std::uint64_t Poly::at(std::int32_t iteration) const {
  // Exact in 128 bits: |coefficient| <= 2^63 and it^2 < 2^62, so each term is below 2^125.
  __extension__ typedef __int128 Wide;
  const Wide it = iteration < 0 ? 0 : iteration;
  const Wide v = Wide{base} + Wide{per_iteration} * it + Wide{per_iteration_squared} * it * it;
  if (v < 0) return 0;
  constexpr Wide kMax = std::numeric_limits<std::int64_t>::max();
  return static_cast<std::uint64_t>(v > kMax ? kMax : v);
}

Poly Poly::operator+(const Poly& o) const {
  return {add(base, o.base), add(per_iteration, o.per_iteration),
          add(per_iteration_squared, o.per_iteration_squared)};
}

Poly Poly::operator*(std::int64_t k) const {
  return {mul(base, k), mul(per_iteration, k), mul(per_iteration_squared, k)};
}

Poly Poly::operator*(const Poly& o) const {
  if ((per_iteration_squared != 0 && (o.per_iteration != 0 || o.per_iteration_squared != 0)) ||
      (o.per_iteration_squared != 0 && per_iteration != 0)) {
    throw std::logic_error("Poly product exceeds degree 2");
  }
  return {mul(base, o.base), add(mul(base, o.per_iteration), mul(per_iteration, o.base)),
          add(add(mul(base, o.per_iteration_squared), mul(per_iteration_squared, o.base)),
              mul(per_iteration, o.per_iteration))};
}

const UseHint* KernelHint::use(std::uint32_t alloc) const {
  for (const auto& u : uses) {
    if (u.alloc == alloc) return &u;
  }
  return nullptr;
}

const KernelHint* Hints::kernel(std::uint32_t id) const {
  for (const auto& k : kernels) {
    if (k.kernel == id) return &k;
  }
  return nullptr;
}

json Hints::to_json() const {
  json allocs = json::array();
  for (const auto& a : allocations) {
    allocs.push_back({{"id", a.id}, {"name", a.name}, {"size", a.size}});
  }
  json kerns = json::array();
  for (const auto& k : kernels) {
    json uses = json::array();
    for (const auto& u : k.uses) {
      uses.push_back({{"alloc", u.alloc},
                      {"reads", poly_to_json(u.reads)},
                      {"writes", poly_to_json(u.writes)},
                      {"bytes", poly_to_json(u.bytes)},
                      {"bytes_per_tb", poly_to_json(u.bytes_per_tb)},
                      {"pattern", to_string(u.pattern)},
                      {"data_dependent", u.data_dependent},
                      {"iteration_dependent", u.iteration_dependent},
                      {"estimated", u.estimated}});
    }
    json refs = json::array();
    for (const auto& r : k.refs) {
      json jr = {{"id", r.id},
                 {"alloc", r.alloc},
                 {"kind", uvmsim::to_string(r.kind)},
                 {"bytes", r.bytes},
                 {"count", poly_to_json(r.count)},
                 {"bytes_per_tb", poly_to_json(r.bytes_per_tb)},
                 {"pattern", to_string(r.pattern)},
                 {"data_dependent", r.data_dependent},
                 {"conditional", r.conditional}};
      if (r.window) {
        jr["window"] = {{"start", poly_to_json(r.window->start)},
                        {"span", poly_to_json(r.window->span)}};
      }
      refs.push_back(std::move(jr));
    }
    kerns.push_back(
        {{"kernel", k.kernel}, {"name", k.name}, {"uses", std::move(uses)}, {"refs", refs}});
  }
  json launch_list = json::array();
  for (const auto& l : launches) {
    json next = json::array();
    for (const auto& [alloc, n] : l.next_use) next.push_back(json::array({alloc, n}));
    launch_list.push_back({{"launch", l.launch},
                           {"kernel", l.kernel},
                           {"iteration", l.iteration},
                           {"next_use", next}});
  }
  return json{{"format", kFormatName},  {"version", version},    {"source", to_string(source)},
              {"workload", workload},   {"allocations", allocs}, {"kernels", kerns},
              {"launches", launch_list}};
}

Hints Hints::from_json(const json& j, const std::string& where, const std::string& path) {
  const HintFields root(j, where, path);
  Hints h;
  if (root.has("format") && root.str("format", true) != kFormatName) {
    root.fail(root.field("format"), "expected \"uvmsim-hints\"");
  }
  h.version = root.u32("version", true);
  if (h.version != kHintsVersion) {
    root.fail(root.field("version"), "unsupported hints version " + std::to_string(h.version) +
                                         " (this build reads version " +
                                         std::to_string(kHintsVersion) + ")");
  }
  const std::string source = root.str("source", true);
  if (source == "static") {
    h.source = HintSource::Static;
  } else if (source == "profile") {
    h.source = HintSource::Profile;
  } else {
    root.fail(root.field("source"), "expected \"static\" or \"profile\", got '" + source + "'");
  }
  h.workload = root.str("workload", false);

  const json& allocs = root.array("allocations");
  std::set<std::uint32_t> alloc_ids;
  for (std::size_t i = 0; i < allocs.size(); ++i) {
    const HintFields f(allocs[i], where, path + ".allocations[" + std::to_string(i) + "]");
    AllocationHint a;
    a.id = f.u32("id", true);
    a.name = f.str("name", true);
    a.size = f.u64("size", true);
    if (a.size == 0) f.fail(f.field("size"), "must be positive");
    if (!alloc_ids.insert(a.id).second) {
      f.fail(f.field("id"), "duplicate allocation id " + std::to_string(a.id));
    }
    h.allocations.push_back(std::move(a));
  }

  const json& kerns = root.array("kernels");
  // A static instruction belongs to one kernel function: kernel entries of the same function (other
  // launch configurations or pointer bindings) may list it again, other functions may not.
  std::map<std::uint32_t, std::string> ref_owner;
  for (std::size_t i = 0; i < kerns.size(); ++i) {
    const std::string kpath = path + ".kernels[" + std::to_string(i) + "]";
    const HintFields f(kerns[i], where, kpath);
    KernelHint k;
    k.kernel = f.u32("kernel", true);
    k.name = f.str("name", false);
    if (h.kernel(k.kernel) != nullptr) {
      f.fail(f.field("kernel"), "duplicate kernel id " + std::to_string(k.kernel));
    }
    const json& uses = f.array("uses");
    for (std::size_t u = 0; u < uses.size(); ++u) {
      const HintFields g(uses[u], where, kpath + ".uses[" + std::to_string(u) + "]");
      UseHint use;
      use.alloc = g.u32("alloc", true);
      if (!alloc_ids.count(use.alloc)) {
        g.fail(g.field("alloc"), "allocation " + std::to_string(use.alloc) + " is not listed");
      }
      if (k.use(use.alloc) != nullptr) {
        g.fail(g.field("alloc"), "allocation " + std::to_string(use.alloc) + " listed twice");
      }
      use.reads = g.poly("reads", true);
      use.writes = g.poly("writes", true);
      use.bytes = g.poly("bytes", true);
      use.bytes_per_tb = g.poly("bytes_per_tb", true);
      use.pattern = g.pattern("pattern");
      use.data_dependent = g.boolean("data_dependent", false);
      use.iteration_dependent = g.boolean("iteration_dependent", false);
      use.estimated = g.boolean("estimated", false);
      k.uses.push_back(use);
    }
    const json refs = f.array_or_empty("refs");
    // Per allocation: sums over the memops, which must agree with the use's totals.
    struct Sums {
      Poly reads, writes, bytes;
      bool data_dependent = false, iteration_dependent = false, estimated = false;
    };
    std::map<std::uint32_t, Sums> sums;
    for (std::size_t r = 0; r < refs.size(); ++r) {
      const HintFields g(refs[r], where, kpath + ".refs[" + std::to_string(r) + "]");
      RefHint ref;
      ref.id = g.u32("id", true);
      const auto [owner, fresh] = ref_owner.emplace(ref.id, k.name);
      const bool listed_here = std::any_of(k.refs.begin(), k.refs.end(),
                                           [&](const RefHint& o) { return o.id == ref.id; });
      if (listed_here || (!fresh && (owner->second != k.name || k.name.empty()))) {
        g.fail(g.field("id"), "duplicate ref id " + std::to_string(ref.id) +
                                  " (ref ids are unique across the whole program)");
      }
      ref.alloc = g.u32("alloc", true);
      if (k.use(ref.alloc) == nullptr) {
        g.fail(g.field("alloc"),
               "allocation " + std::to_string(ref.alloc) + " is not in this kernel's uses");
      }
      ref.kind = g.kind("kind");
      ref.bytes = g.u32("bytes", true);
      if (ref.bytes == 0) g.fail(g.field("bytes"), "must be positive");
      ref.count = g.poly("count", true);
      ref.bytes_per_tb = g.poly("bytes_per_tb", true);
      ref.pattern = g.pattern("pattern");
      ref.data_dependent = g.boolean("data_dependent", false);
      ref.conditional = g.boolean("conditional", false);
      if (g.has("window")) {
        const HintFields w(refs[r]["window"], where, g.field("window"));
        ref.window = IterationWindow{w.poly("start", true), w.poly("span", true)};
      }
      Sums& s = sums[ref.alloc];
      try {
        (ref.kind == AccessKind::Read ? s.reads : s.writes) =
            (ref.kind == AccessKind::Read ? s.reads : s.writes) + ref.count;
        s.bytes = s.bytes + ref.count * ref.bytes;
      } catch (const PolyOverflow&) {
        g.fail(g.field("count"),
               "count x bytes, summed over this allocation's refs, overflows 64 bits");
      }
      s.data_dependent |= ref.data_dependent;
      s.iteration_dependent |= ref.window.has_value();
      s.estimated |= ref.data_dependent || ref.conditional;
      k.refs.push_back(ref);
    }
    for (std::size_t u = 0; u < k.uses.size(); ++u) {
      const auto it = sums.find(k.uses[u].alloc);
      if (it == sums.end()) continue;  // no memops listed for this allocation
      const std::string upath = kpath + ".uses[" + std::to_string(u) + "]";
      const UseHint& use = k.uses[u];
      auto check = [&](const char* field, bool ok) {
        if (!ok) {
          throw UserError(where, upath + "." + field,
                          "disagrees with the sum over this allocation's refs");
        }
      };
      check("reads", use.reads == it->second.reads);
      check("writes", use.writes == it->second.writes);
      check("bytes", use.bytes == it->second.bytes);
      check("data_dependent", use.data_dependent == it->second.data_dependent);
      check("iteration_dependent", use.iteration_dependent == it->second.iteration_dependent);
      check("estimated", use.estimated == it->second.estimated);
    }
    h.kernels.push_back(std::move(k));
  }

  const json launch_list = root.array_or_empty("launches");
  for (std::size_t i = 0; i < launch_list.size(); ++i) {
    const HintFields f(launch_list[i], where, path + ".launches[" + std::to_string(i) + "]");
    LaunchHint l;
    l.launch = f.u32("launch", true);
    if (l.launch != i) f.fail(f.field("launch"), "expected " + std::to_string(i));
    l.kernel = f.u32("kernel", true);
    const KernelHint* k = h.kernel(l.kernel);
    if (k == nullptr)
      f.fail(f.field("kernel"), "kernel " + std::to_string(l.kernel) + " is not listed");
    const std::int64_t it = f.i64("iteration", false, -1);
    if (it < -1 || it > 0x7fffffff) f.fail(f.field("iteration"), "must be in -1..2147483647");
    l.iteration = static_cast<std::int32_t>(it);
    const json& next = f.array("next_use");
    for (std::size_t n = 0; n < next.size(); ++n) {
      const std::string npath = f.field("next_use") + "[" + std::to_string(n) + "]";
      if (!next[n].is_array() || next[n].size() != 2) {
        throw UserError(where, npath, "expected [allocation id, next launch index or -1]");
      }
      const std::uint64_t alloc = f.to_u64(next[n][0], npath + "[0]");
      const std::int64_t nl = f.to_i64(next[n][1], npath + "[1]");
      if (alloc > 0xffffffffu || k->use(static_cast<std::uint32_t>(alloc)) == nullptr) {
        throw UserError(where, npath + "[0]",
                        "allocation " + std::to_string(alloc) + " is not used by kernel " +
                            std::to_string(l.kernel));
      }
      if (nl != -1 && (nl <= static_cast<std::int64_t>(i) ||
                       nl >= static_cast<std::int64_t>(launch_list.size()))) {
        throw UserError(where, npath + "[1]",
                        "next use " + std::to_string(nl) + " must be -1 or a later launch (" +
                            std::to_string(i + 1) + ".." + std::to_string(launch_list.size() - 1) +
                            ")");
      }
      l.next_use.emplace_back(static_cast<std::uint32_t>(alloc), nl);
    }
    h.launches.push_back(std::move(l));
  }
  return h;
}

Hints Hints::load(const std::filesystem::path& file) {
  if (!std::ifstream(file)) throw UserError(file.string(), "open", "cannot read the hints file");
  return from_json(read_json_file(file), file.string());
}

void Hints::save(const std::filesystem::path& file) const {
  std::ofstream out(file);
  if (!out) throw UserError(file.string(), "open", "cannot write the hints file");
  out << to_json().dump(1) << "\n";
}

void Hints::check_against(const Metadata& meta, const std::string& where,
                          const std::vector<std::uint32_t>* launch_kernels) const {
  for (std::size_t i = 0; i < allocations.size(); ++i) {
    const AllocationHint& a = allocations[i];
    const std::string field = "hints.allocations[" + std::to_string(i) + "]";
    const Allocation* m = meta.find_allocation(a.id);
    if (m == nullptr) {
      throw UserError(where, field + ".id", "the trace has no allocation " + std::to_string(a.id));
    }
    if (m->name != a.name || m->size != a.size) {
      throw UserError(where, field,
                      "'" + a.name + "' (" + std::to_string(a.size) +
                          " bytes) does not match the "
                          "trace's allocation '" +
                          m->name + "' (" + std::to_string(m->size) + " bytes)");
    }
  }
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const KernelInfo* k = meta.find_kernel(kernels[i].kernel);
    const std::string field = "hints.kernels[" + std::to_string(i) + "]";
    if (k == nullptr) {
      throw UserError(where, field + ".kernel",
                      "the trace has no kernel " + std::to_string(kernels[i].kernel));
    }
    if (!kernels[i].name.empty() && kernels[i].name != k->name) {
      throw UserError(where, field + ".name",
                      "'" + kernels[i].name + "' but the trace's kernel is '" + k->name + "'");
    }
  }
  if (launch_kernels != nullptr && !launches.empty()) {
    if (launches.size() != launch_kernels->size()) {
      throw UserError(where, "hints.launches",
                      std::to_string(launches.size()) + " launches, the trace has " +
                          std::to_string(launch_kernels->size()));
    }
    for (std::size_t i = 0; i < launches.size(); ++i) {
      if (launches[i].kernel != (*launch_kernels)[i]) {
        throw UserError(where, "hints.launches[" + std::to_string(i) + "].kernel",
                        "kernel " + std::to_string(launches[i].kernel) +
                            " but the trace launches kernel " +
                            std::to_string((*launch_kernels)[i]));
      }
    }
  }
}

}  // namespace uvmsim::trace
