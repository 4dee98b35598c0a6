// Errors reported to the user as one line: "<file>: <field>: <message>".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

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

/// Errors name their input first: a file ("gtx1080ti.json: gpu.num_sms: ...") or a command-line
/// flag ("--set: gpu.num_sms: ...", "--gpu: unknown preset ..."). A bad flag value is a usage
/// error (the CLI exits 2), bad file content an input error (exit 1).
inline bool is_usage_error(const UserError& e) {
  return std::string_view(e.what()).starts_with("--");
}

}  // namespace uvmsim
