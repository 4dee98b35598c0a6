// The .uvt reader: open, every host event, every launch's threadblocks, warps and records, with
// threadblocks held and released out of order like the simulator does. When the reader accepts a
// file, what it decoded must match the index's per-launch totals (the reader promises to check
// them), and `uvmsim analyze`'s profile of it must be valid hints for it. Both record checks
// (trace::RecordCheck) must accept exactly the same files: WhenDecoded, the simulator's, leaves
// the access total to the caller, which this target checks as the simulator does. `uvt_run`
// (targets/full/) runs the CLI on the traces the reader accepts.
#include <deque>

#include "fuzz/fuzz_target.h"
#include "fuzz/uvt_mutator.h"
#include "traces/analyze.h"
#include "traces/trace.h"

namespace uvmsim::fuzz {

namespace {

void read_everything(const std::filesystem::path& path, trace::RecordCheck check) {
  trace::TraceReader reader(path);
  trace::HostEvent ev;
  std::uint64_t host = 0;
  while (reader.next_host_event(ev)) ++host;
  if (host != reader.host_event_count()) throw Finding("host events disagree with the index");

  std::vector<trace::WarpStream> warps;
  for (std::uint32_t l = 0; l < reader.launches().size(); ++l) {
    trace::LaunchStream stream = reader.launch(l, check);
    std::deque<trace::ThreadblockView> held;
    std::uint64_t tbs = 0, records = 0, accesses = 0;
    trace::ThreadblockView tb;
    while (stream.next(tb)) {
      ++tbs;
      tb.warp_streams(warps);
      trace::AccessRecord rec;
      for (auto& w : warps) {
        while (w.next(rec)) {
          ++records;
          accesses += rec.repeat;
        }
      }
      // Keep a few threadblocks in flight and release them out of order.
      held.push_back(tb);
      if (held.size() > 3) {
        stream.release(held[1]);
        held.erase(held.begin() + 1);
      }
    }
    for (const auto& h : held) stream.release(h);
    if (stream.decoded_chunks() != 0) throw Finding("decoded chunks left after the launch");
    if (check == trace::RecordCheck::WhenDecoded) stream.check_accesses(accesses);
    const trace::LaunchSummary& s = reader.launches()[l];
    if (tbs != s.threadblocks || records != s.records || accesses != s.accesses) {
      throw Finding("launch " + std::to_string(l) + ": decoded " + std::to_string(tbs) + "/" +
                    std::to_string(records) + "/" + std::to_string(accesses) +
                    " threadblocks/records/accesses, the index says " +
                    std::to_string(s.threadblocks) + "/" + std::to_string(s.records) + "/" +
                    std::to_string(s.accesses) + " and the reader did not object");
    }
  }
}

void profile(const std::filesystem::path& path) {
  trace::TraceReader reader(path);
  const trace::Hints h = trace::profile_hints(reader);
  // What analyze writes must load back (uvmsim run --hints) and match the trace.
  const trace::Hints back = trace::Hints::from_json(h.to_json(), "analyze output");
  if (!(back == h)) throw Finding("analyze's hints do not survive to_json / from_json");
  back.check_against(reader.metadata(), "analyze output");
}

void run(Input in) {
  const auto path = scratch_file(in, "input.uvt");
  // Both record checks, the simulator's second.
  const trace::RecordCheck checks[] = {trace::RecordCheck::AtLoad, trace::RecordCheck::WhenDecoded};
  bool accepts[2] = {false, false};
  for (int c = 0; c < 2; ++c) {
    expect_clean(
        [&] {
          read_everything(path, checks[c]);
          accepts[c] = true;
        },
        path.string());
  }
  const bool accepted = accepts[0];
  if (accepts[0] != accepts[1])
    throw Finding(std::string("RecordCheck::AtLoad ") + (accepts[0] ? "accepts" : "rejects") +
                  " a trace that RecordCheck::WhenDecoded " + (accepts[1] ? "accepts" : "rejects"));
  if (!accepted) return;
  try {
    profile(path);
  } catch (const Finding&) {
    throw;
  } catch (const std::exception& e) {
    throw Finding(std::string("analyze fails on a trace the reader accepts: ") + e.what());
  }
}

}  // namespace

UVMSIM_FUZZ_TARGET("uvt", "the .uvt trace reader: open, every host event, threadblock and record",
                   run, mutate_uvt);

}  // namespace uvmsim::fuzz
