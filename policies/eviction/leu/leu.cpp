// LEU, Least Expected Use (Chen, Liu, Jiao, Ding, Pai, "Statistical Caching for Near Memory
// Management", MEMSYS'19): rank data by its expected hits per unit of memory and time, computed
// from the reuse-interval distribution of the instruction that accessed it last, and evict the
// lowest rank. LeuModel (leu_model.h) holds the statistics; this file maps GPU accesses onto its
// blocks and turns block priorities into a choice among the driver's 2 MB root chunks.
//
//  * Blocks: the knob `granularity` (4K, 64K or 2M) is the unit whose TESLA and reuses are
//    tracked. The paper treats pages as blocks (§3); the driver evicts whole 2 MB chunks, so a
//    chunk's priority is the sum (knob `chunk_priority`) of the priorities of its GPU-resident
//    blocks: the chunk is evicted as a unit, and the sum is the expected hit rate it holds per
//    unit of time for the same 2 MB of memory. `max` ranks a chunk by its best block instead.
//  * A resident chunk whose blocks were never accessed (a prefetch) ranks by the table-wide RI
//    distribution at TESLA = time since it was allocated.
//  * Chunks with a serviced fault whose access has not completed (the access is reported when
//    the replayed warp runs) are in use: they are chosen only if nothing else can be. Evicting
//    them would only make the same access fault again; the driver itself never evicts the chunk
//    it is servicing.
//  * Bounded cost per eviction: with `candidates` = K > 0, each eviction ranks K randomly drawn
//    resident chunks plus the K lowest-ranked chunks kept from the previous eviction (their
//    priorities recomputed), at most 2K chunks; K = 0 ranks every resident chunk (exact LEU).
//  * Ties (e.g. every priority 0 before any reuse was sampled) go to the least recently accessed
//    chunk, then the lowest block id: LEU without statistics is LRU.
#include <algorithm>
#include <string>
#include <vector>

#include "policies/eviction/leu/leu_model.h"
#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {
namespace {

using leu::LeuModel;

leu::TimeUnit parse_time_unit(const std::string& s) {
  if (s == "sampled") return leu::TimeUnit::Sampled;
  if (s == "fault") return leu::TimeUnit::Fault;
  return leu::TimeUnit::Access;
}

/// log2 of the 4 KB pages per LEU block.
unsigned parse_granularity(const std::string& s) {
  if (s == "4K") return 0;
  if (s == "2M") return 9;
  return 4;  // 64K
}

leu::ModelParams model_params(const PolicyContext& ctx) {
  leu::ModelParams p;
  p.time_unit = parse_time_unit(ctx.params["time_unit"].get<std::string>());
  p.sample_rate = ctx.params["sample_rate"].get<double>();
  p.rit_entries = ctx.params["rit_entries"].get<std::uint32_t>();
  p.history = ctx.params["history"].get<std::uint32_t>();
  p.seed = ctx.seed;
  return p;
}

class LeuEviction final : public EvictionPolicy {
 public:
  explicit LeuEviction(const PolicyContext& ctx)
      : va_(ctx.va_space),
        shift_(parse_granularity(ctx.params["granularity"].get<std::string>())),
        per_chunk_(kPagesPerBlock >> shift_),
        sum_(ctx.params["chunk_priority"].get<std::string>() == "sum"),
        k_(ctx.params["candidates"].get<std::uint32_t>()),
        model_(ctx.va_space.blocks().size() * std::size_t{kPagesPerBlock >> shift_},
               model_params(ctx)),
        chunks_(ctx.va_space.blocks().size()),
        rng_(ctx.seed ^ 0x6C65755F65766963ull),
        priority_ps_(ctx.params["priority_ns"].get<double>() * kPsPerNs),
        sample_ps_(ctx.params["sample_ns"].get<double>() * kPsPerNs) {
    resident_.reserve(chunks_.size());
    pool_.reserve(k_);
    ranked_.reserve(k_ == 0 ? chunks_.size() : 2 * std::size_t{k_} + 1);
  }

  bool wants_access_notifications() const override { return true; }
  void on_access(const AccessEvent& a) override {
    model_.access(unit(a.block.id, a.page), a.ref_id, a.repeat);
    Chunk& c = chunks_[a.block.id];
    c.last = model_.now();
    c.pending = false;
  }
  void on_page_fault(const VaBlock& b, unsigned, Tick) override {
    model_.fault();
    chunks_[b.id].pending = b.gpu(gpu()).has_chunk;
  }
  void on_chunk_allocated(const VaBlock& b, Tick) override {
    Chunk& c = chunks_[b.id];
    if (c.pos == kNone) {
      c.pos = static_cast<std::uint32_t>(resident_.size());
      resident_.push_back(b.id);
    }
    c.last = c.allocated = model_.now();
  }
  void on_eviction(const VaBlock& b, Tick) override {
    Chunk& c = chunks_[b.id];
    c.pending = false;
    if (c.pos == kNone) return;
    chunks_[resident_.back()].pos = c.pos;
    resident_[c.pos] = resident_.back();
    resident_.pop_back();
    c.pos = kNone;
  }

