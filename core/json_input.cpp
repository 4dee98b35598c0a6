#include "core/json_input.h"

#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

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

/// Where the parser is: the path to the value being read ("runs[2].oversub"), so that an error
/// the parser reports without a position (a number overflow such as 1e999) can name its field.
class FieldPath {
 public:
  void open(bool array) { frames_.push_back({array, {}, 0}); }
  void close() {
    if (!frames_.empty()) frames_.pop_back();
    value_done();
  }
  void key(std::string k) {
    if (!frames_.empty()) frames_.back().key = std::move(k);
  }
  void value_done() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  std::string text() const {
    std::string f;
    for (const auto& fr : frames_) {
      if (fr.array) {
        f += '[' + std::to_string(fr.index) + ']';
      } else if (!fr.key.empty()) {
        if (!f.empty()) f += '.';
        f += fr.key;
      }
    }
    return f.empty() ? std::string("(top level)") : f;
  }

 private:
  struct Frame {
    bool array;
    std::string key;
    std::size_t index;
  };
  std::vector<Frame> frames_;
};

template <typename J>
J parse(std::string_view text, const std::string& where, JsonOptions opts) {
  // The callback sees every container as it opens, with the number of containers around it, so
  // the limit holds before any deep value exists; it also keeps the path to the current value.
  FieldPath path;
  const typename J::parser_callback_t track = [&path](int depth, typename J::parse_event_t event,
                                                      J& parsed) {
    using E = typename J::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (depth >= kMaxJsonDepth) throw TooDeep{};
        path.open(event == E::array_start);
        break;
      case E::object_end:
      case E::array_end:
        path.close();
        break;
      case E::key:
        path.key(parsed.is_string() ? parsed.template get<std::string>() : std::string());
        break;
      case E::value:
        path.value_done();
        break;
    }
    return true;
  };
  try {
    return J::parse(text.begin(), text.end(), track, /*allow_exceptions=*/true, opts.comments);
  } catch (const TooDeep&) {
    throw JsonTooDeep(where + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                      " levels");
  } catch (const nlohmann::json::out_of_range& e) {
    // "number overflow parsing '1e999'": the parser gives no position, the path names the field.
    const std::string r = reason(e);
    const auto q = r.find('\'');
    throw UserError(where, path.text(),
                    "number out of range (" + (q == std::string::npos ? r : r.substr(q)) + ")");
  } catch (const nlohmann::json::exception& e) {
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
