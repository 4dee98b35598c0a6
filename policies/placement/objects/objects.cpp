// Li & Chapman's object-level schemes (SC 2019) as placement policies: `rlm` (regional locality,
// §3.2), `glm` (global locality, §3.3), `rdm` (target reuse distance with partial mapping, §3.4),
// `object-lru` (the runtime LRU reference of §5.2) and `host` (every object pinned in CPU memory,
// §2.3's "Host"). At every kernel launch (a target-region invocation; the target-region counter is
// the launch index) the object manager (object_manager.h) maps the kernel's objects in priority
// order; its decisions become driver actions:
//  * to the GPU: the preferred location is unset and, for explicit transfer (access density >=
//    0.5, §3.1), the object is prefetched before the kernel (cudaMemPrefetchAsync); implicit
//    objects migrate on faults;
//  * to the CPU and replaced objects: GPU-resident pages move to the host and the preferred
//    location becomes the CPU, so faults map the host copy instead of pulling it in (§3.2
//    "Data Mapping Enforcement");
//  * partial mapping: the first chunks as "to the GPU", the rest as "to the CPU".
// The quantities come from the static hints (docs/hints.md "Li & Chapman"): RL = reads + writes of
// the kernel's use of the object at the launch's iteration. What RDM and GLM need about the
// future is the compiler's estimate, as in the paper (static_estimates.h): GL = sum over launch
// sites of the estimated invocation frequency x RL (§4.1), next reuse time = target region
// counter + the estimated target reuse distance of the launch's site (§3.4, §4.3). The oracle
// schemes `rdm-oracle` and `glm-oracle` read the future instead: the launch sequence's exact
// next_use and the actual launch count of every kernel. docs/placement.md.
#include <algorithm>
#include <optional>

#include "policies/placement/objects/object_manager.h"
#include "policies/placement/objects/static_estimates.h"
#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

using objects::Action;
using objects::Scheme;

/// Managed allocations of the address space, by allocation id.
class AllocationIndex {
 public:
  explicit AllocationIndex(const VaSpace& va) : va_(va) {
    for (std::uint32_t i = 0; i < va.ranges().size(); ++i) {
      const VaRange& r = va.ranges()[i];
      if (!r.managed) continue;
      if (r.alloc_id >= index_.size()) index_.resize(r.alloc_id + 1, kNone);
      index_[r.alloc_id] = i;
    }
  }
  const VaRange* operator[](std::uint32_t alloc) const {
    return alloc < index_.size() && index_[alloc] != kNone ? &va_.ranges()[index_[alloc]] : nullptr;
  }
  std::uint32_t size() const { return static_cast<std::uint32_t>(index_.size()); }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  const VaSpace& va_;
  std::vector<std::uint32_t> index_;
};

/// Where RDM's and GLM's knowledge of the future comes from.
enum class Future : std::uint8_t {
  Estimated,  ///< the compiler's estimates (the paper's schemes)
  Oracle,     ///< the exact launch sequence (an upper bound)
};

template <Scheme S, Future F = Future::Estimated>
class ObjectPlacement final : public PlacementPolicy {
 public:
  explicit ObjectPlacement(const PolicyContext& ctx)
      : engine_(ctx.engine()),
        allocs_(ctx.va_space),
        manager_(
            S, ctx.engine().capacity_chunks(),
            ctx.params.contains("partial_mapping") && ctx.params["partial_mapping"].get<bool>(),
            ctx.params.value("density_threshold", 0.5)),
        trip_count_(ctx.params.value("trip_count", objects::kEstimatedTripCount)) {}

  Decision place(const VaBlock& b, unsigned, AccessKind, Tick) override {
    return b.preferred == PreferredLocation::Cpu ? Decision::MapRemote : Decision::MigrateToGpu;
  }

  void on_kernel_start(const KernelEvent& k) override {
    const trace::Hints* h = engine_.hints();
    if (!h) return;
    if (!initialised_) init(*h);
    const trace::KernelHint* kh = h->kernel(k.kernel.id);
    if (!kh) {
      ++launches_without_hints_;
      return;
    }
    // The launch's entry in the launch sequence, if the hints have one for it.
    const trace::LaunchHint* lh =
        k.launch_index < h->launches.size() && h->launches[k.launch_index].kernel == k.kernel.id
            ? &h->launches[k.launch_index]
            : nullptr;
    std::vector<objects::Use> uses;
    for (const auto& u : kh->uses) {
      const VaRange* r = allocs_[u.alloc];
      if (!r) continue;
      objects::Use use;
      use.object = u.alloc;
      use.regional_locality = static_cast<double>(u.reads.at(k.iteration)) +
                              static_cast<double>(u.writes.at(k.iteration));
      use.density =
          static_cast<double>(u.bytes.at(k.iteration)) / static_cast<double>(size_of(*h, *r));
      if (F == Future::Oracle) {
        if (lh) {
          for (const auto& [alloc, next] : lh->next_use)
            if (alloc == u.alloc && next >= 0) use.next_use = next;
        }
      } else if (program_) {
        // Next reuse time = target region counter + the site's estimated reuse distance.
        const std::int64_t d = program_->reuse_distance(k.launch_index, u.alloc);
        if (d >= 0) use.next_use = static_cast<std::int64_t>(k.launch_index) + d;
      }
      uses.push_back(use);
    }
    for (const Action& a : manager_.invoke(k.launch_index, uses)) apply(a);
    ++launches_planned_;
  }

