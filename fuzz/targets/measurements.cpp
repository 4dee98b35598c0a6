// Measurement files (JSON Lines) and the nvprof / Nsight Systems importers. Whatever a reader or
// importer accepts must be written and read back unchanged (uvmsim calibrate import writes it).
#include <sqlite3.h>

#include <algorithm>
#include <cctype>

#include "fuzz/fuzz_target.h"
#include "fuzz/json_mutator.h"
#include "traces/measurements/importers.h"
#include "traces/measurements/measurement.h"

namespace uvmsim::fuzz {

namespace {

void round_trip(const meas::Measurement& m) {
  const auto out = scratch_file({}, "round-trip.jsonl");
  meas::write(out, m);
  const meas::Measurement back = meas::read(out);
  if (back.records.size() != m.records.size()) throw Finding("records lost writing them");
  for (std::size_t i = 0; i < m.records.size(); ++i) {
    if (meas::to_json(back.records[i]) != meas::to_json(m.records[i])) {
      throw Finding("record " + std::to_string(i) + " changed writing it: " +
                    meas::to_json(m.records[i])
                        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
}

void measurement(Input in) {
  const auto path = scratch_file(in, "input.jsonl");
  expect_clean([&] { round_trip(meas::read(path)); }, path.string());
}

void nvprof(Input in) {
  const auto path = scratch_file(in, "input.csv");
  expect_clean([&] { round_trip(meas::import_nvprof(path)); }, path.string());
}

/// The nsys target's input is an SQL script: it is run into a fresh database (the shape of an
/// `nsys export --type sqlite` file), which is then imported. Scripts only get to build tables:
/// no ATTACH / VACUUM INTO (they write other files), no PRAGMA, and a step budget against
/// runaway recursive queries.
int authorize(void*, int action, const char*, const char*, const char*, const char*) {
  switch (action) {
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_VIEW:
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_VIEW:
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_FUNCTION:
    case SQLITE_TRANSACTION:
    case SQLITE_RECURSIVE:
    case SQLITE_ALTER_TABLE:
      return SQLITE_OK;
    default:
      return SQLITE_DENY;
  }
}

bool build_database(const std::string& script, const std::filesystem::path& db_path) {
  std::string lower = script;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("vacuum") != std::string::npos || lower.find("attach") != std::string::npos) {
    return false;
  }
  std::error_code ec;
  std::filesystem::remove(db_path, ec);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return false;
  }
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
  sqlite3_set_authorizer(db, authorize, nullptr);
  int steps = 0;
  sqlite3_progress_handler(
      db, 1000, [](void* n) { return ++*static_cast<int*>(n) > 2000 ? 1 : 0; }, &steps);
  sqlite3_exec(db, script.c_str(), nullptr, nullptr, nullptr);  // a failing statement stops it
  sqlite3_close(db);
  return true;
}

void nsys(Input in) {
  const std::string script(in.begin(), in.end());
  const auto path = scratch_file({}, "input.sqlite");
  if (!build_database(script, path)) return;
  expect_clean([&] { round_trip(meas::import_nsys(path)); }, path.string());
}

}  // namespace

UVMSIM_FUZZ_TARGET("measurement", "measurement files (JSON Lines), read and written back",
                   measurement, mutate_json_lines);
UVMSIM_FUZZ_TARGET("nvprof", "the nvprof --print-gpu-trace --csv importer", nvprof, nullptr);
UVMSIM_FUZZ_TARGET("nsys", "the Nsight Systems SQLite importer (input: an SQL script)", nsys,
                   nullptr);

}  // namespace uvmsim::fuzz
