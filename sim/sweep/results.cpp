#include "sim/sweep/results.h"

#include <unistd.h>

#include <ctime>
#include <deque>
#include <fstream>

#include "core/error.h"
#include "sim/sweep/files.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

ResultStore::ResultStore(fs::path dir) : dir_(fs::absolute(std::move(dir)).lexically_normal()) {
  std::error_code ec;
  for (const char* sub : {"points", "failed", "logs", "traces"}) {
    fs::create_directories(dir_ / sub, ec);
    if (ec)
      throw UserError((dir_ / sub).string() + ": cannot create directory (" + ec.message() + ")");
  }
}

fs::path ResultStore::result_path(const std::string& id) const {
  return dir_ / "points" / (id + ".json");
}
fs::path ResultStore::failure_path(const std::string& id) const {
  return dir_ / "failed" / (id + ".json");
}
fs::path ResultStore::log_path(const std::string& id) const {
  return dir_ / "logs" / (id + ".log");
}

static std::optional<json> parse_file(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

std::optional<json> ResultStore::load_result(const PointSpec& p) const {
  auto r = parse_file(result_path(p.id));
  if (!r) return std::nullopt;
  if (r->value("format", "") != kResultFormat || r->value("id", "") != p.id ||
      r->value("input_hash", "") != p.input_hash() || !r->contains("stats"))
    return std::nullopt;
  return r;
}

std::optional<json> ResultStore::load_failure(const std::string& id) const {
  return parse_file(failure_path(id));
}

void ResultStore::save_result(const json& result) const {
  const std::string id = result.at("id").get<std::string>();
  write_atomic(result_path(id), result.dump(1) + "\n");
  std::error_code ec;
  fs::remove(failure_path(id), ec);
}

void ResultStore::save_failure(const PointSpec& p, const std::string& error,
                               const fs::path& log) const {
  json f = {{"format", kFailureFormat},
            {"id", p.id},
            {"label", p.label},
            {"axes", json(p.axes)},
            {"error", error},
            {"host", host_name()},
            {"time", static_cast<long long>(std::time(nullptr))}};
  if (!log.empty()) {
    f["log"] = log.string();
    f["log_tail"] = tail_of_file(log);
  }
  if (const char* j = std::getenv("SLURM_JOB_ID")) f["slurm_job_id"] = j;
  if (const char* t = std::getenv("SLURM_ARRAY_TASK_ID")) f["slurm_array_task_id"] = t;
  write_atomic(failure_path(p.id), f.dump(1) + "\n");
}

std::size_t ResultStore::remove_stale_temp_files() const {
  std::size_t n = 0;
  for (const char* sub : {"points", "failed", ""}) n += sweep::remove_stale_temp_files(dir_ / sub);
  return n;
}

std::string tail_of_file(const fs::path& p, std::size_t max_lines) {
  std::ifstream in(p);
  if (!in) return "";
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(std::move(line));
    if (lines.size() > max_lines) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace uvmsim::sweep
