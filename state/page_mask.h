// A 512-bit mask over the 4 KB pages of one 2 MB VA block, with the word-level operations the
// driver model needs (64 KB big-page tests, contiguous runs, popcounts over aligned ranges).
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "core/types.h"

namespace uvmsim {

class PageMask {
 public:
  static constexpr unsigned kBits = kPagesPerBlock;
  static constexpr unsigned kWords = kBits / 64;

  bool test(unsigned i) const { return (w_[i >> 6] >> (i & 63)) & 1u; }
  void set(unsigned i) { w_[i >> 6] |= std::uint64_t{1} << (i & 63); }
  void reset(unsigned i) { w_[i >> 6] &= ~(std::uint64_t{1} << (i & 63)); }
  void clear() { w_.fill(0); }
  /// Sets pages [first, last).
  void set_range(unsigned first, unsigned last) {
    for_words(first, last, [](std::uint64_t& w, std::uint64_t m) { w |= m; });
  }
  /// Number of set pages in [first, last).
  unsigned count_range(unsigned first, unsigned last) const {
    unsigned n = 0;
    const_cast<PageMask*>(this)->for_words(first, last, [&n](std::uint64_t& w, std::uint64_t m) {
      n += static_cast<unsigned>(std::popcount(w & m));
    });
    return n;
  }
  unsigned count() const {
    unsigned n = 0;
    for (auto w : w_) n += static_cast<unsigned>(std::popcount(w));
    return n;
  }
  bool any() const {
    for (auto w : w_)
      if (w) return true;
    return false;
  }
  bool none() const { return !any(); }
  /// True if a page is set in both masks.
  bool intersects(const PageMask& o) const {
    for (std::size_t i = 0; i < w_.size(); ++i)
      if (w_[i] & o.w_[i]) return true;
    return false;
  }
  /// True if all 16 pages of big page `bp` (0..31) are set.
  bool big_page_full(unsigned bp) const {
    return ((w_[bp >> 2] >> ((bp & 3) * 16)) & 0xFFFFu) == 0xFFFFu;
  }
  bool big_page_any(unsigned bp) const { return ((w_[bp >> 2] >> ((bp & 3) * 16)) & 0xFFFFu) != 0; }
  /// Fills each big page in [b0, b1) (big-page indices) holding a page of `any` and none of
  /// `none`: a word at a time, without testing the big pages one by one.
  void fill_big_pages(const PageMask& any, const PageMask& none, unsigned b0, unsigned b1) {
    // Bit 16k of lanes(x) is set when 16-bit lane k of x is not zero (the shifts fold each lane
    // onto its lowest bit and never carry a higher lane's bits below it).
    const auto lanes = [](std::uint64_t x) {
      x |= x >> 8;
      x |= x >> 4;
      x |= x >> 2;
      x |= x >> 1;
      return x & 0x0001000100010001ull;
    };
    for (unsigned wi = b0 / 4; wi * 4 < b1; ++wi) {
      std::uint64_t sel = lanes(any.w_[wi]);
      if (none.w_[wi]) sel &= ~lanes(none.w_[wi]);  // thrashing pages are rare
      if (wi * 4 < b0 || wi * 4 + 4 > b1)           // only the range's end words are cut
        for (unsigned k = 0; k < 4; ++k)
          if (wi * 4 + k < b0 || wi * 4 + k >= b1) sel &= ~(std::uint64_t{1} << (16 * k));
      w_[wi] |= sel * 0xFFFFu;  // each selected bit 16k becomes lane k, no carries between
    }
  }
  /// Word `i` (pages 64i..64i+63, page 64i in bit 0).
  std::uint64_t word(unsigned i) const { return w_[i]; }
  /// First set page at or after `from`, or kBits.
  unsigned find_next(unsigned from) const {
    while (from < kBits) {
      const std::uint64_t w = w_[from >> 6] >> (from & 63);
      if (w) return from + static_cast<unsigned>(std::countr_zero(w));
      from = (from | 63) + 1;
    }
    return kBits;
  }
  /// First clear page at or after `from`, or kBits.
  unsigned find_next_clear(unsigned from) const {
    while (from < kBits) {
      const std::uint64_t w = ~w_[from >> 6] >> (from & 63);
      if (w) return std::min(kBits, from + static_cast<unsigned>(std::countr_zero(w)));
      from = (from | 63) + 1;
    }
    return kBits;
  }

  PageMask& operator|=(const PageMask& o) {
    for (unsigned i = 0; i < kWords; ++i) w_[i] |= o.w_[i];
    return *this;
  }
  PageMask& operator&=(const PageMask& o) {
    for (unsigned i = 0; i < kWords; ++i) w_[i] &= o.w_[i];
    return *this;
  }
  PageMask& and_not(const PageMask& o) {
    for (unsigned i = 0; i < kWords; ++i) w_[i] &= ~o.w_[i];
    return *this;
  }
  friend PageMask operator|(PageMask a, const PageMask& b) { return a |= b; }
  friend PageMask operator&(PageMask a, const PageMask& b) { return a &= b; }
  friend PageMask minus(PageMask a, const PageMask& b) { return a.and_not(b); }
  bool operator==(const PageMask&) const = default;

  /// Calls f(first, last) for each maximal run of set pages.
  template <typename F>
  void for_each_run(F&& f) const {
    unsigned i = find_next(0);
    while (i < kBits) {
      const unsigned e = find_next_clear(i);
      f(i, e);
      i = find_next(e);
    }
  }

 private:
  /// Calls f(word, mask) for each word overlapping [first, last), mask selecting the range.
  template <typename F>
  void for_words(unsigned first, unsigned last, F&& f) {
    if (first >= last) return;
    unsigned wi = first >> 6;
    const unsigned wl = (last - 1) >> 6;
    std::uint64_t mask = ~std::uint64_t{0} << (first & 63);
    for (; wi < wl; ++wi) {
      f(w_[wi], mask);
      mask = ~std::uint64_t{0};
    }
    const unsigned tail = last & 63;
    if (tail) mask &= ~std::uint64_t{0} >> (64 - tail);
    f(w_[wi], mask);
  }

  std::array<std::uint64_t, kWords> w_{};
};

}  // namespace uvmsim
