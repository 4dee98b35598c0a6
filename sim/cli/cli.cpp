#include <exception>
#include <iostream>
#include <new>

#include <boost/program_options/errors.hpp>

#include "core/error.h"
#include "core/one_line.h"
#include "sim/cli/commands.h"

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
  out << "usage: uvmsim <command> [options]   (uvmsim <command> --help for details)\n\n"
         "commands:\n";
  for (const auto& c : commands()) {
    out << "  " << c.name << std::string(10 - std::string(c.name).size(), ' ') << c.summary << "\n";
  }
}

int run_cli(const Args& argv, std::ostream& out, std::ostream& err) {
  if (argv.size() < 2 || argv[1] == "--help" || argv[1] == "-h" || argv[1] == "help") {
    usage(argv.size() < 2 ? err : out);
    return argv.size() < 2 ? 2 : 0;
  }
  const std::string& name = argv[1];
  for (const auto& c : commands()) {
    if (name != c.name) continue;
    Args rest(argv.begin() + 2, argv.end());
    try {
      return c.run(rest, out, err);
    } catch (const UserError& e) {
      err << "uvmsim " << name << ": error: " << one_line(e.what()) << "\n";
      return is_usage_error(e) ? 2 : 1;
    } catch (const boost::program_options::error& e) {
      err << "uvmsim " << name << ": error: " << e.what() << " (see uvmsim " << name
          << " --help)\n";
      return 2;
    } catch (const std::bad_alloc&) {
      err << "uvmsim " << name << ": error: out of memory\n";
      return 1;
    } catch (const std::exception& e) {
      err << "uvmsim " << name << ": internal error: " << one_line(e.what()) << "\n";
      return 3;
    }
  }
  err << "uvmsim: error: unknown command '" << name << "'\n";
  usage(err);
  return 2;
}

}  // namespace uvmsim::cli
