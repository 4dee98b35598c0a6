#include "sim/validate/dataset.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/json_input.h"

namespace uvmsim::validate {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

const char* subset_name(Subset s) { return s == Subset::Ci ? "ci" : "full"; }

std::optional<Subset> parse_subset(const std::string& s) {
  if (s == "ci") return Subset::Ci;
  if (s == "full") return Subset::Full;
  return std::nullopt;
}

namespace {

ordered_json read_doc(const fs::path& p) {
  return read_ordered_json_file(p);  // one-line errors naming the file; bounded nesting
}

void check_keys(const ordered_json& j, const std::string& where, const std::string& field,
                const std::vector<std::string>& keys) {
  if (!j.is_object())
    field_error(where, field.empty() ? "(top level)" : field, "expected an object");
  for (const auto& [k, v] : j.items()) {
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
    std::string known;
    for (const auto& x : keys) known += (known.empty() ? "" : ", ") + x;
    field_error(where, field.empty() ? k : field + "." + k, "unknown key (expected " + known + ")");
  }
}

std::string string_field(const ordered_json& j, const std::string& key, const std::string& where,
                         const std::string& field, bool required) {
  if (!j.contains(key)) {
    if (required) field_error(where, field, "required: a non-empty string");
    return "";
  }
  if (!j[key].is_string() || (required && j[key].get<std::string>().empty()))
    field_error(where, field, required ? "required: a non-empty string" : "expected a string");
  return j[key].get<std::string>();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// The run settings a run may carry (as in an expectation file).
const std::vector<std::string> kSettings = {"gpu",       "preset",  "eviction", "prefetch",
                                            "placement", "oversub", "seed",     "set"};

}  // namespace

std::string expand_templates(const std::string& text,
                             const std::map<std::string, std::vector<std::string>>& lists,
                             const std::string& where) {
  static const std::vector<std::string> kFunctions = {"geomean", "mean", "min", "max"};
  std::string out = text;
  for (;;) {
    // The first NAME{ of a function name.
    std::size_t best = std::string::npos;
    std::string fn;
    for (const auto& f : kFunctions) {
      for (std::size_t p = out.find(f + "{"); p != std::string::npos;
           p = out.find(f + "{", p + 1)) {
        const bool word_start = p == 0 || !(std::isalnum(static_cast<unsigned char>(out[p - 1])) ||
                                            out[p - 1] == '_' || out[p - 1] == '.');
        if (word_start && p < best) {
          best = p;
          fn = f;
        }
        if (word_start) break;
      }
    }
    if (best == std::string::npos) return out;
    const std::size_t lb = best + fn.size();
    const std::size_t rb = out.find('}', lb);
    if (rb == std::string::npos) throw UserError(where + ": unclosed '{' after " + fn);
    const std::string list = out.substr(lb + 1, rb - lb - 1);
    const auto it = lists.find(list);
    if (it == lists.end()) {
      std::string known;
      for (const auto& [n, v] : lists) known += (known.empty() ? "" : ", ") + n;
      throw UserError(where + ": unknown list '" + list + "' in " + fn + "{" + list +
                      "} (defined: " + (known.empty() ? "none" : known) + ")");
    }
    if (rb + 1 >= out.size() || out[rb + 1] != '(')
      throw UserError(where + ": expected '(' after " + fn + "{" + list + "}");
    // The balanced parenthesised body.
    int depth = 0;
    std::size_t end = std::string::npos;
    for (std::size_t i = rb + 1; i < out.size(); ++i) {
      if (out[i] == '(') ++depth;
      if (out[i] == ')' && --depth == 0) {
        end = i;
        break;
      }
    }
    if (end == std::string::npos)
      throw UserError(where + ": unbalanced parentheses in " + fn + "{" + list + "}(...)");
    const std::string body = out.substr(rb + 2, end - rb - 2);
    std::string call = fn + "(";
    for (std::size_t i = 0; i < it->second.size(); ++i)
      call += (i ? ", " : "") + replace_all(body, "{w}", it->second[i]);
    call += ")";
    out = out.substr(0, best) + call + out.substr(end + 1);
  }
}

Source Source::load(const fs::path& path, Subset subset,
                    const std::vector<std::string>& overrides) {
  Source s;
  s.path = path;
  const ordered_json doc = read_doc(path);
  const std::string where = path.string();
  const fs::path base = fs::absolute(path).parent_path();
  check_keys(
      doc, where, "",
      {"source", "title", "citation", "gpu", "lists", "workloads", "defaults", "runs", "rows"});
  s.name = string_field(doc, "source", where, "source", true);
  s.title = string_field(doc, "title", where, "title", true);
  if (!doc.contains("citation") || !doc["citation"].is_object())
    field_error(where, "citation", "required: an object with at least gpu, driver and where");
  s.citation = doc["citation"];
  for (const char* k : {"gpu", "driver", "where"}) {
    if (!s.citation.contains(k) || !s.citation[k].is_string() ||
        s.citation[k].get<std::string>().empty())
      field_error(where, std::string("citation.") + k,
                  "required: a non-empty string (write \"not stated\" if the source omits it)");
  }
  for (const auto& [k, v] : s.citation.items())
    if (!v.is_string()) field_error(where, "citation." + k, "expected a string");
  s.gpu = string_field(doc, "gpu", where, "gpu", true);

  if (doc.contains("lists")) {
    if (!doc["lists"].is_object()) field_error(where, "lists", "expected an object of name: [..]");
    for (const auto& [n, l] : doc["lists"].items()) {
      if (!l.is_array() || l.empty()) field_error(where, "lists." + n, "expected a non-empty list");
      for (const auto& e : l) {
        if (!e.is_string()) field_error(where, "lists." + n, "expected strings");
        s.lists[n].push_back(e.get<std::string>());
      }
    }
  }

  // Workloads, at the subset's footprint: "ci_footprint" keeps the CI subset to seconds.
  if (!doc.contains("workloads") || !doc["workloads"].is_object())
    field_error(where, "workloads", "required: an object of name: workload");
  for (const auto& [name, spec] : doc["workloads"].items()) {
    const std::string field = "workloads." + name;
    check_keys(spec, where, field, {"generator", "footprint", "ci_footprint", "params", "seed"});
    json one = json(spec);
    if (one.contains("ci_footprint")) {
      if (subset == Subset::Ci) one["footprint"] = one["ci_footprint"];
      one.erase("ci_footprint");
    }
    one["name"] = name;
    auto ws = sweep::parse_workloads(one, where, field, base);
    if (ws.size() != 1) field_error(where, field + ".footprint", "give a single footprint");
    s.workloads.emplace(name, ws.front());
  }

  ordered_json defaults = ordered_json::object();
  if (doc.contains("defaults")) {
    check_keys(doc["defaults"], where, "defaults", kSettings);
    defaults = doc["defaults"];
  }

  // Runs; "for": LIST repeats a run over a list, {w} in its name and workload replaced.
  if (!doc.contains("runs") || !doc["runs"].is_object() || doc["runs"].empty())
    field_error(where, "runs", "required: an object of run name: {workload, ...}");
  for (const auto& [tname, r] : doc["runs"].items()) {
    const std::string field = "runs." + tname;
    std::vector<std::string> keys = kSettings;
    keys.insert(keys.end(), {"workload", "for", "description"});
    check_keys(r, where, field, keys);
    std::vector<std::string> elems = {""};
    if (r.contains("for")) {
      if (!r["for"].is_string() || !s.lists.count(r["for"].get<std::string>()))
        field_error(where, field + ".for", "expected the name of a list in \"lists\"");
      if (tname.find("{w}") == std::string::npos)
        field_error(where, field, "a run repeated with \"for\" needs {w} in its name");
      elems = s.lists.at(r["for"].get<std::string>());
    }
    for (const auto& e : elems) {
      Run run;
      run.name = replace_all(tname, "{w}", e);
      run.workload =
          replace_all(string_field(r, "workload", where, field + ".workload", true), "{w}", e);
      if (!s.workloads.count(run.workload)) {
        std::string known;
        for (const auto& [n, w] : s.workloads) known += (known.empty() ? "" : ", ") + n;
        field_error(where, field + ".workload",
                    "unknown workload '" + run.workload + "' (defined: " + known + ")");
      }
      if (s.find_run(run.name)) field_error(where, field, "run '" + run.name + "' defined twice");
      run.settings.gpu = s.gpu;
      for (const auto& [k, v] : defaults.items())
        run.settings.apply(k, json(v), where, "defaults." + k, base);
      for (const auto& [k, v] : r.items()) {
        if (k == "workload" || k == "for" || k == "description") continue;
        run.settings.apply(k, json(v), where, field + "." + k, base);
      }
      for (const auto& o : overrides) {
        const auto eq = o.find('=');
        if (eq == std::string::npos || eq == 0)
          throw UserError("--set: expected KEY=VALUE, got '" + o + "'");
        run.settings.sets.emplace_back(o.substr(0, eq),
                                       parse_json_or_text(o.substr(eq + 1), "--set"));
      }
      // Unknown knobs, bad values, unregistered policies: reported now, before anything runs.
      run.settings.resolve(where + ": " + field);
      s.runs.push_back(std::move(run));
    }
  }

  // Rows.
  if (!doc.contains("rows") || !doc["rows"].is_array() || doc["rows"].empty())
    field_error(where, "rows", "required: a list of measured values");
  std::set<std::string> ids;
  for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
    const auto& x = doc["rows"][i];
    std::string field = "rows[" + std::to_string(i) + "]";
    check_keys(x, where, field,
               {"id", "figure", "gpu", "workload", "metric", "measured", "spread", "spread_note",
                "expr", "skip", "note", "ci", "max_error"});
    Row row;
    row.id = string_field(x, "id", where, field + ".id", true);
    field = "rows." + row.id;  // from here on, name the row by its id
    if (!ids.insert(row.id).second) field_error(where, field + ".id", "duplicate row id");
    row.figure = string_field(x, "figure", where, field + ".figure", true);
    row.workload = string_field(x, "workload", where, field + ".workload", true);
    row.metric = string_field(x, "metric", where, field + ".metric", true);
    row.gpu = x.contains("gpu") ? string_field(x, "gpu", where, field + ".gpu", true)
                                : s.citation["gpu"].get<std::string>();
    if (!x.contains("measured") || !x["measured"].is_number() ||
        !std::isfinite(x["measured"].get<double>()) || x["measured"].get<double>() <= 0)
      field_error(where, field + ".measured",
                  "required: the published value, a positive number (the error is a ratio)");
    row.measured = x["measured"].get<double>();
    if (x.contains("spread")) {
      const auto& sp = x["spread"];
      if (!sp.is_array() || sp.size() != 2 || !sp[0].is_number() || !sp[1].is_number() ||
          sp[0].get<double>() > sp[1].get<double>())
        field_error(where, field + ".spread", "expected [lo, hi] with lo <= hi");
      row.spread = {sp[0].get<double>(), sp[1].get<double>()};
    }
    row.spread_note = string_field(x, "spread_note", where, field + ".spread_note", false);
    row.note = string_field(x, "note", where, field + ".note", false);
    row.skip = string_field(x, "skip", where, field + ".skip", false);
    if (x.contains("ci")) {
      if (!x["ci"].is_boolean()) field_error(where, field + ".ci", "expected true or false");
      row.ci = x["ci"].get<bool>();
    }
    if (x.contains("max_error")) {
      if (!x["max_error"].is_number() || x["max_error"].get<double>() < 1)
        field_error(where, field + ".max_error",
                    "expected a ratio error factor >= 1 (2 = within a factor of two)");
      row.max_error = x["max_error"].get<double>();
    }
    const bool has_expr = x.contains("expr");
    if (row.skip.empty() == !has_expr) {
      field_error(where, field + (has_expr ? ".skip" : ".expr"),
                  has_expr ? "give either an expression or a skip reason, not both"
                           : "required: the expression computing the value from runs "
                             "(or \"skip\": why the row is not simulated)");
    }
    if (has_expr) {
      row.expr_text = string_field(x, "expr", where, field + ".expr", true);
      const std::string ewhere = where + ": " + field + ".expr";
      row.expr = check::Expression::parse(expand_templates(row.expr_text, s.lists, ewhere), ewhere);
      for (const auto& ref : row.expr->refs()) {
        if (!s.find_run(ref.run)) {
          throw UserError(ewhere + ": unknown run '" + ref.run + "' (in " + ref.metric + "(" +
                          ref.run + "))");
        }
      }
    } else if (row.ci) {
      field_error(where, field + ".ci", "a skipped row cannot be in the CI subset");
    }
    s.rows.push_back(std::move(row));
  }
  return s;
}

const Run* Source::find_run(const std::string& name) const {
  for (const auto& r : runs)
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<const Row*> Source::rows_of(Subset subset) const {
  std::vector<const Row*> out;
  for (const auto& r : rows)
    if (subset == Subset::Full || r.ci) out.push_back(&r);
  return out;
}

std::vector<std::string> Source::runs_read_by(const std::vector<const Row*>& rs) const {
  std::set<std::string> used;
  for (const Row* r : rs)
    if (r->expr)
      for (const auto& ref : r->expr->refs()) used.insert(ref.run);
  std::vector<std::string> out;
  for (const auto& r : runs)
    if (used.count(r.name)) out.push_back(r.name);
  return out;
}

}  // namespace uvmsim::validate
