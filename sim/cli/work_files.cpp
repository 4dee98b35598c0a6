#include "sim/cli/work_files.h"

#include <stdlib.h>

#include <algorithm>

#include "core/error.h"

namespace uvmsim::cli {

namespace fs = std::filesystem;

std::vector<fs::path> json_files(const std::vector<std::string>& args, const std::string& kind) {
  std::vector<fs::path> files;
  for (const auto& a : args) {
    std::error_code ec;
    if (fs::is_directory(a, ec)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(a, ec))
        if (e.is_regular_file() && e.path().extension() == ".json") in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      if (in_dir.empty()) throw UsageError(a + ": no *.json " + kind + " files in this directory");
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::exists(a, ec)) {
      files.emplace_back(a);
    } else {
      throw UsageError(a + ": no such file or directory");
    }
  }
  return files;
}

WorkDir::WorkDir(const std::string& keep, const std::string& prefix) {
  if (!keep.empty()) {
    path_ = keep;
    return;
  }
  std::string tmpl = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw UserError(tmpl + ": cannot create a work directory");
  path_ = tmpl;
  owned_ = true;
}

WorkDir::~WorkDir() {
  std::error_code ec;
  if (owned_) fs::remove_all(path_, ec);
}

}  // namespace uvmsim::cli
