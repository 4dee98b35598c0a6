#include <exception>
#include <iostream>
#include <new>

#include <boost/program_options/errors.hpp>

#include "core/error.h"
#include "sim/cli/commands.h"
#include "sim/sweep/identity.h"

namespace uvmsim::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> cmds = {
      {"gen", "generate a synthetic workload trace (.uvt)", cmd_gen},
      {"trace", "inspect a trace (`trace info|dump FILE`) or import one (`trace import`)",
       cmd_trace},
      {"run", "simulate a trace on a GPU preset", cmd_run},
      {"gpus", "list the GPU presets with their key numbers and provenance", cmd_gpus},
      {"policies", "list the registered eviction / prefetch / placement policies", cmd_policies},
      {"analyze", "derive access hints from a trace by profiling it (for --hints)", cmd_analyze},
      {"calibrate", "fit a GPU preset to measurements of a real GPU; import nvprof/nsys data",
       cmd_calibrate},
      {"sweep", "run a sweep spec on local cores or Slurm, resumably", cmd_sweep},
      {"report", "figures and an HTML page from a sweep's results", cmd_report},
      {"check", "check policy behaviour against an expectation file", cmd_check},
      {"validate", "compare simulated with published real-GPU measurements", cmd_validate},
  };
  return cmds;
}

static void usage(std::ostream& out) {
  out << "usage: uvmsim <command> [options]   (uvmsim <command> --help for details)\n"
         "       uvmsim --version [--json]\n\n"
         "commands:\n";
  for (const auto& c : commands()) {
    out << "  " << c.name << std::string(10 - std::string(c.name).size(), ' ') << c.summary << "\n";
  }
}

// `uvmsim --version`: the identity every sweep result records (docs/sweeps.md).
static int version(const Args& argv, std::ostream& out, std::ostream& err) {
  const bool json = argv.size() == 3 && argv[2] == "--json";
  if (argv.size() > 3 || (argv.size() == 3 && !json)) {
    err << "uvmsim: error: --version takes no arguments but --json\n";
    return 2;
  }
  const auto& b = sweep::this_build();
  if (json)
    out << b.to_json().dump(2) << "\n";
  else
    out << "uvmsim " << b.version << "\nsource revision " << b.revision << "\nbuild " << b.build_id
        << "\n";
  return 0;
}

int run_cli(const Args& argv, std::ostream& out, std::ostream& err) {
  if (argv.size() < 2 || argv[1] == "--help" || argv[1] == "-h" || argv[1] == "help") {
    usage(argv.size() < 2 ? err : out);
    return argv.size() < 2 ? 2 : 0;
  }
  const std::string& name = argv[1];
  // Every message below is one line, whatever the values it quotes contain (one_line()).
  try {
    if (name == "--version") return version(argv, out, err);
    for (const auto& c : commands()) {
      if (name != c.name) continue;
      Args rest(argv.begin() + 2, argv.end());
      try {
        return c.run(rest, out, err);
      } catch (const UsageError& e) {
        err << "uvmsim " << name << ": error: " << e.what() << "\n";
        return 2;
      } catch (const UserError& e) {
        err << "uvmsim " << name << ": error: " << e.what() << "\n";
        return is_usage_error(e) ? 2 : 1;  // a bad flag value ("--set: ...") is a usage error
      } catch (const boost::program_options::error& e) {
        err << "uvmsim " << name << ": error: " << one_line(e.what()) << " (see uvmsim " << name
            << " --help)\n";
        return 2;
      }
    }
  } catch (const std::bad_alloc&) {
    err << "uvmsim " << name << ": error: out of memory\n";
    return 1;
  } catch (const UserError& e) {
    err << "uvmsim: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    // A bug, never bad input: every input error is a UserError (tests/test_run_errors.cpp).
    err << "uvmsim " << one_line(name) << ": internal error: " << one_line(e.what()) << "\n";
    return 3;
  }
  err << "uvmsim: error: unknown command '" << one_line(name)
      << "' (uvmsim --help lists the commands)\n";
  return 2;
}

}  // namespace uvmsim::cli
