// Metadata <-> JSON. from_json is the gatekeeper for everything the simulator later assumes about
// allocations and kernels (unique ids, non-overlapping ranges, CUDA launch limits), so the rest of
// the code can index and multiply without re-checking.
#include <algorithm>
#include <limits>

#include "sim/error.h"
#include "traces/trace.h"

namespace uvmsim::trace {

using nlohmann::json;

namespace {

json dim_to_json(const Dim3& d) { return json::array({d.x, d.y, d.z}); }

/// Reads typed fields of a JSON object, naming "metadata.<path>.<key>" in every error.
class Fields {
 public:
  Fields(const json& obj, const std::string& where, std::string path)
      : obj_(obj), where_(where), path_(std::move(path)) {
    if (!obj_.is_object()) fail(path_, "expected an object");
  }

  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw UserError(where_, field, msg);
  }
  std::string field(const std::string& key) const { return path_ + "." + key; }

  const json* find(const std::string& key, bool required) const {
    const auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (required) fail(field(key), "missing required field");
      return nullptr;
    }
    return &*it;
  }

  std::string str(const std::string& key, bool required, std::string dflt = {}) const {
    const json* v = find(key, required);
    if (v == nullptr) return dflt;
    if (!v->is_string()) fail(field(key), "expected a string");
    return v->get<std::string>();
  }

  std::uint64_t u64(const std::string& key, bool required, std::uint64_t dflt = 0) const {
    const json* v = find(key, required);
    if (v == nullptr) return dflt;
    return to_u64(*v, field(key));
  }

  std::uint32_t u32(const std::string& key, bool required, std::uint32_t dflt = 0) const {
    const std::uint64_t v = u64(key, required, dflt);
    if (v > std::numeric_limits<std::uint32_t>::max()) {
      fail(field(key), "value " + std::to_string(v) + " does not fit in 32 bits");
    }
    return static_cast<std::uint32_t>(v);
  }

  /// Addresses may also be written as "0x..." strings, which is what people and most JSON
  /// tools handle well for 64-bit values.
  std::uint64_t address(const std::string& key) const {
    const json* v = find(key, true);
    if (v->is_string()) {
      const std::string s = v->get<std::string>();
      if (s.size() > 2 && s.size() <= 18 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
          s.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos) {
        return std::stoull(s.substr(2), nullptr, 16);
      }
      fail(field(key), "expected an unsigned integer or a \"0x...\" hex string");
    }
    return to_u64(*v, field(key));
  }

  bool boolean(const std::string& key, bool dflt) const {
    const json* v = find(key, false);
    if (v == nullptr) return dflt;
    if (!v->is_boolean()) fail(field(key), "expected true or false");
    return v->get<bool>();
  }

  const json& array(const std::string& key) const {
    const json* v = find(key, true);
    if (!v->is_array()) fail(field(key), "expected an array");
    return *v;
  }

  json object(const std::string& key) const {
    const json* v = find(key, false);
    if (v == nullptr) return json::object();
    if (!v->is_object()) fail(field(key), "expected an object");
    return *v;
  }

  /// [x, y, z] with 1..3 positive entries (missing trailing dimensions are 1).
  Dim3 dim3(const std::string& key) const {
    const json* v = find(key, true);
    if (!v->is_array() || v->empty() || v->size() > 3) {
      fail(field(key), "expected an array of 1 to 3 positive integers");
    }
    std::uint32_t d[3] = {1, 1, 1};
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::uint64_t x = to_u64((*v)[i], field(key) + "[" + std::to_string(i) + "]");
      if (x == 0 || x > std::numeric_limits<std::uint32_t>::max()) {
        fail(field(key) + "[" + std::to_string(i) + "]", "must be in 1..4294967295");
      }
      d[i] = static_cast<std::uint32_t>(x);
    }
    return Dim3{d[0], d[1], d[2]};
  }

 private:
  std::uint64_t to_u64(const json& v, const std::string& name) const {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer()) fail(name, "must not be negative");
    fail(name, "expected an unsigned integer");
  }

  const json& obj_;
  const std::string& where_;
  std::string path_;
};

}  // namespace

