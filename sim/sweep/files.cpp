#include "sim/sweep/files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <boost/crc.hpp>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <vector>

namespace uvmsim::sweep {

namespace fs = std::filesystem;

namespace {

// CRC-64/XZ (ECMA-182 polynomial, reflected, all-ones init and xor-out).
using Crc64 = boost::crc_optimal<64, 0x42F0E1EBA9EA3693ULL, ~0ULL, ~0ULL, true, true>;

std::string errno_text() { return std::strerror(errno); }

// Writes all of `data` to `fd`, retrying short writes and EINTR.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::uint64_t crc64(std::string_view data) {
  Crc64 c;
  c.process_bytes(data.data(), data.size());
  return c.checksum();
}

std::uint64_t crc64_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw UserError(p.string() + ": cannot open for reading");
  Crc64 c;
  std::array<char, 1 << 16> buf;
  while (in) {
    in.read(buf.data(), buf.size());
    c.process_bytes(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw UserError(p.string() + ": read failed");
  return c.checksum();
}

std::string hex64(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
}

std::string host_name() {
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) != 0) return "localhost";
  return buf.data();
}

std::string time_now(const char* fmt, bool utc) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  if (utc)
    gmtime_r(&t, &tm);
  else
    localtime_r(&t, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, fmt, &tm));
}

AtomicFile::AtomicFile(fs::path target, std::string what)
    : target_(std::move(target)), what_(std::move(what)) {
  const fs::path dir = target_.has_parent_path() ? target_.parent_path() : fs::path(".");
  std::string name = ".";
  name.append(target_.filename().string()).append(".").append(host_name());
  name.append(".").append(std::to_string(::getpid())).append(".tmp");
  temp_ = dir / name;
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw OutputError(target_.string() + ": " + (what_.empty() ? "" : what_ + ": ") +
                      "cannot create (" + errno_text() + ")");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& why) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  committed_ = true;  // nothing left to remove
  throw OutputError(target_.string() + ": " + (what_.empty() ? "" : what_ + ": ") + "write failed" +
                    (why.empty() ? "" : " (" + why + ")"));
}

void AtomicFile::write(std::string_view data) {
  if (fd_ < 0) fail("already closed");
  if (!write_all(fd_, data)) fail(errno_text());
}

void AtomicFile::commit() {
  if (fd_ < 0) fail("already closed");
  // fsync reports what a delayed allocation could not write (ENOSPC, EIO) before the rename
  // makes the file visible under its name.
  if (::fsync(fd_) != 0) fail(errno_text());
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(errno_text());
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail(errno_text());
  committed_ = true;
  // Make the rename itself durable; a failure here leaves a complete file, so it is not an error.
  const fs::path dir = target_.has_parent_path() ? target_.parent_path() : fs::path(".");
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_atomic(const fs::path& path, std::string_view content) {
  AtomicFile f(path);
  f.write(content);
  f.commit();
}

bool is_temp_file(const fs::path& p) {
  const std::string n = p.filename().string();
  return n.size() > 5 && n.front() == '.' && n.ends_with(".tmp");
}

std::size_t remove_stale_temp_files(const fs::path& dir) {
  std::size_t removed = 0;
  const std::string host = host_name();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!is_temp_file(e.path())) continue;
    // ".<name>.<host>.<pid>.tmp": the pid is the last dotted field before "tmp".
    std::string n = e.path().filename().string();
    n.resize(n.size() - 4);
    const auto dot = n.rfind('.');
    if (dot == std::string::npos) continue;
    const std::string pid_text = n.substr(dot + 1);
    n.resize(dot);
    if (!n.ends_with("." + host)) continue;  // another host's writer may still be alive
    char* end = nullptr;
    const long pid = std::strtol(pid_text.c_str(), &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;  // still running
    std::error_code rm;
    if (fs::remove(e.path(), rm)) ++removed;
  }
  return removed;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw UserError(p.string() + ": cannot open for reading");
  std::string s{std::istreambuf_iterator<char>(in), {}};
  if (in.bad()) throw UserError(p.string() + ": read failed");
  return s;
}

DirLock::DirLock(const fs::path& dir) {
  const fs::path p = dir / ".lock";
  fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw UserError(p.string() + ": cannot open lock file (" + errno_text() + ")");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
    throw UserError(dir.string() +
                    ": another uvmsim sweep or check is using this directory (lock held on " +
                    p.string() + ")");
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace uvmsim::sweep
