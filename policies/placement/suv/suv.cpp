// SUV (Pratheek, Cox, Vesely, Basu, "SUV: Static Analysis Guided Unified Virtual Memory",
// MICRO 2024) as a placement policy: SUV-Mgmt's two routines (§V-C) on the static hints, enforced
// through the driver's placement actions (§V-D; PolicyEngine in policies/policy.h).
//  * At every kernel launch, Algorithm 1 on the launch's data structures (suv_plan.h): Unknown
//    structures get an HBM reservation proportional to their size and access-counter migration;
//    the rest, by decreasing access density, are pinned on the HBM while it lasts (HBMPIN) and on
//    the DRAM beyond (DRAMPIN), except Temporal ones, which get an on-demand reservation of their
//    working set (above the density threshold) or are DRAM-pinned (below it). Structures the
//    launch does not use lose their Algorithm-1 pins and reservations (they stay resident until
//    evicted): "avail" is the HBM not held by Algorithm 2's windows.
//  * At every host-loop iteration boundary, Algorithm 2: the windows of the iteration-dependent
//    memops for the coming iteration are prefetched and pinned (spans below 2 MB batched over
//    several iterations) and windows whose iterations have passed are evicted to the DRAM.
// Modes: `suv` (the paper), `ac` (the paper's AC baseline: NVIDIA's access-counter migration
// for every allocation, as the stock driver does it; see the acbm policy). docs/placement.md.
#include <algorithm>
#include <map>

#include "policies/placement/suv/suv_plan.h"
#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

using Step = suv::Decision;
using suv::Window;

class SuvPlacement final : public PlacementPolicy {
 public:
  explicit SuvPlacement(const PolicyContext& ctx) : engine_(ctx.engine()), va_(ctx.va_space) {
    const auto& pj = ctx.params;
    ac_mode_ = pj.at("mode").get<std::string>() == "ac";
    if (ac_mode_) {
      // The paper's AC is NVIDIA's stock access-counter migration (§VI, [8], [13]): faults
      // migrate, evicted pages are mapped back remotely and notifications migrate them, as the
      // acbm policy does; not SUV's range-scoped suvEnableAccessCounter, which maps a range's
      // host pages remotely up front.
      const AccessCounterConfig& ac = ctx.config.access_counters;
      engine_.enable_access_counter_migration(ac.granularity, ac.threshold);
    }
    p_.temporal_wss_fraction = pj.at("temporal_wss_fraction").get<double>();
    p_.temporal_tb_fraction = pj.at("temporal_tb_fraction").get<double>();
    p_.density_threshold = pj.at("density_threshold").get<double>();
    p_.batch_bytes = pj.at("batch_bytes").get<std::uint64_t>();
    iterative_ = pj.at("iterative").get<bool>();
    evict_expired_ = pj.at("evict_expired").get<bool>();
    for (std::uint32_t i = 0; i < va_.ranges().size(); ++i) {
      const VaRange& r = va_.ranges()[i];
      if (r.alloc_id >= range_of_.size()) range_of_.resize(r.alloc_id + 1, kNone);
      range_of_[r.alloc_id] = i;
    }
    sizes_.resize(range_of_.size());
    state_.resize(range_of_.size());
    for (std::uint32_t a = 0; a < range_of_.size(); ++a) {
      if (range_of_[a] == kNone || !va_.ranges()[range_of_[a]].managed) continue;
      sizes_[a] = {va_.ranges()[range_of_[a]].size, va_.ranges()[range_of_[a]].num_blocks};
    }
    // Densities and fractions use the sizes the program allocated (the ranges are rounded to
    // pages and power-of-two tails).
    if (const trace::Hints* h = engine_.hints())
      for (const auto& a : h->allocations)
        if (a.id < sizes_.size() && sizes_[a.id].blocks) sizes_[a.id].size = a.size;
    a1_pinned_.assign(va_.blocks().size(), 0);
  }

