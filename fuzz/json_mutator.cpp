#include "fuzz/json_mutator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "core/json_input.h"
#include "fuzz/fuzz_target.h"

namespace uvmsim::fuzz {

namespace {

using J = nlohmann::ordered_json;  // keeps member order (a sweep spec's knob order matters)

/// Every value of the document, parents before children.
void collect(J& j, std::vector<J*>& out) {
  std::vector<J*> stack{&j};
  while (!stack.empty()) {
    J* v = stack.back();
    stack.pop_back();
    out.push_back(v);
    if (v->is_structured()) {
      for (auto& child : *v) stack.push_back(&child);
    }
  }
}

J interesting_number(std::mt19937& rng) {
  static const std::uint64_t kUnsigned[] = {0,
                                            1,
                                            2,
                                            3,
                                            7,
                                            31,
                                            32,
                                            33,
                                            1023,
                                            1024,
                                            4095,
                                            4096,
                                            4097,
                                            65536,
                                            2097151,
                                            2097152,
                                            2097153,
                                            std::uint64_t{1} << 31,
                                            (std::uint64_t{1} << 32) - 1,
                                            std::uint64_t{1} << 32,
                                            (std::uint64_t{1} << 53) + 1,
                                            (std::uint64_t{1} << 63) - 1,
                                            std::uint64_t{1} << 63,
                                            std::numeric_limits<std::uint64_t>::max()};
  static const std::int64_t kSigned[] = {-1, -2, -4096, std::numeric_limits<std::int32_t>::min(),
                                         std::numeric_limits<std::int64_t>::min()};
  static const double kDouble[] = {0.5, -0.5, 1e-300, 1e300, -1e300, 100.0, 99.999, 1e19};
  switch (rng() % 3) {
    case 0:
      return kUnsigned[rng() % std::size(kUnsigned)];
    case 1:
      return kSigned[rng() % std::size(kSigned)];
    default:
      return kDouble[rng() % std::size(kDouble)];
  }
}

J tweak_number(const J& v, std::mt19937& rng) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    switch (rng() % 4) {
      case 0:
        return -d;
      case 1:
        return d * 2;
      case 2:
        return d / 3;
      default:
        return std::floor(d);
    }
  }
  // Integers: wrap-around arithmetic in unsigned, reinterpreted as the stored signedness.
  const bool is_unsigned = v.is_number_unsigned();
  const std::uint64_t u =
      is_unsigned ? v.get<std::uint64_t>() : static_cast<std::uint64_t>(v.get<std::int64_t>());
  std::uint64_t r = u;
  switch (rng() % 6) {
    case 0:
      r = u + 1;
      break;
    case 1:
      r = u - 1;
      break;
    case 2:
      r = u * 2;
      break;
    case 3:
      r = u / 2;
      break;
    case 4:
      r = u + 4096 * (1 + rng() % 512);
      break;
    default:
      r = u ^ (std::uint64_t{1} << (rng() % 64));
      break;
  }
  if (is_unsigned || rng() % 2 == 0) return r;
  return static_cast<std::int64_t>(r);
}

std::string random_string_from(const std::vector<J*>& nodes, std::mt19937& rng) {
  // Names found elsewhere in the document (keys, strings) are the likeliest to mean something.
  std::vector<std::string> pool;
  for (J* n : nodes) {
    if (n->is_string()) pool.push_back(n->get<std::string>());
    if (n->is_object()) {
      for (auto it = n->begin(); it != n->end(); ++it) pool.push_back(it.key());
    }
  }
  static const char* kExtra[] = {"",     "0x1000", "-1", "1e999", "none", "\xc3\xa9",
                                 "auto", "driver", "*",  "a.b",   "0"};
  if (pool.empty() || rng() % 4 == 0) return kExtra[rng() % std::size(kExtra)];
  return pool[rng() % pool.size()];
}

void mutate_value(J& root, std::mt19937& rng) {
  std::vector<J*> nodes;
  collect(root, nodes);
  J& v = *nodes[rng() % nodes.size()];
  switch (rng() % 8) {
    case 0:  // a boundary number
      v = interesting_number(rng);
      return;
    case 1:  // change the type
      switch (rng() % 6) {
        case 0:
          v = nullptr;
          return;
        case 1:
          v = J::array({v});
          return;
        case 2:
          v = J::object();
          return;
        case 3:
          v = random_string_from(nodes, rng);
          return;
        case 4:
          v = rng() % 2 == 0;
          return;
        default:
          v = J::array();
          return;
      }
    case 2:  // drop a member or an element
      if (v.is_object() && !v.empty()) {
        auto it = v.begin();
        std::advance(it, rng() % v.size());
        const std::string key = it.key();  // erase() must not see a reference into the map
        v.erase(key);
      } else if (v.is_array() && !v.empty()) {
        v.erase(v.begin() + static_cast<std::ptrdiff_t>(rng() % v.size()));
      }
      return;
    case 3:  // duplicate an element or add a member named like something in the document
      if (v.is_array() && !v.empty()) {
        J copy = v[rng() % v.size()];
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(rng() % (v.size() + 1)), copy);
      } else if (v.is_object()) {
        const J value = *nodes[rng() % nodes.size()];
        v[random_string_from(nodes, rng)] = value;
      }
      return;
    default:
      if (v.is_number()) {
        v = tweak_number(v, rng);
      } else if (v.is_boolean()) {
        v = !v.get<bool>();
      } else if (v.is_string()) {
        v = random_string_from(nodes, rng);
      } else if (v.is_null()) {
        v = interesting_number(rng);
      } else {
        v = interesting_number(rng);
      }
      return;
  }
}

std::size_t write_back(const std::string& text, std::uint8_t* data, std::size_t size,
                       std::size_t max_size) {
  if (text.size() > max_size) return default_mutate(data, size, max_size);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

}  // namespace

bool mutate_json_text(std::string& text, std::mt19937& rng, bool comments) {
  J j;
  try {
    j = parse_ordered_json(text, "fuzz", {.comments = comments});
  } catch (const UserError&) {
    return false;
  }
  mutate_value(j, rng);
  // Mutated strings may be arbitrary bytes: replace what is not UTF-8 rather than fail.
  text = j.dump(rng() % 2 == 0 ? -1 : 1, ' ', false, J::error_handler_t::replace);
  return true;
}

std::size_t mutate_json(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed) {
  std::mt19937 rng(seed);
  if (rng() % 3 == 0) return default_mutate(data, size, max_size);
  std::string text(reinterpret_cast<const char*>(data), size);
  if (!mutate_json_text(text, rng, /*comments=*/true)) return default_mutate(data, size, max_size);
  return write_back(text, data, size, max_size);
}

std::size_t mutate_json_lines(std::uint8_t* data, std::size_t size, std::size_t max_size,
                              unsigned seed) {
  std::mt19937 rng(seed);
  if (rng() % 3 == 0) return default_mutate(data, size, max_size);
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  std::string& line = lines[rng() % lines.size()];
  switch (rng() % 4) {
    case 0:  // drop the line
      line.clear();
      break;
    case 1:  // duplicate it
      lines.push_back(line);
      std::swap(lines.back(), lines[rng() % lines.size()]);
      break;
    default:
      if (!mutate_json_text(line, rng)) return default_mutate(data, size, max_size);
  }
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    out += lines[i];
    out += '\n';
  }
  return write_back(out, data, size, max_size);
}

}  // namespace uvmsim::fuzz
