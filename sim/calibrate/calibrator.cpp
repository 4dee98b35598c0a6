#include "sim/calibrate/calibrator.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#ifdef UVMSIM_HAVE_NLOPT
#include <nlopt.hpp>
#endif
#include <set>
#include <sstream>

#include "core/error.h"

namespace uvmsim::calib {

using nlohmann::json;

std::vector<std::string> default_fit_knobs() {
  // The host-side driver costs of docs/cost-model.md, the kernel launch overhead and the HBM
  // latency. Knobs the measurements do not exercise are detected and kept (no effect).
  return {"cost.batch_fixed_ns",
          "cost.fault_entry_ns",
          "cost.block_ns",
          "cost.page_ns",
          "cost.copy_run_ns",
          "cost.first_fault_ns",
          "cost.pma_alloc_ns",
          "cost.replay_ns",
          "cost.eviction_ns",
          "cost.cpu_fault_ns",
          "cost.user_prefetch_ns",
          "cost.launch_overhead_ns",
          "gpu.interrupt_latency_ns",
          "hbm.latency_ns"};
}

namespace {

double knob_value(const SimConfig& c, const std::string& knob) {
  const json j = c.to_json();
  const auto dot = knob.find('.');
  return j.at(knob.substr(0, dot)).at(knob.substr(dot + 1)).get<double>();
}

const KnobInfo& knob_info(const std::string& knob) {
  for (const auto& k : knob_table())
    if (k.name == knob) return k;
  throw UserError("--fit", knob, "unknown configuration key (uvmsim run --list-knobs)");
}

/// Soft-L1: quadratic for |r| << s, linear for |r| >> s, so one outlier cannot dominate.
double rho(double r, double s) {
  const double z = r / s;
  return 2.0 * s * s * (std::sqrt(1.0 + z * z) - 1.0);
}

double loss_of(const std::vector<Residual>& res, double scale) {
  std::map<std::string, std::pair<double, std::size_t>> fam;
  for (const auto& r : res) {
    auto& f = fam[r.family];
    f.first += rho(r.rel, scale);
    ++f.second;
  }
  double l = 0;
  for (const auto& [name, f] : fam) l += f.first / static_cast<double>(f.second);
  return l;
}

/// Rounds to a multiple of q = 1/k (k integral), dividing last so 4502.4 prints as 4502.4.
double round_to(double v, double q) {
  const double k = std::round(1.0 / q);
  return std::round(v * k) / k;
}

struct Problem {
  const SimConfig& base;
  const std::vector<RunInput>& runs;
  const Options& opts;
  CompareOptions cmp;
  std::vector<std::string> knobs;
  std::vector<double> x0;  // ln(base value)
  unsigned evals = 0;
  double best = std::numeric_limits<double>::infinity();
  std::vector<double> best_x;

  SimConfig config_at(const std::vector<double>& x) const {
    SimConfig c = base;
    for (std::size_t i = 0; i < knobs.size(); ++i)
      c.set(knobs[i], json(round_to(std::exp(x[i]), 0.1)), "calibrate");
    return c;
  }

  std::vector<Residual> residuals(const SimConfig& c, bool holdout) const {
    std::vector<Residual> out;
    for (const auto& r : runs) {
      if (r.holdout != holdout) continue;
      std::optional<RunMetrics> sim;
      if (r.trace) sim = simulate(c, *r.trace);
      auto res = compare(r.label, r.measured, sim ? &*sim : nullptr, c, cmp);
      out.insert(out.end(), res.begin(), res.end());
    }
    return out;
  }

