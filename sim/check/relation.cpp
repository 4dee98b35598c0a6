#include "sim/check/relation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace uvmsim::check {

struct Relation::Node {
  enum class Kind { Number, Ref, Binary, Call } kind = Kind::Number;
  double number = 0;
  std::size_t ref = 0;  ///< index into refs_
  char op = 0;
  std::shared_ptr<const Node> a, b;
  std::string function;                           ///< Call: geomean, mean, min, max
  std::vector<std::shared_ptr<const Node>> args;  ///< Call: its arguments
};

namespace {

// The parser, evaluator and the tree's destructor all recurse, once per parenthesis and once per
// term of a chain (a + b + c is ((a + b) + c)): bounding both keeps a hostile relation from
// exhausting the stack. Real relations have a handful of terms.
constexpr int kMaxParens = 32;
constexpr int kMaxTerms = 256;

// Functions over a list of values. A name from this list is a function, never a metric.
bool is_function(const std::string& name) {
  return name == "geomean" || name == "mean" || name == "min" || name == "max";
}

double apply_function(const std::string& f, const std::vector<double>& v) {
  if (f == "min") return *std::min_element(v.begin(), v.end());
  if (f == "max") return *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += f == "geomean" ? (x > 0 ? std::log(x) : NAN) : x;
  const double m = sum / static_cast<double>(v.size());
  return f == "geomean" ? std::exp(m) : m;
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& where, std::vector<Relation::Ref>& refs)
      : s_(text), where_(where), refs_(refs) {}

  using NodeP = std::shared_ptr<const Relation::Node>;

  [[noreturn]] void fail(const std::string& msg) const {
    // The message stays one line however long the relation or whatever bytes it holds.
    constexpr std::size_t kShown = 160;
    std::string shown;
    for (const char c : s_.substr(0, kShown))
      shown += std::iscntrl(static_cast<unsigned char>(c)) ? ' ' : c;
    if (s_.size() > kShown) shown += "...";
    throw UserError(where_ + ": " + msg + " at column " + std::to_string(pos_ + 1) + " of \"" +
                    shown + "\"");
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool at_end() {
    skip();
    return pos_ >= s_.size();
  }

  std::string comparison() {
    skip();
    for (const char* op : {"<=", ">=", "==", "!=", "<", ">"}) {
      const std::string o = op;
      if (s_.compare(pos_, o.size(), o) == 0) {
        pos_ += o.size();
        return o;
      }
    }
    fail("expected a comparison (<, <=, >, >=, ==, !=)");
  }

  NodeP sum() { return chain("+-", &Parser::product); }

 private:
  // Left-associative chain of `next` operands joined by the operators in `ops`.
  NodeP chain(const char* ops, NodeP (Parser::*next)()) {
    NodeP n = (this->*next)();
    for (;;) {
      skip();
      if (pos_ >= s_.size() || !std::strchr(ops, s_[pos_])) return n;
      auto b = std::make_shared<Relation::Node>();
      b->kind = Relation::Node::Kind::Binary;
      b->op = s_[pos_++];
      b->a = std::move(n);
      b->b = (this->*next)();
      n = std::move(b);
    }
  }
  NodeP product() { return chain("*/", &Parser::factor); }
  NodeP factor() {
    skip();
    if (pos_ >= s_.size()) fail("unexpected end");
    const char c = s_[pos_];
    if (c == '(') {
      if (parens_ == kMaxParens)
        fail("parentheses nested deeper than " + std::to_string(kMaxParens) + " levels");
      ++pos_;
      ++parens_;
      NodeP n = sum();
      if (!eat(')')) fail("expected ')'");
      --parens_;
      return n;
    }
    if (++terms_ > kMaxTerms) fail("more than " + std::to_string(kMaxTerms) + " terms");
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      const char* begin = s_.c_str() + pos_;
      char* end = nullptr;
      const double v = std::strtod(begin, &end);
      if (end == begin) fail("bad number");
      pos_ += static_cast<std::size_t>(end - begin);
      auto n = std::make_shared<Relation::Node>();
      n->number = v;
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                  s_[pos_] == '_' || s_[pos_] == '.'))
        ++pos_;
      const std::string metric = s_.substr(start, pos_ - start);
      if (is_function(metric)) return call(metric);
      if (!eat('(')) fail("expected '(' and a run name after metric '" + metric + "'");
      const std::size_t rs = pos_;
      while (pos_ < s_.size() && s_[pos_] != ')') ++pos_;
      if (pos_ >= s_.size()) fail("expected ')' after the run name");
      std::string run = s_.substr(rs, pos_ - rs);
      while (!run.empty() && std::isspace(static_cast<unsigned char>(run.back()))) run.pop_back();
      while (!run.empty() && std::isspace(static_cast<unsigned char>(run.front()))) run.erase(0, 1);
      if (run.empty()) fail("empty run name");
      ++pos_;
      refs_.push_back({metric, run});
      auto n = std::make_shared<Relation::Node>();
      n->kind = Relation::Node::Kind::Ref;
      n->ref = refs_.size() - 1;
      return n;
    }
    fail(std::string("unexpected '") + c + "'");
  }
  // FUNCTION '(' sum (',' sum)* ')', the name already read.
  NodeP call(const std::string& name) {
    if (!eat('(')) fail("expected '(' after function " + name);
    // A call nests like a parenthesis (the arguments recurse): the same bound applies.
    if (parens_ == kMaxParens)
      fail("parentheses nested deeper than " + std::to_string(kMaxParens) + " levels");
    ++parens_;
    auto n = std::make_shared<Relation::Node>();
    n->kind = Relation::Node::Kind::Call;
    n->function = name;
    do {
      n->args.push_back(sum());
    } while (eat(','));
    if (!eat(')')) fail("expected ',' or ')' in the arguments of " + name);
    --parens_;
    return n;
  }

  const std::string& s_;
  const std::string& where_;
  std::vector<Relation::Ref>& refs_;
  std::size_t pos_ = 0;
  int parens_ = 0;
  int terms_ = 0;
};

