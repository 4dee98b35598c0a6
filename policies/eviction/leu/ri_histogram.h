// A reuse-interval (RI) distribution of fixed size: the "RI distribution" of one reference in
// LEU's Ref RIT (Chen et al., "Statistical Caching for Near Memory Management", MEMSYS'19, §3.3).
//
// Buckets are log-linear (as in HdrHistogram): every interval below 16 has its own bucket, then
// each power of two is split into 8 buckets, so an interval is known to within 12.5 % over the
// whole 64-bit range with 496 buckets. The paper's worked examples (intervals 1..6) are exact.
// A bucket stands for its upper bound: LEU's leases are the bucket bounds (see leu_priority).
//
// The histogram keeps a bounded history: when it holds `limit` samples, every count is halved,
// so a reference's distribution follows program phases and the counts never overflow. Halving
// rounds up: the long interval a block shows once per pass over the data must survive against
// the thousands of short reuses each pass makes (the conditional Eq. 1 removes those, but only
// if the long one is still there).
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace uvmsim::leu {

class RiHistogram {
 public:
  static constexpr unsigned kSubBits = 3;
  static constexpr unsigned kSub = 1u << kSubBits;          ///< buckets per power of two
  static constexpr unsigned kExact = 2 * kSub;              ///< intervals below this are exact
  static constexpr unsigned kBuckets = kExact + 60 * kSub;  ///< up to 2^64 - 1
  static constexpr unsigned kWords = (kBuckets + 63) / 64;

  static unsigned bucket_of(std::uint64_t v) {
    if (v < kExact) return static_cast<unsigned>(v);
    const unsigned e = 63u - static_cast<unsigned>(std::countl_zero(v));  // >= kSubBits + 1
    const unsigned shift = e - kSubBits;
    return kExact + (shift - 1) * kSub + static_cast<unsigned>((v >> shift) - kSub);
  }
  /// Largest interval that falls into bucket `i`: the lease the bucket stands for.
  static std::uint64_t upper(unsigned i) {
    if (i < kExact) return i;
    const unsigned k = i - kExact;
    const unsigned shift = k / kSub + 1;
    const std::uint64_t lo = std::uint64_t{kSub + k % kSub} << shift;
    return lo + ((std::uint64_t{1} << shift) - 1);
  }

  void add(std::uint64_t ri, std::uint32_t limit) {
    const unsigned i = bucket_of(ri);
    if (counts_[i]++ == 0) {
      nonempty_[i >> 6] |= std::uint64_t{1} << (i & 63);
      if (i >= top_) top_ = i + 1;
    }
    // Halve at `limit` samples, but at most once per limit/2 additions: rounding up keeps every
    // non-empty bucket, so with more non-empty buckets than limit/2 the total stays high.
    ++total_;
    if (++since_halving_ >= limit / 2 && total_ >= limit) halve();
  }
  void clear() {
    if (total_ == 0) return;
    counts_.fill(0);
    nonempty_.fill(0);
    total_ = 0;
    top_ = 0;
    since_halving_ = 0;
  }
  std::uint32_t total() const { return total_; }
  bool empty() const { return total_ == 0; }
  std::uint32_t count(unsigned bucket) const { return counts_[bucket]; }
  /// One past the highest non-empty bucket (0 if empty): no interval is longer than
  /// upper(top() - 1).
  unsigned top() const { return top_; }

  /// Calls f(bucket, count) for every non-empty bucket >= `from`, in increasing order; f returns
  /// false to stop.
  template <typename F>
  void for_each_from(unsigned from, F&& f) const {
    const unsigned end = (top_ + 63) >> 6;
    for (unsigned w = from >> 6; w < end; ++w) {
      std::uint64_t bits = nonempty_[w];
      if (w == from >> 6) bits &= ~std::uint64_t{0} << (from & 63);
      while (bits) {
        const unsigned i = (w << 6) + static_cast<unsigned>(std::countr_zero(bits));
        bits &= bits - 1;
        if (!f(i, counts_[i])) return;
      }
    }
  }

 private:
  void halve() {
    total_ = 0;
    since_halving_ = 0;
    for (unsigned i = 0; i < top_; ++i) {
      counts_[i] = (counts_[i] + 1) >> 1;  // rounding up: a rare interval is never lost
      total_ += counts_[i];
    }
  }

  std::array<std::uint32_t, kBuckets> counts_{};
  std::array<std::uint64_t, kWords> nonempty_{};
  std::uint32_t total_ = 0;
  std::uint32_t since_halving_ = 0;
  unsigned top_ = 0;
};

}  // namespace uvmsim::leu
