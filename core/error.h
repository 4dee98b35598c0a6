// Errors reported to the user as one line: "<file>: <field>: <message>".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace uvmsim {

/// `text` with every control character written as an escape ("\n", "\r", "\t" stay readable,
/// others become "\xNN"), so that a message quoting a value the user gave (a file name, a knob
/// value, a line of a file) is always exactly one line on the terminal and in logs.
inline std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

/// Raised for bad user input (trace files, configs, command-line values). The CLI prints what()
/// as a single line and exits non-zero; nothing else is expected to catch it. The message is
/// kept on one line (one_line()) whatever values it quotes.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg) : std::runtime_error(one_line(msg)) {}
  UserError(const std::string& where, const std::string& field, const std::string& msg)
      : std::runtime_error(one_line(where + ": " + field + ": " + msg)) {}
};

/// A UserError in what the user asked for rather than in the data or the environment: an unknown
/// or missing option, a bad option value, an invalid specification file (sweep spec, expectation
/// file, GPU preset, knob value). Nothing has run; the CLI exits 2 (other UserErrors exit 1).
class UsageError : public UserError {
 public:
  explicit UsageError(const std::string& msg) : UserError(msg) {}
  UsageError(const std::string& where, const std::string& field, const std::string& msg)
      : UserError(where, field, msg) {}
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

/// Runs `f`, turning a UserError it throws into a UsageError with the same message: for the
/// parts of a command that read what the user asked for (options, specification files), whose
/// checks are shared with code that also reads data.
template <typename F>
decltype(auto) as_usage(F&& f) {
  try {
    return f();
  } catch (const UsageError&) {
    throw;
  } catch (const UserError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace uvmsim
