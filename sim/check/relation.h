// Relations between runs in expectation files (docs/check.md), e.g.
//   "evictions(lru-mm-50) < evictions(lrm-mm-50)"
//   "sim_time_ns(suv-mvt) <= 0.8 * sim_time_ns(lrm-mvt)"
// Grammar: relation := sum OP sum;  OP := < <= > >= == !=;  sum := product (('+'|'-') product)*;
// product := factor (('*'|'/') factor)*;
// factor := NUMBER | METRIC '(' RUN ')' | FUNCTION '(' sum (',' sum)* ')' | '(' sum ')'.
// METRIC is a dotted metric name as in results.csv; RUN names a run of the same file. FUNCTION is
// one of geomean, mean, min, max (validation files average ratios over many runs with them).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace uvmsim::check {

class Relation {
 public:
  /// Parses `text`; throws UserError("<where>: <message>") pointing at the offending column.
  static Relation parse(const std::string& text, const std::string& where);

  struct Ref {
    std::string metric, run;
  };
  /// Every metric(run) the relation reads, in order of appearance.
  const std::vector<Ref>& refs() const { return refs_; }
  const std::string& text() const { return text_; }

  struct Outcome {
    bool holds = false;
    std::string shown;  ///< the relation with measured values substituted: "512 < 0.8 * 1024"
    double lhs = 0, rhs = 0;
  };
  /// Evaluates with `value(metric, run)` supplying the measured numbers.
  Outcome evaluate(const std::function<double(const Ref&)>& value) const;

  struct Node;

 private:
  std::string text_;
  std::string op_;
  std::shared_ptr<const Node> lhs_, rhs_;
  std::vector<Ref> refs_;
};

/// An arithmetic expression over metrics of runs (the `sum` of the grammar above), e.g.
/// "1 - gpu_faults(tree) / gpu_faults(none)": what a validation file computes per row.
class Expression {
 public:
  /// Parses `text`; throws UserError("<where>: <message>") pointing at the offending column.
  static Expression parse(const std::string& text, const std::string& where);

  /// Every metric(run) the expression reads, in order of appearance.
  const std::vector<Relation::Ref>& refs() const { return refs_; }
  const std::string& text() const { return text_; }
  /// The value with `value(ref)` supplying the numbers; IEEE arithmetic (x / 0 is inf or NaN,
  /// geomean of a non-positive value is NaN).
  double evaluate(const std::function<double(const Relation::Ref&)>& value) const;

 private:
  std::string text_;
  std::shared_ptr<const Relation::Node> root_;
  std::vector<Relation::Ref> refs_;
};

/// A number as people read it: integers exactly ("1048576"), others with 6 significant digits.
std::string format_number(double v);

}  // namespace uvmsim::check
