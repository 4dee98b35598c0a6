// The plotting script the figures come from (scripts/uvmsim_report.py, Debian's matplotlib):
// found, checked and run the same way for `uvmsim report` and `uvmsim analyze --mrc --figure`.
#pragma once

#include <filesystem>
#include <string>

namespace uvmsim::cli {

/// Runs the report script on `input` (a sweep directory or a results file) writing into
/// `out_dir`; returns what it printed. `python` / `script` are the user's choices or empty
/// (then $UVMSIM_PYTHON or /usr/bin/python3, and $UVMSIM_REPORT_SCRIPT or the source tree's or
/// installed copy). A missing interpreter, matplotlib or script, or a failed run, is a
/// UserError.
std::string run_report_script(const std::filesystem::path& input,
                              const std::filesystem::path& out_dir, const std::string& python,
                              const std::string& script);

}  // namespace uvmsim::cli
