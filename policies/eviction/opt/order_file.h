// The access order of a simulation, recorded for the two-pass OPT (`uvmsim run --record-order
// FILE`, then `--eviction opt --set policy.opt.order=FILE`): per window of `window` completed
// GPU accesses (the simulator's access count, repeats included), the 2 MB regions accessed in
// it, in time order. That is the GPU's interleaved order as the first run simulated it, which
// the program order OPT uses by default is not (docs/policies.md, "Oracles").
//
// File layout (little-endian): a 64-byte header (OrderHeader), then one 64-bit record per
// (window, region) pair, window << 32 | region, windows non-decreasing, each pair once.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace uvmsim::opt {

struct OrderHeader {
  char magic[8] = {'U', 'V', 'M', 'O', 'R', 'D', 'R', '1'};
  std::uint64_t window = 0;           ///< accesses per window
  std::uint64_t regions = 0;          ///< 2 MB regions (VA blocks) of the trace's VA space
  std::uint64_t accesses = 0;         ///< GPU accesses the run completed
  std::uint64_t records = 0;          ///< (window, region) records that follow
  std::uint64_t capacity_chunks = 0;  ///< GPU memory of the recording run
  std::uint64_t reserved[2] = {0, 0};
};
static_assert(sizeof(OrderHeader) == 64);

/// Writes an order file as the run goes (buffered; the header is completed by finish()).
class OrderWriter {
 public:
  /// Writes `path`; errors name `display` (the file the user asked for, when `path` is a
  /// temporary renamed once complete).
  OrderWriter(std::filesystem::path path, std::string display, std::uint64_t regions,
              std::uint64_t capacity_chunks, std::uint64_t window = 64);
  ~OrderWriter();
  OrderWriter(const OrderWriter&) = delete;
  OrderWriter& operator=(const OrderWriter&) = delete;

  /// One completed access of `repeat` folded accesses to `region`. Allocates nothing.
  void access(std::uint32_t region, std::uint32_t repeat) {
    const std::uint64_t w = clock_ / window_;
    clock_ += repeat;
    if (last_[region] == w) return;
    last_[region] = w;
    if (w > 0xffffffffu) overflow();
    buf_[n_++] = w << 32 | region;
    if (n_ == buf_.size()) flush();
  }
  /// Completes the header and closes the file (a UserError if the disk refused anything).
  void finish();
  std::uint64_t accesses() const { return clock_; }

 private:
  void flush();
  [[noreturn]] void overflow();
  void fail(const std::string& what);

  std::filesystem::path path_;
  std::string display_;
  std::FILE* f_ = nullptr;
  OrderHeader h_;
  std::uint64_t window_, clock_ = 0;
  std::vector<std::uint64_t> last_;  ///< per region: the last window it was recorded in
  std::vector<std::uint64_t> buf_;
  std::size_t n_ = 0;
};

/// Reads an order file recorded for a VA space of `regions` regions: on_header(header) first,
/// then on_record(window, region) for each record in order. A UserError names the file and what
/// is wrong with it.
OrderHeader read_order(const std::filesystem::path& path, std::uint64_t regions,
                       const std::function<void(const OrderHeader&)>& on_header,
                       const std::function<void(std::uint64_t, std::uint32_t)>& on_record);

}  // namespace uvmsim::opt
