#include "policies/eviction/opt/spill.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace uvmsim::spill {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  if (const char* t = std::getenv("TMPDIR"); t && *t) return t;
  return "/tmp";
}

TempFile::TempFile(const fs::path& dir, std::string knob) : knob_(std::move(knob)) {
  std::string tmpl = (dir / "uvmsim-spill-XXXXXX").string();
  fd_ = ::mkstemp(tmpl.data());
  if (fd_ < 0)
    throw UserError(dir.string(), knob_,
                    std::string("cannot create a temporary file: ") + std::strerror(errno));
  name_ = tmpl;
  // Unlinked now: the space is freed when the descriptor closes, however the process ends.
  ::unlink(tmpl.c_str());
}

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
}

void TempFile::write(const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int e = w < 0 ? errno : ENOSPC;
      throw UserError(name_, knob_,
                      std::string("cannot write (") + std::strerror(e) + ") after " +
                          std::to_string(bytes_) +
                          " bytes; point it at a directory with more room");
    }
    p += w;
    n -= static_cast<std::size_t>(w);
    bytes_ += static_cast<std::uint64_t>(w);
  }
}

void TempFile::read(std::uint64_t offset, void* data, std::size_t n) const {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw UserError(name_, knob_,
                      std::string("cannot read back (") +
                          (r < 0 ? std::strerror(errno) : "the file is shorter than written") +
                          ")");
    p += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
}

KeySorter::KeySorter(fs::path dir, std::string knob, std::size_t run_keys, std::size_t fan_in,
                     bool (*keep_duplicates)(std::uint64_t))
    : dir_(std::move(dir)),
      knob_(std::move(knob)),
      run_keys_(std::max<std::size_t>(1, run_keys)),
      fan_in_(std::max<std::size_t>(2, fan_in)),
      keep_duplicates_(keep_duplicates) {}

KeySorter::~KeySorter() = default;

void KeySorter::note_disk() {
  std::uint64_t d = 0;
  for (const auto& r : runs_) d += r.file->disk_bytes();
  peak_disk_ = std::max(peak_disk_, d);
}

void KeySorter::drop_duplicates() {
  buf_.erase(std::unique(buf_.begin(), buf_.end(),
                         [&](std::uint64_t a, std::uint64_t b) {
                           return a == b && !(keep_duplicates_ && keep_duplicates_(a));
                         }),
             buf_.end());
}

void KeySorter::spill_run() {
  std::sort(buf_.begin(), buf_.end());
  drop_duplicates();
  Run run{0, std::make_unique<RecordFile<std::uint64_t>>(dir_, knob_)};
  for (const std::uint64_t k : buf_) run.file->append(k);
  run.file->flush();
  run.file->release_buffer();
  buf_.clear();
  runs_.push_back(std::move(run));
  note_disk();
  // Runs of one level merge once there are fan_in of them: every key is merged
  // log_fan_in(keys / run_keys) times, and at most fan_in runs per level stay open.
  for (;;) {
    const unsigned level = runs_.back().level;
    std::size_t first = runs_.size();
    while (first > 0 && runs_[first - 1].level == level) --first;
    if (runs_.size() - first < fan_in_) break;
    merge_tail(first, level + 1);
  }
}

namespace {

/// K-way merge of sorted runs (each read through a Reader) into `emit`, dropping duplicates but
/// those `keep_duplicates` keeps.
template <typename Reader, typename Less>
void merge_runs(std::vector<Reader>& readers, Less less, bool (*keep_duplicates)(std::uint64_t),
                const std::function<void(std::uint64_t)>& emit) {
  using Item = std::pair<std::uint64_t, std::size_t>;
  auto after = [&](const Item& a, const Item& b) { return less(b.first, a.first); };
  std::priority_queue<Item, std::vector<Item>, decltype(after)> heap(after);
  for (std::size_t i = 0; i < readers.size(); ++i) {
    std::uint64_t k;
    if (readers[i].next(k)) heap.emplace(k, i);
  }
  bool any = false;
  std::uint64_t last = 0;
  while (!heap.empty()) {
    const auto [k, i] = heap.top();
    heap.pop();
    if (!any || k != last || (keep_duplicates && keep_duplicates(k))) emit(k);
    any = true;
    last = k;
    std::uint64_t n;
    if (readers[i].next(n)) heap.emplace(n, i);
  }
}

/// Read buffers of one merge, all runs together (so that memory does not grow with the number
/// of runs), but at least kMinReaderKeys keys per run.
constexpr std::size_t kMergeBufferKeys = std::size_t{1} << 17;  // 1 MB
constexpr std::size_t kMinReaderKeys = 1024;
std::size_t reader_keys(std::size_t runs) {
  return std::max(kMinReaderKeys, kMergeBufferKeys / std::max<std::size_t>(1, runs));
}

}  // namespace

void KeySorter::merge_tail(std::size_t first, unsigned level) {
  Run out{level, std::make_unique<RecordFile<std::uint64_t>>(dir_, knob_)};
  {
    std::vector<ForwardReader<std::uint64_t>> readers;
    for (std::size_t i = first; i < runs_.size(); ++i)
      readers.emplace_back(*runs_[i].file, reader_keys(runs_.size() - first));
    merge_runs(readers, std::less<>(), keep_duplicates_,
               [&](std::uint64_t k) { out.file->append(k); });
  }
  out.file->flush();
  out.file->release_buffer();
  runs_.resize(first);
  runs_.push_back(std::move(out));
  note_disk();
}

void KeySorter::finish() {
  if (finished_) return;
  finished_ = true;
  if (!runs_.empty() && !buf_.empty()) spill_run();
  if (runs_.empty()) {
    std::sort(buf_.begin(), buf_.end());
    drop_duplicates();
    keys_ = buf_.size();
    return;
  }
  std::vector<std::uint64_t>().swap(buf_);
  // At most fan_in runs are read at once by visit().
  while (runs_.size() > fan_in_) {
    const std::size_t n = std::min(fan_in_, runs_.size() - fan_in_ + 1);
    merge_tail(runs_.size() - n, runs_[runs_.size() - n].level + 1);
  }
  keys_ = 0;  // counted by the first visit
}

void KeySorter::visit(bool descending, const std::function<void(std::uint64_t)>& visitor) {
  std::uint64_t n = 0;
  const std::function<void(std::uint64_t)> f = [&](std::uint64_t k) {
    ++n;
    visitor(k);
  };
  if (runs_.empty()) {
    if (descending)
      for (auto it = buf_.rbegin(); it != buf_.rend(); ++it) f(*it);
    else
      for (const std::uint64_t k : buf_) f(k);
    return;
  }
  if (descending) {
    std::vector<BackwardReader<std::uint64_t>> readers;
    for (const auto& r : runs_) readers.emplace_back(*r.file, reader_keys(runs_.size()));
    merge_runs(readers, std::greater<>(), keep_duplicates_, f);
  } else {
    std::vector<ForwardReader<std::uint64_t>> readers;
    for (const auto& r : runs_) readers.emplace_back(*r.file, reader_keys(runs_.size()));
    merge_runs(readers, std::less<>(), keep_duplicates_, f);
  }
  keys_ = n;
}

}  // namespace uvmsim::spill
