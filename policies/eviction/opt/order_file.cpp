#include "policies/eviction/opt/order_file.h"

#include <cerrno>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace uvmsim::opt {

namespace {
constexpr std::size_t kBufferRecords = 8192;
constexpr std::uint64_t kNoWindow = std::numeric_limits<std::uint64_t>::max();
}  // namespace

OrderWriter::OrderWriter(std::filesystem::path path, std::string display, std::uint64_t regions,
                         std::uint64_t capacity_chunks, std::uint64_t window)
    : path_(std::move(path)),
      display_(std::move(display)),
      window_(std::max<std::uint64_t>(1, window)),
      last_(regions, kNoWindow),
      buf_(kBufferRecords) {
  h_.window = window_;
  h_.regions = regions;
  h_.capacity_chunks = capacity_chunks;
  f_ = std::fopen(path_.c_str(), "wb");
  if (!f_)
    throw UserError(display_, "--record-order",
                    std::string("cannot create: ") + std::strerror(errno));
  if (std::fwrite(&h_, sizeof h_, 1, f_) != 1) fail("write");
}

OrderWriter::~OrderWriter() {
  if (f_) std::fclose(f_);
}

void OrderWriter::fail(const std::string& what) {
  const int e = errno;
  if (f_) std::fclose(f_);
  f_ = nullptr;
  throw UserError(display_, "--record-order",
                  "cannot " + what + ": " + (e ? std::strerror(e) : "I/O error"));
}

void OrderWriter::overflow() {
  throw UserError(display_, "--record-order",
                  "more than 2^32 windows of " + std::to_string(window_) + " accesses");
}

void OrderWriter::flush() {
  if (n_ && std::fwrite(buf_.data(), sizeof(std::uint64_t), n_, f_) != n_) fail("write");
  h_.records += n_;
  n_ = 0;
}

void OrderWriter::finish() {
  if (!f_) return;
  flush();
  h_.accesses = clock_;
  errno = 0;
  if (std::fseek(f_, 0, SEEK_SET) != 0 || std::fwrite(&h_, sizeof h_, 1, f_) != 1 ||
      std::fflush(f_) != 0)
    fail("write");
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0)
    throw UserError(display_, "--record-order",
                    std::string("cannot write: ") + std::strerror(errno));
}

OrderHeader read_order(const std::filesystem::path& path, std::uint64_t regions,
                       const std::function<void(const OrderHeader&)>& on_header,
                       const std::function<void(std::uint64_t, std::uint32_t)>& on_record) {
  const std::string name = path.string();
  std::FILE* in = std::fopen(path.c_str(), "rb");
  if (!in)
    throw UserError(name, "policy.opt.order", std::string("cannot open: ") + std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{in};
  OrderHeader h;
  const OrderHeader expected;
  if (std::fread(&h, sizeof h, 1, in) != 1 || std::memcmp(h.magic, expected.magic, 8) != 0)
    throw UserError(name, "header",
                    "not an access-order file (write one with `uvmsim run --record-order`)");
  if (h.regions != regions)
    throw UserError(name, "regions",
                    "recorded for a VA space of " + std::to_string(h.regions) +
                        " 2 MB regions, this trace has " + std::to_string(regions) +
                        " (record the order on the same trace)");
  if (h.window == 0) throw UserError(name, "window", "must be > 0");
  on_header(h);
  std::vector<std::uint64_t> buf(kBufferRecords);
  std::uint64_t seen = 0, last = 0;
  for (;;) {
    const std::size_t n = std::fread(buf.data(), sizeof(std::uint64_t), buf.size(), in);
    for (std::size_t i = 0; i < n; ++i, ++seen) {
      const std::uint64_t k = buf[i];
      const auto region = static_cast<std::uint32_t>(k);
      if (region >= regions || k < last)
        throw UserError(name, "record " + std::to_string(seen),
                        region >= regions ? "region " + std::to_string(region) + " out of range"
                                          : "windows out of order");
      last = k & ~std::uint64_t{0xffffffffu};
      on_record(k >> 32, region);
    }
    if (n < buf.size()) break;
  }
  if (std::ferror(in))
    throw UserError(name, "records", std::string("read error: ") + std::strerror(errno));
  if (seen != h.records)
    throw UserError(name, "records",
                    "the header says " + std::to_string(h.records) + ", the file holds " +
                        std::to_string(seen) + " (truncated?)");
  return h;
}

}  // namespace uvmsim::opt
