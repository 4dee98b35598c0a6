#include "core/knob.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <optional>

#include "core/error.h"
#include "core/units.h"

namespace uvmsim {

using nlohmann::json;

namespace {

/// An exact integer of either sign: JSON keeps integers above 2^63 as unsigned, below 0 as signed.
struct Int {
  bool negative = false;
  std::uint64_t magnitude = 0;
};

/// Doubles hold every integer up to 2^53 exactly; past it a JSON number like 1e17 may already be
/// a rounded spelling of what was meant, so such integers must be written without an exponent.
constexpr double kExactDoubleInt = 9007199254740992.0;  // 2^53

std::optional<Int> parse_int_text(const std::string& s) {
  if (!s.empty() && s[0] == '-') {
    std::uint64_t m = 0;
    const char* end = s.data() + s.size();
    const auto [p, ec] = std::from_chars(s.data() + 1, end, m);
    if (s.size() < 2 || ec != std::errc() || p != end) return std::nullopt;
    return Int{m != 0, m};
  }
  // Decimal digits, optionally with a binary size suffix ("11G", "64KiB"); no sign, space or hex.
  if (const auto v = try_parse_size(s)) return Int{false, *v};
  return std::nullopt;
}

std::optional<Int> as_int(const json& v) {
  if (v.is_number_unsigned()) return Int{false, v.get<std::uint64_t>()};
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    // -(i + 1) + 1 avoids negating INT64_MIN.
    return i < 0 ? Int{true, static_cast<std::uint64_t>(-(i + 1)) + 1}
                 : Int{false, static_cast<std::uint64_t>(i)};
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > kExactDoubleInt)
      return std::nullopt;
    return d < 0 ? Int{true, static_cast<std::uint64_t>(-d)}
                 : Int{false, static_cast<std::uint64_t>(d)};
  }
  if (v.is_string()) return parse_int_text(v.get<std::string>());
  return std::nullopt;
}

json int_json(Int i) {
  if (!i.negative) return json(i.magnitude);
  return json(-static_cast<std::int64_t>(i.magnitude - 1) - 1);
}

/// A plain decimal number: [-]digits[.digits][e[+-]digits] (or [-].digits...). No leading or
/// trailing space, no hexadecimal, no inf or nan: strtod's extras would turn typos into values.
std::optional<double> parse_number_text(const std::string& s) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  std::size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  double d = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(d)) return std::nullopt;
  return d;
}

std::optional<double> as_number(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return parse_number_text(v.get<std::string>());
  return std::nullopt;
}

/// Numbers as people write them: the shortest text that reads back as the same double (0.5,
/// 1481, 1e+09).
std::string number_text(double d) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace

Knob Knob::make(std::string name, Type type, std::string doc) {
  Knob k;
  k.name_ = std::move(name);
  k.type_ = type;
  k.doc_ = std::move(doc);
  return k;
}

Knob Knob::make_integer(std::string name, json def, std::int64_t lo, std::uint64_t hi,
                        std::string doc, bool pow2) {
  Knob k = make(std::move(name), Type::Integer, std::move(doc));
  if (lo > 0 && static_cast<std::uint64_t>(lo) > hi)
    throw std::logic_error("knob " + k.name_ + ": empty range");
  k.int_lo_ = lo;
  k.int_hi_ = hi;
  k.pow2_ = pow2;
  k.set_default(std::move(def));
  return k;
}

Knob Knob::number(std::string name, json def, double lo, double hi, std::string doc) {
  Knob k = make(std::move(name), Type::Number, std::move(doc));
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo <= hi))
    throw std::logic_error("knob " + k.name_ + ": bad range");
  k.lo_ = lo;
  k.hi_ = hi;
  k.set_default(std::move(def));
  return k;
}

Knob Knob::number_or_zero(std::string name, json def, double lo, double hi, std::string doc) {
  Knob k = number(std::move(name), nullptr, lo, hi, std::move(doc));
  if (!(lo > 0)) throw std::logic_error("knob " + k.name_ + ": number_or_zero needs lo > 0");
  k.zero_ok_ = true;
  k.set_default(std::move(def));
  return k;
}

Knob Knob::boolean(std::string name, json def, std::string doc) {
  Knob k = make(std::move(name), Type::Boolean, std::move(doc));
  k.set_default(std::move(def));
  return k;
}

Knob Knob::text(std::string name, json def, std::string doc) {
  Knob k = make(std::move(name), Type::Text, std::move(doc));
  k.set_default(std::move(def));
  return k;
}

Knob Knob::choice(std::string name, json def, std::vector<std::string> choices, std::string doc) {
  Knob k = make(std::move(name), Type::Choice, std::move(doc));
  if (choices.empty()) throw std::logic_error("knob " + k.name_ + ": no choices");
  k.choices_ = std::move(choices);
  k.set_default(std::move(def));
  return k;
}

Knob Knob::size_choice(std::string name, json def, std::vector<std::string> choices,
                       std::string doc) {
  Knob k = choice(std::move(name), nullptr, std::move(choices), std::move(doc));
  for (const auto& c : k.choices_)
    if (!try_parse_size(c)) throw std::logic_error("knob " + k.name_ + ": '" + c + "' is no size");
  k.sizes_ = true;
  k.set_default(std::move(def));
  return k;
}

Knob Knob::curve(std::string name, json def, std::string doc) {
  Knob k = make(std::move(name), Type::Curve, std::move(doc));
  k.set_default(std::move(def));
  return k;
}

