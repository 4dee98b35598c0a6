// Replaces the global operator new/delete to count allocations and live/peak heap bytes (see
// tests/alloc_counter.h). Replacing them is the only portable way to observe allocations. Sizes
// are malloc_usable_size() of the block, so a free subtracts exactly what its allocation added.
// GCC 12 warns (falsely) that inlined library code frees memory from a "mismatched" allocator,
// because it sees the malloc inside our operator new; the pairing is correct, so the warning is
// silenced here.
#include "tests/alloc_counter.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<std::uint64_t> g_allocations{0};
std::atomic<std::uint64_t> g_live{0};
std::atomic<std::uint64_t> g_peak{0};

void* counted(void* p) {
  if (!p) return p;
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t live =
      g_live.fetch_add(malloc_usable_size(p), std::memory_order_relaxed) + malloc_usable_size(p);
  std::uint64_t peak = g_peak.load(std::memory_order_relaxed);
  while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return p;
}
void release(void* p) {
  if (!p) return;
  g_live.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  std::free(p);
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted(std::malloc(n == 0 ? 1 : n))) return p;
  throw std::bad_alloc();
}
// The nothrow form must come from the same allocator (std::stable_sort's temporary buffer uses it
// and returns it through the sized delete below; under ASan a mix is an alloc-dealloc mismatch).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return counted(std::malloc(n == 0 ? 1 : n));
}
void* operator new[](std::size_t n) {
  if (void* p = counted(std::malloc(n == 0 ? 1 : n))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return counted(std::malloc(n == 0 ? 1 : n));
}
// The aligned forms (core/huge_page_allocator.h allocates its large buffers with them).
void* operator new(std::size_t n, std::align_val_t a) {
  const auto al = static_cast<std::size_t>(a);
  if (void* p = counted(std::aligned_alloc(al, (n + al - 1) / al * al + (n == 0 ? al : 0))))
    return p;
  throw std::bad_alloc();
}
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }

namespace uvmsim::test {

std::uint64_t allocations() { return g_allocations.load(); }
std::uint64_t live_heap_bytes() { return g_live.load(); }
std::uint64_t peak_heap_bytes() { return g_peak.load(); }
void reset_peak_heap() { g_peak.store(g_live.load()); }

}  // namespace uvmsim::test