  Decision place(const VaBlock& b, unsigned, AccessKind, Tick) override {
    return b.preferred == PreferredLocation::Cpu ? Decision::MapRemote : Decision::MigrateToGpu;
  }

  void on_iteration(std::int32_t it, Tick) override {
    if (ac_mode_ || !iterative_ || !hints()) return;
    algorithm2(it);
  }

  void on_kernel_start(const KernelEvent& k) override {
    if (ac_mode_) return;
    const trace::Hints* h = hints();
    if (!h) return;
    const trace::KernelHint* kh = h->kernel(k.kernel.id);
    if (!kh) {
      ++launches_without_hints_;
      return;
    }
    algorithm1(*kh, k);
  }

  void on_eviction(const VaBlock& b, Tick) override {
    const std::uint32_t a = va_.ranges()[b.range].alloc_id;
    if (a < state_.size()) ++state_[a].evictions;
  }

  void report(nlohmann::json& out) const override {
    out["mode"] = ac_mode_ ? "ac" : "suv";
    out["hints"] = engine_.hints() ? trace::to_string(engine_.hints()->source) : "none";
    out["launches_planned"] = launches_planned_;
    out["launches_without_hints"] = launches_without_hints_;
    out["windows_pinned_bytes"] = window_pinned_bytes_;
    out["windows_released_bytes"] = window_released_bytes_;
    nlohmann::json per = nlohmann::json::object();
    for (std::uint32_t a = 0; a < state_.size(); ++a) {
      if (range_of_[a] == kNone || !va_.ranges()[range_of_[a]].managed) continue;
      const AllocState& s = state_[a];
      nlohmann::json classes = nlohmann::json::object();
      for (int c = 0; c < 3; ++c)
        if (s.class_launches[c])
          classes[suv::to_string(static_cast<suv::Class>(c))] = s.class_launches[c];
      per[va_.ranges()[range_of_[a]].name] = {{"classified", classes},
                                              {"last_decision", s.last_decision},
                                              {"iterative_launches", s.iterative_launches},
                                              {"evictions", s.evictions}};
    }
    out["allocations"] = per;
  }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct AllocState {
    std::uint64_t reserved_chunks = 0;
    bool reserved = false, acm = false;
    std::string last_decision = "none";
    std::uint64_t class_launches[3] = {0, 0, 0};
    std::uint64_t iterative_launches = 0;
    std::uint64_t evictions = 0;
  };

  const trace::Hints* hints() const { return engine_.hints(); }
  const VaRange* range(std::uint32_t alloc) const {
    return alloc < range_of_.size() && range_of_[alloc] != kNone ? &va_.ranges()[range_of_[alloc]]
                                                                 : nullptr;
  }
  /// VA of block `i` of allocation `a`'s range and its length within the range.
  std::pair<Addr, std::uint64_t> block_span(const VaRange& r, std::uint32_t i) const {
    const VaBlock& b = va_.blocks()[r.first_block + i];
    const Addr lo = std::max(r.base, b.start), hi = std::min(r.base + r.size, b.start + kBlockSize);
    return {lo, hi - lo};
  }
  /// Calls f(va, size) for each run of consecutive blocks of `r` selected by `want(i)`.
  template <typename Want, typename F>
  void block_runs(const VaRange& r, Want&& want, F&& f) const {
    for (std::uint32_t i = 0; i < r.num_blocks;) {
      if (!want(i)) {
        ++i;
        continue;
      }
      std::uint32_t j = i;
      while (j < r.num_blocks && want(j)) ++j;
      const Addr lo = block_span(r, i).first;
      const auto [last, len] = block_span(r, j - 1);
      f(lo, last + len - lo);
      i = j;
    }
  }
  /// Per block of the whole VA space: overlaps a window pinned by Algorithm 2.
  std::vector<std::uint8_t> window_blocks() const {
    std::vector<std::uint8_t> w(va_.blocks().size(), 0);
    for (const Window& x : windows_) {
      const VaRange* r = range(x.alloc);
      if (!r) continue;
      for (Addr a = (r->base + x.lo) & ~(kBlockSize - 1); a < r->base + x.hi; a += kBlockSize)
        w[va_.block_index(*r, std::max(a, r->base))] = 1;
    }
    return w;
  }

