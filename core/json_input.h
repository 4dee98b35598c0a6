// The one place where JSON input is parsed: GPU presets, --set values, sweep specs, expectation
// files, hints, measurement lines and trace metadata all go through these functions, so that every
// reader gets the same limits and the same one-line error messages.
//
// Why a nesting limit: nlohmann::json parses iteratively, but copying, comparing and printing a
// value recurse once per level, so a ~45,000-level document (90 KB of '[') overflows the stack in
// whatever code touches it next. Real inputs nest fewer than ten levels.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"

namespace uvmsim {

/// Deepest nesting of arrays and objects accepted in any JSON input.
inline constexpr int kMaxJsonDepth = 128;

/// The nesting error of parse_json (a UserError like the others), for readers that word syntax
/// errors their own way but keep this one.
class JsonTooDeep : public UserError {
 public:
  using UserError::UserError;
};

struct JsonOptions {
  bool comments = false;  ///< accept // and /* */ comments (sweep specs)
};

/// Parses `text`. Every problem is a one-line UserError naming `where`: "<where>: not valid JSON:
/// <reason>" (syntax, invalid UTF-8), "<where>: <field>: number out of range ('1e999')" (the field
/// as a path, "runs[2].oversub", or "(top level)") or "<where>: JSON nested deeper than 128
/// levels".
nlohmann::json parse_json(std::string_view text, const std::string& where, JsonOptions opts = {});
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& where,
                                          JsonOptions opts = {});

/// Reads and parses a whole file; errors name the file ("<file>: cannot open", and as above).
nlohmann::json read_json_file(const std::filesystem::path& file, JsonOptions opts = {});
nlohmann::ordered_json read_ordered_json_file(const std::filesystem::path& file,
                                              JsonOptions opts = {});

/// Throws UserError "<where>: not valid UTF-8 (byte N)" unless `text` is UTF-8: text from the
/// command line or a CSV file that ends up in JSON output (which cannot print anything else).
void require_utf8(std::string_view text, const std::string& where);

/// For text that may or may not be JSON (the VALUE of --set KEY=VALUE): the JSON value, or the
/// text as a JSON string when it is not JSON. Text that is not UTF-8 (JSON output could not print
/// it) or JSON nested too deeply is a UserError naming `where`.
nlohmann::json parse_json_or_text(std::string_view text, const std::string& where);

}  // namespace uvmsim
