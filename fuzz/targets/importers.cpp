// The trace importers of `uvmsim trace import` (traces/import/): a plain-text access list, NVBit
// mem_trace output and an Accel-Sim kernel trace. Whatever an importer accepts must be written as
// a trace that the reader then accepts whole: an import that "succeeds" into an unreadable file
// would lose the user's data silently.
#include <sstream>

#include "core/error.h"
#include "fuzz/fuzz_target.h"
#include "traces/import/accelsim.h"
#include "traces/import/import_builder.h"
#include "traces/import/nvbit.h"
#include "traces/import/text_format.h"
#include "traces/trace.h"

namespace uvmsim::fuzz {

namespace {

/// Opens the written trace and decodes every host event and record; any UserError here is a
/// finding (the importer wrote a file its own reader rejects).
void read_back(const std::filesystem::path& path) {
  try {
    trace::TraceReader reader(path);
    trace::HostEvent ev;
    while (reader.next_host_event(ev)) {
    }
    std::vector<trace::WarpStream> warps;
    for (std::uint32_t l = 0; l < reader.launches().size(); ++l) {
      trace::LaunchStream stream = reader.launch(l);
      trace::ThreadblockView tb;
      while (stream.next(tb)) {
        tb.warp_streams(warps);
        trace::AccessRecord rec;
        for (auto& w : warps)
          while (w.next(rec)) {
          }
        stream.release(tb);
      }
    }
  } catch (const UserError& e) {
    throw Finding(std::string("the imported trace does not read back: ") + e.what());
  }
}

template <typename Parse>
void import(Input in, const char* name, Parse parse) {
  const auto path = scratch_file(in, name);
  const auto out = path.parent_path() / "imported.uvt";
  bool written = false;
  expect_clean(
      [&] {
        trace::import::ImportOptions o;
        o.tmpdir = path.parent_path();
        o.memory_bytes = std::size_t{1} << 20;  // spill early: the spill path is fuzzed too
        o.max_runs = 4;
        // A crafted grid must not turn a few bytes into hours of empty threadblocks.
        o.max_threadblocks = 4096;
        trace::import::ImportBuilder b(o);
        std::istringstream text(std::string(in.begin(), in.end()));
        parse(text, path.string(), b);
        (void)b.write(out);
        written = true;
      },
      path.string());
  if (written) read_back(out);
}

void text(Input in) {
  import(in, "input.txt", [](std::istream& s, const std::string& n, trace::import::ImportBuilder& b) {
    trace::import::import_text(s, n, b);
});
}  // namespace

void nvbit(Input in) {
  import(in, "input.log", [](std::istream& s, const std::string& n, trace::import::ImportBuilder& b) {
    trace::import::import_nvbit(s, n, b);
});
}  // namespace uvmsim::fuzz

void accelsim(Input in) {
  import(in, "input.traceg",
         [](std::istream& s, const std::string& n, trace::import::ImportBuilder& b) {
           trace::import::AccelsimParser(b).read_kernel(s, n);
});
}

}  // namespace

UVMSIM_FUZZ_TARGET("import_text", "uvmsim trace import text (plain-text access lists)", text,
                   nullptr);
UVMSIM_FUZZ_TARGET("import_nvbit", "uvmsim trace import nvbit (NVBit mem_trace output)", nvbit,
                   nullptr);
UVMSIM_FUZZ_TARGET("import_accelsim", "uvmsim trace import accelsim (one .traceg kernel trace)",
                   accelsim, nullptr);

}  // namespace uvmsim::fuzz
