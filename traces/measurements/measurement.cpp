#include "traces/measurements/measurement.h"

#include <array>
#include <cctype>
#include <cstdint>
#include <limits>

#include "core/error.h"
#include "core/json_input.h"

namespace uvmsim::meas {

using nlohmann::json;

namespace {

constexpr std::array<const char*, static_cast<std::size_t>(RecordType::kCount)> kTypeNames = {
    "transfer", "gpu_fault", "cpu_fault", "thrashing", "throttling", "remote_map", "kernel",
    "memcpy",   "alloc",     "free",      "prefetch",  "advise",     "sync"};
constexpr std::array<const char*, 4> kDirNames = {"htod", "dtoh", "dtod", "unknown"};
constexpr std::array<const char*, 6> kCauseNames = {"unknown",  "user",     "coherence",
                                                    "prefetch", "eviction", "access_counters"};

template <typename E, std::size_t N>
E parse_enum(const json& v, const std::array<const char*, N>& names, const std::string& where,
             const std::string& field) {
  if (!v.is_string()) throw UserError(where, field, "expected a string, got " + v.dump());
  for (std::size_t i = 0; i < N; ++i)
    if (v == names[i]) return static_cast<E>(i);
  std::string known;
  for (const char* n : names) {
    if (!known.empty()) known += '|';
    known += n;
  }
  throw UserError(where, field, "unknown value " + v.dump() + " (expected " + known + ")");
}

std::uint64_t get_u64(const json& j, const char* key, const std::string& where, bool required,
                      std::uint64_t dflt = 0) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw UserError(where, key, "missing required field");
    return dflt;
  }
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0) return it->get<std::uint64_t>();
  if (it->is_string()) {  // addresses may be written as "0x..." strings
    const auto s = it->get<std::string>();
    std::size_t pos = 0;
    // stoull also takes a sign and leading blanks ("-1" would be 2^64 - 1): digits only.
    if (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
      try {
        const std::uint64_t v = std::stoull(s, &pos, 0);
        if (pos == s.size()) return v;
      } catch (const std::exception&) {
      }
    }
  }
  throw UserError(where, key, "expected a non-negative integer, got " + it->dump());
}

std::int64_t get_i64(const json& j, const char* key, const std::string& where, std::int64_t dflt) {
  const auto it = j.find(key);
  if (it == j.end()) return dflt;
  if (!it->is_number_integer() ||
      (it->is_number_unsigned() &&
       it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
    throw UserError(where, key, "expected a 64-bit signed integer, got " + it->dump());
  return it->get<std::int64_t>();
}

std::uint32_t get_u32(const json& j, const char* key, const std::string& where) {
  const std::uint64_t v = get_u64(j, key, where, false);
  if (v > std::numeric_limits<std::uint32_t>::max())
    throw UserError(where, key, "value " + std::to_string(v) + " does not fit in 32 bits");
  return static_cast<std::uint32_t>(v);
}

std::string get_str(const json& j, const char* key, const std::string& where,
                    bool required = false) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw UserError(where, key, "missing required field");
    return {};
  }
  if (!it->is_string()) throw UserError(where, key, "expected a string, got " + it->dump());
  return it->get<std::string>();
}

bool get_bool(const json& j, const char* key, const std::string& where, bool dflt) {
  const auto it = j.find(key);
  if (it == j.end()) return dflt;
  if (!it->is_boolean()) throw UserError(where, key, "expected true or false, got " + it->dump());
  return it->get<bool>();
}

trace::Dim3 get_dim(const json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end()) throw UserError(where, key, "missing required field");
  if (!it->is_array() || it->empty() || it->size() > 3)
    throw UserError(where, key, "expected [x, y, z]");
  std::uint32_t v[3] = {1, 1, 1};
  for (std::size_t i = 0; i < it->size(); ++i) {
    const auto& e = (*it)[i];
    if (!e.is_number_integer() || e.get<std::int64_t>() < 1 ||
        e.get<std::int64_t>() > std::numeric_limits<std::uint32_t>::max())
      throw UserError(where, key, "entries must be positive 32-bit integers");
    v[i] = e.get<std::uint32_t>();
  }
  return {v[0], v[1], v[2]};
}

/// True if `j` is an object whose `key` is the string `text` (a value of another type is not).
bool field_is(const json& j, const char* key, const char* text) {
  if (!j.is_object()) return false;
  const auto it = j.find(key);
  return it != j.end() && it->is_string() && it->get<std::string>() == text;
}

bool uses_address(RecordType t) {
  return t != RecordType::Kernel && t != RecordType::Memcpy && t != RecordType::Sync;
}
bool uses_bytes(RecordType t) {
  switch (t) {
    case RecordType::Transfer:
    case RecordType::Thrashing:
    case RecordType::RemoteMap:
    case RecordType::Memcpy:
    case RecordType::Alloc:
    case RecordType::Prefetch:
    case RecordType::Advise:
      return true;
    default:
      return false;
  }
}

}  // namespace