Knob& Knob::set_default(json def) {
  if (def.is_null()) {
    default_ = std::move(def);
    return *this;
  }
  // An empty curve is the "not given" value of a curve knob (a preset must give it).
  if (type_ == Type::Curve && def.is_array() && def.empty()) {
    default_ = json::array();
    return *this;
  }
  try {
    default_ = check(def, "declaration");
  } catch (const UserError& e) {
    throw std::logic_error(e.what());
  }
  return *this;
}

const char* Knob::type_name() const {
  switch (type_) {
    case Type::Integer:
      return "integer";
    case Type::Number:
      return "number";
    case Type::Boolean:
      return "bool";
    case Type::Text:
      return "string";
    case Type::Choice:
      return "enum";
    case Type::Curve:
      return "curve";
  }
  return "?";
}

std::string Knob::range() const {
  switch (type_) {
    case Type::Integer:
      return std::to_string(int_lo_) + " .. " + std::to_string(int_hi_) +
             (pow2_ ? ", a power of 2" : "");
    case Type::Number:
      return (zero_ok_ ? "0 or " : "") + number_text(lo_) + " .. " + number_text(hi_);
    case Type::Boolean:
      return "true|false";
    case Type::Text:
      return "";
    case Type::Choice:
      return join(choices_, "|");
    case Type::Curve:
      return "[bytes, ns] pairs, increasing";
  }
  return "";
}

std::string Knob::default_text() const {
  if (default_.is_null()) return "(see doc)";
  switch (type_) {
    case Type::Number:
      return number_text(default_.get<double>());
    case Type::Text:
      return default_.dump();  // quoted, so that an empty string shows
    case Type::Choice:
      return default_.get<std::string>();
    case Type::Curve:
      return default_.empty() ? "(required)" : default_.dump();
    default:
      return default_.dump();
  }
}

json Knob::check(const json& v, const std::string& where, const std::string& key) const {
  auto fail = [&](const std::string& msg) -> UserError { return UserError(where, key, msg); };
  switch (type_) {
    case Type::Integer: {
      const auto i = as_int(v);
      if (!i) throw fail("expected an integer, got " + v.dump());
      const bool below =
          i->negative
              ? (int_lo_ >= 0 || i->magnitude - 1 > static_cast<std::uint64_t>(-(int_lo_ + 1)))
              : (int_lo_ > 0 && i->magnitude < static_cast<std::uint64_t>(int_lo_));
      if (below || (!i->negative && i->magnitude > int_hi_))
        throw fail("value " + v.dump() + " out of range [" + std::to_string(int_lo_) + ", " +
                   std::to_string(int_hi_) + "]");
      if (pow2_ && (i->negative || !std::has_single_bit(i->magnitude)))
        throw fail("value " + v.dump() + " is not a power of two");
      return int_json(*i);
    }
    case Type::Number: {
      const auto d = as_number(v);
      if (!d) throw fail("expected a number, got " + v.dump());
      if (zero_ok_ && *d == 0) return json(0.0);
      if (!(*d >= lo_ && *d <= hi_))
        throw fail("value " + v.dump() + " out of range " + (zero_ok_ ? "(0 or " : "") + "[" +
                   number_text(lo_) + ", " + number_text(hi_) + "]" + (zero_ok_ ? ")" : ""));
      return json(*d);
    }
    case Type::Boolean:
      if (v.is_boolean()) return v;
      // Exact comparisons: 4294967297 is not 1.
      if ((v.is_number_unsigned() || v.is_number_integer()) && (v == 0 || v == 1))
        return json(v == 1);
      if (v == "true" || v == "on") return json(true);
      if (v == "false" || v == "off") return json(false);
      throw fail("expected true or false, got " + v.dump());
    case Type::Text:
      if (v.is_string()) return v;
      if (v.is_number() || v.is_boolean()) return json(v.dump());
      throw fail("expected a string, got " + v.dump());
    case Type::Choice: {
      if (sizes_) {
        const auto i = as_int(v);
        if (i && !i->negative)
          for (const auto& c : choices_)
            if (*try_parse_size(c) == i->magnitude) return json(c);
      } else if (v.is_string() || v.is_number() || v.is_boolean()) {
        const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
        for (const auto& c : choices_)
          if (c == s) return json(c);
      }
      throw fail("expected one of " + range() + ", got " + v.dump());
    }
    case Type::Curve: {
      if (!v.is_array() || v.empty()) throw fail("expected a non-empty array of [bytes, ns]");
      json out = json::array();
      std::uint64_t last_bytes = 0;
      double last_ns = 0;
      for (const auto& p : v) {
        const auto bytes = p.is_array() && p.size() == 2 ? as_int(p[0]) : std::nullopt;
        const auto ns = p.is_array() && p.size() == 2 && p[1].is_number()
                            ? std::optional<double>(p[1].get<double>())
                            : std::nullopt;
        if (!bytes || bytes->negative || !ns)
          throw fail("expected [bytes, ns] pairs with integer bytes, got " + p.dump());
        if (bytes->magnitude == 0 || bytes->magnitude > kCurveMaxBytes || !(*ns > 0) ||
            !(*ns <= kCurveMaxNs))
          throw fail("point " + p.dump() + " out of range (bytes in [1, " +
                     std::to_string(kCurveMaxBytes) + "], ns in (0, " + number_text(kCurveMaxNs) +
                     "])");
        if (!out.empty() && (bytes->magnitude <= last_bytes || *ns < last_ns))
          throw fail("points must be increasing, got " + p.dump() + " after [" +
                     std::to_string(last_bytes) + ", " + number_text(last_ns) + "]");
        out.push_back({bytes->magnitude, *ns});
        last_bytes = bytes->magnitude;
        last_ns = *ns;
      }
      return out;
    }
  }
  return v;
}

}  // namespace uvmsim
