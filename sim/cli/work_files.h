// Inputs and scratch space shared by the commands that run a suite of JSON files through the
// sweep runner (`uvmsim check`, `uvmsim validate`).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace uvmsim::cli {

/// The JSON files named on the command line: files as given, directories expanded to their
/// *.json files in name order. A missing path or an empty directory is a UsageError naming it;
/// `kind` names the files in the message ("expectation", "validation").
std::vector<std::filesystem::path> json_files(const std::vector<std::string>& args,
                                              const std::string& kind);

/// A temporary work directory (traces, results) removed at scope exit, or the directory `keep`
/// names (created by the runner, kept).
class WorkDir {
 public:
  /// `prefix` names the temporary directory ("uvmsim-check" → /tmp/uvmsim-check-XXXXXX).
  WorkDir(const std::string& keep, const std::string& prefix);
  ~WorkDir();
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  bool owned_ = false;
};

}  // namespace uvmsim::cli