  double objective(const std::vector<double>& x) {
    ++evals;
    double l = loss_of(residuals(config_at(x), false), opts.robust_scale);
    for (std::size_t i = 0; i < x.size(); ++i) l += opts.prior_weight * std::pow(x[i] - x0[i], 2);
    if (l < best) {
      best = l;
      best_x = x;
    }
    return l;
  }
};

#ifdef UVMSIM_HAVE_NLOPT
double nlopt_cb(unsigned n, const double* x, double*, void* data) {
  auto* p = static_cast<Problem*>(data);
  return p->objective(std::vector<double>(x, x + n));
}

nlopt::algorithm algorithm_of(const std::string& name, std::size_t n) {
  if (name == "bobyqa") return n >= 2 ? nlopt::LN_BOBYQA : nlopt::LN_SBPLX;
  if (name == "sbplx") return nlopt::LN_SBPLX;
  if (name == "neldermead") return nlopt::LN_NELDERMEAD;
  if (name == "cobyla") return nlopt::LN_COBYLA;
  throw UserError("--algorithm", "value",
                  "unknown optimizer '" + name + "' (bobyqa, sbplx, neldermead, cobyla)");
}
#endif  // UVMSIM_HAVE_NLOPT

}  // namespace

Result calibrate(const SimConfig& base_in, const std::vector<RunInput>& runs, const Options& opts) {
  if (runs.empty()) throw UserError("--measured: at least one measurement is required");
#ifdef UVMSIM_HAVE_NLOPT
  algorithm_of(opts.algorithm, 2);  // reject an unknown optimizer before any work
#else
  if (opts.optimize) {
    throw UserError(
        "fitting needs NLopt, which this build of uvmsim was built without: install "
        "libnlopt-cxx-dev (bash scripts/setup.sh --deps-only) and rebuild (--evaluate, which only "
        "compares a preset with the measurements, works without it)");
  }
#endif
  Result res;
  SimConfig base = base_in;
  std::set<std::string> labels;
  bool any_train = false;
  for (const auto& r : runs) {
    if (!labels.insert(r.label).second)
      throw UserError("--measured", r.label, "two runs have the same name");
    any_train |= !r.holdout;
  }
  if (!any_train) throw UserError("--holdout: every run is held out; nothing is left to fit");

  // 1. Link curves, directly from the measured copy times of the training runs. Explicit
  //    memcpy timings are used only for a direction without any migration record.
  CompareOptions cmp;
  for (int d = 0; d < 2; ++d) {
    std::vector<TransferSample> mig, cpy;
    for (const auto& r : runs) {
      if (r.holdout) continue;
      mig.insert(mig.end(), r.measured.transfers[d].begin(), r.measured.transfers[d].end());
      cpy.insert(cpy.end(), r.measured.memcpys[d].begin(), r.measured.memcpys[d].end());
    }
    bool any_mig = false;
    for (const auto& r : runs) any_mig |= !r.measured.transfers[d].empty();
    cmp.memcpy_defines_curve[d] = !any_mig;
    TransferCurve& curve = d == kHtoD ? base.link.htod : base.link.dtoh;
    res.curve_source[d] = "base preset";
    if (!opts.fit_curves) continue;
    TransferCurve fitted;
    if (fit_curve(mig, curve, fitted)) {
      res.curve_source[d] = "migrations";
    } else if (fit_curve(cpy, curve, fitted)) {
      res.curve_source[d] = "memcpy";
    } else {
      continue;
    }
    for (auto& p : fitted.points) p.second = round_to(p.second, 0.1);
    curve = fitted;
  }

  // 2. Scalar knobs.
  Problem prob{base, runs, opts, cmp, {}, {}, 0, std::numeric_limits<double>::infinity(), {}};
  std::vector<std::string> knobs = opts.fit.empty() ? default_fit_knobs() : opts.fit;
  for (const auto& [k, b] : opts.bounds)
    if (std::find(knobs.begin(), knobs.end(), k) == knobs.end())
      throw UserError("--bound", k, "knob is not being fitted (add it to --fit)");
  std::vector<ParamResult> params;
  for (const auto& k : knobs) {
    const auto& info = knob_info(k);
    if (info.type != "number")
      throw UserError("--fit", k,
                      "only real-valued knobs can be fitted (this one is " + info.type + ")");
    ParamResult p;
    p.knob = k;
    p.base = knob_value(base, k);
    p.lo = p.base > 0 ? p.base / 20 : 1.0;
    p.hi = p.base > 0 ? p.base * 20 : 1e6;
    if (const auto it = opts.bounds.find(k); it != opts.bounds.end()) {
      p.lo = it->second.first;
      p.hi = it->second.second;
      if (!(p.lo > 0 && p.hi > p.lo)) throw UserError("--bound", k, "need 0 < lo < hi");
    }
    p.value = std::clamp(p.base > 0 ? p.base : p.lo, p.lo, p.hi);
    params.push_back(p);
  }

  const std::vector<Residual> at_base = prob.residuals(base, false);
  res.train_before = at_base;
  res.holdout_before = prob.residuals(base, true);
  res.loss_before = loss_of(at_base, opts.robust_scale);

  // Screening: a knob whose doubling changes no residual is not exercised by the data.
  std::vector<std::size_t> active;
  if (opts.optimize) {
    for (std::size_t i = 0; i < params.size(); ++i) {
      SimConfig c = base;
      const double probe =
          params[i].value * 2 <= params[i].hi ? params[i].value * 2 : params[i].value / 2;
      c.set(params[i].knob, json(probe), "calibrate");
      const auto r = prob.residuals(c, false);
      ++res.evaluations;
      bool moved = false;
      for (std::size_t k = 0; k < r.size() && !moved; ++k)
        moved = std::fabs(r[k].rel - at_base[k].rel) > 1e-12 || r[k].family != at_base[k].family;
      moved |= r.size() != at_base.size();
      if (moved) {
        active.push_back(i);
      } else {
        params[i].status = "no effect (kept)";
        params[i].value = params[i].base;
      }
    }
  }

  SimConfig fitted = base;
  res.stop_reason = opts.optimize ? "no knob affects the measurements" : "evaluation only";
  if (!active.empty()) {
    std::vector<double> x, lo, hi;
    for (std::size_t i : active) {
      prob.knobs.push_back(params[i].knob);
      x.push_back(std::log(params[i].value));
      lo.push_back(std::log(params[i].lo));
      hi.push_back(std::log(params[i].hi));
    }
    prob.x0 = x;
#ifdef UVMSIM_HAVE_NLOPT
    nlopt::srand(1);  // the local algorithms used are deterministic; keep any randomness fixed
    nlopt::opt opt(algorithm_of(opts.algorithm, x.size()), static_cast<unsigned>(x.size()));
    opt.set_lower_bounds(lo);
    opt.set_upper_bounds(hi);
    opt.set_min_objective(nlopt_cb, &prob);
    opt.set_maxeval(static_cast<int>(std::max(1u, opts.max_evals)));
    opt.set_xtol_rel(1e-5);
    opt.set_ftol_abs(1e-10);
    opt.set_initial_step(std::vector<double>(x.size(), 0.5));
    double minf = 0;
    try {
      const nlopt::result r = opt.optimize(x, minf);
      switch (r) {
        case nlopt::MAXEVAL_REACHED:
          res.stop_reason = "evaluation budget reached";
          break;
        case nlopt::XTOL_REACHED:
          res.stop_reason = "converged (parameter tolerance)";
          break;
        case nlopt::FTOL_REACHED:
          res.stop_reason = "converged (objective tolerance)";
          break;
        case nlopt::SUCCESS:
          res.stop_reason = "converged";
          break;
        default:
          res.stop_reason = "stopped (nlopt result " + std::to_string(static_cast<int>(r)) + ")";
      }
    } catch (const nlopt::roundoff_limited&) {
      res.stop_reason = "converged (round-off limited)";
    } catch (const nlopt::forced_stop&) {
      res.stop_reason = "stopped";
    }
#endif  // UVMSIM_HAVE_NLOPT
    if (!prob.best_x.empty()) x = prob.best_x;
    res.evaluations += prob.evals;
    for (std::size_t k = 0; k < active.size(); ++k) {
      ParamResult& p = params[active[k]];
      p.value = round_to(std::exp(x[k]), 0.1);
      const double span = std::log(p.hi) - std::log(p.lo);
      if (x[k] - std::log(p.lo) < 1e-3 * span)
        p.status = "at lower bound";
      else if (std::log(p.hi) - x[k] < 1e-3 * span)
        p.status = "at upper bound";
      else
        p.status = "fitted";
      fitted.set(p.knob, json(p.value), "calibrate");
    }
  }
  for (auto& p : params)
    if (p.status.empty()) p.status = opts.optimize ? "fitted" : "kept";
  res.params = params;
  res.config = fitted;
  res.train_after = prob.residuals(fitted, false);
  res.holdout_after = prob.residuals(fitted, true);
  res.loss_after = loss_of(res.train_after, opts.robust_scale);
  return res;
}

std::vector<FamilyStats> family_stats(const std::vector<Residual>& rs) {
  std::map<std::string, FamilyStats> m;
  for (const auto& r : rs) {
    auto& f = m[r.family];
    f.family = r.family;
    ++f.n;
    f.mean_abs += std::fabs(r.rel);
    f.max_abs = std::max(f.max_abs, std::fabs(r.rel));
  }
  std::vector<FamilyStats> out;
  for (auto& [k, f] : m) {
    f.mean_abs /= static_cast<double>(f.n);
    out.push_back(f);
  }
  return out;
}

namespace {

std::string pct(double v) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << 100.0 * v << "%";
  return o.str();
}

void print_residual_table(std::ostream& out, const std::string& title,
                          const std::vector<Residual>& before, const std::vector<Residual>& after) {
  if (after.empty()) return;
  out << title << "\n";
  out << "  " << std::left << std::setw(26) << "metric" << std::setw(14) << "run" << std::right
      << std::setw(5) << "n" << std::setw(12) << "mean|err|" << std::setw(11) << "max|err|"
      << std::setw(14) << "(base mean)"
      << "\n";
  // Per metric family and run, then per family over all runs.
  auto key_stats = [](const std::vector<Residual>& rs) {
    std::map<std::pair<std::string, std::string>, FamilyStats> m;
    for (const auto& r : rs) {
      auto& f = m[{r.family, r.run}];
      ++f.n;
      f.mean_abs += std::fabs(r.rel);
      f.max_abs = std::max(f.max_abs, std::fabs(r.rel));
    }
    for (auto& [k, f] : m) f.mean_abs /= static_cast<double>(f.n);
    return m;
  };
  const auto a = key_stats(after), b = key_stats(before);
  for (const auto& [k, f] : a) {
    const auto it = b.find(k);
    out << "  " << std::left << std::setw(26) << k.first << std::setw(14) << k.second << std::right
        << std::setw(5) << f.n << std::setw(12) << pct(f.mean_abs) << std::setw(11)
        << pct(f.max_abs) << std::setw(14) << (it != b.end() ? pct(it->second.mean_abs) : "-")
        << "\n";
  }
  for (const auto& f : family_stats(after))
    out << "  " << std::left << std::setw(26) << f.family << std::setw(14) << "(all runs)"
        << std::right << std::setw(5) << f.n << std::setw(12) << pct(f.mean_abs) << std::setw(11)
        << pct(f.max_abs) << "\n";
}

void print_worst(std::ostream& out, const std::vector<Residual>& rs, std::size_t n) {
  std::vector<const Residual*> v;
  for (const auto& r : rs) v.push_back(&r);
  std::stable_sort(v.begin(), v.end(), [](const Residual* a, const Residual* b) {
    return std::fabs(a->rel) > std::fabs(b->rel);
  });
  out << "largest residuals:\n";
  for (std::size_t i = 0; i < std::min(n, v.size()); ++i) {
    const auto& r = *v[i];
    out << "  " << std::left << std::setw(26) << r.family << std::setw(14) << r.run << std::setw(12)
        << r.what << " measured " << std::setw(12) << r.measured << " simulated " << std::setw(12)
        << r.simulated << " " << pct(r.rel) << "\n";
  }
}

json residuals_json(const std::vector<Residual>& rs) {
  json a = json::array();
  for (const auto& r : rs)
    a.push_back({{"family", r.family},
                 {"run", r.run},
                 {"index", r.index},
                 {"what", r.what},
                 {"measured", r.measured},
                 {"simulated", r.simulated},
                 {"rel", r.rel}});
  return a;
}

json stats_json(const std::vector<Residual>& rs) {
  json o = json::object();
  for (const auto& f : family_stats(rs))
    o[f.family] = {{"n", f.n},
                   {"mean_abs_rel", std::round(f.mean_abs * 1e4) / 1e4},
                   {"max_abs_rel", std::round(f.max_abs * 1e4) / 1e4}};
  return o;
}

}  // namespace