  void report(nlohmann::json& out) const override {
    out["scheme"] = objects::to_string(S);
    if (S == Scheme::Rdm || S == Scheme::Glm) {
      out["future"] = F == Future::Oracle ? "oracle" : "estimated";
      if (F == Future::Estimated) out["trip_count"] = trip_count_;
    }
    out["launches_planned"] = launches_planned_;
    out["launches_without_hints"] = launches_without_hints_;
    out["object_evictions"] = evictions_;
    out["gpu_mappings"] = to_gpu_;
    out["cpu_mappings"] = to_cpu_;
    out["partial_mappings"] = partial_;
    nlohmann::json per = nlohmann::json::object();
    for (std::uint32_t a = 0; initialised_ && a < allocs_.size(); ++a) {
      const VaRange* r = allocs_[a];
      if (!r) continue;
      const auto& s = manager_.state(a);
      per[r->name] = {{"chunks", s.chunks},
                      {"gpu_chunks", s.gpu_chunks},
                      {"global_locality", s.global_locality}};
    }
    out["objects"] = per;
  }

 private:
  static std::uint64_t size_of(const trace::Hints& h, const VaRange& r) {
    for (const auto& a : h.allocations)
      if (a.id == r.alloc_id) return std::max<std::uint64_t>(1, a.size);
    return std::max<std::uint64_t>(1, r.size);
  }

  /// The GPU object table (§4.1): every managed allocation with its global locality
  /// GL_d = sum_i RF_i x RL_{i,d} (Eq. 1): estimated (static_estimates.h), or, for the oracle,
  /// summed over the actual launch sequence.
  void init(const trace::Hints& h) {
    initialised_ = true;
    if (F == Future::Estimated) {
      program_.emplace(h, trip_count_);
      for (std::uint32_t a = 0; a < allocs_.size(); ++a)
        if (const VaRange* r = allocs_[a])
          manager_.add_object(a, r->num_blocks, program_->global_locality(a));
      return;
    }
    std::vector<double> gl(allocs_.size(), 0);
    auto add = [&](std::uint32_t kernel, std::int32_t it) {
      const trace::KernelHint* kh = h.kernel(kernel);
      if (!kh) return;
      for (const auto& u : kh->uses)
        if (u.alloc < gl.size())
          gl[u.alloc] += static_cast<double>(u.reads.at(it)) + static_cast<double>(u.writes.at(it));
    };
    if (!h.launches.empty()) {
      for (const auto& l : h.launches) add(l.kernel, l.iteration);
    } else {
      for (const auto& k : h.kernels) add(k.kernel, 0);  // frequencies unknown: RF = 1
    }
    for (std::uint32_t a = 0; a < allocs_.size(); ++a)
      if (const VaRange* r = allocs_[a]) manager_.add_object(a, r->num_blocks, gl[a]);
  }

  void apply(const Action& a) {
    const VaRange* r = allocs_[a.object];
    if (!r) return;
    switch (a.kind) {
      case Action::ToGpu:
        ++to_gpu_;
        to_gpu(r->base, r->size, a.explicit_transfer);
        break;
      case Action::Partial: {
        ++partial_;
        const Addr split =
            std::min(r->base + r->size, (r->base & ~(kBlockSize - 1)) + a.chunks * kBlockSize);
        if (split > r->base) to_gpu(r->base, split - r->base, a.explicit_transfer);
        if (split < r->base + r->size) to_cpu(split, r->base + r->size - split);
        break;
      }
      case Action::ToCpu:
        ++to_cpu_;
        to_cpu(r->base, r->size);
        break;
      case Action::Evict:
        ++evictions_;
        to_cpu(r->base, r->size);
        break;
    }
  }
  void to_gpu(Addr va, std::uint64_t size, bool explicit_transfer) {
    engine_.set_preferred_location(va, size, PreferredLocation::None);
    if (explicit_transfer) engine_.prefetch_range(va, size, Processor::Gpu);
  }
  void to_cpu(Addr va, std::uint64_t size) {
    engine_.prefetch_range(va, size, Processor::Cpu);
    engine_.set_preferred_location(va, size, PreferredLocation::Cpu);
  }