json Metadata::to_json() const {
  json allocs = json::array();
  for (const auto& a : allocations) {
    allocs.push_back({{"id", a.id},
                      {"name", a.name},
                      {"base", a.base},
                      {"size", a.size},
                      {"managed", a.managed},
                      {"host_pinned", a.host_pinned}});
  }
  json kerns = json::array();
  for (const auto& k : kernels) {
    kerns.push_back({{"id", k.id},
                     {"name", k.name},
                     {"grid", dim_to_json(k.grid)},
                     {"block", dim_to_json(k.block)},
                     {"regs", k.regs_per_thread},
                     {"smem", k.shared_mem_bytes}});
  }
  return json{{"workload", workload},         {"params", params},
              {"captured_gpu", captured_gpu}, {"allocations", std::move(allocs)},
              {"kernels", std::move(kerns)},  {"extra", extra}};
}

Metadata Metadata::from_json(const json& j, const std::string& where) {
  const Fields root(j, where, "metadata");
  Metadata m;
  m.workload = root.str("workload", true);
  m.params = root.object("params");
  m.captured_gpu = root.str("captured_gpu", false);
  m.extra = root.object("extra");

  const json& allocs = root.array("allocations");
  for (std::size_t i = 0; i < allocs.size(); ++i) {
    const Fields f(allocs[i], where, "metadata.allocations[" + std::to_string(i) + "]");
    Allocation a;
    a.id = f.u32("id", true);
    a.name = f.str("name", true);
    a.base = f.address("base");
    a.size = f.u64("size", true);
    a.managed = f.boolean("managed", true);
    a.host_pinned = f.boolean("host_pinned", false);
    if (a.size == 0) f.fail(f.field("size"), "must be positive");
    if (a.base > std::numeric_limits<Addr>::max() - a.size) {
      f.fail(f.field("size"), "base + size overflows the 64-bit address space");
    }
    if (a.managed && a.host_pinned) f.fail(f.field("host_pinned"), "requires managed = false");
    for (const auto& other : m.allocations) {
      if (other.id == a.id) {
        f.fail(f.field("id"), "duplicate allocation id " + std::to_string(a.id));
      }
      if (a.base < other.base + other.size && other.base < a.base + a.size) {
        f.fail(f.field("base"),
               "range overlaps allocation " + std::to_string(other.id) + " '" + other.name + "'");
      }
    }
    m.allocations.push_back(std::move(a));
  }

  const json& kerns = root.array("kernels");
  for (std::size_t i = 0; i < kerns.size(); ++i) {
    const Fields f(kerns[i], where, "metadata.kernels[" + std::to_string(i) + "]");
    KernelInfo k;
    k.id = f.u32("id", true);
    k.name = f.str("name", true);
    k.grid = f.dim3("grid");
    k.block = f.dim3("block");
    k.regs_per_thread = f.u32("regs", false);
    k.shared_mem_bytes = f.u32("smem", false);
    // CUDA's launch limits; enforcing them also keeps grid.count() and warps_per_block() far
    // from overflow for every consumer.
    if (k.block.count() > 1024) f.fail(f.field("block"), "more than 1024 threads per block");
    if (k.grid.x > 0x7fffffffu || k.grid.y > 65535 || k.grid.z > 65535) {
      f.fail(f.field("grid"), "exceeds CUDA's grid limits (2^31-1, 65535, 65535)");
    }
    for (const auto& other : m.kernels) {
      if (other.id == k.id) f.fail(f.field("id"), "duplicate kernel id " + std::to_string(k.id));
    }
    m.kernels.push_back(std::move(k));
  }
  return m;
}

std::uint64_t Metadata::managed_footprint() const {
  std::uint64_t total = 0;
  for (const auto& a : allocations) {
    if (a.managed) total += a.size;
  }
  return total;
}

const KernelInfo* Metadata::find_kernel(std::uint32_t id) const {
  const auto it = std::find_if(kernels.begin(), kernels.end(),
                               [id](const KernelInfo& k) { return k.id == id; });
  return it == kernels.end() ? nullptr : &*it;
}

const Allocation* Metadata::find_allocation(std::uint32_t id) const {
  const auto it = std::find_if(allocations.begin(), allocations.end(),
                               [id](const Allocation& a) { return a.id == id; });
  return it == allocations.end() ? nullptr : &*it;
}

}  // namespace uvmsim::trace