void print_report(std::ostream& out, const Result& r, bool verbose) {
  out << "link curves: htod from " << r.curve_source[0] << ", dtoh from " << r.curve_source[1]
      << "\n";
  out << "parameters (" << r.evaluations << " evaluations, " << r.stop_reason << "):\n";
  for (const auto& p : r.params) {
    out << "  " << std::left << std::setw(26) << p.knob << std::right << std::setw(12)
        << std::setprecision(6) << p.value << "  (base " << p.base << ", bounds [" << p.lo << ", "
        << p.hi << "])  " << p.status << "\n";
  }
  out << "loss: " << r.loss_before << " -> " << r.loss_after << "\n";
  print_residual_table(out, "residuals on fitted runs (relative error, calibrated vs measured):",
                       r.train_before, r.train_after);
  print_residual_table(out, "residuals on held-out runs (not used by the fit):", r.holdout_before,
                       r.holdout_after);
  std::vector<Residual> all = r.train_after;
  all.insert(all.end(), r.holdout_after.begin(), r.holdout_after.end());
  print_worst(out, all, verbose ? all.size() : 5);
}

json report_json(const Result& r) {
  json params = json::array();
  for (const auto& p : r.params)
    params.push_back({{"knob", p.knob},
                      {"base", p.base},
                      {"value", p.value},
                      {"lo", p.lo},
                      {"hi", p.hi},
                      {"status", p.status}});
  return {
      {"parameters", params},
      {"curve_source", {{"htod", r.curve_source[0]}, {"dtoh", r.curve_source[1]}}},
      {"evaluations", r.evaluations},
      {"stop_reason", r.stop_reason},
      {"loss_before", r.loss_before},
      {"loss_after", r.loss_after},
      {"fitted",
       {{"summary", stats_json(r.train_after)}, {"residuals", residuals_json(r.train_after)}}},
      {"held_out",
       {{"summary", stats_json(r.holdout_after)}, {"residuals", residuals_json(r.holdout_after)}}},
      {"base",
       {{"fitted_summary", stats_json(r.train_before)},
        {"held_out_summary", stats_json(r.holdout_before)}}}};
}

