#include "traces/measurements/importers.h"

#ifdef UVMSIM_HAVE_SQLITE
#include <sqlite3.h>
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include "core/error.h"

namespace uvmsim::meas {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// --------------------------------------------------------------------------------------------
// nvprof CSV

/// Splits one CSV line, honouring double quotes (kernel names contain commas).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      f.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  f.push_back(cur);
  return f;
}

double time_unit_ns(const std::string& u, const std::string& where, const std::string& column) {
  if (u == "s") return 1e9;
  if (u == "ms") return 1e6;
  if (u == "us") return 1e3;
  if (u == "ns") return 1;
  throw UserError(where, column, "unknown time unit '" + u + "'");
}

double size_unit_bytes(const std::string& u) {
  // nvprof prints binary sizes (a 4 KiB page is "4.000000KB").
  if (u == "B" || u.empty()) return 1;
  if (u == "KB") return 1024;
  if (u == "MB") return 1024.0 * 1024;
  if (u == "GB") return 1024.0 * 1024 * 1024;
  return -1;
}

double parse_number(const std::string& s, const std::string& where, const std::string& column) {
  if (s.empty()) return 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
    throw UserError(where, column, "expected a non-negative number, got '" + s + "'");
  return v;
}

std::uint64_t parse_address(const std::string& s, const std::string& where) {
  if (s.empty()) return 0;
  try {
    std::size_t pos = 0;
    const std::uint64_t v = std::stoull(s, &pos, 0);
    if (pos == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw UserError(where, "Virtual Address", "expected an address, got '" + s + "'");
}

}  // namespace

Measurement import_nvprof(const std::filesystem::path& path) {
  Measurement m;
  m.path = path.string();
  m.label = path.stem().string();
  m.header.source = "nvprof";
  std::ifstream in(path);
  if (!in) throw UserError(m.path + ": cannot open");
  std::string line;
  std::vector<std::string> cols;
  std::map<std::string, std::size_t> idx;
  std::vector<std::string> units;
  std::uint64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.rfind("==", 0) == 0) {
      // "==1234== Profiling application: ./app" — the command line.
      const auto p = line.find("Profiling application: ");
      if (p != std::string::npos) m.header.app = line.substr(p + 23);
      continue;
    }
    if (line.empty() || line == "\r") continue;
    auto f = csv_fields(line);
    const std::string where = m.path + ": line " + std::to_string(lineno);
    if (cols.empty()) {
      if (f.empty() || f[0] != "Start") continue;  // preamble before the CSV header
      cols = f;
      for (std::size_t i = 0; i < cols.size(); ++i) idx[cols[i]] = i;
      for (const char* need : {"Start", "Duration", "Name"})
        if (!idx.count(need))
          throw UserError(where, need, "column missing from the nvprof --print-gpu-trace header");
      continue;
    }
    if (units.empty()) {
      // The row after the header gives every column's unit ("s", "us", "KB", ...).
      units = f;
      units.resize(cols.size());
      continue;
    }
    f.resize(cols.size());
    auto col = [&](const char* name) -> const std::string& {
      static const std::string empty;
      const auto it = idx.find(name);
      return it == idx.end() ? empty : f[it->second];
    };
    auto unit = [&](const char* name) -> std::string {
      const auto it = idx.find(name);
      return it == idx.end() ? std::string() : units[it->second];
    };
    Record r;
    const double t_scale = time_unit_ns(unit("Start"), where, "Start");
    const double d_scale = time_unit_ns(unit("Duration"), where, "Duration");
    r.start = static_cast<std::uint64_t>(
        std::llround(parse_number(col("Start"), where, "Start") * t_scale));
    r.end = r.start + static_cast<std::uint64_t>(
                          std::llround(parse_number(col("Duration"), where, "Duration") * d_scale));
    const std::string name = col("Name");
    const std::string lname = lower(name);
    const std::string dev = col("Device");
    if (!dev.empty() && m.header.gpu.empty()) {
      m.header.gpu = dev;
      const auto p = dev.rfind(" (");
      if (p != std::string::npos) m.header.gpu = dev.substr(0, p);
    }
    auto bytes = [&]() {
      const double s = size_unit_bytes(unit("Size"));
      if (s < 0) throw UserError(where, "Size", "unknown size unit '" + unit("Size") + "'");
      return static_cast<std::uint64_t>(std::llround(parse_number(col("Size"), where, "Size") * s));
    };
    auto um_value = [&]() {
      const double v = parse_number(col("Unified Memory"), where, "Unified Memory");
      return static_cast<std::uint64_t>(std::llround(v));
    };
    if (lname.find("[unified memory") == 0) {
      r.address = parse_address(col("Virtual Address"), where);
      if (lname.find("memcpy htod") != std::string::npos ||
          lname.find("memcpy dtoh") != std::string::npos ||
          lname.find("memcpy dtod") != std::string::npos) {
        r.type = RecordType::Transfer;
        r.dir = lname.find("htod") != std::string::npos   ? Direction::HtoD
                : lname.find("dtoh") != std::string::npos ? Direction::DtoH
                                                          : Direction::DtoD;
        r.bytes = bytes();
        r.cause = Cause::Unknown;  // nvprof's GPU trace does not print the migration cause
        r.src = r.dir == Direction::HtoD ? kCpuDevice : 0;
        r.dst = r.dir == Direction::DtoH ? kCpuDevice : 0;
      } else if (lname.find("gpu page fault") != std::string::npos) {
        r.type = RecordType::GpuFault;
        r.count = std::max<std::uint64_t>(1, um_value());
        r.access = "unknown";
      } else if (lname.find("cpu page fault") != std::string::npos) {
        r.type = RecordType::CpuFault;
        r.count = std::max<std::uint64_t>(1, um_value());
        r.end = r.start;
      } else if (lname.find("thrash") != std::string::npos) {
        r.type = RecordType::Thrashing;
        r.bytes = um_value();
        r.end = r.start;
      } else if (lname.find("throttl") != std::string::npos) {
        r.type = RecordType::Throttling;
      } else if (lname.find("remote map") != std::string::npos) {
        r.type = RecordType::RemoteMap;
        r.bytes = um_value();
        r.end = r.start;
      } else {
        continue;  // a UM row kind this importer does not know: skip, never guess
      }
    } else if (lname.find("[cuda memcpy") == 0) {
      r.type = RecordType::Memcpy;
      r.dir = lname.find("htod") != std::string::npos   ? Direction::HtoD
              : lname.find("dtoh") != std::string::npos ? Direction::DtoH
              : lname.find("dtod") != std::string::npos ? Direction::DtoD
                                                        : Direction::Unknown;
      r.bytes = bytes();
      if (!col("SrcMemType").empty())
        r.kind = lower(col("SrcMemType")) + "->" + lower(col("DstMemType"));
      r.stream = static_cast<std::uint32_t>(parse_number(col("Stream"), where, "Stream"));
    } else if (!col("Grid X").empty()) {
      r.type = RecordType::Kernel;
      r.name = name;
      auto dim = [&](const char* c) {
        const double v = parse_number(col(c), where, c);
        if (v < 1 || v > 4294967295.0) throw UserError(where, c, "must be a positive integer");
        return static_cast<std::uint32_t>(v);
      };
      r.grid = {dim("Grid X"), dim("Grid Y"), dim("Grid Z")};
      r.block = {dim("Block X"), dim("Block Y"), dim("Block Z")};
      r.regs = static_cast<std::uint32_t>(
          parse_number(col("Registers Per Thread"), where, "Registers Per Thread"));
      double smem = 0;
      for (const char* c : {"Static SMem", "Dynamic SMem"}) {
        const double s = size_unit_bytes(unit(c));
        smem += parse_number(col(c), where, c) * (s < 0 ? 1 : s);
      }
      r.smem = static_cast<std::uint32_t>(smem);
      r.stream = static_cast<std::uint32_t>(parse_number(col("Stream"), where, "Stream"));
    } else {
      continue;  // memset and other rows
    }
    m.records.push_back(r);
  }
  if (cols.empty())
    throw UserError(m.path + ": not an nvprof --print-gpu-trace --csv file (no \"Start\" header)");
  m.summary.records = m.records.size();
  return m;
}

