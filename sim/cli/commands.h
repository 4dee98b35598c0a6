// Subcommands of the `uvmsim` binary. Each takes its arguments (without the subcommand name) and
// the streams to write to, so tests can run them in-process. They throw UserError for bad input;
// run_cli() turns that into a one-line message and a non-zero exit code.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace uvmsim::cli {

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  std::function<int(const Args&, std::ostream& out, std::ostream& err)> run;
};

int cmd_gen(const Args& args, std::ostream& out, std::ostream& err);
int cmd_trace(const Args& args, std::ostream& out, std::ostream& err);
/// `trace import`: called by cmd_trace with the arguments after "import".
int cmd_trace_import(const Args& args, std::ostream& out, std::ostream& err);
int cmd_run(const Args& args, std::ostream& out, std::ostream& err);
int cmd_policies(const Args& args, std::ostream& out, std::ostream& err);
int cmd_analyze(const Args& args, std::ostream& out, std::ostream& err);
int cmd_calibrate(const Args& args, std::ostream& out, std::ostream& err);
int cmd_sweep(const Args& args, std::ostream& out, std::ostream& err);
int cmd_report(const Args& args, std::ostream& out, std::ostream& err);
int cmd_check(const Args& args, std::ostream& out, std::ostream& err);
int cmd_gpus(const Args& args, std::ostream& out, std::ostream& err);

const std::vector<Command>& commands();

/// Full CLI entry point: argv[0] is ignored. Returns the process exit code.
int run_cli(const Args& argv, std::ostream& out, std::ostream& err);

}  // namespace uvmsim::cli
