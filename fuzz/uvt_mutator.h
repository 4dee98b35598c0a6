// A structure-aware mutator for .uvt files. Byte mutations of a .uvt almost never get past its
// CRCs and zstd checksums, so most of the reader (the index rules, the chunk structure, the
// record decoder, the metadata schema) would stay unexplored. This mutator unpacks a file into
// its parts (header fields, metadata JSON, decompressed chunks, index), mutates one part, and packs
// the file again with every length, CRC and zstd frame recomputed -- except the part mutated, so a
// mutated index keeps its (possibly inconsistent) numbers and only gets a valid CRC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "traces/trace.h"

namespace uvmsim::fuzz {

/// A .uvt file taken apart, without validating anything the reader validates.
struct UnpackedTrace {
  std::uint32_t version = 0, flags = 0;
  std::string metadata;  ///< the metadata JSON text as stored
  struct Chunk {
    trace::ChunkInfo info;           ///< as in the index (offset, sizes, CRC are recomputed)
    std::vector<std::uint8_t> data;  ///< decompressed bytes
    /// When set, stored instead of compressing `data`, and the index keeps `info.raw_bytes`
    /// (for frames that lie about their size).
    std::optional<std::vector<std::uint8_t>> frame;
  };
  std::vector<Chunk> chunks;
  std::uint64_t host_total = 0;
  std::vector<trace::LaunchSummary> launches;
};

/// Takes a file apart; nullopt if its framing, index or a chunk's zstd frame cannot be read, or a
/// chunk decompresses to more than `max_raw` bytes.
std::optional<UnpackedTrace> unpack_trace(const std::uint8_t* data, std::size_t size,
                                          std::size_t max_raw = 1 << 20);

/// Builds the file: header with CRC, chunks compressed (content size and checksum declared), the
/// index with each chunk's offset, sizes and CRC recomputed, and the footer. With
/// `index_override`, those bytes are the index instead (its CRC and location are still correct).
std::vector<std::uint8_t> pack_trace(const UnpackedTrace& t,
                                     const std::vector<std::uint8_t>* index_override = nullptr);

/// The index bytes `pack_trace` would write for `t` (offsets as laid out by pack_trace).
std::vector<std::uint8_t> trace_index_bytes(const UnpackedTrace& t);

/// libFuzzer custom-mutator contract: mutates data[0, size) in place, returns the new size
/// (<= max_size). Falls back to byte mutations for inputs that do not unpack.
std::size_t mutate_uvt(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed);

}  // namespace uvmsim::fuzz
