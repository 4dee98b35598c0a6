// The object-level GPU memory managers of Li & Chapman, "Compiler Assisted Hybrid Implicit and
// Explicit GPU Memory Management under Unified Address Space" (SC 2019), as pure bookkeeping: the
// runtime's GPU object table (§4.1 "GOT") with each object's location, and the mapping decisions
// at a target-region (kernel) invocation for RLM (§3.2), GLM (§3.3), RDM (§3.4, with partial
// mapping) and the object-level LRU reference (§5.2). Implicit vs explicit transfer (§3.1) is
// decided per object by its access density. The placement policy (objects.cpp) turns
// the decisions into driver actions; the unit tests check them on the paper's examples.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace uvmsim::objects {

enum class Scheme : std::uint8_t { Rlm, Glm, Rdm, Lru };
const char* to_string(Scheme s);

/// No next use (the object is not used again): the furthest possible next reuse time.
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

/// One data object the invoked kernel uses.
struct Use {
  std::uint32_t object = 0;
  double regional_locality = 0;    ///< RL: executions of its loads/stores in this region (§4.1)
  double density = 0;              ///< accessed bytes / object size (§4.2)
  std::int64_t next_use = kNever;  ///< launch index of its next use (target reuse distance + TRC)
};

/// What to do with one object at this invocation.
struct Action {
  enum Kind : std::uint8_t {
    ToGpu,    ///< map it to the GPU: prefetch it (explicit) or let faults bring it (implicit)
    Partial,  ///< RDM partial mapping: its first `chunks` chunks to the GPU, the rest to the CPU
    ToCpu,    ///< keep it in CPU memory (preferred location CPU)
    Evict,    ///< replaced: move it out of GPU memory, preferred location CPU
  } kind = ToGpu;
  std::uint32_t object = 0;
  std::uint64_t chunks = 0;        ///< Partial: chunks mapped to the GPU
  bool explicit_transfer = false;  ///< ToGpu / Partial: density >= threshold (prefetch)
  bool operator==(const Action&) const = default;
};

struct ObjectState {
  std::uint64_t chunks = 0;          ///< size in 2 MB chunks
  std::uint64_t gpu_chunks = 0;      ///< chunks mapped to the GPU (= chunks when fully on the GPU)
  double global_locality = 0;        ///< GL = sum over regions of RF x RL (§3.3, Eq. 1)
  std::int64_t next_reuse = kNever;  ///< RDM's predicted next reuse time
  std::uint64_t last_use = 0;        ///< LRU: last invocation that used it (TRC + 1)
  bool known = false;
};

class ObjectManager {
 public:
  ObjectManager(Scheme scheme, std::uint64_t capacity_chunks, bool partial_mapping,
                double density_threshold);
  /// Registers object `id` of `chunks` chunks with its global locality.
  void add_object(std::uint32_t id, std::uint64_t chunks, double global_locality);
  /// A target region is invoked at target-region counter `trc` using `uses`: the mapping
  /// decisions, in the order they are made (replacements right before the object they make
  /// room for). Objects already on the GPU need no action and are not listed.
  std::vector<Action> invoke(std::uint64_t trc, const std::vector<Use>& uses);

  const ObjectState& state(std::uint32_t id) const { return objects_.at(id); }
  std::uint64_t used_chunks() const { return used_; }
  std::uint64_t capacity() const { return capacity_; }

 private:
  /// True if `cand` (on the GPU, not yet mapped in this invocation) may be replaced to make room
  /// for `cur`; `prio` holds this invocation's priorities (RLM / GLM).
  bool replaceable(std::uint32_t cand, std::uint32_t cur, const std::vector<double>& prio) const;
  /// Orders replacement candidates: the first is replaced first.
  bool replace_before(std::uint32_t a, std::uint32_t b, const std::vector<double>& prio) const;

  Scheme scheme_;
  std::uint64_t capacity_;
  bool partial_;
  double threshold_;
  std::vector<ObjectState> objects_;
  std::uint64_t used_ = 0;
};

}  // namespace uvmsim::objects