  void algorithm1(const trace::KernelHint& kh, const KernelEvent& k) {
    ++launches_planned_;
    std::vector<suv::DataStructure> ds = suv::classify(
        kh, k.kernel, k.iteration, engine_.concurrent_threadblocks(k.kernel), sizes_, p_);
    const std::vector<std::uint8_t> win = window_blocks();
    // avail = HBM not held by Algorithm 2's windows; held = each structure's window chunks.
    std::uint64_t window_chunks = 0;
    for (const auto x : win) window_chunks += x;
    const std::uint64_t cap = engine_.capacity_chunks();
    const std::uint64_t avail = cap > window_chunks ? cap - window_chunks : 0;
    std::vector<std::uint64_t> held(ds.size(), 0);
    for (std::size_t i = 0; i < ds.size(); ++i) {
      const VaRange* r = range(ds[i].alloc);
      for (std::uint32_t b = 0; r && b < r->num_blocks; ++b) held[i] += win[r->first_block + b];
      AllocState& s = state_[ds[i].alloc];
      ++s.class_launches[static_cast<int>(ds[i].cls)];
      if (ds[i].iterative) ++s.iterative_launches;
    }
    const std::vector<Step> plan = suv::algorithm1(ds, held, avail, p_);

    std::vector<std::uint8_t> in_kernel(range_of_.size(), 0);
    for (const auto& d : ds) in_kernel[d.alloc] = 1;
    // Structures this launch does not use keep their data (and access-counter ranges) but lose
    // Algorithm 1's pins and reservations: their chunks become evictable.
    for (std::uint32_t a = 0; a < range_of_.size(); ++a) {
      const VaRange* r = range(a);
      if (!r || !r->managed || in_kernel[a]) continue;
      unpin_a1(
          *r, [](std::uint32_t) { return false; }, win);
      release_reservation(a, *r);
    }
    // First what frees HBM (DRAM pins, unpins, released reservations), then what takes it.
    for (const Step& d : plan) {
      const VaRange* r = range(d.alloc);
      if (!r) continue;
      AllocState& s = state_[d.alloc];
      s.last_decision = suv::to_string(d.kind);
      switch (d.kind) {
        case Step::Reserve:
        case Step::OnDemand:
          unpin_a1(
              *r, [](std::uint32_t) { return false; }, win);
          break;
        case Step::Window:
          unpin_a1(
              *r, [](std::uint32_t) { return false; }, win);
          release_reservation(d.alloc, *r);
          break;
        case Step::DramPin:
        case Step::Pin: {
          release_reservation(d.alloc, *r);
          const std::vector<std::uint8_t> target = pin_target(*r, d, win);
          unpin_a1(
              *r, [&](std::uint32_t i) { return target[i] != 0; }, win);
          // DRAMPIN(ds + pinSize, size - pinSize): the blocks neither pinned nor in a window.
          block_runs(
              *r, [&](std::uint32_t i) { return !target[i] && !win[r->first_block + i]; },
              [&](Addr va, std::uint64_t len) { engine_.pin_on_host(va, len); });
          break;
        }
      }
    }
    for (const Step& d : plan) {
      const VaRange* r = range(d.alloc);
      if (!r) continue;
      AllocState& s = state_[d.alloc];
      switch (d.kind) {
        case Step::Reserve:
        case Step::OnDemand:
          // Unknown: access-counter migration into the reservation (lines 4-5), turned on
          // first so the reservation keeps the remote mappings; Temporal: faults only.
          if (d.kind == Step::Reserve) set_acm(*r, s, true);
          if (!s.reserved || s.reserved_chunks != d.chunks) {
            engine_.reserve_on_demand(r->base, r->size, d.chunks * kBlockSize);
            s.reserved = true;
            s.reserved_chunks = d.chunks;
          }
          if (d.kind == Step::OnDemand) set_acm(*r, s, false);
          break;
        case Step::Pin: {
          // HBMPIN(ds, pinSize): the first blocks not already held by a window.
          const std::vector<std::uint8_t> target = pin_target(*r, d, win);
          block_runs(
              *r, [&](std::uint32_t i) { return target[i] != 0; },
              [&](Addr va, std::uint64_t len) { engine_.pin_on_gpu(va, len); });
          for (std::uint32_t i = 0; i < r->num_blocks; ++i)
            if (target[i]) a1_pinned_[r->first_block + i] = 1;
          break;
        }
        case Step::DramPin:
        case Step::Window:
          break;
      }
      if (d.kind != Step::Reserve && d.kind != Step::OnDemand) set_acm(*r, s, false);
    }
  }

