// The simulator process's own memory use, for the run summary and sweep results. Not a
// statistic: it depends on the host, so it never goes into the stats JSON.
#pragma once

#include <sys/resource.h>

#include <cstdint>

namespace uvmsim {

/// Peak resident set size of this process in bytes (Linux reports ru_maxrss in KiB); 0 if the
/// kernel does not say.
inline std::uint64_t peak_rss_bytes() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss < 0) return 0;
  return static_cast<std::uint64_t>(ru.ru_maxrss) * 1024;
}

}  // namespace uvmsim
