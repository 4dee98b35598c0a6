#include "sim/sweep/results.h"

#include <unistd.h>

#include <ctime>
#include <deque>
#include <fstream>

#include "core/error.h"
#include "sim/sweep/files.h"
#include "sim/sweep/identity.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The dump of a record for a file: strings taken from outside (a log's tail, an error quoting a
// file name) may hold bytes that are not UTF-8, which are written as U+FFFD rather than failing
// the write.
std::string record_text(const json& j) {
  return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::optional<json> parse_file(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

// The string member `key` of `j`, or "" if it is missing or not a string.
std::string string_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

ResultStore::ResultStore(fs::path dir) : dir_(fs::absolute(std::move(dir)).lexically_normal()) {
  std::error_code ec;
  for (const char* sub : {"points", "failed", "logs", "traces"}) {
    fs::create_directories(dir_ / sub, ec);
    if (ec)
      throw OutputError((dir_ / sub).string() + ": cannot create directory (" + ec.message() + ")");
  }
  const fs::path record = dir_ / "build.json";
  if (!fs::exists(record, ec)) return;
  // Written atomically by pin(); anything else in it is damage, which must not be guessed past:
  // it decides which results count.
  const auto j = parse_file(record);
  auto bad = [&](const std::string& field, const std::string& what) {
    throw UserError(record.string(), field,
                    what +
                        " (the record of the binary this directory's results were made with; "
                        "remove it to pin the next run's binary, whose results alone will "
                        "then count)");
  };
  if (!j) bad("(file)", "not a JSON object");
  if (string_of(*j, "format") != kPinFormat)
    bad("format", std::string("expected \"") + kPinFormat + "\"");
  PinnedBinary p;
  p.build_id = string_of(*j, "build_id");
  if (p.build_id.empty()) bad("build_id", "expected a non-empty string");
  const std::string bin = string_of(*j, "binary");
  if (bin.empty() || fs::path(bin).is_absolute() || bin.find("..") != std::string::npos)
    bad("binary", "expected a path inside the directory");
  p.binary = dir_ / bin;
  p.identity = j->value("identity", json());
  pinned_ = std::move(p);
}

const PinnedBinary& ResultStore::pin(const fs::path& binary, const json& identity) {
  const std::string id = build_id_of(binary);
  const std::string name = "uvmsim-" + short_build_id(id);
  const fs::path bin_dir = dir_ / "bin", copy = bin_dir / name;
  std::error_code ec;
  fs::create_directories(bin_dir, ec);
  if (ec) throw OutputError(bin_dir.string() + ": cannot create directory (" + ec.message() + ")");
  if (!fs::exists(copy, ec) || build_id_of(copy) != id) {
    // Copied under a temporary name and renamed: a killed or failed copy is never run.
    const fs::path tmp =
        bin_dir / ("." + name + "." + host_name() + "." + std::to_string(::getpid()) + ".tmp");
    fs::remove(tmp, ec);
    fs::copy_file(binary, tmp, ec);
    if (!ec)
      fs::permissions(tmp,
                      fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec,
                      fs::perm_options::replace, ec);
    if (!ec) fs::rename(tmp, copy, ec);
    if (ec) {
      std::error_code ignore;
      fs::remove(tmp, ignore);
      throw OutputError(copy.string() + ": cannot copy the worker binary " + binary.string() +
                        " here (" + ec.message() + ")");
    }
  }
  json rec = {{"format", kPinFormat},
              {"build_id", id},
              {"binary", (fs::path("bin") / name).string()},
              {"identity", identity},
              {"source", binary.string()},
              {"pinned_at", time_now("%Y-%m-%dT%H:%M:%SZ", /*utc=*/true)}};
  write_atomic(dir_ / "build.json", record_text(rec));
  pinned_ = PinnedBinary{id, copy, identity};
  return *pinned_;
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

std::optional<json> ResultStore::load_result(const PointSpec& p) const {
  auto r = parse_file(result_path(p.id));
  if (!r) return std::nullopt;
  if (string_of(*r, "format") != kResultFormat || string_of(*r, "id") != p.id ||
      string_of(*r, "input_hash") != p.input_hash())
    return std::nullopt;
  const auto stats = r->find("stats");
  if (stats == r->end() || !stats->is_object()) return std::nullopt;
  const auto build = BuildIdentity::from_json(r->value("build", json()));
  if (!build || (pinned_ && build->build_id != pinned_->build_id)) return std::nullopt;
  return r;
}

std::optional<json> ResultStore::load_failure(const std::string& id) const {
  auto f = parse_file(failure_path(id));
  if (!f) return std::nullopt;
  const auto error = f->find("error");
  if (error == f->end() || !error->is_string()) return std::nullopt;
  for (const char* k : {"log", "log_tail"}) {
    const auto it = f->find(k);
    if (it != f->end() && !it->is_string()) return std::nullopt;
  }
  return f;
}

void ResultStore::save_result(const json& result) const {
  const std::string id = result.at("id").get<std::string>();
  write_atomic(result_path(id), record_text(result));
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
            {"time", static_cast<long long>(std::time(nullptr))},
            {"build", this_build().to_json()}};
  if (!log.empty()) {
    f["log"] = log.string();
    f["log_tail"] = tail_of_file(log);
  }
  if (const char* j = std::getenv("SLURM_JOB_ID")) f["slurm_job_id"] = j;
  if (const char* t = std::getenv("SLURM_ARRAY_TASK_ID")) f["slurm_array_task_id"] = t;
  write_atomic(failure_path(p.id), record_text(f));
}

std::size_t ResultStore::remove_stale_temp_files() const {
  std::size_t n = 0;
  for (const char* sub : {"points", "failed", "bin", ""})
    n += sweep::remove_stale_temp_files(dir_ / sub);
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

std::string last_line_of_file(const fs::path& p) {
  std::string tail = tail_of_file(p, 50);
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  const auto nl = tail.rfind('\n');
  return nl == std::string::npos ? tail : tail.substr(nl + 1);
}

}  // namespace uvmsim::sweep
