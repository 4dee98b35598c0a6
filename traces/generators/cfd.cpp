// `cfd`: Rodinia's euler3d CFD solver (Li & Chapman's cfd, their Fig. 3) on a seeded unstructured
// mesh. Per outer iteration the host copies variables to old_variables, computes step factors and
// then runs three Runge-Kutta stages of compute_flux + time_step, so several kernels interleave
// over seven structure-of-arrays allocations: variables and fluxes are reused every stage, normals
// and the neighbour lists only by compute_flux, old_variables by the copy and time_step. Neighbour
// variables are read through elements_surrounding_elements (indirect, mostly local).
#include <random>

#include "traces/generators/emulation.h"

namespace uvmsim::gen {
namespace {

constexpr std::uint32_t kBlock = 192;  // BLOCK_SIZE_0..4 in euler3d.cu
constexpr std::uint32_t kVars = 5, kNeighbours = 4, kDims = 3, kRk = 3;

// ---- per-thread work of euler3d (compute_cost.h) ----
// A structure-of-arrays element x[i + f * nelr]: the field offset and the address.
constexpr Work kSoa = int_ops(1) + kAddress;
// velocity = momentum / density (three divisions), speed_sqd (three FMA), pressure (three),
// speed_of_sound = sqrtf(GAMMA * pressure / density).
constexpr Work kFlowState = 3 * kDivide + fp32(7) + kDivide + kSqrt;
// compute_flux_contribution: the momentum and energy flux terms (15 FMUL/FFMA).
constexpr Work kFluxContribution = fp32(15);
// cuda_compute_step_factor: the five variables and the area (i has no guard: nelr is padded to
// the block size); then the flow state and step_factors[i] = 0.5f / (sqrtf(areas[i]) *
// (sqrtf(speed_sqd) + speed_of_sound)).
constexpr Work kStepLoads = kGlobalIndex + kVars * kSoa + kAddress;
constexpr Work kStepFactor = kFlowState + 2 * kSqrt + fp32(2) + kDivide + kAddress;
// cuda_compute_flux: the element's own variables, then its flow state and flux contribution
// (before the neighbour loop); per neighbour the loop step, the neighbour index and the three
// normal components; normal_len = sqrtf(x^2 + y^2 + z^2), if (nb >= 0) and the neighbour's
// variables; its flow state and contribution, the dissipation factor (a sqrtf and six FP32) and
// the density, momentum and energy fluxes along the normal (43 FP32).
constexpr Work kFluxLoads = kGlobalIndex + kVars * kSoa;
constexpr Work kFluxOwn = kFlowState + kSqrt + kFluxContribution;
constexpr Work kNeighbourLoads = kLoop + (1 + kDims) * kSoa;
constexpr Work kNeighbourVars = fp32(3) + kSqrt + kGuard + imad(1) + kVars * kSoa;
constexpr Work kFluxFace = kFlowState + kSqrt + kFluxContribution + kSqrt + fp32(6) + fp32(43);
constexpr Work kFluxStores = kVars * kSoa;
// cuda_time_step: factor = step_factors[i] / float(RK + 1 - j) and the ten loads' addresses; then
// variables[...] = old_variables[...] + factor * fluxes[...] (five FFMA) and the store addresses.
constexpr Work kTimeLoads = kGlobalIndex + kAddress + 2 * kVars * kSoa;
constexpr Work kTimeStores = kConvert + kDivide + fp32(kVars) + kVars * kSoa;
// cuda_initialize_variables: variables[i + j * nelr] = ff_variable[j] (constant memory).
constexpr Work kInitStores = kGlobalIndex + kVars * kSoa;
// The device-to-device copy, one element per thread: index, guard, load; store address.
constexpr Work kCopyLoad = kGlobalIndex + kGuard + kAddress;
constexpr Work kCopyStore = kAddress;

void write_cfd(GenContext& ctx) {
  const std::uint64_t iters = ctx.params.integer("iters", 1, 100000);
  const std::uint64_t nelr = fit(ctx.footprint, kBlock, [](std::uint64_t n) { return n * 132; });
  Workload wl(ctx);
  wl.metadata().params["elements"] = nelr;
  const std::uint32_t areas = wl.alloc("areas", nelr * 4),
                      ese = wl.alloc("elements_surrounding_elements", nelr * kNeighbours * 4),
                      normals = wl.alloc("normals", nelr * kNeighbours * kDims * 4),
                      vars = wl.alloc("variables", nelr * kVars * 4),
                      old = wl.alloc("old_variables", nelr * kVars * 4),
                      fluxes = wl.alloc("fluxes", nelr * kVars * 4),
                      steps = wl.alloc("step_factors", nelr * 4);

  // The mesh: four neighbours per element, near i +- 1 and i +- 64 with some jitter, as in the
  // locality-ordered Rodinia meshes; -2 (far field) at the edges.
  std::vector<std::int32_t> nb(nelr * kNeighbours);
  std::mt19937_64 rng(ctx.seed);
  for (std::uint64_t i = 0; i < nelr; ++i) {
    const std::int64_t base[kNeighbours] = {-1, 1, -64, 64};
    for (std::uint32_t j = 0; j < kNeighbours; ++j) {
      const std::int64_t jitter = static_cast<std::int64_t>(uniform_below(rng, 17)) - 8;
      const std::int64_t e = static_cast<std::int64_t>(i) + base[j] + (j >= 2 ? jitter : 0);
      nb[j * nelr + i] =
          e < 0 || e >= static_cast<std::int64_t>(nelr) ? -2 : static_cast<std::int32_t>(e);
    }
  }

  const Dim3 grid = grid_1d(nelr, kBlock), block{kBlock, 1, 1};
  const auto n = static_cast<std::int64_t>(nelr);
  const std::int64_t tb = std::min<std::int64_t>(kBlock, n) * 4;
  // SoA: field f of element i is at [i + f * nelr]; one ref per field and static instruction.
  auto soa = [&](std::uint32_t k, std::uint32_t alloc, AccessKind kind, std::uint32_t field,
                 std::int64_t per_element = 1) {
    return wl.ref(k, Access(alloc, kind, n * per_element, tb).field(4, field * n * 4));
  };
  auto fields = [&](std::uint32_t k, std::uint32_t alloc, AccessKind kind, std::uint32_t count,
                    std::int64_t per_element = 1) {
    std::vector<Ref> r;
    for (std::uint32_t f = 0; f < count; ++f) r.push_back(soa(k, alloc, kind, f, per_element));
    return r;
  };
  // The fields of one element issue back to back: the work goes before the first.
  auto each = [](Warp& w, const std::vector<Ref>& refs, const Work& work, auto&& idx) {
    for (std::size_t f = 0; f < refs.size(); ++f) w.op(refs[f], f == 0 ? work : kNoWork, idx);
  };
  auto elem = [nelr](Block& b) {
    return [&b, nelr](const Thread& t) { return b.gx(t) < nelr ? b.gx(t) : kOff; };
  };

  // cudaMemcpy(old_variables, variables) on the device, modelled as a copy kernel.
  const std::uint32_t kcopy = wl.kernel("memcpy_dtod", grid_1d(nelr * kVars, kBlock), block);
  const Ref cp_r = wl.ref(kcopy, {vars, AccessKind::Read, n * kVars, tb});
  const Ref cp_w = wl.ref(kcopy, {old, AccessKind::Write, n * kVars, tb});
  wl.body(kcopy, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      auto i = [&](const Thread& t) { return b.gx(t) < nelr * kVars ? b.gx(t) : kOff; };
      w.op(cp_r, kCopyLoad, i);
      w.op(cp_w, kCopyStore, i);
    });
  });

  const std::uint32_t kinit = wl.kernel("cuda_initialize_variables", grid, block);
  const auto init_w = fields(kinit, vars, AccessKind::Write, kVars);
  wl.body(kinit, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) { each(w, init_w, kInitStores, elem(b)); });
  });

  const std::uint32_t kstep = wl.kernel("cuda_compute_step_factor", grid, block);
  const auto step_v = fields(kstep, vars, AccessKind::Read, kVars);
  const Ref step_a = soa(kstep, areas, AccessKind::Read, 0);
  const Ref step_w = soa(kstep, steps, AccessKind::Write, 0);
  wl.body(kstep, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      each(w, step_v, kStepLoads, elem(b));
      w.op(step_a, kNoWork, elem(b));
      w.op(step_w, kStepFactor, elem(b));
    });
  });

  const std::uint32_t kflux = wl.kernel("cuda_compute_flux", grid, block);
  const auto flux_own = fields(kflux, vars, AccessKind::Read, kVars);
  const Ref flux_nb_idx = wl.ref(
      kflux, Access(ese, AccessKind::Read, n * kNeighbours, ((kNeighbours - 1) * n + kBlock) * 4)
                 .field(4, 0));
  const Ref flux_normal = wl.ref(kflux, Access(normals, AccessKind::Read, n * kNeighbours * kDims,
                                               ((kNeighbours * kDims - 1) * n + kBlock) * 4));
  std::vector<Ref> flux_nb;
  for (std::uint32_t f = 0; f < kVars; ++f) {
    flux_nb.push_back(
        wl.ref(kflux, Access(vars, AccessKind::Read, n * kNeighbours,
                             static_cast<std::int64_t>(nelr * kVars * 4), AccessPattern::Irregular)
                          .indirect()
                          .guarded()));
  }
  const auto flux_w = fields(kflux, fluxes, AccessKind::Write, kVars);
  wl.body(kflux, [=, &nb](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      auto i = elem(b);
      each(w, flux_own, kFluxLoads, i);
      for (std::uint32_t j = 0; j < kNeighbours; ++j) {
        auto slot = [&](const Thread& t) { return i(t) == kOff ? kOff : j * nelr + i(t); };
        w.op(flux_nb_idx, j == 0 ? kFluxOwn + kNeighbourLoads : kNeighbourLoads, slot);
        for (std::uint32_t d = 0; d < kDims; ++d) {
          w.op(flux_normal, kNoWork, [&](const Thread& t) {
            return i(t) == kOff ? kOff : (j + d * kNeighbours) * nelr + i(t);
          });
        }
        for (std::uint32_t f = 0; f < kVars; ++f) {  // if (nb >= 0) read the neighbour's state
          w.op(flux_nb[f], f == 0 ? kNeighbourVars : kNoWork, [&](const Thread& t) {
            const std::int64_t e = i(t) == kOff ? -1 : nb[j * nelr + i(t)];
            return e < 0 ? kOff : f * nelr + static_cast<std::uint64_t>(e);
          });
        }
        w.compute(kFluxFace);  // the flux contribution of this face
      }
      each(w, flux_w, kFluxStores, i);
    });
  });

  const std::uint32_t ktime = wl.kernel("cuda_time_step", grid, block);
  const Ref time_s = soa(ktime, steps, AccessKind::Read, 0);
  const auto time_old = fields(ktime, old, AccessKind::Read, kVars);
  const auto time_flux = fields(ktime, fluxes, AccessKind::Read, kVars);
  const auto time_w = fields(ktime, vars, AccessKind::Write, kVars);
  wl.body(ktime, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      w.op(time_s, kTimeLoads, elem(b));
      each(w, time_old, kNoWork, elem(b));
      each(w, time_flux, kNoWork, elem(b));
      each(w, time_w, kTimeStores, elem(b));
    });
  });

  wl.cpu_write({areas, ese, normals});
  wl.launch(kinit);
  for (std::uint64_t it = 0; it < iters; ++it) {
    const auto i = static_cast<std::int32_t>(it);
    wl.launch(kcopy, i);
    wl.launch(kstep, i);
    for (std::uint32_t j = 0; j < kRk; ++j) {
      wl.launch(kflux, i);
      wl.launch(ktime, i);
    }
  }
  wl.write();
}

const Registrar kCfd{Generator{
    "cfd",
    "euler3d finite-volume solver: per iteration a copy, step factors and 3 RK stages of "
    "flux + time step over footprint/132 mesh elements (SoA arrays)",
    {{"iters", "4", "outer solver iterations (host loop)"}},
    write_cfd,
    "cyclic",
    std::uint64_t{64} << 20,
    "Rodinia cfd (euler3d)",
}};

}  // namespace
}  // namespace uvmsim::gen
