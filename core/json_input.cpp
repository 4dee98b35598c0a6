#include "core/json_input.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include "core/error.h"
#include "core/utf8.h"

namespace uvmsim {

namespace {

struct TooDeep {};

/// nlohmann's messages start with "[json.exception.parse_error.101] " and quote the token read
/// last, which may be long or hold raw bytes: keep the reason readable and on one line.
std::string reason(const nlohmann::json::exception& e) {
  std::string_view what = e.what();
  if (!what.empty() && what.front() == '[') {
    const auto close = what.find("] ");
    if (close != std::string_view::npos) what.remove_prefix(close + 2);
  }
  constexpr std::size_t kMaxReason = 240;
  std::string out;
  for (const char c : what.substr(0, kMaxReason)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u >= 0x7f) ? '?' : c;
  }
  if (what.size() > kMaxReason) out += "...";
  return out;
}

template <typename J>
J parse(std::string_view text, const std::string& where, JsonOptions opts) {
  // The callback sees every container as it opens, with the number of containers around it, so
  // the limit holds before any deep value exists.
  const typename J::parser_callback_t limit = [](int depth, typename J::parse_event_t event, J&) {
    if ((event == J::parse_event_t::object_start || event == J::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      throw TooDeep{};
    }
    return true;
  };
  try {
    return J::parse(text.begin(), text.end(), limit, /*allow_exceptions=*/true, opts.comments);
  } catch (const TooDeep&) {
    throw JsonTooDeep(where + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                      " levels");
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for numbers such as 1e999.
    throw UserError(where + ": not valid JSON: " + reason(e));
  }
}

std::string read_all(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw UserError(file.string() + ": is a directory");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw UserError(file.string() + ": read error");
  return std::move(text).str();
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& where, JsonOptions opts) {
  return parse<nlohmann::json>(text, where, opts);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& where,
                                          JsonOptions opts) {
  return parse<nlohmann::ordered_json>(text, where, opts);
}

nlohmann::json read_json_file(const std::filesystem::path& file, JsonOptions opts) {
  return parse_json(read_all(file), file.string(), opts);
}

nlohmann::ordered_json read_ordered_json_file(const std::filesystem::path& file, JsonOptions opts) {
  return parse_ordered_json(read_all(file), file.string(), opts);
}

void require_utf8(std::string_view text, const std::string& where) {
  const std::size_t bad = invalid_utf8_at(text);
  if (bad != std::string_view::npos) {
    throw UserError(where + ": not valid UTF-8 (byte " + std::to_string(bad + 1) + ")");
  }
}

nlohmann::json parse_json_or_text(std::string_view text, const std::string& where) {
  require_utf8(text, where);
  if (!nlohmann::json::accept(text.begin(), text.end())) return std::string(text);
  return parse_json(text, where);
}

}  // namespace uvmsim
