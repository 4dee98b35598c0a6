// Declared policy parameters ("policy.<name>.<knob>"): construction, listing and checking.
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "policies/policy.h"
#include "policies/registry.h"

namespace uvmsim {

using nlohmann::json;

const char* to_string(ObservePurpose p) {
  return p == ObservePurpose::Eviction ? "eviction" : "feedback";
}

PolicyKnob PolicyKnob::integer(std::string name, json def, double lo, double hi, std::string doc) {
  PolicyKnob k;
  k.name = std::move(name);
  k.type = Type::Integer;
  k.default_value = std::move(def);
  k.doc = std::move(doc);
  k.min = lo;
  k.max = hi;
  return k;
}

PolicyKnob PolicyKnob::number(std::string name, double def, double lo, double hi, std::string doc) {
  PolicyKnob k = integer(std::move(name), def, lo, hi, std::move(doc));
  k.type = Type::Number;
  return k;
}

PolicyKnob PolicyKnob::boolean(std::string name, bool def, std::string doc) {
  PolicyKnob k;
  k.name = std::move(name);
  k.type = Type::Boolean;
  k.default_value = def;
  k.doc = std::move(doc);
  return k;
}

PolicyKnob PolicyKnob::text(std::string name, std::string def, std::string doc) {
  PolicyKnob k;
  k.name = std::move(name);
  k.type = Type::Text;
  k.default_value = std::move(def);
  k.doc = std::move(doc);
  return k;
}

PolicyKnob PolicyKnob::choice(std::string name, std::string def, std::vector<std::string> choices,
                              std::string doc) {
  PolicyKnob k = text(std::move(name), std::move(def), std::move(doc));
  k.type = Type::Choice;
  k.choices = std::move(choices);
  return k;
}

const char* PolicyKnob::type_name() const {
  switch (type) {
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
  }
  return "?";
}

std::string PolicyKnob::range() const {
  std::ostringstream r;
  switch (type) {
    case Type::Integer:
      r << static_cast<std::int64_t>(min) << " .. " << static_cast<std::int64_t>(max);
      break;
    case Type::Number:
      r << min << " .. " << max;
      break;
    case Type::Boolean:
      r << "true|false";
      break;
    case Type::Text:
      break;
    case Type::Choice:
      for (std::size_t i = 0; i < choices.size(); ++i) r << (i ? "|" : "") << choices[i];
      break;
  }
  return r.str();
}

json PolicyKnob::check(const json& v, const std::string& where, const std::string& key) const {
  switch (type) {
    case Type::Integer:
    case Type::Number: {
      double d;
      if (v.is_number()) {
        d = v.get<double>();
      } else if (v.is_string()) {
        const auto s = v.get<std::string>();
        char* end = nullptr;
        d = std::strtod(s.c_str(), &end);
        if (s.empty() || !end || *end != '\0')
          throw UserError(where, key, "expected a number, got " + v.dump());
      } else {
        throw UserError(where, key, "expected a number, got " + v.dump());
      }
      if (!std::isfinite(d) || d < min || d > max) {
        std::ostringstream m;
        m << "value " << v.dump() << " out of range [" << min << ", " << max << "]";
        throw UserError(where, key, m.str());
      }
      if (type == Type::Integer) {
        if (d != std::floor(d)) throw UserError(where, key, "expected an integer, got " + v.dump());
        return json(static_cast<std::int64_t>(d));
      }
      return json(d);
    }
    case Type::Boolean:
      if (v.is_boolean()) return v;
      if (v.is_number_integer() && (v.get<int>() == 0 || v.get<int>() == 1))
        return json(v.get<int>() == 1);
      if (v == "true" || v == "on") return json(true);
      if (v == "false" || v == "off") return json(false);
      throw UserError(where, key, "expected true or false, got " + v.dump());
    case Type::Text:
      if (v.is_string()) return v;
      if (v.is_number() || v.is_boolean()) return json(v.dump());
      throw UserError(where, key, "expected a string, got " + v.dump());
    case Type::Choice: {
      const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
      for (const auto& c : choices)
        if (c == s) return json(s);
      throw UserError(where, key, "expected one of " + range() + ", got " + v.dump());
    }
  }
  return v;
}

}  // namespace uvmsim
