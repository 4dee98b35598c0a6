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
  auto each = [](Warp& w, const std::vector<Ref>& refs, std::uint32_t gap, auto&& idx) {
    for (std::size_t f = 0; f < refs.size(); ++f) w.op(refs[f], f == 0 ? gap : 0, idx);
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
      w.op(cp_r, kIndexGap, i);
      w.op(cp_w, kAluGap, i);
    });
  });

  const std::uint32_t kinit = wl.kernel("cuda_initialize_variables", grid, block);
  const auto init_w = fields(kinit, vars, AccessKind::Write, kVars);
  wl.body(kinit, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) { each(w, init_w, kIndexGap, elem(b)); });
  });

  const std::uint32_t kstep = wl.kernel("cuda_compute_step_factor", grid, block);
  const auto step_v = fields(kstep, vars, AccessKind::Read, kVars);
  const Ref step_a = soa(kstep, areas, AccessKind::Read, 0);
  const Ref step_w = soa(kstep, steps, AccessKind::Write, 0);
  wl.body(kstep, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      each(w, step_v, kIndexGap, elem(b));
      w.op(step_a, 0, elem(b));
      w.op(step_w, 40, elem(b));  // speed of sound: sqrt, divisions
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
      each(w, flux_own, kIndexGap, i);
      for (std::uint32_t j = 0; j < kNeighbours; ++j) {
        auto slot = [&](const Thread& t) { return i(t) == kOff ? kOff : j * nelr + i(t); };
        w.op(flux_nb_idx, kAluGap, slot);
        for (std::uint32_t d = 0; d < kDims; ++d) {
          w.op(flux_normal, 0, [&](const Thread& t) {
            return i(t) == kOff ? kOff : (j + d * kNeighbours) * nelr + i(t);
          });
        }
        for (std::uint32_t f = 0; f < kVars; ++f) {  // if (nb >= 0) read the neighbour's state
          w.op(flux_nb[f], f == 0 ? kIndexGap : 0, [&](const Thread& t) {
            const std::int64_t e = i(t) == kOff ? -1 : nb[j * nelr + i(t)];
            return e < 0 ? kOff : f * nelr + static_cast<std::uint64_t>(e);
          });
        }
        w.compute(60);  // the flux contribution of this face
      }
      each(w, flux_w, kAluGap, i);
    });
  });

  const std::uint32_t ktime = wl.kernel("cuda_time_step", grid, block);
  const Ref time_s = soa(ktime, steps, AccessKind::Read, 0);
  const auto time_old = fields(ktime, old, AccessKind::Read, kVars);
  const auto time_flux = fields(ktime, fluxes, AccessKind::Read, kVars);
  const auto time_w = fields(ktime, vars, AccessKind::Write, kVars);
  wl.body(ktime, [=](Block& b, std::int32_t) {
    b.warps([&](Warp& w) {
      w.op(time_s, kIndexGap, elem(b));
      each(w, time_old, 0, elem(b));
      each(w, time_flux, 0, elem(b));
      each(w, time_w, kAluGap, elem(b));
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
