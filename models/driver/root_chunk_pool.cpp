#include "models/driver/root_chunk_pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace uvmsim {

RootChunkPool::RootChunkPool(DriverContext& dc, PlacementState& place, PolicySet& policies,
                             std::uint64_t capacity_chunks)
    : dc_(dc), place_(place), policies_(policies), capacity_(capacity_chunks) {
  const std::size_t nblocks = dc.va().blocks().size();
  resident_pos_.assign(nblocks, ~0u);
  resident_.reserve(std::min<std::uint64_t>(capacity_chunks, nblocks));
  place_.configure(nblocks, capacity_chunks, dc_.gpu);
}

bool RootChunkPool::chunk_obtainable(const VaBlock& b) const {
  if (dc_.gpu_state(b).has_chunk) return true;
  if (!place_.active()) return used_chunks() < capacity_ || !resident_.empty();
  return place_.chunk_source(b, used_chunks(), dc_.sim.va.blocks()).kind !=
         PlacementState::Source::None;
}

std::uint32_t RootChunkPool::choose_victim(const VaBlock& b, Tick now) {
  auto& blocks = dc_.va().blocks();
  policy_decided_ = false;
  auto policy_victim = [&] {
    policy_decided_ = true;
    const std::uint32_t v = policies_.eviction().select_victim(b.id, now);
    if (v == kNoBlock || v >= blocks.size() || !dc_.gpu_state(blocks[v]).has_chunk || v == b.id ||
        place_.withheld(v)) {
      throw std::logic_error("eviction policy '" + dc_.cfg.engine.eviction +
                             "' returned no valid victim (" +
                             (v == kNoBlock ? std::string("none") : std::to_string(v)) +
                             (v != kNoBlock && v < blocks.size() && place_.withheld(v)
                                  ? ", a pinned or reserved chunk withheld from it"
                                  : "") +
                             ", capacity " + std::to_string(capacity_) + " chunks)");
    }
    return v;
  };
  if (!place_.active()) return used_chunks() < capacity_ ? kNoBlock : policy_victim();
  const PlacementState::Source src = place_.chunk_source(b, used_chunks(), blocks);
  switch (src.kind) {
    case PlacementState::Source::Free:
      return kNoBlock;
    case PlacementState::Source::PolicyVictim:
      return policy_victim();
    case PlacementState::Source::Victim:
      return src.victim;
    case PlacementState::Source::None:
      break;
  }
  throw std::logic_error("block " + std::to_string(b.id) +
                         " needs a chunk but every chunk is pinned or reserved (callers check "
                         "chunk_obtainable first)");
}

void RootChunkPool::take_free_chunk(ServiceTimes& st) {
  ++allocated_;
  if (pma_reserve_ == 0) {
    // PMA hands out root chunks in batches; the extra ones wait on UVM's free lists.
    st.cpu += ns_to_ps(dc_.cfg.cost.pma_alloc_ns);
    pma_reserve_ = dc_.cfg.driver.pma_batch_chunks;
    ++dc_.stats().pma_calls;
  }
  --pma_reserve_;
}

void RootChunkPool::assign(VaBlock& b) {
  dc_.gpu_state(b).has_chunk = true;
  resident_pos_[b.id] = static_cast<std::uint32_t>(resident_.size());
  resident_.push_back(b.id);
  if (place_.active()) {
    place_.on_chunk_allocated(b);
    place_.refresh(b);
    track_evictable(b);
    auto& ps = dc_.stats().placement;
    ps.max_pinned_chunks = std::max<std::uint64_t>(ps.max_pinned_chunks, place_.pinned_chunks());
  }
}

void RootChunkPool::release(const VaBlock& v) {
  // allocated_ is unchanged: the chunk is handed straight to the requester.
  if (place_.active() && place_.block(v.id).reservation)
    ++dc_.stats().placement.reservation_evictions;
  leave_lists(v);
}

void RootChunkPool::free_chunk(VaBlock& b) {
  if (!dc_.gpu_state(b).has_chunk) return;
  dc_.gpu_state(b).has_chunk = false;
  // uvm_pmm_gpu_free: the root chunk goes back to UVM's free list, not to PMA, so the next
  // allocation takes it without a PMA call.
  --allocated_;
  ++pma_reserve_;
  leave_lists(b);
}

void RootChunkPool::leave_lists(const VaBlock& v) {
  const std::uint32_t pos = resident_pos_[v.id];
  resident_pos_[resident_.back()] = pos;
  resident_[pos] = resident_.back();
  resident_.pop_back();
  resident_pos_[v.id] = ~0u;
  if (place_.active()) {
    place_.refresh(v);
    track_evictable(v);
  }
}

void RootChunkPool::activate_placement() {
  if (place_.active()) return;
  place_.activate();
  // From now on the eviction candidates are tracked apart: so far every resident block is one.
  evictable_pos_.assign(dc_.va().blocks().size(), ~0u);
  for (const std::uint32_t id : resident_) {
    evictable_pos_[id] = static_cast<std::uint32_t>(evictable_.size());
    evictable_.push_back(id);
  }
}

void RootChunkPool::track_evictable(const VaBlock& b) {
  if (!place_.active()) return;
  const bool want = dc_.gpu_state(b).has_chunk && !place_.withheld(b.id);
  std::uint32_t& pos = evictable_pos_[b.id];
  if (want && pos == ~0u) {
    pos = static_cast<std::uint32_t>(evictable_.size());
    evictable_.push_back(b.id);
  } else if (!want && pos != ~0u) {
    evictable_pos_[evictable_.back()] = pos;
    evictable_[pos] = evictable_.back();
    evictable_.pop_back();
    pos = ~0u;
  }
}

void RootChunkPool::refresh(const VaBlock& b, Tick now) {
  const bool was = place_.refresh(b);
  const bool is = place_.withheld(b.id);
  track_evictable(b);
  auto& ps = dc_.stats().placement;
  ps.max_pinned_chunks = std::max<std::uint64_t>(ps.max_pinned_chunks, place_.pinned_chunks());
  if (was == is || !dc_.gpu_state(b).has_chunk) return;
  policies_.each([&](PolicyBase& p) {
    if (is)
      p.on_chunk_withheld(b, now);
    else
      p.on_chunk_returned(b, now);
  });
}

void RootChunkPool::unpin_leaving(const VaBlock& b, const PageMask& pages, Tick now) {
  BlockPlacement& bp = place_.block(b.id);
  if ((bp.gpu_pinned & pages).none()) return;
  bp.gpu_pinned.and_not(pages);
  refresh(b, now);
}

}  // namespace uvmsim