  std::uint32_t select_victim(std::uint32_t requester, Tick) override {
    ++epoch_;
    ranked_.clear();
    const std::size_t n = resident_.size();
    if (k_ == 0 || n <= 2 * std::size_t{k_}) {
      for (const std::uint32_t b : resident_) consider(b, requester);
    } else {
      for (const std::uint32_t b : pool_)
        if (chunks_[b].pos != kNone) consider(b, requester);
      for (std::uint32_t i = 0; i < k_; ++i) consider(resident_[draw(n)], requester);
    }
    if (ranked_.empty()) return kNoBlock;
    // Only the victim and the next K matter: partial order is enough.
    const std::size_t keep = std::min<std::size_t>(ranked_.size(), std::size_t{k_} + 1);
    std::partial_sort(ranked_.begin(), ranked_.begin() + static_cast<std::ptrdiff_t>(keep),
                      ranked_.end());
    pool_.clear();
    for (std::size_t i = 1; i < keep; ++i) pool_.push_back(ranked_[i].block);
    const Ranked& v = ranked_.front();
    ++victims_;
    if (v.pending) ++pending_victims_;
    if (v.priority == 0) ++zero_priority_victims_;
    return v.block;
  }

  /// The RIMM host's work since the last eviction (§3.3): folding the sampler's reports into
  /// the Ref RIT, then the priorities of the chunks ranked for this one. The paper's host
  /// computes the PPUC of each missing page as its fault arrives; here the ranking is done per
  /// eviction, so both are charged where the victim is chosen.
  Tick take_decision_time() override {
    const std::uint64_t samples = model_.sampled_accesses();
    const double ps = priority_ps_ * static_cast<double>(evaluations_ - evaluations_charged_) +
                      sample_ps_ * static_cast<double>(samples - samples_charged_);
    evaluations_charged_ = evaluations_;
    samples_charged_ = samples;
    return static_cast<Tick>(ps + 0.5);
  }

  void report(nlohmann::json& out) const override {
    static const char* units[] = {"access", "sampled", "fault"};
    out["granularity"] = shift_ == 0 ? "4K" : shift_ == 4 ? "64K" : "2M";
    out["time_unit"] = units[static_cast<int>(model_.time_unit())];
    out["clock"] = model_.now();
    out["sampled_accesses"] = model_.sampled_accesses();
    out["ri_samples"] = model_.rit().recorded();
    out["ri_samples_dropped"] = model_.rit().dropped();
    out["rit_references"] = model_.rit().size();
    out["rit_capacity"] = model_.rit().capacity();
    out["rit_replacements"] = model_.rit().replacements();
    out["victims"] = victims_;
    out["victims_zero_priority"] = zero_priority_victims_;
    out["victims_in_use"] = pending_victims_;
    out["chunks_ranked"] = chunks_ranked_;
    out["priority_evaluations"] = evaluations_;
  }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Chunk {
    std::uint64_t last = 0;       ///< clock at the latest access to any of its blocks
    std::uint64_t allocated = 0;  ///< clock when it got its GPU chunk
    std::uint32_t pos = kNone;    ///< index in resident_
    std::uint32_t seen = 0;       ///< epoch_ when last ranked
    bool pending = false;         ///< a serviced fault's access has not completed yet
  };
  struct Ranked {
    bool pending;
    double priority;
    std::uint64_t last;
    std::uint32_t block;
    bool operator<(const Ranked& o) const {
      if (pending != o.pending) return !pending;
      if (priority != o.priority) return priority < o.priority;
      if (last != o.last) return last < o.last;
      return block < o.block;
    }
  };

  std::uint32_t unit(std::uint32_t block, unsigned page) const {
    return block * per_chunk_ + (page >> shift_);
  }
  std::size_t draw(std::size_t n) {
    // splitmix64, reduced to [0, n) by a multiply-shift (n < 2^32).
    std::uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<std::size_t>(((z >> 32) * n) >> 32);
  }

  void consider(std::uint32_t b, std::uint32_t requester) {
    Chunk& c = chunks_[b];
    if (b == requester || c.seen == epoch_) return;
    c.seen = epoch_;
    ++chunks_ranked_;
    ranked_.push_back(Ranked{c.pending, chunk_priority(b), c.last, b});
  }

