// Reads a text input line by line from any std::istream in large blocks, handing out each line as
// a string_view into its buffer. The importers parse multi-gigabyte text traces with it, so it
// never copies a line and its memory is bounded by the longest line it accepts.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

namespace uvmsim::trace::import {

class LineReader {
 public:
  /// `name` prefixes error messages ("<name>:<line>: ..."). Lines longer than `max_line` bytes
  /// are a UserError: a corrupt or binary file must not make the reader buffer without bound.
  LineReader(std::istream& in, std::string name, std::size_t max_line = std::size_t{1} << 20);

  /// The next line without its "\n" or "\r\n"; false at the end of the input. The view is valid
  /// until the next call. A last line without a newline is returned as a line.
  bool next(std::string_view& line);

  std::uint64_t line_number() const { return line_no_; }  ///< of the line last returned, 1-based
  std::uint64_t bytes_consumed() const { return consumed_; }  ///< input bytes up to that line
  const std::string& name() const { return name_; }
  /// "<name>:<line>" for error messages about the line last returned.
  std::string where() const { return name_ + ":" + std::to_string(line_no_); }

 private:
  bool fill();  // reads more input after the unconsumed tail; false at end of input

  std::istream& in_;
  std::string name_;
  std::size_t max_line_;
  std::vector<char> buf_;
  std::size_t begin_ = 0, end_ = 0;  // unconsumed bytes are buf_[begin_, end_)
  bool eof_ = false;
  std::uint64_t line_no_ = 0, consumed_ = 0;
};

}  // namespace uvmsim::trace::import