const char* to_string(RecordType t) {
  const auto i = static_cast<std::size_t>(t);
  return i < kTypeNames.size() ? kTypeNames[i] : "?";
}
const char* to_string(Direction d) { return kDirNames[static_cast<std::size_t>(d)]; }
const char* to_string(Cause c) { return kCauseNames[static_cast<std::size_t>(c)]; }

json to_json(const Record& r) {
  json j;
  j["type"] = to_string(r.type);
  j["start"] = r.start;
  if (r.end != r.start) j["end"] = r.end;
  if (uses_address(r.type)) j["address"] = r.address;
  if (uses_bytes(r.type)) j["bytes"] = r.bytes;
  switch (r.type) {
    case RecordType::Transfer:
      j["dir"] = to_string(r.dir);
      j["cause"] = to_string(r.cause);
      j["src"] = r.src;
      j["dst"] = r.dst;
      break;
    case RecordType::GpuFault:
      j["count"] = r.count;
      j["access"] = r.access.empty() ? "unknown" : r.access;
      break;
    case RecordType::CpuFault:
      j["pc"] = r.pc;
      if (r.count != 1) j["count"] = r.count;
      break;
    case RecordType::Thrashing:
      j["processors"] = r.processors;
      j["in_cpu"] = r.in_cpu;
      break;
    case RecordType::Throttling:
      j["in_cpu"] = r.in_cpu;
      break;
    case RecordType::RemoteMap:
      j["cause"] = r.name;
      j["src"] = r.src;
      j["dst"] = r.dst;
      break;
    case RecordType::Kernel:
      j["name"] = r.name;
      j["grid"] = {r.grid.x, r.grid.y, r.grid.z};
      j["block"] = {r.block.x, r.block.y, r.block.z};
      j["regs"] = r.regs;
      j["smem"] = r.smem;
      j["stream"] = r.stream;
      j["correlation"] = r.correlation;
      j["device"] = r.device;
      break;
    case RecordType::Memcpy:
      j["dir"] = to_string(r.dir);
      if (!r.kind.empty()) j["kind"] = r.kind;
      j["stream"] = r.stream;
      j["device"] = r.device;
      break;
    case RecordType::Alloc:
      j["managed"] = r.managed;
      j["device"] = r.device;
      if (!r.name.empty()) j["api"] = r.name;
      break;
    case RecordType::Free:
      if (!r.name.empty()) j["api"] = r.name;
      break;
    case RecordType::Prefetch:
      j["device"] = r.device;
      j["stream"] = r.stream;
      if (!r.name.empty()) j["api"] = r.name;
      break;
    case RecordType::Advise:
      j["advice"] = r.name;
      j["device"] = r.device;
      break;
    case RecordType::Sync:
      j["kind"] = r.name;
      break;
    case RecordType::kCount:
      break;
  }
  return j;
}

Record record_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw UserError(where + ": expected a JSON object");
  Record r;
  const auto t = j.find("type");
  if (t == j.end()) throw UserError(where, "type", "missing required field");
  r.type = parse_enum<RecordType>(*t, kTypeNames, where, "type");
  const std::string w = where + ": " + to_string(r.type);
  r.start = get_u64(j, "start", w, true);
  r.end = get_u64(j, "end", w, false, r.start);
  if (r.end < r.start)
    throw UserError(w, "end",
                    "end " + std::to_string(r.end) + " is before start " + std::to_string(r.start));
  if (uses_address(r.type)) r.address = get_u64(j, "address", w, r.type != RecordType::Advise);
  if (uses_bytes(r.type))
    r.bytes = get_u64(j, "bytes", w,
                      r.type == RecordType::Transfer || r.type == RecordType::Memcpy ||
                          r.type == RecordType::Alloc);
  switch (r.type) {
    case RecordType::Transfer:
      r.dir = parse_enum<Direction>(j.value("dir", json()), kDirNames, w, "dir");
      r.cause = j.contains("cause") ? parse_enum<Cause>(j["cause"], kCauseNames, w, "cause")
                                    : Cause::Unknown;
      r.src = get_i64(j, "src", w, kCpuDevice);
      r.dst = get_i64(j, "dst", w, kCpuDevice);
      break;
    case RecordType::GpuFault: {
      r.count = get_u64(j, "count", w, false, 1);
      r.access = get_str(j, "access", w);
      if (r.access.empty()) r.access = "unknown";
      static const std::array<const char*, 5> kAccess = {"unknown", "read", "write", "atomic",
                                                         "prefetch"};
      parse_enum<int>(json(r.access), kAccess, w, "access");
      break;
    }
    case RecordType::CpuFault:
      r.pc = get_u64(j, "pc", w, false);
      r.count = get_u64(j, "count", w, false, 1);
      break;
    case RecordType::Thrashing:
      r.processors = get_u64(j, "processors", w, false);
      r.in_cpu = get_bool(j, "in_cpu", w, false);
      break;
    case RecordType::Throttling:
      r.in_cpu = get_bool(j, "in_cpu", w, false);
      break;
    case RecordType::RemoteMap:
      r.name = get_str(j, "cause", w);
      r.src = get_i64(j, "src", w, kCpuDevice);
      r.dst = get_i64(j, "dst", w, kCpuDevice);
      break;
    case RecordType::Kernel:
      r.name = get_str(j, "name", w, true);
      r.grid = get_dim(j, "grid", w);
      r.block = get_dim(j, "block", w);
      r.regs = get_u32(j, "regs", w);
      r.smem = get_u32(j, "smem", w);
      r.stream = get_u32(j, "stream", w);
      r.correlation = get_u32(j, "correlation", w);
      r.device = get_i64(j, "device", w, 0);
      break;
    case RecordType::Memcpy:
      r.dir = parse_enum<Direction>(j.value("dir", json()), kDirNames, w, "dir");
      r.kind = get_str(j, "kind", w);
      r.stream = get_u32(j, "stream", w);
      r.device = get_i64(j, "device", w, 0);
      break;
    case RecordType::Alloc:
      r.managed = get_bool(j, "managed", w, true);
      r.device = get_i64(j, "device", w, 0);
      r.name = get_str(j, "api", w);
      break;
    case RecordType::Free:
      r.name = get_str(j, "api", w);
      break;
    case RecordType::Prefetch:
      r.device = get_i64(j, "device", w, 0);
      r.stream = get_u32(j, "stream", w);
      r.name = get_str(j, "api", w);
      break;
    case RecordType::Advise:
      r.name = get_str(j, "advice", w, true);
      r.device = get_i64(j, "device", w, 0);
      break;
    case RecordType::Sync:
      r.name = get_str(j, "kind", w);
      break;
    case RecordType::kCount:
      break;
  }
  return r;
}

