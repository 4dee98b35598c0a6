#include "sim/validate/score.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <numeric>

#include "sim/check/relation.h"

namespace uvmsim::validate {

using nlohmann::ordered_json;

namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (std::size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    i = j + 1;
  }
  return r;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string opt_json_number(const std::optional<double>& v) {
  return v ? check::format_number(*v) : "-";
}

ordered_json num_or_null(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? ordered_json(*v) : ordered_json(nullptr);
}

}  // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n;
  const double my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  if (sxx == 0 || syy == 0) return NAN;
  return sxy / std::sqrt(sxx * syy);
}

SourceScore score(const Source& src, const std::vector<const Row*>& rows,
                  const MetricLookup& lookup) {
  SourceScore s;
  s.source = &src;
  double sum_err = 0;
  for (const Row* row : rows) {
    RowResult r;
    r.row = row;
    if (!row->skip.empty()) {
      r.status = "skipped";
      r.reason = row->skip;
      s.rows.push_back(r);
      continue;
    }
    std::string missing;
    const double v = row->expr->evaluate([&](const check::Relation::Ref& ref) {
      std::string why;
      const auto x = lookup(ref.run, ref.metric, why);
      if (!x && missing.empty()) missing = why;
      return x ? *x : NAN;
    });
    if (!missing.empty() || !std::isfinite(v) || v <= 0) {
      r.status = "no-value";
      if (missing.empty()) r.simulated = v;
      r.reason = !missing.empty()
                     ? missing
                     : "simulated value " + check::format_number(v) + " is not a positive number";
      if (row->max_error) ++s.failed;  // a bounded row must have a value: a broken run fails
    } else {
      r.simulated = v;
      r.ratio = v / row->measured;
      r.error = std::fabs(std::log(*r.ratio));
      sum_err += *r.error;
      ++s.scored;
      if (!row->max_error) {
        r.status = "compared";
      } else if (std::exp(*r.error) <= *row->max_error * (1 + 1e-12)) {
        r.status = "within";
      } else {
        r.status = "outside";
        ++s.failed;
      }
    }
    s.rows.push_back(r);
  }
  if (s.scored) s.geomean_error_factor = std::exp(sum_err / static_cast<double>(s.scored));
  // Rank correlation over rows of one quantity, in order of first appearance.
  std::vector<std::string> metrics;
  for (const auto& r : s.rows)
    if (r.error && std::find(metrics.begin(), metrics.end(), r.row->metric) == metrics.end())
      metrics.push_back(r.row->metric);
  for (const auto& m : metrics) {
    std::vector<double> meas, sim;
    for (const auto& r : s.rows)
      if (r.error && r.row->metric == m) {
        meas.push_back(r.row->measured);
        sim.push_back(*r.simulated);
      }
    if (meas.size() >= 3) s.ranks.push_back({m, meas.size(), spearman(meas, sim)});
  }
  return s;
}

