// An allocator for the few large slabs that grow with what is in flight (the GPU model's far-fault
// records and waiters). Allocations of 2 MB or more are 2 MB aligned and advised as transparent
// huge pages (madvise(MADV_HUGEPAGE)), so their first touch costs one page fault per 2 MB instead
// of one per 4 KB. On `random` 1 GB at 50 % oversubscription those first-touch faults were 12 % of
// the run (`perf record -g`: kernel page-fault entry under Gpu::raise_fault). Linux's default
// THP mode, `madvise`, grants huge pages only to memory advised this way. The advice is only
// advice: where THP is off or unavailable the memory is ordinary pages, and nothing else changes.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace uvmsim {

/// How a growing vector fills its new elements: ValueInit (zeros, as std::allocator) or
/// DefaultInit (left as they are, for buffers that are overwritten whole right after they grow).
struct ValueInit {};
struct DefaultInit {};

template <class T, class Init = ValueInit>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U, Init>&) noexcept {}

  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    if constexpr (std::is_same_v<Init, DefaultInit>)
      ::new (static_cast<void*>(p)) U;
    else
      ::new (static_cast<void*>(p)) U();
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  T* allocate(std::size_t n) {
    if (n > max_size()) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) return std::allocator<T>().allocate(n);
    // Through the aligned operator new, so that heap accounting (the tests' allocation counter)
    // sees these buffers like any other.
    void* p = ::operator new (rounded(bytes), std::align_val_t{kHugePage});
    ::madvise(p, rounded(bytes), MADV_HUGEPAGE);  // failure leaves ordinary pages: nothing to do
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) {
      std::allocator<T>().deallocate(p, n);
    } else {
      // Unsized: the sized aligned form is only declared where sized deallocation is on (clang
      // before 19 leaves it off, and the fuzz build is clang).
      ::operator delete (p, std::align_val_t{kHugePage});
    }
  }
  static constexpr std::size_t max_size() noexcept { return ~std::size_t{0} / sizeof(T) / 2; }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }

 private:
  static constexpr std::size_t rounded(std::size_t bytes) {
    return (bytes + kHugePage - 1) & ~(kHugePage - 1);
  }
};

/// A std::vector whose large buffers are advised as huge pages.
template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

/// A byte buffer that a decoder overwrites whole after every resize (a decompressed trace chunk):
/// huge-page advised, and resize() does not zero what is about to be written anyway. A `mvt` 4 GB
/// run holds all 127 of its threadblocks' chunks at once (4.6 GB): first-touch page faults of
/// 4 KB pages were a quarter of its CPU time.
using HugePageBytes = std::vector<std::uint8_t, HugePageAllocator<std::uint8_t, DefaultInit>>;

}  // namespace uvmsim