// --------------------------------------------------------------------------------------------
// Nsight Systems SQLite export

#ifndef UVMSIM_HAVE_SQLITE

Measurement import_nsys(const std::filesystem::path& path) {
  throw UserError(
      path.string() +
      ": Nsight Systems exports need SQLite, which this build of uvmsim was built "
      "without: install libsqlite3-dev (bash scripts/setup.sh --deps-only) and rebuild");
}

#else

namespace {

struct Db {
  sqlite3* db = nullptr;
  std::string path;
  explicit Db(const std::string& p) : path(p) {
    if (sqlite3_open_v2(p.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      const std::string msg = db ? sqlite3_errmsg(db) : "cannot open";
      sqlite3_close(db);
      throw UserError(p + ": sqlite: " + msg);
    }
  }
  ~Db() { sqlite3_close(db); }
  bool has_table(const std::string& t) {
    bool found = false;
    query("SELECT name FROM sqlite_master WHERE type='table' AND name='" + t + "'",
          [&](sqlite3_stmt*) { found = true; });
    return found;
  }
  template <typename F>
  void query(const std::string& sql, F&& row) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      throw UserError(path + ": sqlite: " + sqlite3_errmsg(db) + " in: " + sql);
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> guard(st, sqlite3_finalize);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) row(st);
    if (rc != SQLITE_DONE) throw UserError(path + ": sqlite: " + sqlite3_errmsg(db));
  }
};

