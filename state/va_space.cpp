#include "state/va_space.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

#include "core/error.h"
#include "core/units.h"

namespace uvmsim {

const GpuBlockState VaBlock::kNoGpuState{};

void VaSpace::set_gpus(unsigned gpus) {
  if (gpus < 1 || gpus > kMaxGpus) throw std::invalid_argument("VaSpace::set_gpus: 1..16 GPUs");
  if (gpus != gpus_ && !peer_states_.empty())
    throw std::logic_error("VaSpace::set_gpus: GPU states were already made");
  gpus_ = gpus;
}

void VaSpace::add_gpu_states(VaBlock& b) {
  if (b.peers_ || gpus_ == 1) return;
  peer_states_.push_back(std::make_unique<GpuBlockState[]>(gpus_ - 1));
  b.peers_ = peer_states_.back().get();
}

void VaSpace::build(const std::vector<trace::Allocation>& allocs, bool tail_pow2) {
  ranges_.clear();
  blocks_.clear();
  peer_states_.clear();
  managed_footprint_ = 0;
  for (const auto& a : allocs) {
    VaRange r;
    r.alloc_id = a.id;
    r.name = a.name;
    // The runtime allocates memory in whole 4 KB pages: the range covers every page the requested
    // bytes touch, from the page holding the first byte. With an unaligned base the partial first
    // and last pages must be pages of the range like any other: a fault's page address below the
    // range's base, or a page left out at its end, is never serviced and `run` never ends.
    r.base = a.base & ~(kPageSize - 1);
    r.managed = a.managed;
    r.host_pinned = a.host_pinned;
    r.system = a.system;
    // Blocks are 2 MB windows and the last one must not wrap around (metadata validation only
    // guarantees that base + size fits in 64 bits).
    constexpr Addr kTop = ~Addr{0} - kBlockSize + 1;
    if (a.base + a.size > kTop) {
      throw UserError(
          "trace metadata", "allocations",
          "allocation '" + a.name + "' ends within 2 MB of the top of the address space");
    }
    std::uint64_t size = ((a.base + a.size + kPageSize - 1) & ~(kPageSize - 1)) - r.base;
    // System memory is mmap'ed in system pages, not rounded by the CUDA runtime.
    if (a.managed && !a.system && tail_pow2) {
      const std::uint64_t tail = (r.base + size) & (kBlockSize - 1);
      if (tail != 0 && (r.base & (kBlockSize - 1)) == 0) {
        const std::uint64_t rounded = std::max<std::uint64_t>(kBigPageSize, std::bit_ceil(tail));
        size += rounded - tail;
      }
    }
    r.size = size;
    if (a.managed) managed_footprint_ += size;
    ranges_.push_back(r);
  }
  std::sort(ranges_.begin(), ranges_.end(),
            [](const VaRange& x, const VaRange& y) { return x.base < y.base; });
  for (std::size_t i = 1; i < ranges_.size(); ++i) {
    if (ranges_[i].base < ranges_[i - 1].base + ranges_[i - 1].size)
      throw UserError(
          "trace metadata", "allocations",
          "allocation '" + ranges_[i].name + "' overlaps '" + ranges_[i - 1].name + "'");
  }
  for (std::uint32_t ri = 0; ri < ranges_.size(); ++ri) {
    auto& r = ranges_[ri];
    r.first_block = static_cast<std::uint32_t>(blocks_.size());
    if (r.size == 0) continue;
    const Addr end = r.base + r.size;
    const std::uint64_t n = ((end - 1) >> kBlockShift) - (r.base >> kBlockShift) + 1;
    if (n > kMaxBlocks - blocks_.size()) {
      throw UserError("trace metadata", "allocations",
                      "the allocations span more than " + format_bytes(kMaxBlocks * kBlockSize) +
                          " of 2 MB VA blocks, the most the simulator keeps state for");
    }
    for (Addr w = r.base & ~(kBlockSize - 1); w < end; w += kBlockSize) {
      VaBlock b;
      b.id = static_cast<std::uint32_t>(blocks_.size());
      b.range = ri;
      b.system = r.system;
      b.start = w;
      b.first_page = w < r.base ? page_index(r.base) : 0;
      b.end_page =
          end < w + kBlockSize ? static_cast<unsigned>((end - w) >> kPageShift) : kPagesPerBlock;
      blocks_.push_back(b);
    }
    r.num_blocks = static_cast<std::uint32_t>(blocks_.size()) - r.first_block;
  }
  build_window_table();
}

// The direct lookup table from 2 MB window to range, when the ranges span few enough windows.
void VaSpace::build_window_table() {
  window_table_.clear();
  window_base_ = 0;
  if (ranges_.empty()) return;
  const Addr lo = ranges_.front().base >> kBlockShift;
  Addr hi = lo;
  for (const auto& r : ranges_)
    hi = std::max(hi, (r.base + std::max<Addr>(r.size, 1) - 1) >> kBlockShift);
  if (hi - lo + 1 > kMaxWindowTable) return;  // sparse address space: binary search only
  window_base_ = lo;
  window_table_.assign(hi - lo + 1, kNoRange);
  for (std::uint32_t ri = 0; ri < ranges_.size(); ++ri) {
    const auto& r = ranges_[ri];
    if (r.size == 0) continue;
    for (Addr w = r.base >> kBlockShift; w <= (r.base + r.size - 1) >> kBlockShift; ++w) {
      auto& e = window_table_[w - lo];
      e = e == kNoRange ? ri : kSharedWindow;
    }
  }
}

const VaRange* VaSpace::search_range(Addr va) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), va,
                             [](Addr v, const VaRange& r) { return v < r.base; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return va < it->base + it->size ? &*it : nullptr;
}

}  // namespace uvmsim
