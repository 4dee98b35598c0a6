// The multi-GPU generators (issue 17; docs/generators.md): mgpu-halo, mgpu-pipeline and
// mgpu-alltoall. Their traces name the devices in the program's order, are deterministic, refuse
// bad parameters with one-line errors, carry hints that agree with their records, and simulate
// on a node of as many GPUs with every access completed and the pages staged between GPUs that
// the model's rule gives ("a page another GPU holds is staged through the host when this GPU
// touches it", docs/multi-gpu.md). Expected values are derived from the layouts below.
#include <gtest/gtest.h>

#include "placement_test_util.h"
#include "tests/workload_check.h"
#include "traces/generators/generator.h"

namespace uvmsim::test {
namespace {

using trace::HostEventType;

/// A launch as the host program issues it: the kernel's name, its iteration and the GPU it
/// runs on (the latest SetDevice before it, GPU 0 before any).
struct Launch {
  std::string kernel;
  std::int32_t iteration;
  unsigned gpu;
  bool operator==(const Launch&) const = default;
};
std::ostream& operator<<(std::ostream& o, const Launch& l) {
  return o << l.kernel << "(it " << l.iteration << ", GPU " << l.gpu << ")";
}

struct HostProgram {
  std::vector<Launch> launches;
  /// The host events in order, a launch as 'L', a SetDevice as 'D', a Synchronize as 'S', a
  /// CpuAccess as 'C' (read 'c'), an advice as 'A': the shape of the host program.
  std::string shape;
  std::uint32_t version = 0;
  std::uint64_t accesses = 0;  ///< the records' accesses, from the trace's index
  nlohmann::json params;
};

HostProgram read_program(const std::string& path) {
  trace::TraceReader r(path);
  HostProgram p;
  p.version = r.version();
  p.params = r.metadata().params;
  for (const auto& l : r.launches()) p.accesses += l.accesses;
  unsigned gpu = 0;
  trace::HostEvent ev;
  while (r.next_host_event(ev)) {
    switch (ev.type) {
      case HostEventType::SetDevice:
        gpu = gpu_ordinal(ev.device);
        p.shape += 'D';
        break;
      case HostEventType::KernelLaunch:
        p.launches.push_back({r.metadata().kernels.at(ev.kernel_id).name, ev.iteration, gpu});
        p.shape += 'L';
        break;
      case HostEventType::Synchronize:
        p.shape += 'S';
        break;
      case HostEventType::CpuAccess:
        p.shape += ev.kind == AccessKind::Read ? 'c' : 'C';
        break;
      case HostEventType::MemAdvise:
        p.shape += 'A';
        break;
      default:
        p.shape += '?';
    }
  }
  return p;
}

std::string repeat(const std::string& s, std::uint64_t n) {
  std::string out;
  for (std::uint64_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string generated(const TempDir& d, const std::string& name, std::uint64_t footprint,
                      const gen::ParamMap& params, const std::string& file) {
  const std::string path = d.file(file);
  gen::generate(name, footprint, params, 1, path);
  return path;
}

std::string gen_error(const std::string& name, std::uint64_t footprint,
                      const gen::ParamMap& params) {
  TempDir d;
  const std::string out = d.file("bad.uvt");
  const std::string e = error_of([&] { gen::generate(name, footprint, params, 1, out); });
  EXPECT_FALSE(std::filesystem::exists(out)) << name;
  return e;
}

/// The same parameters and seed give the same bytes.
void expect_deterministic(const std::string& name, std::uint64_t footprint,
                          const gen::ParamMap& params) {
  TempDir d;
  const auto a = file_bytes(generated(d, name, footprint, params, "a.uvt"));
  const auto b = file_bytes(generated(d, name, footprint, params, "b.uvt"));
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b) << name;
}

nlohmann::json simulate(const std::string& trace, unsigned gpus,
                        std::vector<std::string> sets = {}) {
  sets.push_back("system.gpus=" + std::to_string(gpus));
  return run_sim(trace, sets);
}

constexpr std::uint64_t M = 1 << 20;

// ---- mgpu-halo -------------------------------------------------------------------------------

TEST(MgpuHalo, EachIterationLaunchesOneSlabPerGpuThenSynchronizes) {
  TempDir d;
  const auto p =
      read_program(generated(d, "mgpu-halo", 4 * M, {{"gpus", "4"}, {"iters", "3"}}, "halo.uvt"));
  // The host writes a and a_new, then per iteration SetDevice(g) + launch for g = 0..3 and one
  // Synchronize: the four slabs run concurrently.
  EXPECT_EQ(p.shape, "CC" + repeat(repeat("DL", 4) + "S", 3));
  std::vector<Launch> want;
  for (std::int32_t it = 0; it < 3; ++it)
    for (unsigned g = 0; g < 4; ++g) want.push_back({"jacobi_kernel", it, g});
  EXPECT_EQ(p.launches, want);
  EXPECT_EQ(p.version, trace::kDeviceVersion);
  // 4M: nx = 1024 (whole pages per row), ny = 4M / 8 / 1024 = 512 rows, 128 per GPU.
  EXPECT_EQ(p.params["nx"], 1024);
  EXPECT_EQ(p.params["ny"], 512);
  EXPECT_EQ(p.params["chunk"], 128);

  // NVIDIA's initialisation on GPU 0 (memsets, boundaries) and read-mostly advice come first.
  const auto q = read_program(generated(
      d, "mgpu-halo", 4 * M,
      {{"gpus", "2"}, {"iters", "1"}, {"init", "gpu0"}, {"advise", "read-mostly"}}, "gpu0.uvt"));
  EXPECT_EQ(q.shape, "DLLLSAA" + repeat("DL", 2) + "S");
  EXPECT_EQ(q.launches, (std::vector<Launch>{{"memset", -1, 0},
                                             {"memset", -1, 0},
                                             {"initialize_boundaries", -1, 0},
                                             {"jacobi_kernel", 0, 0},
                                             {"jacobi_kernel", 0, 1}}));
}

TEST(MgpuHalo, OneGpuIsAPlainOneDeviceTrace) {
  TempDir d;
  const auto path = generated(d, "mgpu-halo", 4 * M, {{"gpus", "1"}, {"iters", "2"}}, "one.uvt");
  const auto p = read_program(path);
  EXPECT_EQ(p.shape, "CCLSLS");  // no SetDevice: format version 1
  EXPECT_EQ(p.version, 1u);
  EXPECT_EQ(p.launches, (std::vector<Launch>{{"jacobi_kernel", 0, 0}, {"jacobi_kernel", 1, 0}}));
  const auto j = simulate(path, 1);
  EXPECT_EQ(num(j["accesses"]), p.accesses);
  EXPECT_EQ(num(j["dtoh_bytes_by_cause"]["peer_staged"]), 0u);
}

TEST(MgpuHalo, DeterministicHintsMatchAndBadParamsAreOneLineErrors) {
  expect_deterministic("mgpu-halo", 4 * M, {{"gpus", "3"}});
  expect_deterministic("mgpu-halo", 4 * M, {{"init", "gpu0"}, {"advise", "read-mostly"}});
  TempDir d;
  for (const std::string init : {"cpu", "gpu0"})
    expect_hints_match_trace(trace_stats(generated(
        d, "mgpu-halo", 2 * M, {{"gpus", "4"}, {"iters", "2"}, {"init", init}}, "h.uvt")));
  EXPECT_EQ(gen_error("mgpu-halo", 4 * M, {{"gpus", "17"}}),
            "--param gpus: expected an integer in [1, 16], got '17'");
  EXPECT_EQ(gen_error("mgpu-halo", 4 * M, {{"gpus", "0"}}),
            "--param gpus: expected an integer in [1, 16], got '0'");
  EXPECT_EQ(gen_error("mgpu-halo", 4 * M, {{"iters", "0"}}),
            "--param iters: expected an integer in [1, 100000], got '0'");
  EXPECT_EQ(gen_error("mgpu-halo", 4 * M, {{"init", "gpu1"}}),
            "--param init: expected one of cpu|gpu0, got 'gpu1'");
  EXPECT_EQ(gen_error("mgpu-halo", 4 * M, {{"advise", "preferred"}}),
            "--param advise: expected one of none|read-mostly, got 'preferred'");
  // The smallest grid: 1024 columns and 4 rows (one block row) per GPU, two arrays.
  EXPECT_EQ(gen_error("mgpu-halo", 2 * 1024 * 4 * 4 * 4 - 1, {}),
            "--footprint: must be at least 131072 bytes for mgpu-halo with gpus=4");
  const auto r = cli({"gen", "mgpu-halo", "--param", "gpus=99", "-o", d.file("x.uvt")});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "uvmsim gen: error: --param gpus: expected an integer in [1, 16], got '99'\n");
}

// The halo exchange, derived page by page. 16M: nx = 1024 floats = one 4 KB page per row, ny =
// 2048 rows, chunk = 512 rows per GPU (GPU g updates rows [512 g, 512 (g + 1)) without the grid's
// rows 0 and 2047); the host writes a and a_new first, so every page starts in host memory.
// Iteration t reads X (a for even t, a_new for odd) and writes Y, each GPU its own rows. A page
// no other GPU holds comes from the host (htod) or is local; a page GPU h holds is staged (h's
// copy engine to the host, peer_staged, and on to the toucher, htod). Pages per iteration:
//  * Interior boundary g | g + 1 (3 of them): L = g's last row, F = g + 1's first row. g + 1 reads
//    L as its north halo and F in its first block row, early in its kernel; g reads L and F (its
//    south halo) in its last block row, late. The neighbour's early read is serviced before the
//    owner's late one (the kernels run 128 block rows of 32 blocks, ~18 waves on 28 SMs: true at
//    this size, not at 4M, where a different order saves one page per boundary), so:
//    - t = 0: L host -> g+1, then g+1 -> g (1 staged); F host -> g+1, then g+1 -> g (1); Y's
//      pages come from the host to their writers: 2 staged, by g + 1;
//    - t >= 1: X was Y of t - 1, written by its owners: L g -> g+1 (staged by g), g+1 -> g (by
//      g + 1); F g+1 -> g (by g + 1); Y's F was left on g by t - 1 and g + 1 writes it: g -> g+1
//      (by g). 4 staged, 2 by each.
//  * The periodic rows (jacobi_kernel copies row 1 to row 2047 on GPU 0, row 2046 to row 0 on
//    GPU 3): X's row 0, written by GPU 3 in t - 1, is read by GPU 0 (staged by 3); X's row 2047,
//    written by GPU 0, is read by GPU 3 (by 0); Y's row 2047, read by GPU 3 in t - 1, is written
//    by GPU 0 (by 3); Y's row 0 by GPU 3 (by 0). One GPU touches each of these pages per
//    iteration, so the order does not matter: 4 staged per iteration from t = 1, 2 by GPU 0 and
//    2 by GPU 3 (t = 0 takes them from the host).
// T = 4: staged = 3 x (2 + 4 x 3) + 4 x 3 = 54 pages; GPU 0 stages 2 x 3 + 2 x 3 = 12, GPUs 1 and 2
// 2 + 2 x 3 + 2 x 3 = 14, GPU 3 2 + 2 x 3 + 2 x 3 = 14. htod: every page of a and a_new once from
// the host (2 x 2048) and every staged page once more: 4150 pages.
// The prefetcher is off: it would also move the neighbour's other pages of the 2 MB block it
// faults in (256 rows each side of a boundary; docs/generators.md measures it). The thrashing
// detector stays on but must not have acted (no throttle or pin), or pages would stay put.
TEST(MgpuHalo, HaloRowsAreStagedThroughTheHost) {
  TempDir d;
  const auto path = generated(d, "mgpu-halo", 16 * M, {{"gpus", "4"}, {"iters", "4"}}, "h.uvt");
  const auto p = read_program(path);
  ASSERT_EQ(p.params["ny"], 2048);
  ASSERT_EQ(p.params["nx"], 1024);
  const auto j = simulate(path, 4, {"driver.prefetch_enable=false"});
  EXPECT_EQ(num(j["accesses"]), p.accesses);
  EXPECT_EQ(num(j["driver"]["throttle_hints"]), 0u);
  EXPECT_EQ(num(j["driver"]["pin_hints"]), 0u);
  constexpr std::uint64_t kPage = 4096;
  EXPECT_EQ(num(j["dtoh_bytes_by_cause"]["peer_staged"]), 54 * kPage);
  EXPECT_EQ(num(j["dtoh_bytes"]), 54 * kPage);
  EXPECT_EQ(num(j["htod_bytes"]), (2 * 2048 + 54) * kPage);
  EXPECT_EQ(num(j["driver"]["zero_filled_pages"]), 0u);
  const std::uint64_t by_gpu[] = {12, 14, 14, 14};
  for (unsigned g = 0; g < 4; ++g) {
    EXPECT_EQ(num(j["gpus"][g]["host_link"]["peer_staged_bytes"]), by_gpu[g] * kPage) << g;
    EXPECT_EQ(num(j["gpus"][g]["kernels"]), 4u);
  }
  // The four slabs of an iteration overlap in time: each GPU's kernel starts one launch
  // overhead after the previous GPU's, before that one ends.
  for (unsigned l = 1; l < 4; ++l)
    EXPECT_LT(num(j["kernels"][l]["start_ns"]), num(j["kernels"][l - 1]["end_ns"])) << l;
}

// With cudaMemAdviseSetReadMostly on a and a_new, a read of a page another GPU holds duplicates
// it (the holder keeps a read-only copy, so staging it is the holder's one copy to the host) and
// the owner's write in the next iteration collapses the copies without a copy. So every halo
// page is staged exactly once per iteration t >= 1, whichever GPU touches it first — the count
// does not depend on the kernels' timing, at any size:
//  * t = 0: the pages come from the host copy (the host keeps it: read-mostly): nothing staged;
//  * t >= 1: X was written by its owners in t - 1 (their copies are the only ones): per interior
//    boundary L and F once each, 2 (G - 1); the periodic rows 0 and ny - 1, 2. 2 G pages.
// staged = (T - 1) x 2 G rows. htod: every page once from the host (2 ny rows), the halo rows the
// neighbours duplicate from the host in t = 0 (2 (G - 1)), every staged page on to its reader,
// and in t = 1 the periodic rows of a that the other end's GPU read in t = 0 (GPU 0 writes row
// ny - 1, GPU G - 1 row 0: from the host copy, 2 rows).
TEST(MgpuHalo, ReadMostlyStagesEveryHaloRowOncePerIteration) {
  for (const auto& [footprint, gpus, rows] :
       {std::tuple{4 * M, 3u, 504u}, {4 * M, 4u, 512u}, {16 * M, 4u, 2048u}, {16 * M, 8u, 2048u}}) {
    SCOPED_TRACE(std::to_string(footprint >> 20) + "M, " + std::to_string(gpus) + " GPUs");
    TempDir d;
    const auto path = generated(
        d, "mgpu-halo", footprint,
        {{"gpus", std::to_string(gpus)}, {"iters", "4"}, {"advise", "read-mostly"}}, "rm.uvt");
    const auto p = read_program(path);
    ASSERT_EQ(p.params["nx"], 1024);  // a row is one page
    ASSERT_EQ(p.params["ny"], rows);
    const auto j = simulate(path, gpus, {"driver.prefetch_enable=false"});
    EXPECT_EQ(num(j["accesses"]), p.accesses);
    const std::uint64_t staged = 3 * 2 * gpus;
    EXPECT_EQ(num(j["dtoh_bytes_by_cause"]["peer_staged"]), staged * 4096);
    EXPECT_EQ(num(j["dtoh_bytes"]), staged * 4096);
    EXPECT_EQ(num(j["htod_bytes"]), (2 * rows + 2 * (gpus - 1) + staged + 2) * 4096);
  }
}

// ---- mgpu-pipeline ---------------------------------------------------------------------------

TEST(MgpuPipeline, StagesRunMicrobatchesInPipelinedOrder) {
  TempDir d;
  const auto p = read_program(
      generated(d, "mgpu-pipeline", 8 * M, {{"gpus", "3"}, {"microbatches", "4"}}, "pipe.uvt"));
  // Step c runs microbatch c - s on stage (GPU) s for every valid s, then a Synchronize: 4 + 3 -
  // 1 = 6 steps with 1, 2, 3, 3, 2, 1 stages. Before: the weights and the input are written by
  // the host; after: the host reads the output.
  EXPECT_EQ(p.shape,
            "CCCC"
            "DLS"
            "DLDLS"
            "DLDLDLS"
            "DLDLDLS"
            "DLDLS"
            "DLS"
            "c");
  std::vector<Launch> want;
  for (unsigned c = 0; c < 6; ++c)
    for (unsigned s = 0; s < 3; ++s)
      if (c >= s && c - s < 4)
        want.push_back({"layer_forward", static_cast<std::int32_t>(c - s), s});
  EXPECT_EQ(p.launches, want);
  EXPECT_EQ(p.version, trace::kDeviceVersion);
}

TEST(MgpuPipeline, DeterministicHintsMatchAndBadParamsAreOneLineErrors) {
  expect_deterministic("mgpu-pipeline", 4 * M, {});
  TempDir d;
  expect_hints_match_trace(
      trace_stats(generated(d, "mgpu-pipeline", 2 * M,
                            {{"gpus", "3"}, {"microbatches", "3"}, {"batch", "32"}}, "p.uvt")));
  EXPECT_EQ(gen_error("mgpu-pipeline", 4 * M, {{"gpus", "17"}}),
            "--param gpus: expected an integer in [1, 16], got '17'");
  EXPECT_EQ(gen_error("mgpu-pipeline", 4 * M, {{"microbatches", "0"}}),
            "--param microbatches: expected an integer in [1, 4096], got '0'");
  EXPECT_EQ(gen_error("mgpu-pipeline", 4 * M, {{"batch", "48"}}),
            "--param batch: expected a multiple of 32, got 48");
  // hidden = 32 at least: 4 x 32 x 32 x 4 weights + 5 x 4 x 64 x 32 x 4 activations.
  EXPECT_EQ(gen_error("mgpu-pipeline", 180223, {}),
            "--footprint: must be at least 180224 bytes for mgpu-pipeline with gpus=4, "
            "microbatches=4 and batch=64");
}

// Stage s reads act[s] and writes act[s + 1]; microbatch m is rows [64 m, 64 (m + 1)) of them, a
// slice of batch x hidden floats = whole pages (batch is a multiple of 32, hidden too). Stage s
// writes its slice of act[s + 1] (first touch: zero-filled on GPU s) and at the next step stage
// s + 1 reads it on GPU s + 1: staged once. Within a step the stages touch disjoint slices, so
// nothing else moves. 8M, 4 stages, 4 microbatches of 64: hidden = 576, slice = 64 x 576 x 4 =
// 147456 bytes (36 pages).
//  * staged: act[1..3], every slice once: 3 x 4 x 147456;
//  * htod: the weights (4 x 576^2 x 4) and the input act[0] from the host, every staged slice;
//  * cpu_fault: the host reads act[4] (4 slices) back from GPU 3;
//  * zero-filled: act[1..4] (4 x 4 slices of 36 pages).
// The prefetcher is off: faulting in slice m of a buffer it would also take (or zero-fill) pages
// of slices m - 1 and m + 1 in the same 2 MB block, which the neighbouring stage is using.
TEST(MgpuPipeline, EachActivationSliceIsStagedOnce) {
  TempDir d;
  const auto path = generated(d, "mgpu-pipeline", 8 * M, {}, "p.uvt");
  const auto p = read_program(path);
  ASSERT_EQ(p.params["hidden"], 576);
  const std::uint64_t slice = 64 * 576 * 4, weights = 4 * 576 * 576 * 4;
  const auto j = simulate(path, 4, {"driver.prefetch_enable=false"});
  EXPECT_EQ(num(j["accesses"]), p.accesses);
  EXPECT_EQ(num(j["dtoh_bytes_by_cause"]["peer_staged"]), 3 * 4 * slice);
  EXPECT_EQ(num(j["dtoh_bytes_by_cause"]["cpu_fault"]), 4 * slice);
  EXPECT_EQ(num(j["dtoh_bytes"]), 3 * 4 * slice + 4 * slice);
  EXPECT_EQ(num(j["htod_bytes"]), weights + 4 * slice + 3 * 4 * slice);
  EXPECT_EQ(num(j["driver"]["zero_filled_pages"]), 4 * 4 * slice / 4096);
  for (unsigned s = 0; s < 4; ++s) {
    EXPECT_EQ(num(j["gpus"][s]["kernels"]), 4u);
    // Stage s stages the slices stage s + 1 reads (the last stage none; the host's read of the
    // output is a CPU fault, not staging).
    EXPECT_EQ(num(j["gpus"][s]["host_link"]["peer_staged_bytes"]), s < 3 ? 4 * slice : 0) << s;
  }
  // Step 1 runs stage 0 on microbatch 1 (launch 1) and stage 1 on microbatch 0 (launch 2) at once.
  EXPECT_LT(num(j["kernels"][2]["start_ns"]), num(j["kernels"][1]["end_ns"]));

  // One stage: a one-GPU trace, nothing staged.
  const auto one = generated(d, "mgpu-pipeline", 8 * M, {{"gpus", "1"}}, "one.uvt");
  const auto q = read_program(one);
  EXPECT_EQ(q.version, 1u);
  EXPECT_EQ(q.shape, "CC" + repeat("LS", 4) + "c");
  const auto k = simulate(one, 1);
  EXPECT_EQ(num(k["accesses"]), q.accesses);
  EXPECT_EQ(num(k["dtoh_bytes_by_cause"]["peer_staged"]), 0u);
}

// ---- mgpu-alltoall ---------------------------------------------------------------------------

TEST(MgpuAlltoall, PackThenExchangeOnEveryGpuPerRound) {
  TempDir d;
  const auto p =
      read_program(generated(d, "mgpu-alltoall", 8 * M, {{"gpus", "4"}, {"rounds", "2"}}, "a.uvt"));
  EXPECT_EQ(p.shape, repeat(repeat("DL", 4) + "S" + repeat("DL", 4) + "S", 2));
  std::vector<Launch> want;
  for (std::int32_t r = 0; r < 2; ++r)
    for (const char* k : {"pack", "alltoall"})
      for (unsigned g = 0; g < 4; ++g) want.push_back({k, r, g});
  EXPECT_EQ(p.launches, want);
  EXPECT_EQ(p.params["chunk"], 256 * 1024);  // 8M / (2 x 4 x 4)
}

TEST(MgpuAlltoall, DeterministicHintsMatchAndBadParamsAreOneLineErrors) {
  expect_deterministic("mgpu-alltoall", 4 * M, {{"gpus", "5"}});
  TempDir d;
  expect_hints_match_trace(
      trace_stats(generated(d, "mgpu-alltoall", 2 * M, {{"gpus", "3"}, {"rounds", "2"}}, "a.uvt")));
  EXPECT_EQ(gen_error("mgpu-alltoall", 4 * M, {{"gpus", "17"}}),
            "--param gpus: expected an integer in [1, 16], got '17'");
  EXPECT_EQ(gen_error("mgpu-alltoall", 4 * M, {{"rounds", "x"}}),
            "--param rounds: expected an integer in [1, 100000], got 'x'");
  EXPECT_EQ(gen_error("mgpu-alltoall", 131071, {}),
            "--footprint: must be at least 131072 bytes for mgpu-alltoall with gpus=4");
}

// send[j] and recv[j] hold one chunk per GPU (8M, 4 GPUs: chunk = 256 KB, 64 pages). Round r:
// pack on GPU j writes all of send[j]; then GPU g reads chunk g of every send[j] and writes
// recv[g]. Round 0's pack zero-fills send[j] on GPU j; the exchange stages chunk g of send[j]
// (j != g) from GPU j to GPU g: 4 x 3 chunks. From round 1 on, pack on GPU j takes chunk g of
// send[j] back from GPU g (staged by g), and the exchange moves it again: 2 x 12 chunks. recv[g]
// is only ever GPU g's. The phases are separated by a Synchronize and within a phase the GPUs
// touch disjoint chunks, so the count is exact whatever the timing, and the prefetcher can stay
// on (it finds nothing of the chunk's block elsewhere worth taking: measured, it takes nothing).
// staged = 12 x chunk x (2 R - 1); every staged page goes on to a GPU (htod = staged); every
// page of the buffers is zero-filled once.
TEST(MgpuAlltoall, EveryRemoteChunkIsStagedTwicePerRoundAfterTheFirst) {
  TempDir d;
  for (const std::uint64_t rounds : {1u, 3u}) {
    const auto path = generated(d, "mgpu-alltoall", 8 * M,
                                {{"gpus", "4"}, {"rounds", std::to_string(rounds)}}, "a.uvt");
    const auto p = read_program(path);
    const auto j = simulate(path, 4);
    const std::uint64_t chunk = 256 * 1024, staged = 4 * 3 * chunk * (2 * rounds - 1);
    EXPECT_EQ(num(j["accesses"]), p.accesses) << rounds;
    EXPECT_EQ(num(j["dtoh_bytes_by_cause"]["peer_staged"]), staged) << rounds;
    EXPECT_EQ(num(j["dtoh_bytes"]), staged) << rounds;
    EXPECT_EQ(num(j["htod_bytes"]), staged) << rounds;
    EXPECT_EQ(num(j["driver"]["zero_filled_pages"]), 8 * M / 4096) << rounds;
    for (unsigned g = 0; g < 4; ++g)
      EXPECT_EQ(num(j["gpus"][g]["host_link"]["peer_staged_bytes"]), staged / 4) << g;
  }
  const auto one = generated(d, "mgpu-alltoall", 8 * M, {{"gpus", "1"}}, "one.uvt");
  const auto q = read_program(one);
  EXPECT_EQ(q.version, 1u);
  EXPECT_EQ(q.shape, repeat("LS", 4));
  const auto k = simulate(one, 1);
  EXPECT_EQ(num(k["accesses"]), q.accesses);
  EXPECT_EQ(num(k["dtoh_bytes_by_cause"]["peer_staged"]), 0u);
}

}  // namespace
}  // namespace uvmsim::test