  /// Turns access-counter migration of the whole structure on or off (only on a change).
  void set_acm(const VaRange& r, AllocState& s, bool on) {
    if (s.acm == on) return;
    engine_.set_access_counter_migration(r.base, r.size, on);
    s.acm = on;
  }

  /// Blocks of `r` that Algorithm 1 pins on the HBM for decision `d`.
  std::vector<std::uint8_t> pin_target(const VaRange& r, const Step& d,
                                       const std::vector<std::uint8_t>& win) const {
    std::vector<std::uint8_t> t(r.num_blocks, 0);
    std::uint64_t left = d.kind == Step::Pin ? d.chunks : 0;
    for (std::uint32_t i = 0; i < r.num_blocks && left; ++i) {
      if (win[r.first_block + i]) continue;
      t[i] = 1;
      --left;
    }
    return t;
  }

  /// Ends Algorithm 1's GPU pins of `r` except the blocks `keep(i)`. Blocks now in a window
  /// belong to Algorithm 2: their pins stay.
  template <typename Keep>
  void unpin_a1(const VaRange& r, Keep&& keep, const std::vector<std::uint8_t>& win) {
    auto drop = [&](std::uint32_t i) {
      return a1_pinned_[r.first_block + i] && !keep(i) && !win[r.first_block + i];
    };
    block_runs(r, drop, [&](Addr va, std::uint64_t len) { engine_.unpin_on_gpu(va, len); });
    for (std::uint32_t i = 0; i < r.num_blocks; ++i)
      if (!keep(i)) a1_pinned_[r.first_block + i] = 0;
  }

  void release_reservation(std::uint32_t a, const VaRange& r) {
    AllocState& s = state_[a];
    if (s.reserved) engine_.release_reservation(r.base, r.size);
    s.reserved = false;
    s.reserved_chunks = 0;
  }

