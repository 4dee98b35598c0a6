#include <iostream>

#include "sim/cli/commands.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  uvmsim::cli::Args args(argv, argv + argc);
  return uvmsim::cli::run_cli(args, std::cout, std::cerr);
}
