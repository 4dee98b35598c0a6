// The identity of a uvmsim build: its version, the source revision it was built from and a hash
// of the binary itself. `uvmsim --version` prints it, every sweep result records the identity of
// the binary that computed it, and a sweep runs all its points with one pinned binary
// (docs/sweeps.md, "Build identity").
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace uvmsim::sweep {

struct BuildIdentity {
  std::string version;  ///< UVMSIM_VERSION, e.g. "0.1.0"
  std::string
      revision;  ///< git commit of the sources ("+modified": uncommitted edits), or "unknown"
  std::string build_id;  ///< build_id_of() the binary: "gnu:<hex>" or "crc64:<hex>"

  /// {"version", "revision", "build_id"}.
  nlohmann::json to_json() const;
  /// The identity in `j` (as to_json() writes it), or nothing if `j` is not one.
  static std::optional<BuildIdentity> from_json(const nlohmann::json& j);
  /// "uvmsim 0.1.0, source revision <rev>, build <id>".
  std::string text() const;
};

/// This process's build (computed once; the build id is that of the running executable, even if
/// the file it was started from has since been replaced).
const BuildIdentity& this_build();

/// The build id of an executable file: the GNU build-id note the linker writes (a SHA-1 over the
/// linked binary, "gnu:<hex>"; this project links with --build-id=sha1), or for files without one
/// (scripts, other linkers) the CRC-64 of the file's bytes ("crc64:<hex>"). Throws UserError naming
/// the file if it cannot be read.
std::string build_id_of(const std::filesystem::path& executable);

/// The first 16 hex digits of a build id, for file names and messages.
std::string short_build_id(const std::string& build_id);

}  // namespace uvmsim::sweep
