#include "traces/import/line_reader.h"

#include <cstring>

#include "core/error.h"

namespace uvmsim::trace::import {

namespace {
constexpr std::size_t kBlock = std::size_t{1} << 20;  // bytes read from the stream at a time
}

LineReader::LineReader(std::istream& in, std::string name, std::size_t max_line)
    : in_(in), name_(std::move(name)), max_line_(max_line) {
  buf_.resize(kBlock + max_line_ + 1);
}

bool LineReader::fill() {
  if (eof_) return false;
  // Move the partial line to the front, then read a block behind it.
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  const std::size_t room = buf_.size() - end_;
  in_.read(buf_.data() + end_, static_cast<std::streamsize>(room));
  const auto got = static_cast<std::size_t>(in_.gcount());
  if (in_.bad()) throw UserError(name_, "read", "I/O error while reading the input");
  if (got < room) eof_ = true;
  end_ += got;
  return got > 0;
}

bool LineReader::next(std::string_view& line) {
  std::size_t scanned = begin_;  // bytes before this are known to hold no newline
  for (;;) {
    const void* nl = std::memchr(buf_.data() + scanned, '\n', end_ - scanned);
    if (nl != nullptr) {
      const std::size_t pos = static_cast<std::size_t>(static_cast<const char*>(nl) - buf_.data());
      std::size_t len = pos - begin_;
      if (len > max_line_) break;
      if (len > 0 && buf_[begin_ + len - 1] == '\r') --len;
      line = std::string_view(buf_.data() + begin_, len);
      consumed_ += pos + 1 - begin_;
      begin_ = pos + 1;
      ++line_no_;
      return true;
    }
    if (end_ - begin_ > max_line_) break;
    scanned = end_;
    const std::size_t before = begin_;
    if (!fill()) {
      if (end_ == begin_) return false;
      // Last line without a newline.
      std::size_t len = end_ - begin_;
      if (buf_[begin_ + len - 1] == '\r') --len;
      line = std::string_view(buf_.data() + begin_, len);
      consumed_ += end_ - begin_;
      begin_ = end_;
      ++line_no_;
      return true;
    }
    scanned -= before - begin_;  // fill() moved the unconsumed bytes to the front
  }
  throw UserError(
      name_ + ":" + std::to_string(line_no_ + 1), "line",
      "longer than " + std::to_string(max_line_) + " bytes (not a text trace, or a corrupt one)");
}

}  // namespace uvmsim::trace::import
