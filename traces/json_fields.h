// Typed, validating access to the fields of a JSON object, shared by the trace metadata and the
// hints parsers: every error is a UserError "<where>: <path>.<key>: <message>".
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "traces/trace.h"

namespace uvmsim::trace::detail {

using nlohmann::json;

/// Reads typed fields of a JSON object, naming "metadata.<path>.<key>" in every error.
class Fields {
 public:
  Fields(const json& obj, const std::string& where, std::string path)
      : obj_(obj), where_(where), path_(std::move(path)) {
    if (!obj_.is_object()) fail(path_, "expected an object");
  }

  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw UserError(where_, field, msg);
  }
  std::string field(const std::string& key) const { return path_ + "." + key; }

  const json* find(const std::string& key, bool required) const {
    const auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (required) fail(field(key), "missing required field");
      return nullptr;
    }
    return &*it;
  }

  std::string str(const std::string& key, bool required, std::string dflt = {}) const {
    const json* v = find(key, required);
    if (v == nullptr) return dflt;
    if (!v->is_string()) fail(field(key), "expected a string");
    return v->get<std::string>();
  }

  std::uint64_t u64(const std::string& key, bool required, std::uint64_t dflt = 0) const {
    const json* v = find(key, required);
    if (v == nullptr) return dflt;
    return to_u64(*v, field(key));
  }

  std::uint32_t u32(const std::string& key, bool required, std::uint32_t dflt = 0) const {
    const std::uint64_t v = u64(key, required, dflt);
    if (v > std::numeric_limits<std::uint32_t>::max()) {
      fail(field(key), "value " + std::to_string(v) + " does not fit in 32 bits");
    }
    return static_cast<std::uint32_t>(v);
  }

  /// Addresses may also be written as "0x..." strings, which is what people and most JSON
  /// tools handle well for 64-bit values.
  std::uint64_t address(const std::string& key) const {
    const json* v = find(key, true);
    if (v->is_string()) {
      const std::string s = v->get<std::string>();
      if (s.size() > 2 && s.size() <= 18 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
          s.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos) {
        return std::stoull(s.substr(2), nullptr, 16);
      }
      fail(field(key), "expected an unsigned integer or a \"0x...\" hex string");
    }
    return to_u64(*v, field(key));
  }

  std::int64_t i64(const std::string& key, bool required, std::int64_t dflt = 0) const {
    const json* v = find(key, required);
    if (v == nullptr) return dflt;
    return to_i64(*v, field(key));
  }

  bool has(const std::string& key) const { return obj_.contains(key); }
  const std::string& path() const { return path_; }
  const std::string& where() const { return where_; }

  /// A signed integer (JSON integers of either sign within int64).
  std::int64_t to_i64(const json& v, const std::string& name) const {
    if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<std::int64_t>();
    if (v.is_number_unsigned()) {
      const std::uint64_t u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        fail(name, "value does not fit in a signed 64-bit integer");
      }
      return static_cast<std::int64_t>(u);
    }
    fail(name, "expected an integer");
  }

  /// An optional array (empty when absent).
  json array_or_empty(const std::string& key) const {
    const json* v = find(key, false);
    if (v == nullptr) return json::array();
    if (!v->is_array()) fail(field(key), "expected an array");
    return *v;
  }

  bool boolean(const std::string& key, bool dflt) const {
    const json* v = find(key, false);
    if (v == nullptr) return dflt;
    if (!v->is_boolean()) fail(field(key), "expected true or false");
    return v->get<bool>();
  }

  const json& array(const std::string& key) const {
    const json* v = find(key, true);
    if (!v->is_array()) fail(field(key), "expected an array");
    return *v;
  }

  json object(const std::string& key) const {
    const json* v = find(key, false);
    if (v == nullptr) return json::object();
    if (!v->is_object()) fail(field(key), "expected an object");
    return *v;
  }

  /// [x, y, z] with 1..3 positive entries (missing trailing dimensions are 1).
  Dim3 dim3(const std::string& key) const {
    const json* v = find(key, true);
    if (!v->is_array() || v->empty() || v->size() > 3) {
      fail(field(key), "expected an array of 1 to 3 positive integers");
    }
    std::uint32_t d[3] = {1, 1, 1};
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::uint64_t x = to_u64((*v)[i], field(key) + "[" + std::to_string(i) + "]");
      if (x == 0 || x > std::numeric_limits<std::uint32_t>::max()) {
        fail(field(key) + "[" + std::to_string(i) + "]", "must be in 1..4294967295");
      }
      d[i] = static_cast<std::uint32_t>(x);
    }
    return Dim3{d[0], d[1], d[2]};
  }

  std::uint64_t to_u64(const json& v, const std::string& name) const {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    // Parsed JSON stores non-negative integers as unsigned, but JSON built in code may hold them
    // as signed values.
    if (v.is_number_integer()) {
      if (v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
      fail(name, "must not be negative");
    }
    fail(name, "expected an unsigned integer");
  }

 private:
  const json& obj_;
  const std::string& where_;
  std::string path_;
};

}  // namespace uvmsim::trace::detail
