// Command-line parsing shared by the subcommands: each declares its visible options (printed by
// --help), hidden ones (the positionals) and the positional order, and gets the parsed map.
#pragma once

#include <boost/program_options.hpp>

#include "sim/cli/commands.h"

namespace uvmsim::cli {

/// Parses `args` against `visible` and `hidden` options, `pos` naming the positional ones.
/// Boost's errors (unknown option, missing value) propagate; run_cli() reports them in one line.
inline boost::program_options::variables_map parse_args(
    const Args& args, const boost::program_options::options_description& visible,
    const boost::program_options::options_description& hidden,
    const boost::program_options::positional_options_description& pos) {
  namespace po = boost::program_options;
  po::options_description all;
  all.add(visible).add(hidden);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  po::notify(vm);
  return vm;
}

}  // namespace uvmsim::cli
