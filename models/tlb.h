// A set-associative TLB with LRU replacement. Entries carry the mapping generation of their VA
// block, so the driver's TLB invalidate after PTE changes is one counter bump per block instead
// of a walk over every TLB (an entry whose generation is stale simply misses). Tags, generations
// and LRU stamps are kept in separate arrays so a lookup scans only the tags of one set.
#pragma once

#include <cstdint>
#include <vector>

namespace uvmsim {

class Tlb {
 public:
  Tlb() = default;
  Tlb(std::uint32_t entries, std::uint32_t assoc) { reset(entries, assoc); }
  void reset(std::uint32_t entries, std::uint32_t assoc) {
    assoc_ = assoc < 1 ? 1 : (assoc > entries ? entries : assoc);
    sets_ = entries / assoc_ ? entries / assoc_ : 1;
    // Every preset's set count is a power of two: then the set index is a mask, which gives the
    // same set as the modulo without a 64-bit division on every lookup (the L1 lookup was the
    // hottest instruction run of Gpu::issue in a `perf record` of bfs).
    pow2_sets_ = (sets_ & (sets_ - 1)) == 0;
    const std::size_t n = static_cast<std::size_t>(sets_) * assoc_;
    keys_.assign(n, kInvalid);
    gens_.assign(n, 0);
    stamps_.assign(n, 0);
    clock_ = 0;
  }
  /// `key` identifies (virtual page number, page size); `gen` the block's mapping generation.
  bool lookup(std::uint64_t key, std::uint32_t gen) {
    // The presets' way counts get a scan unrolled at compile time (a TLB hit is the most
    // frequent step of a TLB-hit-dominated run: ~7 % of a STREAM run's instructions).
    switch (assoc_) {
      case 8:
        return lookup_ways<8>(key, gen);
      case 16:
        return lookup_ways<16>(key, gen);
      default:
        return lookup_ways<0>(key, gen);
    }
  }
  /// Makes `key` at `gen` the set's most recent entry: its own way if the set has it, else the
  /// first least recently used way (what access() does on a miss).
  void insert(std::uint64_t key, std::uint32_t gen) { access(key, gen); }
  /// lookup() then, on a miss, insert(): one scan of the set instead of two (a retried access
  /// of a heavy-faulting run misses both TLBs, and the second scan re-read the same ways).
  /// Returns whether the look-up hit; the TLB ends in the state the two calls leave.
  bool access(std::uint64_t key, std::uint32_t gen) {
    switch (assoc_) {
      case 8:
        return access_ways<8>(key, gen);
      case 16:
        return access_ways<16>(key, gen);
      default:
        return access_ways<0>(key, gen);
    }
  }
  /// The entry the last hit of lookup() or the last insert() used: a caller may come back to
  /// it (Gpu's TLB-hit shortcut) instead of scanning the set again.
  std::size_t last_slot() const { return last_; }
  /// Entry `slot` holds `key` at generation `gen`: a lookup of `key` would hit it, as a key
  /// sits in at most one way of its set.
  bool holds(std::size_t slot, std::uint64_t key, std::uint32_t gen) const {
    return keys_[slot] == key && gens_[slot] == gen;
  }
  /// Marks entry `slot` most recently used, as a lookup() hit on it does.
  void touch(std::size_t slot) { stamps_[slot] = ++clock_; }

 private:
  static constexpr std::uint64_t kInvalid = ~std::uint64_t{0};
  /// The way of the set at `base` whose tag is `key`, or the way count if none (a key sits in
  /// at most one way of its set).
  template <std::uint32_t kWays>
  std::uint32_t find_way(std::size_t base, std::uint64_t key) const {
    const std::uint64_t* k = &keys_[base];
    const std::uint32_t ways = kWays ? kWays : assoc_;
    for (std::uint32_t i = 0; i < ways; ++i)
      if (k[i] == key) return i;
    return ways;
  }
  /// lookup() over `kWays` ways (0: assoc_ ways, counted at run time).
  template <std::uint32_t kWays>
  bool lookup_ways(std::uint64_t key, std::uint32_t gen) {
    const std::size_t base = index(key);
    const std::uint32_t i = find_way<kWays>(base, key);
    if (i == (kWays ? kWays : assoc_) || gens_[base + i] != gen) return false;
    stamps_[base + i] = ++clock_;
    last_ = base + i;
    return true;
  }
  /// access() over `kWays` ways (0: assoc_ ways). A key sits in at most one way: found with its
  /// generation it hits; found stale, insert() would refill that way; absent, the first least
  /// recently used way, as insert_ways picks it.
  template <std::uint32_t kWays>
  bool access_ways(std::uint64_t key, std::uint32_t gen) {
    const std::size_t base = index(key);
    const std::uint32_t ways = kWays ? kWays : assoc_;
    // The tags first, as lookup_ways scans them: most calls hit (the L1 TLB of a run whose
    // accesses miss the memo), and an LRU comparison in the same loop made those dearer.
    if (const std::uint32_t i = find_way<kWays>(base, key); i < ways) {
      const bool hit = gens_[base + i] == gen;
      gens_[base + i] = gen;
      stamps_[base + i] = ++clock_;
      last_ = base + i;
      return hit;
    }
    // A miss: the stamps alone pick the victim (no key to find any more).
    const std::uint64_t* st = &stamps_[base];
    std::uint32_t victim = 0;
    for (std::uint32_t i = 1; i < ways; ++i)
      if (st[i] < st[victim]) victim = i;
    keys_[base + victim] = key;
    gens_[base + victim] = gen;
    stamps_[base + victim] = ++clock_;
    last_ = base + victim;
    return false;
  }
  std::size_t index(std::uint64_t key) const {
    // Mix the key so that strided page numbers spread over the sets.
    key ^= key >> 17;
    key *= 0x9E3779B97F4A7C15ull;
    const std::uint64_t h = key >> 32;
    return static_cast<std::size_t>(pow2_sets_ ? h & (sets_ - 1) : h % sets_) * assoc_;
  }
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> gens_;
  std::vector<std::uint64_t> stamps_;
  std::uint32_t sets_ = 1, assoc_ = 1;
  bool pow2_sets_ = true;  ///< index by mask (else modulo)
  std::uint64_t clock_ = 0;
  std::size_t last_ = 0;
};

}  // namespace uvmsim