  PolicyEngine& engine_;
  AllocationIndex allocs_;
  objects::ObjectManager manager_;
  std::uint32_t trip_count_;
  std::optional<objects::StaticProgram> program_;  ///< the estimates (not for the oracle)
  bool initialised_ = false;
  std::uint64_t launches_planned_ = 0, launches_without_hints_ = 0;
  std::uint64_t evictions_ = 0, to_gpu_ = 0, to_cpu_ = 0, partial_ = 0;
};

/// Li & Chapman's "Host" (§2.3): every object pinned in CPU memory and accessed remotely.
class HostPlacement final : public PlacementPolicy {
 public:
  explicit HostPlacement(const PolicyContext& ctx) : engine_(ctx.engine()), va_(ctx.va_space) {}
  Decision place(const VaBlock&, unsigned, AccessKind, Tick) override {
    return Decision::MapRemote;
  }
  void on_kernel_start(const KernelEvent&) override {
    if (pinned_) return;
    pinned_ = true;
    for (const auto& r : va_.ranges())
      if (r.managed) engine_.pin_on_host(r.base, r.size);
  }

 private:
  PolicyEngine& engine_;
  const VaSpace& va_;
  bool pinned_ = false;
};

Knob density_knob() {
  return Knob::number("density_threshold", 0.5, 0, 1e12,
                      "access density (accessed bytes / size) at or above which an object "
                      "is prefetched before the kernel (explicit), below it migrates on "
                      "faults (implicit) (section 3.1)");
}

// The oracles (a macro argument cannot hold a template's comma).
using GlmOracle = ObjectPlacement<Scheme::Glm, Future::Oracle>;
using RdmOracle = ObjectPlacement<Scheme::Rdm, Future::Oracle>;

Knob trip_count_knob() {
  return Knob::integer("trip_count", objects::kEstimatedTripCount, 1, 1 << 20,
                       "loop trip count the compile-time estimates assume (LLVM's branch "
                       "weights 124:4 without profile data: 32); sections 4.1, 4.3");
}

Knob partial_mapping_knob() {
  return Knob::boolean("partial_mapping", true,
                       "map the first part of the object that does not fit (section 3.4)");
}

}  // namespace

UVMSIM_REGISTER_PLACEMENT("rlm",
                          "Li & Chapman RLM (SC'19): objects by regional locality in each kernel; "
                          "others stay in CPU memory (preferred location CPU)",
                          ObjectPlacement<Scheme::Rlm>, density_knob());
UVMSIM_REGISTER_PLACEMENT("glm",
                          "Li & Chapman GLM: objects by global locality (sum of the estimated "
                          "launch frequency x regional locality)",
                          ObjectPlacement<Scheme::Glm>, density_knob(), trip_count_knob());
UVMSIM_REGISTER_PLACEMENT("glm-oracle",
                          "GLM with the actual launch counts instead of the compiler's estimate "
                          "(an upper bound, not the paper's scheme)",
                          GlmOracle, density_knob());
UVMSIM_REGISTER_PLACEMENT(
    "rdm",
    "Li & Chapman RDM: target reuse distance (Belady-like next reuse time from the compiler's "
    "estimated distances, global-locality tie break) with partial mapping",
    ObjectPlacement<Scheme::Rdm>, density_knob(), trip_count_knob(), partial_mapping_knob());
UVMSIM_REGISTER_PLACEMENT("rdm-oracle",
                          "RDM with the exact next use of every object from the launch sequence "
                          "(Belady's future; an upper bound, not the paper's scheme)",
                          RdmOracle, density_knob(), partial_mapping_knob());
UVMSIM_REGISTER_PLACEMENT("object-lru",
                          "object-level LRU (Li & Chapman's runtime reference): a kernel's objects "
                          "prefetched, least recently used objects replaced",
                          ObjectPlacement<Scheme::Lru>);
UVMSIM_REGISTER_PLACEMENT("host",
                          "every managed allocation pinned in host memory and accessed over the "
                          "link (Li & Chapman's Host); nothing migrates",
                          HostPlacement);

UVMSIM_REGISTER_PRESET({"sc",
                        "the SUV paper's SC comparison: Li & Chapman's whole-object "
                        "decisions (rdm without partial mapping)",
                        "",
                        "",
                        "rdm",
                        {{"rdm", {{"partial_mapping", false}}}}});

}  // namespace uvmsim
