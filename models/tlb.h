// A set-associative TLB with LRU replacement. Entries carry the mapping generation of their VA
// block, so the driver's TLB invalidate after PTE changes is one counter bump per block instead
// of a walk over every TLB (an entry whose generation is stale simply misses). An entry is 16
// bytes (tag, generation, 32-bit LRU stamp) in one array: a TLB-hit shortcut (Gpu::memo_hit)
// checks and touches one cache line, where separate tag, generation and stamp arrays made it
// three, and an SM's 32-entry L1 TLB is 512 bytes (80 SMs' L1 TLBs were 51 KB, more than the
// host's L1 data cache, in a STREAM run that interleaves the SMs).
#pragma once

#include <algorithm>
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
    e_.assign(n, Entry{});
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
    return e_[slot].key == key && e_[slot].gen == gen;
  }
  /// Marks entry `slot` most recently used, as a lookup() hit on it does.
  void touch(std::size_t slot) { e_[slot].stamp = next_stamp(); }
  /// Sets the LRU clock (tests: the stamps' wrap-around, renormalise()).
  void set_clock_for_test(std::uint32_t c) { clock_ = c; }

 private:
  static constexpr std::uint64_t kInvalid = ~std::uint64_t{0};
  struct Entry {
    std::uint64_t key = kInvalid;
    std::uint32_t gen = 0;
    std::uint32_t stamp = 0;  ///< LRU order within the set; 0: never used
  };
  static_assert(sizeof(Entry) == 16);
  std::uint32_t next_stamp() {
    if (clock_ == ~std::uint32_t{0}) renormalise();
    return ++clock_;
  }
  /// The 32-bit clock is about to wrap: every set's stamps are replaced by their ranks in the
  /// set (unused ways stay 0), which keeps each set's LRU order, and so every later victim, as
  /// it was; the clock restarts after the largest rank.
  void renormalise() {
    for (std::size_t base = 0; base < e_.size(); base += assoc_) {
      std::vector<std::uint32_t> order;
      for (std::uint32_t i = 0; i < assoc_; ++i)
        if (e_[base + i].stamp) order.push_back(e_[base + i].stamp);
      std::sort(order.begin(), order.end());
      for (std::uint32_t i = 0; i < assoc_; ++i)
        if (std::uint32_t& st = e_[base + i].stamp; st)
          st = static_cast<std::uint32_t>(std::lower_bound(order.begin(), order.end(), st) -
                                          order.begin()) +
               1;
    }
    clock_ = assoc_;
  }
  /// The way of the set at `base` whose tag is `key`, or the way count if none (a key sits in
  /// at most one way of its set).
  template <std::uint32_t kWays>
  std::uint32_t find_way(std::size_t base, std::uint64_t key) const {
    const Entry* k = &e_[base];
    const std::uint32_t ways = kWays ? kWays : assoc_;
    for (std::uint32_t i = 0; i < ways; ++i)
      if (k[i].key == key) return i;
    return ways;
  }
  /// lookup() over `kWays` ways (0: assoc_ ways, counted at run time).
  template <std::uint32_t kWays>
  bool lookup_ways(std::uint64_t key, std::uint32_t gen) {
    const std::size_t base = index(key);
    const std::uint32_t i = find_way<kWays>(base, key);
    if (i == (kWays ? kWays : assoc_) || e_[base + i].gen != gen) return false;
    e_[base + i].stamp = next_stamp();
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
      const bool hit = e_[base + i].gen == gen;
      e_[base + i].gen = gen;
      e_[base + i].stamp = next_stamp();
      last_ = base + i;
      return hit;
    }
    // A miss: the stamps alone pick the victim (no key to find any more).
    const Entry* st = &e_[base];
    std::uint32_t victim = 0;
    for (std::uint32_t i = 1; i < ways; ++i)
      if (st[i].stamp < st[victim].stamp) victim = i;
    e_[base + victim] = Entry{key, gen, next_stamp()};
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
  std::vector<Entry> e_;
  std::uint32_t sets_ = 1, assoc_ = 1;
  bool pow2_sets_ = true;  ///< index by mask (else modulo)
  std::uint32_t clock_ = 0;
  std::size_t last_ = 0;
};

}  // namespace uvmsim
