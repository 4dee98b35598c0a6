// Per-launch access files written by the Sanitizer per-access tracer
// (traces/collector/sanitizer/) and merged into the .uvt by the collector:
//   PREFIX.accesses/launch_<N>.bin, N = 0-based launch ordinal in the process.
// Layout (little-endian): magic "UVMACC01", u64 record count, u64 records dropped on the device
// (buffer full), then `count` records of 16 bytes. Within one warp, records are in program order;
// the device already merged the lanes of one instruction that touch the same 4 KB page.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace uvmsim::collector {

struct AccessRec {
  std::uint64_t va;     ///< first byte touched in the page by the warp's instruction
  std::uint32_t block;  ///< linear threadblock id (x + y*gx + z*gx*gy)
  std::uint16_t warp;   ///< warp within the block
  std::uint8_t kind;    ///< uvmsim::AccessKind: 1 read, 2 write, 3 atomic
  std::uint8_t bytes;   ///< access size of one lane (1..16)
};
static_assert(sizeof(AccessRec) == 16);

inline constexpr char kAccessMagic[8] = {'U', 'V', 'M', 'A', 'C', 'C', '0', '1'};

inline std::filesystem::path access_file(const std::filesystem::path& dir, std::uint64_t launch) {
  return dir / ("launch_" + std::to_string(launch) + ".bin");
}

inline void write_access_file(const std::filesystem::path& p, const std::vector<AccessRec>& recs,
                              std::uint64_t dropped) {
  std::ofstream out(p, std::ios::binary);
  const std::uint64_t n = recs.size();
  out.write(kAccessMagic, 8);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(reinterpret_cast<const char*>(&dropped), 8);
  out.write(reinterpret_cast<const char*>(recs.data()), static_cast<std::streamsize>(n * 16));
}

/// Reads a launch's access file; false if missing or malformed (the launch then has no
/// accesses, and the caller reports it).
inline bool read_access_file(const std::filesystem::path& p, std::vector<AccessRec>& recs,
                             std::uint64_t& dropped) {
  std::ifstream in(p, std::ios::binary);
  char magic[8];
  std::uint64_t n = 0;
  if (!in.read(magic, 8) || std::memcmp(magic, kAccessMagic, 8) != 0) return false;
  if (!in.read(reinterpret_cast<char*>(&n), 8) || !in.read(reinterpret_cast<char*>(&dropped), 8))
    return false;
  std::error_code ec;
  const auto size = std::filesystem::file_size(p, ec);
  if (ec || size != 24 + n * 16) return false;
  recs.resize(n);
  return static_cast<bool>(
      in.read(reinterpret_cast<char*>(recs.data()), static_cast<std::streamsize>(n * 16)));
}

}  // namespace uvmsim::collector
