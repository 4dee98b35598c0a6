// Profile-derived hints (`uvmsim analyze`): what a compiler pass would report about a program's
// memory accesses (docs/hints.md), measured by replaying a trace instead of analysing code. The
// result has source "profile": it is exact where static analysis has to estimate (counts of
// data-dependent loops, windows of indirect accesses), so it is an upper bound on what static
// hints can give a placement policy, not a substitute for them.
#pragma once

#include "traces/hints.h"
#include "traces/trace.h"

namespace uvmsim::trace {

/// Profiles every launch of `reader`'s trace. Per kernel entry and allocation: thread-level
/// reads and writes (record bytes x repeat / the instruction's access size), bytes, the largest
/// per-threadblock extent, and per static instruction (ref id) the same plus, when its offsets
/// move with the host-loop iteration, the window [start(it), start(it) + span(it)) covering every
/// access of each iteration. Values that vary between launches are fitted exactly by polynomials
/// of degree <= 2 in the iteration when they are such polynomials, else bounded by their maximum.
/// The launch sequence gives each launch's next use of every allocation.
Hints profile_hints(TraceReader& reader);

}  // namespace uvmsim::trace
