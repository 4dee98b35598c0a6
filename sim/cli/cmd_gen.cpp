// `uvmsim gen`: write a synthetic workload trace with one of the registered generators.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <ostream>

#include "core/error.h"
#include "core/units.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "traces/generators/generator.h"
#include "traces/trace.h"

namespace uvmsim::cli {

namespace po = boost::program_options;

namespace {

/// One generator's line and its parameters; all of them without `only`.
void print_list(std::ostream& out, const gen::Generator* only = nullptr) {
  out << "generators (name, access pattern, default --footprint, what it emulates):\n";
  for (const gen::Generator* g : gen::generators()) {
    if (only != nullptr && g != only) continue;
    char line[160];
    std::snprintf(line, sizeof line, "  %-14s %-19s %-10s ", g->name.c_str(), g->pattern.c_str(),
                  format_bytes(g->default_footprint).c_str());
    out << line << (g->source.empty() ? "" : g->source + ": ") << g->description << "\n";
    for (const gen::ParamSpec& p : g->params) {
      out << "      --param " << p.name << "=";
      if (p.required) {
        out << "(required)";
      } else {
        out << p.default_value;
      }
      out << "  " << p.doc << "\n";
    }
  }
  out << "parameters of every generator:\n";
  for (const gen::ParamSpec& p : gen::common_params())
    out << "      --param " << p.name << "=" << p.default_value << "  " << p.doc << "\n";
}

std::uint64_t parse_seed(const std::string& text) {
  if (text.empty() || text.size() > 20 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    throw UsageError("--seed: invalid value '" + text + "' (expected a non-negative integer)");
  }
  try {
    return std::stoull(text);
  } catch (const std::out_of_range&) {
    throw UsageError("--seed: value '" + text + "' does not fit in 64 bits");
  }
}

}  // namespace

int cmd_gen(const Args& args, std::ostream& out, std::ostream& /*err*/) {
  po::options_description visible("options");
  visible.add_options()                                                   //
      ("help,h", "show this help")                                        //
      ("list", "list the generators and their parameters")                //
      ("output,o", po::value<std::string>(), "output trace file (.uvt)")  //
      ("footprint", po::value<std::string>(),
       "data size, with K/M/G/T suffix; default: the generator's (see --list). Generators that "
       "size by their own parameters ignore it but record it")  //
      ("param,p", po::value<std::vector<std::string>>()->composing(),
       "generator parameter KEY=VALUE (repeatable; see --list)")             //
      ("seed", po::value<std::string>()->default_value("1"), "random seed")  //
      ("chunk-size", po::value<std::string>()->default_value("1M"),
       "target uncompressed chunk size")                                                    //
      ("zstd-level", po::value<int>()->default_value(3), "zstd compression level (1..19)")  //
      ("no-fold", "keep same-page repeated accesses as separate records");
  po::options_description hidden;
  hidden.add_options()("generator", po::value<std::string>());
  po::positional_options_description pos;
  pos.add("generator", 1);
  const po::variables_map vm = parse_args(args, visible, hidden, pos);

  if (vm.count("help")) {
    out << "usage: uvmsim gen NAME [--footprint SIZE] [--param KEY=VALUE ...] [--seed N] -o FILE\n"
           "       uvmsim gen --list\n\n"
           "Writes a synthetic workload trace. The same name, parameters and seed always produce "
           "a byte-identical file.\n\n"
        << visible << "\n";
    // `gen NAME --help` shows that generator's parameters only.
    const gen::Generator* only =
        vm.count("generator") ? gen::find_generator(vm["generator"].as<std::string>()) : nullptr;
    print_list(out, only);
    return 0;
  }
  if (vm.count("list")) {
    print_list(out);
    return 0;
  }
  if (!vm.count("generator")) throw UsageError("missing generator name (see uvmsim gen --list)");
  if (!vm.count("output")) throw UsageError("missing output file (-o FILE)");
  const std::string name = vm["generator"].as<std::string>();
  const std::string output = vm["output"].as<std::string>();
  const gen::Generator* g = gen::find_generator(name);
  if (g == nullptr)
    throw UsageError("unknown generator '" + name + "' (uvmsim gen --list shows them all)");
  const std::uint64_t footprint =
      vm.count("footprint")
          ? as_usage([&] { return parse_size(vm["footprint"].as<std::string>(), "--footprint"); })
          : g->default_footprint;
  const std::uint64_t seed = parse_seed(vm["seed"].as<std::string>());

  gen::ParamMap params;
  if (vm.count("param")) {
    for (const std::string& kv : vm["param"].as<std::vector<std::string>>()) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw UsageError("--param '" + kv + "': expected KEY=VALUE");
      }
      const std::string key = kv.substr(0, eq);
      if (!params.emplace(key, kv.substr(eq + 1)).second) {
        throw UsageError("--param " + key + ": given more than once");
      }
    }
  }

  trace::WriterOptions opts;
  opts.chunk_raw_bytes =
      as_usage([&] { return parse_size(vm["chunk-size"].as<std::string>(), "--chunk-size"); });
  if (opts.chunk_raw_bytes == 0) throw UsageError("--chunk-size: must be positive");
  opts.zstd_level = vm["zstd-level"].as<int>();
  if (opts.zstd_level < 1 || opts.zstd_level > 19) {
    throw UsageError("--zstd-level: " + std::to_string(opts.zstd_level) + " is not in 1..19");
  }
  opts.fold_repeats = vm.count("no-fold") == 0;

  const auto start = std::chrono::steady_clock::now();
  try {
    gen::generate(name, footprint, params, seed, output, opts);
  } catch (const UsageError&) {
    throw;
  } catch (const UserError& e) {
    // generate() checks the parameters before it writes anything; their errors name the option.
    if (std::string(e.what()).rfind("--param ", 0) == 0) throw UsageError(e.what());
    throw;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Reading the result back both validates it and gives the summary.
  trace::TraceReader reader(output);
  std::uint64_t tbs = 0, records = 0;
  for (const auto& l : reader.launches()) {
    tbs += l.threadblocks;
    records += l.records;
  }
  out << "wrote " << output << ": " << name << ", " << reader.launches().size() << " launch(es), "
      << tbs << " threadblocks, " << records << " records, " << format_bytes(reader.file_bytes())
      << "\n";
  // What the program allocates, which generators round to their problem's shape (a power-of-two
  // graph, a matrix order, ...), so it can differ from --footprint.
  std::uint64_t managed = 0, allocs = 0;
  for (const trace::Allocation& a : reader.metadata().allocations) {
    if (a.managed) managed += a.size, ++allocs;
  }
  out << "footprint: " << managed << " bytes (" << format_bytes(managed) << ") in " << allocs
      << " managed allocation(s); --footprint " << format_bytes(footprint) << "\n";
  char speed[96];
  std::snprintf(speed, sizeof speed, "generation: %.3f s, %.2f M records/s\n", secs,
                secs > 0 ? static_cast<double>(records) / secs / 1e6 : 0.0);
  out << speed;
  return 0;
}

}  // namespace uvmsim::cli
