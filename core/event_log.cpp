#include "core/event_log.h"

#include <cinttypes>
#include <cstdio>

#include "core/error.h"

namespace uvmsim {

EventLog::EventLog(const std::string& path) : out_(path), path_(path) {
  if (!out_) throw UserError(path + ": --events-out: cannot open for writing");
  out_ << "time_ns,event,batch,va,bytes,direction,cause,pages,duration_ns\n";
}

void EventLog::row(Tick t, const char* event, std::int64_t batch, Addr va, std::uint64_t bytes,
                   const char* direction, const char* cause, std::uint64_t pages, Tick duration) {
  if (sink_) sink_(EventRow{t, event, batch, va, bytes, direction, cause, pages, duration});
  if (!out_.is_open()) return;
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf,
                              "%" PRIu64 ".%03u,%s,%" PRId64 ",0x%" PRIx64 ",%" PRIu64
                              ",%s,%s,%" PRIu64 ",%" PRIu64 ".%03u\n",
                              t / kPsPerNs, static_cast<unsigned>(t % kPsPerNs), event, batch, va,
                              bytes, direction, cause, pages, duration / kPsPerNs,
                              static_cast<unsigned>(duration % kPsPerNs));
  out_.write(buf, n);
}

void EventLog::close() {
  if (!out_.is_open()) return;
  out_.flush();
  if (!out_) throw UserError(path_ + ": --events-out: write failed");
  out_.close();
}

}  // namespace uvmsim
