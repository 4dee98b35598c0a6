// Metadata <-> JSON. from_json is the gatekeeper for everything the simulator later assumes about
// allocations and kernels (unique ids, non-overlapping ranges, CUDA launch limits), so the rest of
// the code can index and multiply without re-checking.
#include <algorithm>
#include <limits>

#include "core/error.h"
#include "traces/json_fields.h"
#include "traces/trace.h"

namespace uvmsim::trace {

using detail::Fields;
using nlohmann::json;

namespace {

json dim_to_json(const Dim3& d) { return json::array({d.x, d.y, d.z}); }

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
    // Written only when set, so that traces without system memory stay readable by older builds.
    if (a.system) allocs.back()["system"] = true;
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
  json j{{"workload", workload},         {"params", params},
         {"captured_gpu", captured_gpu}, {"allocations", std::move(allocs)},
         {"kernels", std::move(kerns)},  {"extra", extra}};
  if (hints) j["hints"] = hints->to_json();
  return j;
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
    a.system = f.boolean("system", false);
    if (a.size == 0) f.fail(f.field("size"), "must be positive");
    if (a.base > std::numeric_limits<Addr>::max() - a.size) {
      f.fail(f.field("size"), "base + size overflows the 64-bit address space");
    }
    if (a.managed && a.host_pinned) f.fail(f.field("host_pinned"), "requires managed = false");
    if (a.system && !a.managed) {
      f.fail(f.field("system"), "requires managed = true (system memory is pageable)");
    }
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
  if (j.contains("hints")) {
    m.hints = Hints::from_json(j["hints"], where, "metadata.hints");
    m.hints->check_against(m, where);
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