/// Column lookup by name over a SELECT * row (nsys schemas grow columns between versions).
struct Row {
  sqlite3_stmt* st;
  std::map<std::string, int> cols;
  std::optional<std::int64_t> i64(const std::string& name) const {
    const auto it = cols.find(name);
    if (it == cols.end() || sqlite3_column_type(st, it->second) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(st, it->second);
  }
  std::uint64_t u64(const std::string& name, std::uint64_t dflt = 0) const {
    const auto v = i64(name);
    return v ? static_cast<std::uint64_t>(*v) : dflt;
  }
};

template <typename F>
void each_row(Db& db, const std::string& table, F&& f) {
  std::map<std::string, int> cols;
  db.query("SELECT * FROM " + table, [&](sqlite3_stmt* st) {
    if (cols.empty())
      for (int i = 0; i < sqlite3_column_count(st); ++i) cols[sqlite3_column_name(st, i)] = i;
    f(Row{st, cols});
  });
}

Cause cause_from(std::int64_t v) {
  return v >= 0 && v <= 5 ? static_cast<Cause>(v) : Cause::Unknown;
}

const char* access_from(std::int64_t v) {
  static const char* names[] = {"unknown", "read", "write", "atomic", "prefetch"};
  return v >= 0 && v <= 4 ? names[v] : "unknown";
}

}  // namespace

