#include "sim/interval_log.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace uvmsim {

IntervalLog::IntervalLog(const std::string& path, Tick interval)
    : path_(path), out_(path), interval_(interval), next_(interval) {
  if (!out_) throw UserError(path + ": cannot open for writing");
}

IntervalLog::Snapshot IntervalLog::take(const Stats& s) {
  Snapshot n;
  n.accesses = s.accesses;
  n.gpu_faults = s.gpu_faults;
  n.fault_batches = s.fault_batches;
  n.evictions = s.evictions;
  n.htod_bytes = s.htod_bytes;
  n.dtoh_bytes = s.dtoh_bytes;
  n.remote_bytes = s.remote_bytes;
  for (std::size_t c = 0; c < s.htod_by_cause.size(); ++c) n.htod_by_cause[c] = s.htod_by_cause[c];
  for (std::size_t c = 0; c < PrefetchUseStats::kCauses; ++c) {
    n.prefetch_useful += s.prefetch_use.useful[c];
    n.prefetch_useless += s.prefetch_use.useless[c];
  }
  n.replays = s.replays;
  n.batch_time = s.batch_time_total;
  return n;
}

void IntervalLog::emit_until(Tick now, const Stats& s) {
  // Every boundary the clock passed closes an interval; quiet intervals are written as zeros so
  // that line k always covers [k*N, (k+1)*N).
  const Snapshot n = take(s);
  while (now >= next_) {
    write(next_ - interval_, next_, n);
    last_ = n;
    next_ += interval_;
  }
}

void IntervalLog::write(Tick start, Tick end, const Snapshot& n) {
  const Snapshot& o = last_;
  nlohmann::json by_cause = nlohmann::json::object();
  for (std::size_t c = 0; c < static_cast<std::size_t>(HtodCause::kCount); ++c)
    by_cause[to_string(static_cast<HtodCause>(c))] = n.htod_by_cause[c] - o.htod_by_cause[c];
  const nlohmann::json j = {
      {"interval", index_++},
      {"start_ns", static_cast<double>(start) / kPsPerNs},
      {"end_ns", static_cast<double>(end) / kPsPerNs},
      {"accesses", n.accesses - o.accesses},
      {"gpu_faults", n.gpu_faults - o.gpu_faults},
      {"fault_batches", n.fault_batches - o.fault_batches},
      {"batch_time_ns", static_cast<double>(n.batch_time - o.batch_time) / kPsPerNs},
      {"replays", n.replays - o.replays},
      {"evictions", n.evictions - o.evictions},
      {"htod_bytes", n.htod_bytes - o.htod_bytes},
      {"htod_bytes_by_cause", by_cause},
      {"dtoh_bytes", n.dtoh_bytes - o.dtoh_bytes},
      {"remote_bytes", n.remote_bytes - o.remote_bytes},
      {"prefetch_useful", n.prefetch_useful - o.prefetch_useful},
      {"prefetch_useless", n.prefetch_useless - o.prefetch_useless}};
  out_ << j.dump() << '\n';
}

void IntervalLog::finish(Tick end, const Stats& s) {
  if (!enabled()) return;
  advance(end, s);
  const Snapshot n = take(s);
  // The tail after the last full interval (or an empty run's single interval).
  if (end > next_ - interval_ || index_ == 0) write(next_ - interval_, end, n);
  last_ = n;
  out_.flush();
  if (!out_) throw UserError(path_ + ": write failed");
}

}  // namespace uvmsim