nlohmann::ordered_json calibrated_preset(const nlohmann::ordered_json& base_doc, const Result& r,
                                         const std::string& source) {
  nlohmann::ordered_json doc = base_doc;
  const json cfg = r.config.to_json();
  auto put = [&](const std::string& knob) {
    const auto dot = knob.find('.');
    const std::string g = knob.substr(0, dot), k = knob.substr(dot + 1);
    doc[g][k] = cfg.at(g).at(k);
    doc["provenance"][knob] = nlohmann::ordered_json{{"kind", "fitted"}, {"source", source}};
  };
  for (const auto& p : r.params)
    if (p.status != "no effect (kept)" && p.status != "kept") put(p.knob);
  if (r.curve_source[0] != "base preset") put("link.htod_curve");
  if (r.curve_source[1] != "base preset") put("link.dtoh_curve");
  doc["calibration"] = nlohmann::ordered_json{
      {"tool", "uvmsim calibrate"},
      {"source", source},
      {"curve_source", {{"htod", r.curve_source[0]}, {"dtoh", r.curve_source[1]}}},
      {"evaluations", r.evaluations},
      {"fitted_residuals", stats_json(r.train_after)},
      {"held_out_residuals", stats_json(r.holdout_after)}};
  return doc;
}

namespace {
void pretty_rec(const nlohmann::ordered_json& j, int indent, std::ostringstream& o) {
  using oj = nlohmann::ordered_json;
  const bool flat = j.is_array() && std::all_of(j.begin(), j.end(), [](const oj& e) {
                      return e.is_primitive() ||
                             (e.is_array() && std::all_of(e.begin(), e.end(), [](const oj& x) {
                                return x.is_primitive();
                              }));
                    });
  if (j.is_primitive() || flat || j.empty()) {
    o << j.dump();
    return;
  }
  const std::string pad(indent + 2, ' ');
  if (j.is_array()) {
    o << "[\n";
    for (std::size_t i = 0; i < j.size(); ++i) {
      o << pad;
      pretty_rec(j[i], indent + 2, o);
      o << (i + 1 < j.size() ? ",\n" : "\n");
    }
    o << std::string(indent, ' ') << "]";
    return;
  }
  o << "{\n";
  std::size_t i = 0;
  for (const auto& [k, v] : j.items()) {
    o << pad << oj(k).dump() << ": ";
    pretty_rec(v, indent + 2, o);
    o << (++i < j.size() ? ",\n" : "\n");
  }
  o << std::string(indent, ' ') << "}";
}
}  // namespace

std::string pretty_json(const nlohmann::ordered_json& j) {
  std::ostringstream o;
  pretty_rec(j, 0, o);
  o << "\n";
  return o.str();
}

}  // namespace uvmsim::calib
