// The include graph runs one way: the application (sim/) uses the models, the models use the
// policies, the policies the simulated state's nouns, those the traces, and everything the core.
// This test reads every source file's project includes and fails on an upward one, so the
// layering in the README's "Architecture" section cannot silently erode. It also keeps the GPU
// model independent of the driver (the hardware boundary is one-way).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// Rank of a top-level folder: a file may include only its own folder or lower-ranked ones.
const std::map<std::string, int> kRank = {{"core", 0},     {"traces", 1}, {"state", 2},
                                          {"policies", 3}, {"models", 4}, {"sim", 5}};

struct Include {
  std::string file, target;
};

std::vector<Include> project_includes() {
  std::vector<Include> out;
  const std::regex inc(R"re(^\s*#\s*include\s*"([^"]+)")re");
  const fs::path root(UVMSIM_SOURCE_DIR);
  for (const auto& [dir, rank] : kRank) {
    (void)rank;
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
      std::ifstream in(e.path());
      std::string line;
      std::smatch m;
      while (std::getline(in, line))
        if (std::regex_search(line, m, inc))
          out.push_back({fs::relative(e.path(), root).generic_string(), m[1]});
    }
  }
  return out;
}

std::string top(const std::string& path) { return path.substr(0, path.find('/')); }

TEST(Layers, NoIncludeRunsUpward) {
  const auto incs = project_includes();
  ASSERT_GT(incs.size(), 100u);  // the scan found the sources
  for (const auto& i : incs) {
    const auto from = kRank.find(top(i.file));
    const auto to = kRank.find(top(i.target));
    if (to == kRank.end()) continue;  // a sibling header in the same folder ("x.h") or a system one
    EXPECT_LE(to->second, from->second) << i.file << " includes " << i.target;
  }
}

TEST(Layers, GpuModelIncludesNoDriverHeader) {
  for (const auto& i : project_includes()) {
    if (top(i.file) != "models" || i.file.rfind("models/driver/", 0) == 0) continue;
    EXPECT_NE(i.target.rfind("models/driver/", 0), 0u) << i.file << " includes " << i.target;
  }
}

}  // namespace
