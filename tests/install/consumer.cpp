// Uses the installed headers both ways (<uvmsim/...> and "traces/...") and the library: writes a
// trace with TraceWriter, converts an access list with the importer API, and reads both back.
#include <uvmsim/traces/trace.h>

#include <cstdio>
#include <sstream>

#include "traces/import/import_builder.h"
#include "traces/import/text_format.h"

using namespace uvmsim::trace;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];

  Metadata meta;
  meta.workload = "consumer";
  meta.allocations.push_back({0, "x", 0x7f0000000000, 1 << 20, true, false});
  KernelInfo k;
  k.name = "touch";
  k.grid = {4, 1, 1};
  k.block = {64, 1, 1};
  meta.kernels.push_back(k);
  {
    TraceWriter w(dir + "/written.uvt", meta);
    w.begin_launch(0);
    for (std::uint32_t tb = 0; tb < 4; ++tb) {
      w.begin_block(k.warps_per_block());
      AccessRecord r;
      r.va = 0x7f0000000000 + tb * 4096;
      w.access(0, r);
      w.end_block();
    }
    w.finish();
  }

  import::ImportOptions opts;
  opts.tmpdir = dir;
  import::ImportBuilder b(opts);
  b.metadata().workload = "converted";
  std::istringstream list(
      "uvmsim-access-list 1\nalloc 0x7f0000000000 1M managed x\nkernel k 2 32\nlaunch k\n"
      "1 0 w 0x7f0000001000 128 0x20\n0 0 r 0x7f0000000000 128 0x10\n");
  import::import_text(list, "list", b);
  const import::ImportReport rep = b.write(dir + "/converted.uvt");

  // The builder used directly, as in docs/trace-import.md ("Writing your own converter").
  import::ImportBuilder d({.tmpdir = dir});
  d.metadata().workload = "my_app";
  d.add_allocation({0, "x", 0x7f0000000000, 64 << 20, true, false}, "my_app");
  KernelInfo s;
  s.name = "saxpy";
  s.grid = {256, 1, 1};
  s.block = {256, 1, 1};
  const auto kid = d.kernel(s, "my_app");
  auto& refs = d.ref_scope(s.name);
  import::PendingAccess acc;
  acc.launch = d.launch(kid);
  acc.tb = 3;
  acc.warp = 1;
  acc.va = 0x7f0000003000;
  acc.bytes = 128;
  acc.kind = static_cast<std::uint8_t>(uvmsim::AccessKind::Read);
  acc.ref = d.ref(refs, 0x1f0);
  d.access(acc);
  const import::ImportReport direct = d.write(dir + "/direct.uvt");

  TraceReader a(dir + "/written.uvt");
  TraceReader c(dir + "/converted.uvt");
  std::printf("written: %zu launch, %llu accesses; converted: %llu records, %zu allocation\n",
              a.launches().size(), static_cast<unsigned long long>(a.launches()[0].accesses),
              static_cast<unsigned long long>(rep.records), c.metadata().allocations.size());
  return a.launches()[0].accesses == 4 && rep.records == 2 && direct.records == 1 ? 0 : 1;
}