  void algorithm2(std::int32_t it) {
    const trace::Hints& h = *hints();
    // The kernels launched in iteration `it` (all kernels with windows if the sequence is unknown)
    // and the last iteration, which bounds batching.
    std::vector<std::uint32_t> kernels;
    std::int32_t last = -1;
    for (const auto& l : h.launches) {
      last = std::max(last, l.iteration);
      if (l.iteration == it && std::find(kernels.begin(), kernels.end(), l.kernel) == kernels.end())
        kernels.push_back(l.kernel);
    }
    if (h.launches.empty())
      for (const auto& k : h.kernels) kernels.push_back(k.kernel);
    active_ = suv::algorithm2(h, kernels, it, last, sizes_, p_, active_);
    const std::vector<Window> now = suv::windows_of(active_);
    // Expired windows go back to the DRAM, except blocks Algorithm 1 holds pinned.
    std::vector<Window> a1;
    for (std::uint32_t a = 0; a < range_of_.size(); ++a) {
      const VaRange* r = range(a);
      if (!r || !r->managed) continue;
      block_runs(
          *r, [&](std::uint32_t i) { return a1_pinned_[r->first_block + i] != 0; },
          [&](Addr va, std::uint64_t len) {
            a1.push_back({a, va - r->base, va - r->base + len});
          });
    }
    for (const Window& w : suv::subtract(suv::subtract(windows_, now), suv::merge(a1))) {
      const VaRange* r = range(w.alloc);
      if (!r) continue;
      if (evict_expired_)
        engine_.release_range(r->base + w.lo, w.hi - w.lo);
      else
        engine_.unpin_on_gpu(r->base + w.lo, w.hi - w.lo);
      window_released_bytes_ += w.hi - w.lo;
    }
    // PrefetchAndPinOnGPU(start, span) for the windows in force (pinned pages cost nothing).
    // New windows come first: Algorithm 1's pins of the last launch are released (no data
    // moves) so the windows may evict them; the next launch's Algorithm 1 pins what is left.
    const std::vector<Window> fresh = suv::subtract(now, windows_);
    windows_ = now;
    if (!fresh.empty()) {
      const std::vector<std::uint8_t> win = window_blocks();
      for (std::uint32_t a = 0; a < range_of_.size(); ++a)
        if (const VaRange* r = range(a); r && r->managed)
          unpin_a1(
              *r, [](std::uint32_t) { return false; }, win);
    }
    for (const Window& w : fresh) window_pinned_bytes_ += w.hi - w.lo;
    for (const Window& w : now) {
      const VaRange* r = range(w.alloc);
      if (r) engine_.pin_on_gpu(r->base + w.lo, w.hi - w.lo);
    }
  }

  PolicyEngine& engine_;
  const VaSpace& va_;
  suv::Params p_;
  bool ac_mode_ = false, iterative_ = true, evict_expired_ = true;
  std::vector<std::uint32_t> range_of_;  ///< by allocation id: index in va_.ranges()
  std::vector<suv::AllocSize> sizes_;    ///< by allocation id
  std::vector<AllocState> state_;        ///< by allocation id
  std::vector<std::uint8_t> a1_pinned_;  ///< per block: pinned by Algorithm 1
  suv::ActiveWindows active_;
  std::vector<Window> windows_;  ///< merged windows currently pinned by Algorithm 2
  std::uint64_t launches_planned_ = 0, launches_without_hints_ = 0;
  std::uint64_t window_pinned_bytes_ = 0, window_released_bytes_ = 0;
};

}  // namespace

UVMSIM_REGISTER_PLACEMENT(
    "suv",
    "SUV (MICRO'24): per-launch density/temporal/unknown placement (Algorithm 1) and iteration "
    "prefetch-and-pin (Algorithm 2) from static hints, via pins, reservations and access counters",
    SuvPlacement,
    Knob::choice("mode", "suv", {"suv", "ac"},
                 "suv: the paper's scheme; ac: access-counter migration for everything "
                 "(the paper's AC comparison)"),
    Knob::number("temporal_wss_fraction", 0.5, 0, 1,
                 "Temporal when WSS < this x size (SUV section V-B)"),
    Knob::number("temporal_tb_fraction", 0.5, 0, 1,
                 "... and concurrent TBs (TBs/SM x SMs) <= this x all TBs"),
    Knob::number("density_threshold", 5, 0, 1e12,
                 "accesses per byte above which a Temporal structure migrates on demand "
                 "into a WSS reservation (below: DRAM-pinned)"),
    Knob::integer("batch_bytes", 2 << 20, 0, 1000000000000000,
                  "Algorithm 2: spans smaller than this are prefetched for several "
                  "iterations at once"),
    Knob::boolean("iterative", true, "run Algorithm 2 at iteration boundaries"),
    Knob::boolean("evict_expired", true,
                  "Algorithm 2 evicts expired windows to the DRAM (false: only unpins)"));

UVMSIM_REGISTER_PRESET({"ac",
                        "the SUV paper's AC baseline: access-counter migration for every "
                        "allocation (suv in mode ac)",
                        "",
                        "",
                        "suv",
                        {{"suv", {{"mode", "ac"}}}}});

}  // namespace uvmsim
