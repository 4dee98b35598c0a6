#include "models/driver/copy_engines.h"

#include <algorithm>

namespace uvmsim {

namespace {
// uvm_channel.c, channel_manager_num_channels: "In the common case, create two channels per
// pool." One GPFIFO entry of each channel is a sentinel (channel_get_available_gpfifo_entries).
constexpr std::uint32_t kChannelsPerPool = 2;
}  // namespace

CopyEngines::CopyEngines(DriverContext& dc) : dc_(dc) {
  const std::uint32_t in_flight = kChannelsPerPool * (dc.cfg.driver.gpfifo_entries - 1);
  htod_.configure(&dc.cfg.link.htod_curve, ns_to_ps(dc.cfg.cost.copy_run_ns), in_flight);
  dtoh_.configure(&dc.cfg.link.dtoh_curve, ns_to_ps(dc.cfg.cost.copy_run_ns), in_flight);
  peer_.configure(&dc.sim.peers.curve(), ns_to_ps(dc.cfg.cost.copy_run_ns), in_flight);
}

Tick CopyEngines::reserve_push(CopyEngine& ce, Tick start, ServiceTimes& st) {
  // The runs go out in one push (the driver pushes a block's copies together; callers pass
  // one run, so this counts more pushes than the driver makes). With every GPFIFO entry of the
  // engine's channels held by pushes still copying, the driver thread waits for the oldest to
  // complete before it can push, and so before any host work after it. Under the default
  // replay policy a batch waits for its copies anyway; under batch, block and once the driver
  // would otherwise run ahead of its copies without limit (docs/driver-model.md).
  if (const Tick free = ce.push_slot_free(); free > st.cpu) {
    ++dc_.stats().channel_full_waits;
    dc_.stats().channel_full_wait += free - st.cpu;
    st.cpu = free;
    start = std::max(start, free);
  }
  return start;
}

template <class Submit>
std::uint64_t CopyEngines::push_runs(CopyEngine& ce, VaBlock& b, const PageMask& pages, Tick start,
                                     ServiceTimes& st, const char* direction, const char* cause,
                                     bool into_gpu, Submit submit) {
  Tick last = 0;
  std::uint64_t total = 0;
  pages.for_each_run([&](unsigned s, unsigned e) {
    const std::uint64_t bytes = std::uint64_t{e - s} * kPageSize;
    Tick begin;
    const Tick done = submit(start, bytes, begin);
    st.copy_done = std::max(st.copy_done, done);
    if (into_gpu) b.copies_in_done = std::max(b.copies_in_done, done);
    total += bytes;
    if (dc_.log().enabled())
      dc_.log().row(begin, "migration", dc_.log_batch, b.page_va(s), bytes, direction, cause, e - s,
                    done - begin);
    last = done;
  });
  if (last) ce.record_push(last);
  return total;
}

std::uint64_t CopyEngines::copy_to_peer(VaBlock& b, const PageMask& pages, unsigned dst,
                                        const char* cause, Tick start, ServiceTimes& st) {
  start = reserve_push(peer_, start, st);
  // Ordered after the block's earlier pushes (its tracker): copies into this GPU's copy first.
  start = std::max(start, b.copies_in_done);
  // "dtod": CUPTI's name for device-to-device transfers.
  return push_runs(peer_, b, pages, start, st, "dtod", cause, true,
                   [&](Tick at, std::uint64_t bytes, Tick& begin) {
                     return peer_.submit_peer(at, bytes, begin, dc_.sim.peers, dc_.gpu, dst,
                                              dc_.sim.queue.now());
                   });
}

void CopyEngines::copy_runs(VaBlock& b, const PageMask& pages, bool htod, const char* cause,
                            Tick start, ServiceTimes& st, std::uint64_t& bytes_out) {
  CopyEngine& ce = htod ? htod_ : dtoh_;
  start = reserve_push(ce, start, st);
  // The two directions are separate engines, so without this an eviction issued while the
  // victim's own incoming copies are still queued would copy back data not yet there.
  if (!htod) start = std::max(start, b.copies_in_done);
  // The runs' bytes share the link's direction with remote accesses (models/host_link.h).
  LinkDirection& link = htod ? dc_.sim.link(dc_.gpu).htod : dc_.sim.link(dc_.gpu).dtoh;
  const std::uint64_t bytes = push_runs(ce, b, pages, start, st, htod ? "htod" : "dtoh", cause,
                                        htod, [&](Tick at, std::uint64_t n, Tick& begin) {
                                          return ce.submit(at, n, begin, link, dc_.sim.queue.now());
                                        });
  bytes_out += bytes;
  GpuStats& g = dc_.stats().per_gpu[dc_.gpu];
  (htod ? g.htod_bytes : g.dtoh_bytes) += bytes;
}

}  // namespace uvmsim
