// Errors reported to the user as one line: "<file>: <field>: <message>".
#pragma once

#include <stdexcept>
#include <string>

namespace uvmsim {

/// Raised for bad user input (trace files, configs, command-line values). The CLI prints what()
/// as a single line and exits non-zero; nothing else is expected to catch it.
/// Messages quote user input (a CSV cell, a relation, a file name), which may hold line breaks or
/// other control characters: they are shown as '?' so that the message stays one line.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg) : std::runtime_error(one_line(msg)) {}
  UserError(const std::string& where, const std::string& field, const std::string& msg)
      : std::runtime_error(one_line(where + ": " + field + ": " + msg)) {}

 private:
  static std::string one_line(std::string s) {
    for (char& c : s) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    return s;
  }
};

/// Throws UserError(where, field, msg): "<where>: <field>: <msg>".
[[noreturn]] inline void field_error(const std::string& where, const std::string& field,
                                     const std::string& msg) {
  throw UserError(where, field, msg);
}

}  // namespace uvmsim
