#include "sim/sweep/worker.h"

#include <fstream>
#include <ostream>
#include <sstream>

#include "core/error.h"
#include "sim/sweep/files.h"
#include "sim/sweep/results.h"

namespace uvmsim::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

int run_worker(const json& descs, const fs::path& out_dir, bool rerun, std::ostream& err) {
  if (!descs.is_array()) throw UserError("sweep worker: expected a JSON array of points");
  const ResultStore store(out_dir);
  int rc = 0;
  for (const auto& d : descs) {
    const PointSpec p = PointSpec::from_json(d, "sweep worker input");
    if (!rerun && store.load_result(p)) continue;  // finished by an earlier attempt (requeued)
    try {
      store.save_result(run_point(p));
    } catch (const std::exception& e) {
      // Bad input and internal errors alike fail this point only; the record says why.
      const std::string msg = dynamic_cast<const UserError*>(&e)
                                  ? std::string(e.what())
                                  : std::string("internal error: ") + e.what();
      err << "uvmsim sweep: point " << p.id << " (" << p.label << ") failed: " << msg << "\n";
      store.save_failure(p, msg);
      rc = 1;
    }
  }
  return rc;
}

void write_task_file(const fs::path& file,
                     const std::vector<std::vector<const PointSpec*>>& tasks) {
  std::string body, index;
  for (const auto& t : tasks) {
    index += std::to_string(body.size()) + "\n";
    json a = json::array();
    for (const PointSpec* p : t) a.push_back(p->to_json());
    body += a.dump() + "\n";
  }
  write_atomic(file, body);
  fs::path idx = file;
  idx += ".idx";
  write_atomic(idx, index);
}

json read_task(const fs::path& file, std::size_t task) {
  fs::path idx = file;
  idx += ".idx";
  std::ifstream ix(idx);
  if (!ix) throw UserError(idx.string() + ": cannot open task index");
  std::string line;
  std::size_t i = 0;
  std::uint64_t offset = 0;
  bool found = false;
  while (std::getline(ix, line)) {
    if (i++ == task) {
      if (line.empty() || line.find_first_not_of("0123456789") != std::string::npos)
        throw UserError(idx.string() + ": line " + std::to_string(i) + ": not a byte offset");
      offset = std::stoull(line);
      found = true;
      break;
    }
  }
  if (!found)
    throw UserError(idx.string() + ": task " + std::to_string(task) + " not in the task list (" +
                    std::to_string(i) + " tasks)");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file.string() + ": cannot open task file");
  in.seekg(static_cast<std::streamoff>(offset));
  if (!std::getline(in, line)) throw UserError(file.string() + ": truncated task file");
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_array())
    throw UserError(file.string() + ": task " + std::to_string(task) + ": malformed line");
  return j;
}

}  // namespace uvmsim::sweep
