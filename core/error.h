// Errors reported to the user as one line: "<file>: <field>: <message>".
#pragma once

#include <stdexcept>
#include <string>

namespace uvmsim {

/// Raised for bad user input (trace files, configs, command-line values). The CLI prints what()
/// as a single line and exits non-zero; nothing else is expected to catch it.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg) : std::runtime_error(msg) {}
  UserError(const std::string& where, const std::string& field, const std::string& msg)
      : std::runtime_error(where + ": " + field + ": " + msg) {}
};

/// Throws UserError(where, field, msg): "<where>: <field>: <msg>".
[[noreturn]] inline void field_error(const std::string& where, const std::string& field,
                                     const std::string& msg) {
  throw UserError(where, field, msg);
}

}  // namespace uvmsim