  double combine(double acc, double p) const { return sum_ ? acc + p : std::max(acc, p); }

  /// The chunk's priority from its GPU-resident blocks' (see the file comment).
  double chunk_priority(std::uint32_t b) const {
    const std::uint32_t base = b * per_chunk_;
    if (per_chunk_ == 1) {
      if (model_.accessed(base)) {
        ++evaluations_;
        return model_.priority(base);
      }
    } else {
      // Blocks of a chunk were mostly last accessed by the same few references: look each
      // distribution up once per run of equal references.
      double acc = 0;
      bool any = false;
      std::uint32_t ref = 0;
      const leu::RiHistogram* h = nullptr;
      auto add = [&](std::uint32_t u) {
        if (!model_.accessed(u)) return;
        if (!any || model_.last_ref(u) != ref) {
          ref = model_.last_ref(u);
          h = model_.distribution_of_ref(ref);
        }
        any = true;
        if (h) ++evaluations_;
        acc = combine(acc, h ? leu::priority(*h, model_.tesla(u)) : 0.0);
      };
      const PageMask& res = va_.blocks()[b].gpu(gpu()).resident;
      if (shift_ == 0) {
        for (unsigned p = res.find_next(0); p < kPagesPerBlock; p = res.find_next(p + 1))
          add(base + p);
      } else {
        for (unsigned bp = 0; bp < per_chunk_; ++bp)
          if (res.big_page_any(bp)) add(base + bp);
      }
      if (any) return acc;
    }
    // Nothing resident was accessed yet: the program-wide distribution since allocation.
    const auto& g = model_.rit().global();
    if (g.empty()) return 0.0;
    ++evaluations_;
    return leu::priority(g, model_.now() - chunks_[b].allocated);
  }

  const VaSpace& va_;
  unsigned shift_;
  std::uint32_t per_chunk_;
  bool sum_;
  std::uint32_t k_;
  LeuModel model_;
  std::vector<Chunk> chunks_;
  std::vector<std::uint32_t> resident_;
  std::vector<std::uint32_t> pool_;
  std::vector<Ranked> ranked_;
  std::uint64_t rng_;
  std::uint32_t epoch_ = 0;
  std::uint64_t victims_ = 0, zero_priority_victims_ = 0, pending_victims_ = 0;
  std::uint64_t chunks_ranked_ = 0;
  double priority_ps_, sample_ps_;         ///< decision costs (priority_ns, sample_ns)
  mutable std::uint64_t evaluations_ = 0;  ///< priority evaluations (Eq. 1-2) so far
  std::uint64_t evaluations_charged_ = 0, samples_charged_ = 0;
};

}  // namespace

UVMSIM_REGISTER_EVICTION(
    "leu",
    "Least Expected Use (Chen et al., MEMSYS'19): per-reference reuse-interval distributions "
    "(sampled, fixed-size Ref RIT) and TESLA rank chunks by expected hits per unit of "
    "memory and time; evict the lowest",
    LeuEviction,
    Knob::size_choice("granularity", "64K", {"4K", "64K", "2M"},
                      "block whose TESLA and reuse intervals are tracked; a 2 MB chunk's "
                      "priority combines its resident blocks' (chunk_priority)"),
    Knob::choice("time_unit", "access", {"access", "sampled", "fault"},
                 "clock of TESLA and reuse intervals: every GPU access (the paper's "
                 "program time), sampled accesses only, or serviced GPU page faults"),
    Knob::number("sample_rate", 1.0, 1e-6, 1.0,
                 "fraction of accesses the trace sampler reports to the Ref RIT "
                 "(Bernoulli, seeded)"),
    Knob::integer("rit_entries", 256, 1, 1 << 20,
                  "references the Ref RIT holds (8-way; the least executed is replaced)"),
    Knob::integer("history", 65536, 16, 1 << 30,
                  "reuse intervals kept per reference: counts halve when reached"),
    Knob::integer("candidates", 32, 0, 1 << 20,
                  "chunks ranked per eviction: K random + K kept from the last eviction; "
                  "0 = every resident chunk (exact)"),
    Knob::choice("chunk_priority", "sum", {"sum", "max"},
                 "a chunk's priority from its resident blocks': sum (expected hits per "
                 "unit time of the 2 MB) or max (its best block)"),
    Knob::number("priority_ns", 100.0, 0, 1e6,
                 "RIMM host time per priority evaluation (Eq. 1-2) when ranking chunks, "
                 "charged at the eviction (the paper states none; bench_leu's measurement)"),
    Knob::number("sample_ns", 8.0, 0, 1e6,
                 "RIMM host time per sampled access folded into the Ref RIT, charged at the "
                 "next eviction (the paper states none; bench_leu's measurement)"));

}  // namespace uvmsim
