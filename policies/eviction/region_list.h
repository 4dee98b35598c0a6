// O(1) lists of VA blocks (2 MB regions) for list-based eviction policies: one Boost.Intrusive
// node per block, preallocated, so moving a region to a list's tail allocates nothing. A node
// unlinks itself from whatever list holds it (auto_unlink), so lists keep no size.
#pragma once

#include <boost/intrusive/list.hpp>
#include <cstdint>
#include <vector>

#include "policies/policy.h"

namespace uvmsim {

struct RegionNode
    : boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
  std::uint32_t block = 0;
  std::uint32_t tag = 0;  ///< free for the policy (LFU bin, CP area, ...)
};
using RegionList = boost::intrusive::list<RegionNode, boost::intrusive::constant_time_size<false>>;

class RegionNodes {
 public:
  explicit RegionNodes(std::size_t blocks) : nodes_(blocks) {
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) nodes_[i].block = i;
  }
  RegionNode& operator[](std::uint32_t id) { return nodes_[id]; }
  const RegionNode& operator[](std::uint32_t id) const { return nodes_[id]; }
  bool linked(std::uint32_t id) const { return nodes_[id].is_linked(); }
  void unlink(std::uint32_t id) { nodes_[id].unlink(); }
  void move_to_tail(RegionList& list, std::uint32_t id) {
    nodes_[id].unlink();
    list.push_back(nodes_[id]);
  }
  void move_to_head(RegionList& list, std::uint32_t id) {
    nodes_[id].unlink();
    list.push_front(nodes_[id]);
  }

 private:
  std::vector<RegionNode> nodes_;
};

/// The first block of `list` (head to tail) other than `skip`, or kNoBlock.
inline std::uint32_t first_except(const RegionList& list, std::uint32_t skip) {
  for (const auto& n : list)
    if (n.block != skip) return n.block;
  return kNoBlock;
}

/// The first block in [first, last) other than `skip` that the fault batch being serviced
/// (`batch`, 0 outside batches) did not bring in (`inserted_batch[block]`): such a region has
/// faults still pending, and evicting it would undo the batch's own work. One of those only if
/// nothing else is there; kNoBlock if nothing at all. `fallback` carries the first such region
/// across several calls (e.g. over several lists).
template <typename It>
std::uint32_t first_settled(It first, It last, std::uint32_t skip,
                            const std::vector<std::uint64_t>& inserted_batch, std::uint64_t batch,
                            std::uint32_t& fallback) {
  for (; first != last; ++first) {
    const std::uint32_t b = first->block;
    if (b == skip) continue;
    if (batch && inserted_batch[b] == batch) {
      if (fallback == kNoBlock) fallback = b;
      continue;
    }
    return b;
  }
  return kNoBlock;
}

/// Offers the unobserved blocks of `list` from the head, at most `max`; false if the sink is full.
inline bool offer_from_head(const RegionList& list, ObservationSink& sink,
                            const PolicyEngine& engine, std::size_t max = ~std::size_t{0}) {
  for (const auto& n : list) {
    if (max == 0) break;
    if (engine.is_observed(n.block)) continue;
    --max;
    if (sink.offer(n.block) == Offer::Full) return false;
  }
  return true;
}

}  // namespace uvmsim