// `in_product`: the node is an operand of * or /, so a sum needs parentheses to read right.
double eval(const Relation::Node& n, const std::vector<double>& vals, std::string& shown,
            bool in_product = false) {
  switch (n.kind) {
    case Relation::Node::Kind::Number:
      shown += format_number(n.number);
      return n.number;
    case Relation::Node::Kind::Ref:
      shown += format_number(vals[n.ref]);
      return vals[n.ref];
    case Relation::Node::Kind::Call: {
      shown += n.function + "(";
      std::vector<double> args;
      for (const auto& a : n.args) {
        if (!args.empty()) shown += ", ";
        args.push_back(eval(*a, vals, shown));
      }
      shown += ")";
      return apply_function(n.function, args);
    }
    case Relation::Node::Kind::Binary: {
      const bool product = n.op == '*' || n.op == '/';
      const bool paren = in_product && !product;
      if (paren) shown += "(";
      const double a = eval(*n.a, vals, shown, product);
      shown += std::string(" ") + n.op + " ";
      const double b = eval(*n.b, vals, shown, product || n.op == '-');
      if (paren) shown += ")";
      switch (n.op) {
        case '+':
          return a + b;
        case '-':
          return a - b;
        case '*':
          return a * b;
        default:
          return a / b;
      }
    }
  }
  return 0;
}

}  // namespace

std::string format_number(double v) {
  char buf[64];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  }
  return buf;
}

Relation Relation::parse(const std::string& text, const std::string& where) {
  Relation r;
  r.text_ = text;
  Parser p(text, where, r.refs_);
  r.lhs_ = p.sum();
  r.op_ = p.comparison();
  r.rhs_ = p.sum();
  if (!p.at_end()) p.fail("unexpected text after the relation");
  if (r.refs_.empty()) p.fail("a relation must read at least one metric(run)");
  return r;
}

Relation::Outcome Relation::evaluate(const std::function<double(const Ref&)>& value) const {
  std::vector<double> vals;
  for (const auto& r : refs_) vals.push_back(value(r));
  Outcome o;
  o.lhs = eval(*lhs_, vals, o.shown);
  o.shown += " " + op_ + " ";
  o.rhs = eval(*rhs_, vals, o.shown);
  const double a = o.lhs, b = o.rhs;
  if (op_ == "<")
    o.holds = a < b;
  else if (op_ == "<=")
    o.holds = a <= b;
  else if (op_ == ">")
    o.holds = a > b;
  else if (op_ == ">=")
    o.holds = a >= b;
  else if (op_ == "==")
    o.holds = a == b;
  else
    o.holds = a != b;
  return o;
}

Expression Expression::parse(const std::string& text, const std::string& where) {
  Expression e;
  e.text_ = text;
  Parser p(text, where, e.refs_);
  e.root_ = p.sum();
  if (!p.at_end()) p.fail("unexpected text after the expression");
  return e;
}

double Expression::evaluate(const std::function<double(const Relation::Ref&)>& value) const {
  std::vector<double> vals;
  for (const auto& r : refs_) vals.push_back(value(r));
  std::string shown;  // not needed, but eval() writes it as it goes
  return eval(*root_, vals, shown);
}

}  // namespace uvmsim::check