Measurement import_nsys(const std::filesystem::path& path) {
  Measurement m;
  m.path = path.string();
  m.label = path.stem().string();
  m.header.source = "nsys";
  if (!std::filesystem::exists(path)) throw UserError(m.path + ": cannot open");
  Db db(m.path);
  const bool gpu_faults = db.has_table("CUDA_UM_GPU_PAGE_FAULT_EVENTS");
  const bool memcpy = db.has_table("CUPTI_ACTIVITY_KIND_MEMCPY");
  if (!gpu_faults && !memcpy && !db.has_table("CUPTI_ACTIVITY_KIND_KERNEL"))
    throw UserError(m.path +
                    ": no CUDA tables (was the report collected with --trace=cuda and "
                    "--cuda-um-gpu-page-faults=true, and exported with nsys export "
                    "--type sqlite?)");
  std::map<std::int64_t, std::string> strings;
  if (db.has_table("StringIds"))
    db.query("SELECT id, value FROM StringIds", [&](sqlite3_stmt* st) {
      const auto* t = sqlite3_column_text(st, 1);
      strings[sqlite3_column_int64(st, 0)] = t ? reinterpret_cast<const char*>(t) : "";
    });
  if (db.has_table("TARGET_INFO_GPU")) {
    each_row(db, "TARGET_INFO_GPU", [&](const Row& r) {
      const auto it = r.cols.find("name");
      if (it != r.cols.end() && m.header.gpu.empty()) {
        const auto* t = sqlite3_column_text(r.st, it->second);
        if (t) m.header.gpu = reinterpret_cast<const char*>(t);
      }
      if (auto v = r.i64("smCount")) m.header.device["sms"] = *v;
    });
  }
  // Copy-kind labels come from the export's own enum table when present; 11/12/13 are the
  // unified-memory HtoD/DtoH/DtoD kinds, 1/2/8 explicit HtoD/DtoH/DtoD.
  std::map<std::int64_t, std::string> copy_labels;
  if (db.has_table("ENUM_CUDA_MEMCPY_OPER"))
    each_row(db, "ENUM_CUDA_MEMCPY_OPER", [&](const Row& r) {
      const auto it = r.cols.find("label");
      const auto id = r.i64("id");
      if (it != r.cols.end() && id) {
        const auto* t = sqlite3_column_text(r.st, it->second);
        copy_labels[*id] = t ? lower(reinterpret_cast<const char*>(t)) : "";
      }
    });
  if (gpu_faults) {
    each_row(db, "CUDA_UM_GPU_PAGE_FAULT_EVENTS", [&](const Row& row) {
      Record r;
      r.type = RecordType::GpuFault;
      r.start = row.u64("start");
      r.end = std::max(r.start, row.u64("end", r.start));
      r.address = row.u64("address");
      r.count = std::max<std::uint64_t>(1, row.u64("numberOfPageFaults", 1));
      r.access = access_from(row.i64("faultAccessType").value_or(0));
      m.records.push_back(r);
    });
  }
  if (db.has_table("CUDA_UM_CPU_PAGE_FAULT_EVENTS")) {
    each_row(db, "CUDA_UM_CPU_PAGE_FAULT_EVENTS", [&](const Row& row) {
      Record r;
      r.type = RecordType::CpuFault;
      r.start = r.end = row.u64("start");
      r.address = row.u64("address");
      r.pc = row.u64("originalFaultPc", row.u64("pc"));
      m.records.push_back(r);
    });
  }
  if (memcpy) {
    each_row(db, "CUPTI_ACTIVITY_KIND_MEMCPY", [&](const Row& row) {
      Record r;
      const std::int64_t kind = row.i64("copyKind").value_or(0);
      std::string label = copy_labels.count(kind) ? copy_labels[kind] : "";
      bool unified = kind >= 11 && kind <= 13;
      if (!label.empty()) unified = label.find("unified") != std::string::npos;
      Direction dir = Direction::Unknown;
      if (!label.empty()) {
        if (label.find("host-to-device") != std::string::npos ||
            label.find("htod") != std::string::npos)
          dir = Direction::HtoD;
        else if (label.find("device-to-host") != std::string::npos ||
                 label.find("dtoh") != std::string::npos)
          dir = Direction::DtoH;
        else if (label.find("device-to-device") != std::string::npos ||
                 label.find("dtod") != std::string::npos)
          dir = Direction::DtoD;
      } else {
        dir = (kind == 1 || kind == 11)   ? Direction::HtoD
              : (kind == 2 || kind == 12) ? Direction::DtoH
              : (kind == 8 || kind == 13) ? Direction::DtoD
                                          : Direction::Unknown;
      }
      r.type = unified ? RecordType::Transfer : RecordType::Memcpy;
      r.dir = dir;
      r.start = row.u64("start");
      r.end = std::max(r.start, row.u64("end", r.start));
      r.bytes = row.u64("bytes");
      r.stream = static_cast<std::uint32_t>(row.u64("streamId"));
      r.device = row.i64("deviceId").value_or(0);
      if (unified) {
        r.cause = cause_from(row.i64("migrationCause").value_or(0));
        r.address = row.u64("virtualAddress");
        r.src = dir == Direction::HtoD ? kCpuDevice : r.device;
        r.dst = dir == Direction::DtoH ? kCpuDevice : r.device;
      }
      m.records.push_back(r);
    });
  }
  if (db.has_table("CUPTI_ACTIVITY_KIND_KERNEL")) {
    each_row(db, "CUPTI_ACTIVITY_KIND_KERNEL", [&](const Row& row) {
      Record r;
      r.type = RecordType::Kernel;
      r.start = row.u64("start");
      r.end = std::max(r.start, row.u64("end", r.start));
      for (const char* c : {"demangledName", "shortName", "mangledName"}) {
        const auto id = row.i64(c);
        if (id && strings.count(*id)) {
          r.name = strings[*id];
          break;
        }
      }
      if (r.name.empty()) r.name = "kernel";
      auto d = [&](const char* c) {
        return static_cast<std::uint32_t>(
            std::clamp<std::int64_t>(row.i64(c).value_or(1), 1, 4294967295LL));
      };
      r.grid = {d("gridX"), d("gridY"), d("gridZ")};
      r.block = {d("blockX"), d("blockY"), d("blockZ")};
      r.regs = static_cast<std::uint32_t>(row.u64("registersPerThread"));
      r.smem = static_cast<std::uint32_t>(row.u64("staticSharedMemory") +
                                          row.u64("dynamicSharedMemory"));
      r.stream = static_cast<std::uint32_t>(row.u64("streamId"));
      r.correlation = static_cast<std::uint32_t>(row.u64("correlationId"));
      r.device = row.i64("deviceId").value_or(0);
      m.records.push_back(r);
    });
  }
  std::stable_sort(m.records.begin(), m.records.end(),
                   [](const Record& a, const Record& b) { return a.start < b.start; });
  m.summary.records = m.records.size();
  return m;
}

#endif  // UVMSIM_HAVE_SQLITE

InputFormat detect_format(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path.string() + ": cannot open");
  char magic[16] = {};
  in.read(magic, sizeof magic);
  if (in.gcount() == 16 && std::memcmp(magic, "SQLite format 3", 16) == 0) return InputFormat::Nsys;
  in.clear();
  in.seekg(0);
  std::string line;
  for (int i = 0; i < 200 && std::getline(in, line); ++i) {
    if (line.find("\"format\"") != std::string::npos && line.find(kFormatName) != std::string::npos)
      return InputFormat::Measurement;
    if (line.rfind("\"Start\",", 0) == 0 || line.rfind("Start,", 0) == 0)
      return InputFormat::Nvprof;
    if (!line.empty() && line.rfind("==", 0) != 0) break;
  }
  throw UserError(path.string() +
                  ": not a measurement file, nvprof --csv GPU trace or nsys SQLite export");
}

Measurement load_any(const std::filesystem::path& path) {
  switch (detect_format(path)) {
    case InputFormat::Nvprof:
      return import_nvprof(path);
    case InputFormat::Nsys:
      return import_nsys(path);
    case InputFormat::Measurement:
      break;
  }
  return read(path);
}

}  // namespace uvmsim::meas