json to_json(const Header& h) {
  return {
      {"format", kFormatName}, {"version", kFormatVersion}, {"source", h.source}, {"gpu", h.gpu},
      {"app", h.app},          {"device", h.device},        {"extra", h.extra}};
}

Writer::Writer(const std::filesystem::path& path, const Header& header) : path_(path), out_(path) {
  if (!out_) throw UserError(path.string() + ": cannot open for writing");
  out_ << to_json(header).dump() << "\n";
}

Writer::~Writer() {
  if (!finished_ && std::uncaught_exceptions() == 0) {
    try {
      finish();
    } catch (...) {
    }
  }
}

void Writer::write(const Record& r) {
  out_ << to_json(r).dump() << "\n";
  ++summary_.records;
}

void Writer::finish() {
  if (finished_) return;
  finished_ = true;
  json s = {{"type", "summary"},
            {"records", summary_.records},
            {"dropped_records", summary_.dropped_records},
            {"warnings", summary_.warnings}};
  out_ << s.dump() << "\n";
  out_.flush();
  if (!out_) throw UserError(path_.string() + ": write failed");
  out_.close();
}

void write(const std::filesystem::path& path, const Measurement& m) {
  Writer w(path, m.header);
  for (const auto& r : m.records) w.write(r);
  w.add_dropped(m.summary.dropped_records);
  for (const auto& s : m.summary.warnings) w.warn(s);
  w.finish();
}

Measurement read(const std::filesystem::path& path) {
  Measurement m;
  m.path = path.string();
  m.label = path.stem().string();
  std::ifstream in(path);
  if (!in) throw UserError(m.path + ": cannot open");
  std::string line;
  std::uint64_t lineno = 0;
  bool have_header = false, have_summary = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = m.path + ": line " + std::to_string(lineno);
    if (have_summary) throw UserError(where + ": data after the summary line");
    const json j = parse_json(line, where);
    if (!have_header) {
      if (!field_is(j, "format", kFormatName))
        throw UserError(where, "format",
                        std::string("not a measurement file (expected \"format\": \"") +
                            kFormatName + "\" on the first line)");
      const auto v = j.value("version", json());
      if (!v.is_number_unsigned() || v.get<std::uint64_t>() != kFormatVersion)
        throw UserError(where, "version",
                        "unsupported version " + v.dump() + " (this build reads version " +
                            std::to_string(kFormatVersion) + ")");
      m.header.source = get_str(j, "source", where);
      m.header.gpu = get_str(j, "gpu", where);
      m.header.app = get_str(j, "app", where);
      if (j.contains("device") && j["device"].is_object()) m.header.device = j["device"];
      if (j.contains("extra") && j["extra"].is_object()) m.header.extra = j["extra"];
      have_header = true;
      continue;
    }
    if (field_is(j, "type", "summary")) {
      m.summary.records = get_u64(j, "records", where + ": summary", true);
      m.summary.dropped_records = get_u64(j, "dropped_records", where + ": summary", false);
      if (j.contains("warnings") && j["warnings"].is_array())
        for (const auto& w : j["warnings"])
          if (w.is_string()) m.summary.warnings.push_back(w.get<std::string>());
      if (m.summary.records != m.records.size())
        throw UserError(where, "summary.records",
                        "says " + std::to_string(m.summary.records) + " records, file has " +
                            std::to_string(m.records.size()));
      have_summary = true;
      continue;
    }
    m.records.push_back(record_from_json(j, where));
  }
  if (!have_header) throw UserError(m.path + ": empty file (no measurement header)");
  if (!have_summary)
    throw UserError(m.path +
                    ": summary: missing (the file is truncated or its writer did not finish)");
  return m;
}

}  // namespace uvmsim::meas
