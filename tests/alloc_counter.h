// The test binary's allocation counter: the global operator new/delete are replaced (in
// tests/alloc_counter.cpp) to count allocations and to track the live and peak heap bytes of
// everything allocated through them, so that tests can assert that a hot path allocates nothing
// and that memory stays bounded by what is in flight, without measuring time or RSS.
#pragma once

#include <cstdint>

namespace uvmsim::test {

/// Allocations through operator new since the program started.
std::uint64_t allocations();
/// Bytes allocated through operator new and not yet freed (usable sizes, as malloc rounds).
std::uint64_t live_heap_bytes();
/// The highest live_heap_bytes() since the last reset_peak_heap().
std::uint64_t peak_heap_bytes();
/// Starts a new peak from the current live bytes.
void reset_peak_heap();

}  // namespace uvmsim::test
