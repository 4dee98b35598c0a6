// One declared configuration knob: name, type, default, range or choices, and a one-line doc.
// The engine's knobs (the lists in core/config.h) and every policy's knobs (the UVMSIM_REGISTER_*
// macros of policies/registry.h) are Knobs, so values are checked, normalised and reported the
// same way everywhere, and `uvmsim run --list-knobs`, `uvmsim policies` and docs/knobs.md are
// printed from the declarations themselves.
//
//   Knob::integer("skip", 0, 0, 1 << 20, "newest regions to pass over before choosing")
//   Knob::number("margin", 1.2, 1, 100, "retire when blame share > margin / active policies")
//   Knob::boolean("observe", true, "observe regions in the lowest bins")
//   Knob::choice("time_unit", "access", {"access", "sampled", "fault"}, "the clock of TESLA")
#pragma once

#include <concepts>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace uvmsim {

class Knob {
 public:
  enum class Type : std::uint8_t { Integer, Number, Boolean, Text, Choice, Curve };

  /// An exact integer in [lo, hi] (0 <= hi). Accepts JSON integers, integral JSON numbers up to
  /// 2^53 and decimal strings with an optional binary size suffix ("64K", "11G"). The bounds
  /// must be integers: a floating-point bound such as 1e12 does not compile.
  template <std::integral Lo, std::integral Hi>
  static Knob integer(std::string name, nlohmann::json def, Lo lo, Hi hi, std::string doc) {
    if (!std::in_range<std::int64_t>(lo) || !std::in_range<std::uint64_t>(hi))
      throw std::logic_error("knob " + name + ": integer bounds out of range");
    return make_integer(std::move(name), std::move(def), static_cast<std::int64_t>(lo),
                        static_cast<std::uint64_t>(hi), std::move(doc));
  }
  /// As integer(), and the value must also be a power of two (lo and hi need not be).
  template <std::integral Lo, std::integral Hi>
  static Knob integer_pow2(std::string name, nlohmann::json def, Lo lo, Hi hi, std::string doc) {
    if (!std::in_range<std::int64_t>(lo) || !std::in_range<std::uint64_t>(hi))
      throw std::logic_error("knob " + name + ": integer bounds out of range");
    return make_integer(std::move(name), std::move(def), static_cast<std::int64_t>(lo),
                        static_cast<std::uint64_t>(hi), std::move(doc), /*pow2=*/true);
  }
  /// A finite real number in [lo, hi]. Accepts JSON numbers and plain decimal strings.
  static Knob number(std::string name, nlohmann::json def, double lo, double hi, std::string doc);
  /// 0 (the doc says what it means) or a real number in [lo, hi], lo > 0: for rates where a tiny
  /// positive value would mean an astronomically long time.
  static Knob number_or_zero(std::string name, nlohmann::json def, double lo, double hi,
                             std::string doc);
  /// true or false; also 0 / 1 and "on" / "off".
  static Knob boolean(std::string name, nlohmann::json def, std::string doc);
  /// Any string (a number or boolean given on the command line is taken as its text).
  static Knob text(std::string name, nlohmann::json def, std::string doc);
  /// One of `choices`, spelled exactly.
  static Knob choice(std::string name, nlohmann::json def, std::vector<std::string> choices,
                     std::string doc);
  /// One of `choices`, which are byte sizes ("64K", "2M"): any spelling of the same size
  /// (65536, "64KiB") is accepted and normalised to the choice's spelling.
  static Knob size_choice(std::string name, nlohmann::json def, std::vector<std::string> choices,
                          std::string doc);
  /// A copy-time curve: [[bytes, ns], ...] with bytes strictly and ns weakly increasing, bytes in
  /// [1, kCurveMaxBytes], ns in (0, kCurveMaxNs].
  static Knob curve(std::string name, nlohmann::json def, std::string doc);

  static constexpr std::uint64_t kCurveMaxBytes = std::uint64_t{1} << 40;
  static constexpr double kCurveMaxNs = 1e12;

  const std::string& name() const { return name_; }
  Type type() const { return type_; }
  /// The default, normalised; null when it is derived at run time (the doc says from what).
  const nlohmann::json& default_value() const { return default_; }
  const std::string& doc() const { return doc_; }
  const std::vector<std::string>& choices() const { return choices_; }
  std::int64_t int_lo() const { return int_lo_; }  ///< Integer bounds
  std::uint64_t int_hi() const { return int_hi_; }
  bool int_pow2() const { return pow2_; }  ///< Integer: only powers of two are accepted
  double lo() const { return lo_; }        ///< Number bounds
  double hi() const { return hi_; }

  /// "integer", "number", "bool", "string", "enum" or "curve".
  const char* type_name() const;
  /// What check() accepts: "1 .. 4096", "0 .. 1e+12", "true|false", "block|batch|once", ...
  std::string range() const;
  /// The default as people write it: 28, 0.5, true, batch_flush, 2M; "(see doc)" when derived.
  std::string default_text() const;

  /// The value normalised to its canonical JSON form (integers exact, choices as spelled in the
  /// declaration), or UserError(where, key, ...) naming the problem: one spelling for every knob.
  nlohmann::json check(const nlohmann::json& v, const std::string& where,
                       const std::string& key) const;
  nlohmann::json check(const nlohmann::json& v, const std::string& where) const {
    return check(v, where, name_);
  }

  /// Replaces the default (checked against the declaration; std::logic_error if it does not
  /// pass: a declaration bug, not user input).
  Knob& set_default(nlohmann::json def);

 private:
  static Knob make_integer(std::string name, nlohmann::json def, std::int64_t lo, std::uint64_t hi,
                           std::string doc, bool pow2 = false);
  static Knob make(std::string name, Type type, std::string doc);

  std::string name_;
  Type type_ = Type::Integer;
  nlohmann::json default_;
  std::string doc_;
  std::int64_t int_lo_ = 0;  ///< Integer
  std::uint64_t int_hi_ = 0;
  bool pow2_ = false;                 ///< Integer: only powers of two
  double lo_ = 0, hi_ = 0;            ///< Number
  bool zero_ok_ = false;              ///< Number: 0 is accepted besides [lo, hi]
  std::vector<std::string> choices_;  ///< Choice
  bool sizes_ = false;                ///< Choice: the choices are byte sizes
};

}  // namespace uvmsim
