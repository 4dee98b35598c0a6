#include "state/placement_state.h"

#include <algorithm>

namespace uvmsim {

void PlacementState::configure(std::size_t nblocks, std::uint64_t capacity_chunks, unsigned gpu) {
  gpu_ = gpu;
  capacity_ = capacity_chunks;
  blocks_.assign(nblocks, BlockPlacement{});
  withheld_.assign(nblocks, 0);
  counted_.assign(nblocks, kUncounted);
  counted_res_.assign(nblocks, 0);
  alloc_order_.assign(nblocks, 0);
  reservations_.clear();
  pinned_ = quota_total_ = reserved_used_ = 0;
  active_ = false;
}

PlacementState::ChunkClass PlacementState::chunk_class(std::uint32_t id) const {
  const BlockPlacement& p = blocks_[id];
  if (p.gpu_pinned.any()) return ChunkClass::Pinned;
  if (p.reservation) return ChunkClass::Reserved;
  return ChunkClass::General;
}

bool PlacementState::refresh(const VaBlock& b) {
  const bool was = withheld_[b.id] != 0;
  const ChunkClass cls = chunk_class(b.id);
  withheld_[b.id] = cls != ChunkClass::General;
  const std::uint8_t now = b.gpu(gpu_).has_chunk ? static_cast<std::uint8_t>(cls) : kUncounted;
  const std::uint32_t res = cls == ChunkClass::Reserved ? blocks_[b.id].reservation : 0;
  std::uint8_t& old = counted_[b.id];
  if (old == now && counted_res_[b.id] == res) return was;
  // Uncount the old class, count the new one.
  if (old == static_cast<std::uint8_t>(ChunkClass::Pinned)) --pinned_;
  if (old == static_cast<std::uint8_t>(ChunkClass::Reserved)) {
    if (Reservation* r = reservation(counted_res_[b.id])) --r->used;
    --reserved_used_;
  }
  if (now == static_cast<std::uint8_t>(ChunkClass::Pinned)) ++pinned_;
  if (now == static_cast<std::uint8_t>(ChunkClass::Reserved)) {
    ++reservations_[res - 1].used;
    ++reserved_used_;
  }
  old = now;
  counted_res_[b.id] = res;
  return was;
}

void PlacementState::on_chunk_allocated(const VaBlock& b) { alloc_order_[b.id] = ++alloc_seq_; }

std::uint32_t PlacementState::create_reservation(std::uint64_t quota_chunks) {
  std::size_t i = 0;
  while (i < reservations_.size() && reservations_[i].live) ++i;
  if (i == reservations_.size()) reservations_.emplace_back();
  Reservation& r = reservations_[i];
  r = Reservation{};
  r.quota = quota_chunks;
  r.live = true;
  quota_total_ += quota_chunks;
  return static_cast<std::uint32_t>(i + 1);
}

void PlacementState::join_reservation(const VaBlock& b, std::uint32_t id) {
  blocks_[b.id].reservation = id;
  reservations_[id - 1].members.push_back(b.id);
}

void PlacementState::leave_reservation(const VaBlock& b) {
  const std::uint32_t id = blocks_[b.id].reservation;
  if (!id) return;
  blocks_[b.id].reservation = 0;
  Reservation& r = reservations_[id - 1];
  r.members.erase(std::find(r.members.begin(), r.members.end(), b.id));
  if (r.members.empty()) {
    // Its chunks were uncounted by the caller's refresh() of each member; with no member left
    // the quota is released too.
    quota_total_ -= r.quota;
    r.live = false;
  }
}

std::uint32_t PlacementState::reservation_victim(std::uint32_t id, std::uint32_t requester,
                                                 const std::vector<VaBlock>& blocks) const {
  const Reservation& r = reservations_[id - 1];
  // Empty chunks first (the driver evicts UNUSED before USED), then the oldest allocation.
  std::uint32_t best = kNoVictim;
  auto better = [&](std::uint32_t a, std::uint32_t cur) {
    if (cur == kNoVictim) return true;
    const bool ea = blocks[a].gpu(gpu_).count == 0, ec = blocks[cur].gpu(gpu_).count == 0;
    if (ea != ec) return ea;
    return alloc_order_[a] < alloc_order_[cur];
  };
  for (const std::uint32_t m : r.members) {
    if (m == requester || !blocks[m].gpu(gpu_).has_chunk || blocks_[m].gpu_pinned.any()) continue;
    if (better(m, best)) best = m;
  }
  return best;
}

std::uint32_t PlacementState::over_quota_victim(std::uint32_t requester,
                                                const std::vector<VaBlock>& blocks) const {
  for (std::size_t i = 0; i < reservations_.size(); ++i) {
    const Reservation& r = reservations_[i];
    if (!r.live || r.used <= r.quota) continue;
    const std::uint32_t v =
        reservation_victim(static_cast<std::uint32_t>(i + 1), requester, blocks);
    if (v != kNoVictim) return v;
  }
  return kNoVictim;
}

PlacementState::Source PlacementState::chunk_source(const VaBlock& b, std::uint64_t allocated,
                                                    const std::vector<VaBlock>& blocks) const {
  const std::uint64_t gen_used = general_used(allocated), gen_cap = general_cap();
  auto victim = [](std::uint32_t v) {
    return v == kNoVictim ? Source{} : Source{Source::Victim, v};
  };
  // Free chunks still owed to reservations below their quota.
  std::uint64_t unmet = 0;
  for (const Reservation& r : reservations_)
    if (r.live && r.used < r.quota) unmet += r.quota - r.used;
  switch (chunk_class(b.id)) {
    case ChunkClass::General:
      if (allocated < capacity_ && gen_used < gen_cap) return {Source::Free, 0};
      if (gen_used > 0 && gen_used >= gen_cap) return {Source::PolicyVictim, 0};
      if (const std::uint32_t v = over_quota_victim(b.id, blocks); v != kNoVictim) return victim(v);
      return gen_used > 0 ? Source{Source::PolicyVictim, 0} : Source{};
    case ChunkClass::Reserved: {
      const std::uint32_t id = blocks_[b.id].reservation;
      const Reservation& r = reservations_[id - 1];
      if (r.used < r.quota) {
        if (allocated < capacity_) return {Source::Free, 0};
        if (gen_used > 0) return {Source::PolicyVictim, 0};
        if (const std::uint32_t v = over_quota_victim(b.id, blocks); v != kNoVictim)
          return victim(v);
      }
      return victim(reservation_victim(id, b.id, blocks));
    }
    case ChunkClass::Pinned:
      // A pin never takes the free chunks still owed to reservations.
      if (allocated + unmet < capacity_) return {Source::Free, 0};
      if (gen_used > 0) return {Source::PolicyVictim, 0};
      return victim(over_quota_victim(b.id, blocks));
  }
  return {};
}

}  // namespace uvmsim
