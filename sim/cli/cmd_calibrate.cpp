// `uvmsim calibrate`: fit a GPU preset to measurements (default action), import nvprof / Nsight
// Systems data into the measurement format, summarise a measurement, or write the measurement a
// simulated run would produce. docs/calibration.md walks through the whole workflow.
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>

#include <boost/program_options.hpp>

#include "core/config.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/units.h"
#include "sim/calibrate/calibrator.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "traces/measurements/importers.h"

namespace uvmsim::cli {

namespace po = boost::program_options;

namespace {

std::vector<std::string> comma_list(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (const auto& s : v)
    for (const auto& part : split(s, ','))
      if (!part.empty()) out.push_back(part);
  return out;
}

/// Parses `args`; returns false after printing the help when --help was given.
bool parse(const Args& args, const po::options_description& desc,
           const po::positional_options_description* pos, po::variables_map& vm,
           std::ostream& out) {
  vm = parse_args(args, desc, po::options_description{},
                  pos ? *pos : po::positional_options_description{});
  if (vm.count("help")) {
    out << desc << "\n";
    return false;
  }
  return true;
}

nlohmann::ordered_json read_preset_doc(const std::string& name) {
  return read_ordered_json_file(SimConfig::find_preset(name));
}

int cmd_import(const Args& args, std::ostream& out) {
  po::options_description desc(
      "usage: uvmsim calibrate import nvprof|nsys|auto INPUT -o OUTPUT.jsonl [--gpu-name NAME]\n\n"
      "Converts nvprof --print-gpu-trace --csv output or an Nsight Systems SQLite export\n"
      "(nsys export --type sqlite) into the measurement format.\n\noptions");
  desc.add_options()("help,h", "show this help")("format", po::value<std::string>(),
                                                 "nvprof | nsys | auto")(
      "input", po::value<std::string>(), "input file")("output,o", po::value<std::string>(),
                                                       "measurement file to write (.jsonl)")(
      "gpu-name", po::value<std::string>(), "GPU name to record when the input has none");
  po::positional_options_description pos;
  pos.add("format", 1).add("input", 1);
  po::variables_map vm;
  if (!parse(args, desc, &pos, vm, out)) return 0;
  if (!vm.count("format") || !vm.count("input"))
    throw UsageError("calibrate import: expected FORMAT INPUT (see --help)");
  if (!vm.count("output")) throw UsageError("-o: required");
  const std::string fmt = vm["format"].as<std::string>(), in = vm["input"].as<std::string>();
  meas::Measurement m;
  if (fmt == "nvprof")
    m = meas::import_nvprof(in);
  else if (fmt == "nsys")
    m = meas::import_nsys(in);
  else if (fmt == "auto")
    m = meas::load_any(in);
  else
    throw UsageError("calibrate import", "format",
                     "expected nvprof, nsys or auto, got '" + fmt + "'");
  if (vm.count("gpu-name") && m.header.gpu.empty()) m.header.gpu = vm["gpu-name"].as<std::string>();
  meas::write(vm["output"].as<std::string>(), m);
  std::map<std::string, std::size_t> counts;
  for (const auto& r : m.records) ++counts[to_string(r.type)];
  out << "imported " << m.records.size() << " records from " << in << " (" << m.header.source
      << ")";
  for (const auto& [k, n] : counts) out << ", " << n << " " << k;
  out << "\nwrote " << vm["output"].as<std::string>() << "\n";
  return 0;
}

int cmd_show(const Args& args, std::ostream& out) {
  po::options_description desc(
      "usage: uvmsim calibrate show MEASUREMENT [--json]\n\n"
      "Prints what the calibrator extracts from a measurement (or nvprof / nsys) file.\n\noptions");
  desc.add_options()("help,h", "show this help")("input", po::value<std::string>(), "file")(
      "json", "print as JSON");
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  if (!parse(args, desc, &pos, vm, out)) return 0;
  if (!vm.count("input")) throw UsageError("calibrate show: expected a file");
  const auto m = meas::load_any(vm["input"].as<std::string>());
  const auto r = calib::from_measurement(m);
  nlohmann::json j;
  j["file"] = m.path;
  j["source"] = m.header.source;
  j["gpu"] = m.header.gpu;
  j["records"] = m.records.size();
  j["dropped_records"] = m.summary.dropped_records;
  j["warnings"] = m.summary.warnings;
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : r.groups)
    groups.push_back(
        {{"start_ns", g.start_ns}, {"duration_ns", g.duration_ns}, {"faults", g.faults}});
  j["fault_groups"] = groups;
  j["kernel_ns"] = r.kernel_ns;
  for (int d = 0; d < 2; ++d) {
    j["bytes"][calib::dir_name(d)] = r.bytes[d];
    j["transfers"][calib::dir_name(d)] = r.transfers[d].size();
    j["memcpys"][calib::dir_name(d)] = r.memcpys[d].size();
  }
  j["cpu_faults"] = r.cpu_faults;
  j["thrashing"] = r.thrashing;
  j["throttling"] = r.throttling;
  j["remote_maps"] = r.remote_maps;
  if (vm.count("json")) {
    out << j.dump(2) << "\n";
    return 0;
  }
  out << m.path << ": " << m.records.size() << " records from " << m.header.source
      << (m.header.gpu.empty() ? "" : " on " + m.header.gpu) << "\n";
  if (m.summary.dropped_records)
    out << "  WARNING: " << m.summary.dropped_records << " CUPTI records were dropped\n";
  for (const auto& w : m.summary.warnings) out << "  warning: " << w << "\n";
  out << "  fault groups: " << r.groups.size() << "\n";
  for (std::size_t i = 0; i < r.groups.size() && i < 20; ++i)
    out << "    " << i + 1 << ": " << std::fixed << std::setprecision(1)
        << r.groups[i].duration_ns / 1000 << " us, " << r.groups[i].faults << " fault(s)\n";
  out << "  kernels: " << r.kernel_ns.size() << "\n";
  for (int d = 0; d < 2; ++d) {
    out << "  " << calib::dir_name(d) << ": " << r.transfers[d].size() << " migrations, "
        << r.memcpys[d].size() << " memcpys;";
    for (const auto& [c, b] : r.bytes[d]) out << " " << c << " " << format_bytes(b);
    out << "\n";
  }
  out << "  cpu faults " << r.cpu_faults << ", thrashing " << r.thrashing << ", throttling "
      << r.throttling << ", remote maps " << r.remote_maps << "\n";
  return 0;
}

int cmd_simulate(const Args& args, std::ostream& out) {
  po::options_description desc(
      "usage: uvmsim calibrate simulate --gpu PRESET --trace T.uvt -o OUT.jsonl [--set K=V]\n\n"
      "Writes the measurement file CUPTI would have produced for the simulated run (fault\n"
      "groups, migrations by cause, kernels), e.g. to compare two presets with `show`.\n\noptions");
  std::vector<std::string> sets;
  desc.add_options()("help,h", "show this help")("gpu", po::value<std::string>(), "preset")(
      "trace", po::value<std::string>(), "trace")("output,o", po::value<std::string>(), "output")(
      "set", po::value<std::vector<std::string>>(&sets)->composing(), "override a knob");
  po::variables_map vm;
  if (!parse(args, desc, nullptr, vm, out)) return 0;
  if (!vm.count("gpu") || !vm.count("trace") || !vm.count("output"))
    throw UsageError("calibrate simulate: --gpu, --trace and -o are required");
  SimConfig cfg = SimConfig::from_preset(vm["gpu"].as<std::string>());
  for (const auto& s : sets) cfg.set_from_string(s, "--set");
  const auto m = calib::simulated_measurement(cfg, vm["trace"].as<std::string>());
  meas::write(vm["output"].as<std::string>(), m);
  out << "wrote " << m.records.size() << " records to " << vm["output"].as<std::string>() << "\n";
  return 0;
}

}  // namespace

