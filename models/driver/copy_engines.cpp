#include "models/driver/copy_engines.h"

#include <algorithm>

namespace uvmsim {

CopyEngines::CopyEngines(DriverContext& dc) : dc_(dc) {
  htod_.configure(&dc.cfg.link.htod_curve, ns_to_ps(dc.cfg.cost.copy_run_ns));
  dtoh_.configure(&dc.cfg.link.dtoh_curve, ns_to_ps(dc.cfg.cost.copy_run_ns));
}

void CopyEngines::copy_runs(VaBlock& b, const PageMask& pages, bool htod, const char* cause,
                            Tick start, ServiceTimes& st, std::uint64_t& bytes_out) {
  CopyEngine& ce = htod ? htod_ : dtoh_;
  // The two directions are separate engines, so without this an eviction issued while the
  // victim's own incoming copies are still queued would copy back data not yet there.
  if (!htod) start = std::max(start, b.copies_in_done);
  pages.for_each_run([&](unsigned s, unsigned e) {
    const std::uint64_t bytes = std::uint64_t{e - s} * kPageSize;
    Tick begin;
    // The run's bytes share the link's direction with remote accesses (models/host_link.h).
    const Tick done = ce.submit(start, bytes, begin, htod ? dc_.sim.link.htod : dc_.sim.link.dtoh,
                                dc_.sim.queue.now());
    st.copy_done = std::max(st.copy_done, done);
    if (htod) b.copies_in_done = std::max(b.copies_in_done, done);
    bytes_out += bytes;
    if (dc_.log().enabled())
      dc_.log().row(begin, "migration", dc_.log_batch, b.page_va(s), bytes, htod ? "htod" : "dtoh",
                    cause, e - s, done - begin);
  });
}

}  // namespace uvmsim
