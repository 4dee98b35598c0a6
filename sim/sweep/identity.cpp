#include "sim/sweep/identity.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "sim/sweep/files.h"
#include "uvmsim_source_revision.h"  // generated at build time (cmake/source_revision.cmake)

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Reads exactly `n` bytes at `off`; false on a short read or an error.
bool read_at(int fd, void* buf, std::size_t n, std::uint64_t off) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
    off += static_cast<std::uint64_t>(r);
  }
  return true;
}

// The GNU build-id note of a 64-bit ELF file of this machine's byte order, as hex, or "" if the
// file is not one or has no such note. Every offset and size comes from the file, so each is
// checked against what was actually read.
std::string gnu_build_id(int fd) {
  Elf64_Ehdr eh;
  if (!read_at(fd, &eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
      eh.e_phnum == 0 || eh.e_phnum > 4096)
    return "";
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read_at(fd, ph.data(), ph.size() * sizeof(Elf64_Phdr), eh.e_phoff)) return "";
  for (const auto& p : ph) {
    if (p.p_type != PT_NOTE || p.p_filesz == 0 || p.p_filesz > (1u << 16)) continue;
    std::vector<unsigned char> notes(p.p_filesz);
    if (!read_at(fd, notes.data(), notes.size(), p.p_offset)) continue;
    std::size_t at = 0;
    auto align4 = [](std::size_t n) { return (n + 3) & ~std::size_t{3}; };
    while (at + sizeof(Elf64_Nhdr) <= notes.size()) {
      Elf64_Nhdr nh;
      std::memcpy(&nh, notes.data() + at, sizeof nh);
      const std::size_t name_at = at + sizeof nh;
      const std::size_t desc_at = name_at + align4(nh.n_namesz);
      const std::size_t next = desc_at + align4(nh.n_descsz);
      if (nh.n_namesz > notes.size() || nh.n_descsz > notes.size() || next > notes.size()) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz > 0 &&
          std::memcmp(notes.data() + name_at, "GNU", 4) == 0) {
        static const char* digits = "0123456789abcdef";
        std::string hex;
        for (std::size_t i = 0; i < nh.n_descsz; ++i) {
          hex += digits[notes[desc_at + i] >> 4];
          hex += digits[notes[desc_at + i] & 15];
        }
        return hex;
      }
      at = next;
    }
  }
  return "";
}

}  // namespace

json BuildIdentity::to_json() const {
  return {{"version", version}, {"revision", revision}, {"build_id", build_id}};
}

std::optional<BuildIdentity> BuildIdentity::from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  BuildIdentity b;
  for (auto [key, field] : {std::pair{"version", &b.version}, std::pair{"revision", &b.revision},
                            std::pair{"build_id", &b.build_id}}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) return std::nullopt;
    *field = it->get<std::string>();
  }
  return b;
}

std::string BuildIdentity::text() const {
  return "uvmsim " + version + ", source revision " + revision + ", build " + build_id;
}

std::string build_id_of(const fs::path& exe) {
  const int fd = ::open(exe.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw UserError(exe.string() + ": cannot read the executable (" + std::strerror(errno) + ")");
  const std::string gnu = gnu_build_id(fd);
  ::close(fd);
  if (!gnu.empty()) return "gnu:" + gnu;
  return "crc64:" + hex64(crc64_file(exe));
}

std::string short_build_id(const std::string& build_id) {
  const auto colon = build_id.find(':');
  return build_id.substr(colon == std::string::npos ? 0 : colon + 1, 16);
}

const BuildIdentity& this_build() {
  static const BuildIdentity self = [] {
    BuildIdentity b;
    b.version = UVMSIM_VERSION;
    b.revision = UVMSIM_SOURCE_REVISION;
    // /proc/self/exe opens the file this process was started from, even after a rebuild has
    // replaced (unlinked) it under its name.
    b.build_id = build_id_of("/proc/self/exe");
    return b;
  }();
  return self;
}

}  // namespace uvmsim::sweep