void print_report(std::ostream& out, const std::vector<SourceScore>& scores, Subset subset) {
  for (const auto& s : scores) {
    if (s.rows.empty()) continue;  // no row of this source is in the subset
    const Source& src = *s.source;
    out << src.name << ": " << src.title << "\n  " << src.citation["where"].get<std::string>()
        << "; GPU " << src.citation["gpu"].get<std::string>() << ", driver "
        << src.citation["driver"].get<std::string>() << "; simulated on preset " << src.gpu << " ("
        << subset_name(subset) << " subset)\n";
    std::size_t w_id = 3, w_fig = 6, w_meas = 8, w_sim = 9;
    for (const auto& r : s.rows) {
      w_id = std::max(w_id, r.row->id.size());
      w_fig = std::max(w_fig, r.row->figure.size());
      w_meas = std::max(w_meas, check::format_number(r.row->measured).size());
      w_sim = std::max(w_sim, opt_json_number(r.simulated).size());
    }
    w_fig = std::min<std::size_t>(w_fig, 24);
    auto col = [&](const std::string& t, std::size_t w) {
      out << std::left << std::setw(static_cast<int>(w) + 2) << t;
    };
    out << "  ";
    col("ROW", w_id);
    col("FIGURE", w_fig);
    col("MEASURED", w_meas);
    col("SIMULATED", w_sim);
    col("SIM/MEAS", 8);
    out << "RESULT\n";
    for (const auto& r : s.rows) {
      out << "  ";
      col(r.row->id, w_id);
      col(r.row->figure.size() > w_fig ? r.row->figure.substr(0, w_fig - 1) + "~" : r.row->figure,
          w_fig);
      col(check::format_number(r.row->measured), w_meas);
      col(opt_json_number(r.simulated), w_sim);
      col(r.ratio ? fixed(*r.ratio, 3) : "-", 8);
      if (r.status == "skipped" || r.status == "no-value") {
        out << r.status << ": " << r.reason << "\n";
      } else {
        // The error factor alone (x1.00 = exact); a bounded row also says whether it is within.
        out << "error x" << fixed(std::exp(*r.error), 2);
        if (r.row->max_error)
          out << (r.status == "within" ? ", within x" : ", OUTSIDE x")
              << check::format_number(*r.row->max_error);
        out << "\n";
      }
    }
    out << "  summary: " << s.scored << " of " << s.rows.size() << " rows compared";
    if (s.geomean_error_factor) out << ", geomean error x" << fixed(*s.geomean_error_factor, 2);
    for (const auto& rc : s.ranks)
      out << "; Spearman " << rc.metric << " (" << rc.n
          << " rows): " << (std::isnan(rc.spearman) ? "n/a" : fixed(rc.spearman, 2));
    if (s.failed) out << "; " << s.failed << " FAILED their bound";
    out << "\n\n";
  }
  std::size_t scored = 0, failed = 0, total = 0;
  double sum = 0;
  for (const auto& s : scores) {
    total += s.rows.size();
    failed += s.failed;
    for (const auto& r : s.rows)
      if (r.error) {
        sum += *r.error;
        ++scored;
      }
  }
  out << "validate: " << scores.size() << " source(s), " << scored << " of " << total
      << " rows compared";
  if (scored) out << ", geomean error x" << fixed(std::exp(sum / static_cast<double>(scored)), 2);
  out << ", " << failed << " failed their bound\n";
}

ordered_json report_json(const std::vector<SourceScore>& scores, Subset subset) {
  ordered_json j;
  j["format"] = kReportFormat;
  j["subset"] = subset_name(subset);
  j["sources"] = ordered_json::array();
  std::size_t scored = 0, failed = 0, total = 0;
  double sum = 0;
  for (const auto& s : scores) {
    const Source& src = *s.source;
    ordered_json o;
    o["source"] = src.name;
    o["title"] = src.title;
    o["file"] = src.path.string();
    o["citation"] = src.citation;
    o["preset"] = src.gpu;
    o["rows"] = ordered_json::array();
    for (const auto& r : s.rows) {
      ordered_json x;
      x["id"] = r.row->id;
      x["figure"] = r.row->figure;
      x["gpu"] = r.row->gpu;
      x["workload"] = r.row->workload;
      x["metric"] = r.row->metric;
      x["measured"] = r.row->measured;
      x["spread"] = r.row->spread
                        ? ordered_json::array({r.row->spread->first, r.row->spread->second})
                        : ordered_json(nullptr);
      x["expr"] = r.row->expr_text.empty() ? ordered_json(nullptr) : ordered_json(r.row->expr_text);
      x["simulated"] = num_or_null(r.simulated);
      x["ratio"] = num_or_null(r.ratio);
      x["error"] = num_or_null(r.error);
      x["error_factor"] = r.error ? ordered_json(std::exp(*r.error)) : ordered_json(nullptr);
      x["max_error"] = num_or_null(r.row->max_error);
      x["status"] = r.status;
      x["reason"] = r.reason;
      x["ci"] = r.row->ci;
      x["note"] = r.row->note;
      o["rows"].push_back(x);
      ++total;
    }
    ordered_json sum_j;
    sum_j["rows"] = s.rows.size();
    sum_j["compared"] = s.scored;
    sum_j["failed"] = s.failed;
    sum_j["geomean_error_factor"] = num_or_null(s.geomean_error_factor);
    sum_j["rank_correlation"] = ordered_json::array();
    for (const auto& rc : s.ranks)
      sum_j["rank_correlation"].push_back(
          {{"metric", rc.metric}, {"n", rc.n}, {"spearman", num_or_null(rc.spearman)}});
    o["summary"] = sum_j;
    j["sources"].push_back(o);
    failed += s.failed;
    for (const auto& r : s.rows)
      if (r.error) {
        sum += *r.error;
        ++scored;
      }
  }
  j["summary"] = {
      {"rows", total},
      {"compared", scored},
      {"failed", failed},
      {"geomean_error_factor",
       scored ? ordered_json(std::exp(sum / static_cast<double>(scored))) : ordered_json(nullptr)}};
  return j;
}

}  // namespace uvmsim::validate
