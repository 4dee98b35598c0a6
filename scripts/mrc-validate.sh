#!/usr/bin/env bash
# Validates `uvmsim analyze --mrc` against full simulations (docs/mrc.md, "How close"): for each
# workload, one capacity-curve pass, then `uvmsim run --eviction lru --oversub X` at each level,
# and a markdown table of evictions and HtoD bytes, simulated vs the curve at the same memory
# size (chunks = floor(managed / (1 + X/100)), as the simulator sizes it).
#
#   scripts/mrc-validate.sh [BUILD_DIR] [WORKDIR]
#
# Environment: GPU (default titanv), LEVELS (default "10 25 50 100 200"), WORKLOADS (default:
# the table's), EVICTION (default lru; e.g. "driver" to compare the driver's LRM), SCHEDULE
# (analyze --schedule: concurrent, the default, or serial). Simulations already in WORKDIR are
# reused, so a second schedule costs only the curve passes.
set -euo pipefail
build=${1:-build}
work=${2:-$(mktemp -d /tmp/uvmsim-mrc-validate-XXXXXX)}
gpu=${GPU:-titanv}
levels=${LEVELS:-"10 25 50 100 200"}
eviction=${EVICTION:-lru}
schedule=${SCHEDULE:-concurrent}
uvmsim="$build/uvmsim"
mkdir -p "$work"
# name|generator arguments
default_workloads=(
  "stream|stream --footprint 96M --param iters=4"
  "blackscholes|blackscholes --footprint 96M --param iters=4"
  "mvt|mvt --footprint 64M"
  "bfs|bfs --footprint 64M"
  "cfd|cfd --footprint 64M --param iters=2"
  "mm-tiled|mm-tiled --footprint 48M"
  "srad|srad --footprint 96M --param iters=2"
  "gemv|gemv --footprint 128M --param iters=3"
)
if [[ -n "${WORKLOADS:-}" ]]; then
  mapfile -t workloads <<<"$WORKLOADS"
else
  workloads=("${default_workloads[@]}")
fi

rows="$work/rows.tsv"
: >"$rows"
for w in "${workloads[@]}"; do
  name=${w%%|*}
  read -r -a gen <<<"${w#*|}"
  trace="$work/$name.uvt"
  [[ -f "$trace" ]] || "$uvmsim" gen "${gen[@]}" -o "$trace" >/dev/null
  curve="$work/$name.$schedule.csv"
  /usr/bin/time -f "%e" -o "$work/$name.$schedule.mrc.time" "$uvmsim" analyze --mrc "$trace" \
    --gpu "$gpu" --schedule "$schedule" -o "$curve" >"$work/$name.$schedule.mrc.txt"
  for x in $levels; do
    stats="$work/$name.$x.json"
    [[ -f "$stats" ]] || "$uvmsim" run --gpu "$gpu" --trace "$trace" --eviction "$eviction" \
      --oversub "$x" -q --stats-out "$stats" >/dev/null
    printf '%s\t%s\t%s\t%s\n' "$name" "$x" "$stats" "$curve" >>"$rows"
  done
done

python3 - "$rows" <<'EOF'
import csv, json, math, sys

print("| workload | --oversub | chunks | evictions sim | evictions MRC | error | HtoD MiB sim | HtoD MiB MRC | error |")
print("|---|---|---|---|---|---|---|---|---|")
errs_e, errs_h = [], []
for line in open(sys.argv[1]):
    name, x, stats, curve = line.rstrip("\n").split("\t")
    s = json.load(open(stats))
    chunks = s["memory"]["capacity_chunks"]
    row = next(r for r in csv.DictReader(open(curve)) if int(r["chunks"]) == chunks)
    ev_s, ev_m = s["evictions"], float(row["evictions"])
    h_s, h_m = s["htod_bytes"] / 2**20, float(row["htod_bytes"]) / 2**20

    def err(sim, est):
        if sim == 0:
            return "exact" if est == 0 else "n/a (sim 0)"
        return "%+.0f %%" % (100.0 * (est - sim) / sim)

    if ev_s:
        errs_e.append(abs(ev_m - ev_s) / ev_s)
    if h_s:
        errs_h.append(abs(h_m - h_s) / h_s)
    print("| %s | %s | %d | %d | %.0f | %s | %.0f | %.0f | %s |"
          % (name, x, chunks, ev_s, ev_m, err(ev_s, ev_m), h_s, h_m, err(h_s, h_m)))
if errs_e:
    errs_e.sort()
    errs_h.sort()
    print()
    print("evictions: median |error| %.0f %%, max %.0f %% over %d points; HtoD bytes: median "
          "%.0f %%, max %.0f %%"
          % (100 * errs_e[len(errs_e) // 2], 100 * errs_e[-1], len(errs_e),
             100 * errs_h[len(errs_h) // 2], 100 * errs_h[-1]))
EOF
echo "(work directory: $work)" >&2