int cmd_calibrate(const Args& args, std::ostream& out, std::ostream& err) {
  if (!args.empty() && args[0] == "import") return cmd_import({args.begin() + 1, args.end()}, out);
  if (!args.empty() && args[0] == "show") return cmd_show({args.begin() + 1, args.end()}, out);
  if (!args.empty() && args[0] == "simulate")
    return cmd_simulate({args.begin() + 1, args.end()}, out);

  po::options_description desc(
      "usage: uvmsim calibrate --measured M... --trace T... --gpu BASE [-o CALIBRATED.json]\n"
      "       uvmsim calibrate import nvprof|nsys|auto INPUT -o M.jsonl\n"
      "       uvmsim calibrate show M.jsonl\n"
      "       uvmsim calibrate simulate --gpu PRESET --trace T.uvt -o M.jsonl\n\n"
      "Fits the cost-model knobs of preset BASE (driver costs per batch, fault, VA block, page,\n"
      "copy run and first fault, PMA call, replay, kernel launch, HBM latency) and the link\n"
      "copy curves so that simulating each trace reproduces its measurement: fault-group\n"
      "counts and durations, kernel times, bytes migrated per cause and copy times. The i-th\n"
      "--trace is the program of the i-th --measured file; 'none' marks a measurement that only\n"
      "carries copy timings. Measurements may be .jsonl measurement files, nvprof CSV or nsys\n"
      "SQLite exports. Prints residuals per metric and run; --holdout / --cross-validate\n"
      "report the error on runs the fit did not see. See docs/calibration.md.\n\noptions");
  std::vector<std::string> measured, traces, holdout, fit, fix, bounds, sets;
  desc.add_options()("help,h", "show this help")(
      "measured", po::value<std::vector<std::string>>(&measured)->multitoken()->composing(),
      "measurement files (one run each)")(
      "trace", po::value<std::vector<std::string>>(&traces)->multitoken()->composing(),
      "trace of each measured run, in the same order ('none' = copy timings only)")(
      "gpu", po::value<std::string>(), "base preset name or JSON file")(
      "output,o", po::value<std::string>(), "write the calibrated preset here")(
      "name", po::value<std::string>(), "gpu.name of the calibrated preset (default: base's)")(
      "holdout", po::value<std::vector<std::string>>(&holdout)->composing(),
      "runs not used by the fit, by name (file stem) or 0-based index; comma-separated")(
      "cross-validate", "also fit once per simulated run with that run held out (leave-one-out)")(
      "fit", po::value<std::vector<std::string>>(&fit)->composing(),
      "knobs to fit, comma-separated (default: the driver cost knobs, launch, HBM latency)")(
      "fix", po::value<std::vector<std::string>>(&fix)->composing(), "knobs to leave unchanged")(
      "bound", po::value<std::vector<std::string>>(&bounds)->composing(),
      "KNOB=LO:HI search interval (default base/20 .. base*20)")(
      "max-evals", po::value<unsigned>()->default_value(300), "simulation budget of the optimizer")(
      "algorithm", po::value<std::string>()->default_value("bobyqa"),
      "NLopt local derivative-free method: bobyqa, sbplx, neldermead, cobyla")(
      "prior-weight", po::value<double>()->default_value(1e-4),
      "pull towards the base preset: weight of sum (ln x - ln base)^2")(
      "no-curves", "keep the base preset's link curves")(
      "evaluate", "do not fit: report the residuals of --gpu against the measurements")(
      "set", po::value<std::vector<std::string>>(&sets)->composing(),
      "override a knob of the base preset before fitting")(
      "report-json", po::value<std::string>(), "write parameters and every residual as JSON")(
      "verbose,v", "list every residual");
  po::variables_map vm;
  if (!parse(args, desc, nullptr, vm, out)) return 0;
  if (!vm.count("gpu")) throw UsageError("--gpu: required (the base preset, e.g. gtx1080ti)");
  if (measured.empty()) throw UsageError("--measured: at least one measurement file is required");
  if (traces.size() != measured.size())
    throw UsageError("--trace: " + std::to_string(traces.size()) + " trace(s) for " +
                     std::to_string(measured.size()) +
                     " measurement(s); give one per measurement, 'none' for copy-only files");

  const std::string gpu = vm["gpu"].as<std::string>();
  SimConfig base = SimConfig::from_preset(gpu);
  for (const auto& s : sets) base.set_from_string(s, "--set");

  std::vector<calib::RunInput> runs;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const auto m = meas::load_any(measured[i]);
    if (m.summary.dropped_records)
      err << "warning: " << m.path << ": " << m.summary.dropped_records
          << " CUPTI records were dropped; fault and byte counts are lower bounds\n";
    calib::RunInput r;
    r.label = m.label;
    r.measured = calib::from_measurement(m);
    if (traces[i] != "none") {
      if (!std::filesystem::exists(traces[i]))
        throw UserError(traces[i] + ": --trace: file not found");
      r.trace = traces[i];
    }
    runs.push_back(std::move(r));
  }
  for (const auto& h : comma_list(holdout)) {
    bool found = false;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].label == h || std::to_string(i) == h) {
        runs[i].holdout = true;
        found = true;
      }
    }
    if (!found) throw UsageError("--holdout", h, "no measured run has this name or index");
  }

  calib::Options opts;
  opts.fit = comma_list(fit);
  if (!fix.empty()) {
    if (opts.fit.empty()) opts.fit = calib::default_fit_knobs();
    for (const auto& f : comma_list(fix)) std::erase(opts.fit, f);
  }
  for (const auto& b : bounds) {
    const auto eq = b.find('='), colon = b.find(':', eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || colon == std::string::npos)
      throw UsageError("--bound: expected KNOB=LO:HI, got '" + b + "'");
    try {
      opts.bounds[b.substr(0, eq)] = {std::stod(b.substr(eq + 1, colon - eq - 1)),
                                      std::stod(b.substr(colon + 1))};
    } catch (const std::exception&) {
      throw UsageError("--bound: expected numbers in KNOB=LO:HI, got '" + b + "'");
    }
  }
  opts.max_evals = vm["max-evals"].as<unsigned>();
  opts.algorithm = vm["algorithm"].as<std::string>();
  opts.prior_weight = vm["prior-weight"].as<double>();
  opts.fit_curves = !vm.count("no-curves");
  opts.optimize = !vm.count("evaluate");

  const calib::Result res = calib::calibrate(base, runs, opts);
  calib::print_report(out, res, vm.count("verbose") > 0);

  nlohmann::json cv = nlohmann::json::object();
  if (vm.count("cross-validate")) {
    out << "cross-validation (leave one simulated run out, refit, evaluate it):\n";
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (!runs[i].trace || runs[i].holdout) continue;
      auto fold = runs;
      for (std::size_t k = 0; k < fold.size(); ++k) fold[k].holdout = fold[k].holdout || k == i;
      const auto r = calib::calibrate(base, fold, opts);
      std::vector<calib::Residual> mine;
      for (const auto& x : r.holdout_after)
        if (x.run == runs[i].label) mine.push_back(x);
      for (const auto& f : calib::family_stats(mine)) {
        out << "  " << std::left << std::setw(14) << runs[i].label << std::setw(26) << f.family
            << std::right << " n " << std::setw(3) << f.n << "  mean|err| " << std::fixed
            << std::setprecision(1) << 100 * f.mean_abs << "%  max|err| " << 100 * f.max_abs
            << "%\n"
            << std::defaultfloat;
        cv[runs[i].label][f.family] = {
            {"n", f.n}, {"mean_abs_rel", f.mean_abs}, {"max_abs_rel", f.max_abs}};
      }
    }
  }

  if (vm.count("report-json")) {
    std::ofstream f(vm["report-json"].as<std::string>());
    if (!f) throw UserError(vm["report-json"].as<std::string>() + ": cannot open for writing");
    nlohmann::json j = calib::report_json(res);
    if (!cv.empty()) j["cross_validation"] = cv;
    f << j.dump(2) << "\n";
  }
  if (vm.count("output")) {
    std::set<std::string> names;
    std::string source = "uvmsim calibrate on";
    for (const auto& r : runs)
      if (!r.holdout) source += " " + r.label;
    nlohmann::ordered_json doc = calib::calibrated_preset(read_preset_doc(gpu), res, source);
    if (vm.count("name")) doc["gpu"]["name"] = vm["name"].as<std::string>();
    const std::string path = vm["output"].as<std::string>();
    std::ofstream f(path);
    if (!f) throw UserError(path + ": -o: cannot open for writing");
    f << calib::pretty_json(doc);
    f.close();
    if (!f) throw UserError(path + ": -o: write failed");
    // The written preset must load (and reproduce what was reported).
    SimConfig::from_preset(path);
    out << "wrote calibrated preset " << path << "\n";
  }
  return 0;
}

}  // namespace uvmsim::cli
