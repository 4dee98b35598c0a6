#include "policies/placement/objects/object_manager.h"

#include <algorithm>
#include <stdexcept>

namespace uvmsim::objects {

const char* to_string(Scheme s) {
  switch (s) {
    case Scheme::Rlm:
      return "rlm";
    case Scheme::Glm:
      return "glm";
    case Scheme::Rdm:
      return "rdm";
    case Scheme::Lru:
      return "object-lru";
  }
  return "?";
}

ObjectManager::ObjectManager(Scheme scheme, std::uint64_t capacity_chunks, bool partial_mapping,
                             double density_threshold)
    : scheme_(scheme),
      capacity_(capacity_chunks),
      partial_(partial_mapping),
      threshold_(density_threshold) {}

void ObjectManager::add_object(std::uint32_t id, std::uint64_t chunks, double global_locality) {
  if (id >= objects_.size()) objects_.resize(id + 1);
  ObjectState& o = objects_[id];
  o.chunks = chunks;
  o.global_locality = global_locality;
  o.known = true;
}

bool ObjectManager::replaceable(std::uint32_t cand, std::uint32_t cur,
                                const std::vector<double>& prio) const {
  const ObjectState &c = objects_[cand], &o = objects_[cur];
  switch (scheme_) {
    case Scheme::Rlm:
    case Scheme::Glm:
      // Only lower-priority objects make room (§3.2 step 3: higher priorities of this call
      // cannot be replaced; GLM's priorities are global, so a lower GL is required).
      return prio[cand] < prio[cur];
    case Scheme::Rdm:
      // §3.4 step 3: replace a candidate reused later than the current object; on equal next
      // reuse times the lower global locality loses.
      return c.next_reuse > o.next_reuse ||
             (c.next_reuse == o.next_reuse && c.global_locality < o.global_locality);
    case Scheme::Lru:
      return true;
  }
  return false;
}

bool ObjectManager::replace_before(std::uint32_t a, std::uint32_t b,
                                   const std::vector<double>& prio) const {
  const ObjectState &x = objects_[a], &y = objects_[b];
  switch (scheme_) {
    case Scheme::Rlm:
    case Scheme::Glm:
      if (prio[a] != prio[b]) return prio[a] < prio[b];  // lowest priority first
      break;
    case Scheme::Rdm:
      if (x.next_reuse != y.next_reuse) return x.next_reuse > y.next_reuse;  // furthest first
      if (x.global_locality != y.global_locality) return x.global_locality < y.global_locality;
      break;
    case Scheme::Lru:
      if (x.last_use != y.last_use) return x.last_use < y.last_use;  // least recent first
      break;
  }
  return a < b;
}

// Steps 1-4 of §3.2 (and §3.4's partial mapping) for one object of the invoked region.
void ObjectManager::map_object(const Use& u, const std::vector<double>& prio,
                               const std::vector<std::uint8_t>& in_call,
                               const std::vector<std::uint8_t>& done, std::vector<Action>& out) {
  const std::uint32_t id = u.object;
  ObjectState& o = objects_[id];
  if (o.gpu_chunks == o.chunks) return;  // step 1: already in GPU memory
  const bool explicit_transfer = scheme_ == Scheme::Lru || u.density >= threshold_;
  const std::uint64_t need = o.chunks - o.gpu_chunks;
  const std::uint64_t free = capacity_ > used_ ? capacity_ - used_ : 0;
  if (need <= free) {  // step 2
    o.gpu_chunks = o.chunks;
    used_ += need;
    out.push_back({Action::ToGpu, id, o.chunks, explicit_transfer});
    return;
  }
  // Steps 3-4: replacement candidates until enough space is found.
  std::vector<std::uint32_t> cands;
  for (std::uint32_t c = 0; c < objects_.size(); ++c) {
    if (c == id || done[c] || objects_[c].gpu_chunks == 0) continue;
    if (scheme_ == Scheme::Lru && in_call[c]) continue;
    cands.push_back(c);
  }
  std::sort(cands.begin(), cands.end(),
            [&](std::uint32_t a, std::uint32_t b) { return replace_before(a, b, prio); });
  std::vector<std::uint32_t> victims;
  std::uint64_t room = free;
  for (const std::uint32_t c : cands) {
    if (room >= need || !replaceable(c, id, prio)) break;
    victims.push_back(c);
    room += objects_[c].gpu_chunks;
  }
  if (room >= need) {
    for (const std::uint32_t v : victims) {
      used_ -= objects_[v].gpu_chunks;
      objects_[v].gpu_chunks = 0;
      out.push_back({Action::Evict, v, 0, false});
    }
    o.gpu_chunks = o.chunks;
    used_ += need;
    out.push_back({Action::ToGpu, id, o.chunks, explicit_transfer});
  } else if (partial_ && free > 0) {
    // Partial mapping (§3.4): the first portion of the object that follows those in GPU memory
    // goes to the GPU, the rest stays in CPU memory. No replacement is made for it.
    o.gpu_chunks += free;
    used_ += free;
    out.push_back({Action::Partial, id, o.gpu_chunks, explicit_transfer});
  } else if (o.gpu_chunks == 0) {
    out.push_back({Action::ToCpu, id, 0, false});  // the replacement list is dropped
  }
}

std::vector<Action> ObjectManager::invoke(std::uint64_t trc, const std::vector<Use>& uses) {
  std::vector<Action> out;
  std::vector<double> prio(objects_.size(), 0);
  std::vector<std::uint8_t> in_call(objects_.size(), 0), done(objects_.size(), 0);
  for (const Use& u : uses) {
    if (u.object >= objects_.size() || !objects_[u.object].known)
      throw std::logic_error("ObjectManager: unknown object " + std::to_string(u.object));
    in_call[u.object] = 1;
    // RLM's priority is the regional locality in this region; an object the region does not use
    // has none (0).
    if (scheme_ == Scheme::Rlm) prio[u.object] = u.regional_locality;
    // RDM: next reuse time = TRC + target reuse distance, i.e. the next using launch (§3.4).
    if (scheme_ == Scheme::Rdm) objects_[u.object].next_reuse = u.next_use;
  }
  if (scheme_ == Scheme::Glm)
    for (std::size_t i = 0; i < objects_.size(); ++i) prio[i] = objects_[i].global_locality;

  // Decisions are made object by object in priority order (§3.2, §3.4).
  std::vector<const Use*> order;
  for (const Use& u : uses) order.push_back(&u);
  std::stable_sort(order.begin(), order.end(), [&](const Use* a, const Use* b) {
    const ObjectState &x = objects_[a->object], &y = objects_[b->object];
    switch (scheme_) {
      case Scheme::Rlm:
        return a->regional_locality > b->regional_locality;
      case Scheme::Glm:
        return x.global_locality > y.global_locality;
      case Scheme::Rdm:
        if (x.next_reuse != y.next_reuse) return x.next_reuse < y.next_reuse;
        return x.global_locality > y.global_locality;
      case Scheme::Lru:
        return false;
    }
    return false;
  });

  for (const Use* u : order) {
    done[u->object] = 1;  // mapped in this call: higher priority than what follows, never replaced
    map_object(*u, prio, in_call, done, out);
  }
  for (const Use& u : uses) objects_[u.object].last_use = trc + 1;
  return out;
}

}  // namespace uvmsim::objects
