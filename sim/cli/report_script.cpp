#include "sim/cli/report_script.h"

#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "sim/sweep/process.h"

namespace uvmsim::cli {

namespace fs = std::filesystem;

namespace {

// The plotting script: next to the binary's source tree, or an installed copy.
fs::path find_script() {
  std::vector<fs::path> candidates;
  if (const char* s = std::getenv("UVMSIM_REPORT_SCRIPT"); s && *s) return s;
  candidates.push_back(fs::path(UVMSIM_SOURCE_DIR) / "scripts" / "uvmsim_report.py");
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / ".." / "scripts" / "uvmsim_report.py");
    candidates.push_back(exe.parent_path() / ".." / "share" / "uvmsim" / "uvmsim_report.py");
  }
  for (const auto& c : candidates)
    if (fs::exists(c, ec)) return c;
  throw UserError("cannot find uvmsim_report.py (looked in " + candidates.front().string() +
                  "); set UVMSIM_REPORT_SCRIPT or --script");
}

std::string last_line(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  const auto nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

}  // namespace

std::string run_report_script(const fs::path& input, const fs::path& out_dir,
                              const std::string& python_choice, const std::string& script_choice) {
  std::string python = "/usr/bin/python3";
  if (const char* p = std::getenv("UVMSIM_PYTHON"); p && *p) python = p;
  if (!python_choice.empty()) python = python_choice;
  if (::access(python.c_str(), X_OK) != 0)
    throw UserError(python + ": Python interpreter not found (set --python or UVMSIM_PYTHON)");
  const fs::path script = !script_choice.empty() ? fs::path(script_choice) : find_script();
  std::error_code ec;
  if (!fs::exists(script, ec)) throw UserError(script.string() + ": plotting script not found");

  const sweep::Captured probe = sweep::run_capture({python, "-c", "import matplotlib, numpy"});
  if (!probe.status.ok())
    throw UserError(python + ": matplotlib is not available (" + last_line(probe.output) +
                    "); install python3-matplotlib (bash scripts/setup.sh --deps-only) or point "
                    "--python / UVMSIM_PYTHON at an interpreter that has it");
  const sweep::Captured r =
      sweep::run_capture({python, script.string(), input.string(), out_dir.string()});
  if (!r.status.ok())
    throw UserError(script.string() + ": " + r.status.describe() + ": " + last_line(r.output));
  return r.output;
}

}  // namespace uvmsim::cli
