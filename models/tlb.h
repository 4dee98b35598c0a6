// A set-associative TLB with LRU replacement. Entries carry the mapping generation of their VA
// block, so the driver's TLB invalidate after PTE changes is one counter bump per block instead
// of a walk over every TLB (an entry whose generation is stale simply misses).
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
    ways_.assign(static_cast<std::size_t>(sets_) * assoc_, Way{});
    clock_ = 0;
  }
  /// `key` identifies (virtual page number, page size); `gen` the block's mapping generation.
  bool lookup(std::uint64_t key, std::uint32_t gen) {
    Way* set = &ways_[index(key)];
    for (std::uint32_t i = 0; i < assoc_; ++i) {
      if (set[i].key == key && set[i].gen == gen) {
        set[i].stamp = ++clock_;
        return true;
      }
    }
    return false;
  }
  void insert(std::uint64_t key, std::uint32_t gen) {
    Way* set = &ways_[index(key)];
    Way* victim = set;
    for (std::uint32_t i = 0; i < assoc_; ++i) {
      if (set[i].key == key) {
        victim = &set[i];
        break;
      }
      if (set[i].stamp < victim->stamp) victim = &set[i];
    }
    *victim = Way{key, gen, ++clock_};
  }

 private:
  struct Way {
    std::uint64_t key = ~std::uint64_t{0};
    std::uint32_t gen = 0;
    std::uint64_t stamp = 0;
  };
  std::size_t index(std::uint64_t key) const {
    // Mix the key so that strided page numbers spread over the sets.
    key ^= key >> 17;
    key *= 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>((key >> 32) % sets_) * assoc_;
  }
  std::vector<Way> ways_;
  std::uint32_t sets_ = 1, assoc_ = 1;
  std::uint64_t clock_ = 0;
};

}  // namespace uvmsim
