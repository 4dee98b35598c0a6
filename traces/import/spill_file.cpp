#include "traces/import/spill_file.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "core/error.h"

namespace uvmsim::trace::import {

namespace {

// A 128 KiB window keeps each open run's decompression state small, so merging many runs stays
// within the memory budget; sorted access records compress well even with a short window.
constexpr int kWindowLog = 17;
constexpr std::size_t kBuffer = std::size_t{1} << 17;

std::filesystem::path unique_name(const std::filesystem::path& dir) {
  static std::atomic<unsigned> counter{0};
  return dir / (".uvmsim-import-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) +
                ".tmp");
}

}  // namespace

SpillFile::SpillFile(const std::filesystem::path& dir) : path_(unique_name(dir)) {
  file_ = std::fopen(path_.c_str(), "w+b");
  if (file_ == nullptr) {
    throw UserError(dir.string(), "--tmpdir",
                    std::string("cannot create a temporary file: ") + std::strerror(errno));
  }
  cctx_ = ZSTD_createCCtx();
  if (cctx_ == nullptr) throw std::bad_alloc();
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_windowLog, kWindowLog);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
  in_.resize(kBuffer);
  out_.resize(ZSTD_CStreamOutSize());
}

SpillFile::~SpillFile() {
  if (cctx_ != nullptr) ZSTD_freeCCtx(cctx_);
  if (dctx_ != nullptr) ZSTD_freeDCtx(dctx_);
  if (file_ != nullptr) std::fclose(file_);
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

void SpillFile::flush_out(ZSTD_EndDirective mode) {
  ZSTD_inBuffer input{in_.data(), pending_, 0};
  for (;;) {
    ZSTD_outBuffer output{out_.data(), out_.size(), 0};
    const std::size_t left = ZSTD_compressStream2(cctx_, &output, &input, mode);
    if (ZSTD_isError(left)) {
      throw UserError(path_.string(), "spill", std::string("zstd: ") + ZSTD_getErrorName(left));
    }
    if (output.pos > 0 && std::fwrite(out_.data(), 1, output.pos, file_) != output.pos) {
      throw UserError(path_.string(), "spill",
                      std::string("cannot write the temporary file: ") + std::strerror(errno));
    }
    compressed_ += output.pos;
    const bool done = mode == ZSTD_e_end ? left == 0 : input.pos == input.size;
    if (done) break;
  }
  pending_ = 0;
}

void SpillFile::write(const void* data, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  raw_ += n;
  while (n > 0) {
    const std::size_t take = std::min(n, in_.size() - pending_);
    std::memcpy(in_.data() + pending_, p, take);
    pending_ += take;
    p += take;
    n -= take;
    if (pending_ == in_.size()) flush_out(ZSTD_e_continue);
  }
}

void SpillFile::finish_writing() {
  flush_out(ZSTD_e_end);
  if (std::fflush(file_) != 0 || std::fseek(file_, 0, SEEK_SET) != 0) {
    throw UserError(path_.string(), "spill",
                    std::string("cannot write the temporary file: ") + std::strerror(errno));
  }
  ZSTD_freeCCtx(cctx_);
  cctx_ = nullptr;
  dctx_ = ZSTD_createDCtx();
  if (dctx_ == nullptr) throw std::bad_alloc();
  ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, kWindowLog);
  in_.assign(ZSTD_DStreamInSize(), 0);
  out_.assign(ZSTD_DStreamOutSize(), 0);
  reading_ = true;
}

bool SpillFile::refill() {
  // Keep any partial item at the front of out_, decompress behind it.
  if (out_pos_ > 0) {
    std::memmove(out_.data(), out_.data() + out_pos_, out_len_ - out_pos_);
    out_len_ -= out_pos_;
    out_pos_ = 0;
  }
  for (;;) {
    if (in_pos_ == in_len_ && !input_done_) {
      in_len_ = std::fread(in_.data(), 1, in_.size(), file_);
      in_pos_ = 0;
      if (in_len_ == 0) {
        if (std::ferror(file_)) {
          throw UserError(path_.string(), "spill", "cannot read the temporary file");
        }
        input_done_ = true;
      }
    }
    if (in_pos_ == in_len_ && input_done_) return false;
    ZSTD_inBuffer input{in_.data(), in_len_, in_pos_};
    ZSTD_outBuffer output{out_.data(), out_.size(), out_len_};
    const std::size_t r = ZSTD_decompressStream(dctx_, &output, &input);
    if (ZSTD_isError(r)) {
      throw UserError(path_.string(), "spill",
                      std::string("corrupt temporary file: zstd: ") + ZSTD_getErrorName(r));
    }
    in_pos_ = input.pos;
    const bool grew = output.pos > out_len_;
    out_len_ = output.pos;
    if (grew) return true;
  }
}

bool SpillFile::read(void* data, std::size_t n) {
  if (!reading_) throw std::logic_error("SpillFile::read before finish_writing");
  auto* p = static_cast<std::uint8_t*>(data);
  while (out_len_ - out_pos_ < n) {
    if (!refill()) {
      if (out_len_ == out_pos_) return false;
      throw UserError(path_.string(), "spill", "temporary file ends inside an item");
    }
  }
  std::memcpy(p, out_.data() + out_pos_, n);
  out_pos_ += n;
  return true;
}

}  // namespace uvmsim::trace::import
