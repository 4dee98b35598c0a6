// The policy API: the driver model hands every eviction, prefetch and placement decision to a
// policy looked up by name. A policy is one folder under policies/, registered with the macros
// at the bottom of this file; adding one needs no engine edit (CMake globs policies/).
//
// Contract (see docs/policies.md):
//  * Policies observe the driver through notifications and answer questions; they never mutate
//    driver state. Block ids index VaSpace::blocks() and are stable for the whole run.
//  * Notifications are called on the fault-service path, never per GPU access unless the policy
//    asks for it with wants_access_notifications() (that costs simulation speed).
//  * Policies must be deterministic given their PolicyContext (use ctx.seed for randomness).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/page_mask.h"
#include "models/va_space.h"
#include "sim/config.h"
#include "sim/types.h"

namespace uvmsim {

constexpr std::uint32_t kNoBlock = std::numeric_limits<std::uint32_t>::max();

struct PolicyContext {
  const SimConfig& config;
  const VaSpace& va_space;
  std::uint64_t seed;
  nlohmann::json params;  ///< this policy's "policy.<name>.*" knobs (object, may be empty)
};

/// Chooses which allocated 2 MB root chunk (identified by its VA block) to evict when the
/// driver needs a chunk and none is free. Eviction happens only on allocation failure.
class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  /// A GPU chunk was (re)allocated to block `b` (driver: moves to the tail of the USED list).
  virtual void on_chunk_allocated(const VaBlock& b, Tick now) = 0;
  /// Block `b`'s chunk was evicted or released; `b` is no longer a candidate.
  virtual void on_chunk_freed(const VaBlock& b, Tick now) = 0;
  /// `b` went from no GPU-resident page to some (chunk already allocated).
  virtual void on_populated(const VaBlock& b, Tick now) { (void)b, (void)now; }
  /// `b`'s last GPU-resident page left; its chunk stays allocated.
  virtual void on_emptied(const VaBlock& b, Tick now) { (void)b, (void)now; }
  /// A fault on page `page` of `b` was serviced (after residency changed).
  virtual void on_fault(const VaBlock& b, unsigned page, Tick now) {
    (void)b, (void)page, (void)now;
  }
  /// Return true to receive on_access() for every GPU access to a GPU-resident page.
  virtual bool wants_access_notifications() const { return false; }
  virtual void on_access(const VaBlock& b, unsigned page, Tick now) {
    (void)b, (void)page, (void)now;
  }
  /// The block whose chunk to evict, never `requester`; kNoBlock if nothing is evictable.
  virtual std::uint32_t select_victim(std::uint32_t requester, Tick now) = 0;
};

/// Decides which extra pages of a VA block to migrate along with the faulted ones.
class PrefetchPolicy {
 public:
  struct Request {
    const VaBlock& block;
    Processor dest;
    const PageMask& resident_on_dest;  ///< pages already resident at the destination
    const PageMask& faulted;           ///< pages faulted to `dest` in this batch
    const PageMask& thrashing;         ///< pages the thrashing detector flags
    Tick now;
  };
  virtual ~PrefetchPolicy() = default;
  /// Adds the pages to prefetch to `out` (cleared by the caller). Pages already resident at the
  /// destination and the faulted pages themselves may be included; the driver drops them.
  virtual void compute(const Request& req, PageMask& out) = 0;
};

/// Chooses where a faulted page goes: migrate to the GPU (the driver's default) or map the
/// host copy remotely (zero-copy over the link).
class PlacementPolicy {
 public:
  enum class Decision : std::uint8_t { MigrateToGpu, MapRemote };
  virtual ~PlacementPolicy() = default;
  virtual Decision place(const VaBlock& b, unsigned page, AccessKind kind, Tick now) = 0;
};

template <typename Base>
class PolicyRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Base>(const PolicyContext&)>;
  struct Entry {
    std::string name;
    std::string description;
    Factory make;
  };
  static bool add(Entry e) {
    entries().push_back(std::move(e));
    return true;
  }
  static const std::vector<Entry>& all() { return entries(); }
  static const Entry* find(const std::string& name) {
    for (const auto& e : entries())
      if (e.name == name) return &e;
    return nullptr;
  }

 private:
  static std::vector<Entry>& entries() {
    static std::vector<Entry> v;
    return v;
  }
};

using EvictionRegistry = PolicyRegistry<EvictionPolicy>;
using PrefetchRegistry = PolicyRegistry<PrefetchPolicy>;
using PlacementRegistry = PolicyRegistry<PlacementPolicy>;

/// Creates the named policy or throws UserError listing the known names.
std::unique_ptr<EvictionPolicy> make_eviction_policy(const std::string& name,
                                                     const PolicyContext& ctx);
std::unique_ptr<PrefetchPolicy> make_prefetch_policy(const std::string& name,
                                                     const PolicyContext& ctx);
std::unique_ptr<PlacementPolicy> make_placement_policy(const std::string& name,
                                                       const PolicyContext& ctx);

}  // namespace uvmsim

#define UVMSIM_CONCAT_(a, b) a##b
#define UVMSIM_CONCAT(a, b) UVMSIM_CONCAT_(a, b)
/// Registers `Class` (constructible from `const PolicyContext&`) under `name`.
#define UVMSIM_REGISTER_POLICY(Registry, name, description, Class)                         \
  static const bool UVMSIM_CONCAT(uvmsim_registered_, __LINE__) =                          \
      ::uvmsim::Registry::add({name, description, [](const ::uvmsim::PolicyContext& ctx) { \
                                 return std::make_unique<Class>(ctx);                      \
                               }})
#define UVMSIM_REGISTER_EVICTION(name, description, Class) \
  UVMSIM_REGISTER_POLICY(EvictionRegistry, name, description, Class)
#define UVMSIM_REGISTER_PREFETCH(name, description, Class) \
  UVMSIM_REGISTER_POLICY(PrefetchRegistry, name, description, Class)
#define UVMSIM_REGISTER_PLACEMENT(name, description, Class) \
  UVMSIM_REGISTER_POLICY(PlacementRegistry, name, description, Class)
