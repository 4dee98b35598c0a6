#!/usr/bin/env bash
# RDM and GLM with the compiler's estimated launch counts against the same schemes with the
# exact future (the -oracle variants), at 50 % oversubscription on the workloads of
# docs/placement.md ("Estimate against oracle"). Prints one line per workload and a Markdown
# table of the workload/scheme pairs whose runs differ.
#   bash scripts/estimate_vs_oracle.sh [OUTDIR]     (default OUTDIR: estimate-vs-oracle)
# Environment: UVMSIM (default build/uvmsim), GPU (default gtx1080ti), OVERSUB (default 50),
# WORKLOADS (space-separated generator names; default: the 19 of docs/placement.md).
set -euo pipefail
cd "$(dirname "$0")/.."
uvmsim=${UVMSIM:-build/uvmsim}
gpu=${GPU:-gtx1080ti}
oversub=${OVERSUB:-50}
out=${1:-estimate-vs-oracle}
workloads=${WORKLOADS:-"bfs cfd backprop kmeans hotspot nn srad mvt bicg floyd-warshall gramschmidt lu fdtd-2d nw pathfinder fir radix-sort 2dconv alexnet"}
mkdir -p "$out"

for gen in $workloads; do
  trace="$out/$gen.uvt"
  [ -f "$trace" ] || "$uvmsim" gen "$gen" -o "$trace" >/dev/null
  for s in rdm rdm-oracle glm glm-oracle; do
    "$uvmsim" run --gpu "$gpu" --trace "$trace" --oversub "$oversub" --placement "$s" \
      --stats-out "$out/${gen}_${s}.json" -q >/dev/null
  done
done

/usr/bin/env python3 - "$out" $workloads <<'EOF'
import json, sys
out, names = sys.argv[1], sys.argv[2:]
rows = []
for w in names:
    line = [w]
    for scheme in ("rdm", "glm"):
        est = json.load(open(f"{out}/{w}_{scheme}.json"))
        ora = json.load(open(f"{out}/{w}_{scheme}-oracle.json"))
        same = all(est[k] == ora[k] for k in ("sim_time_ns", "remote_accesses", "gpu_faults",
                                              "evictions", "htod_bytes"))
        line.append(f"{scheme} {'same' if same else 'differs'}")
        if not same:
            o, e = ora["sim_time_ns"] / 1e6, est["sim_time_ns"] / 1e6
            rows.append(f"| {w} | {scheme} | {o:.2f} | {e:.2f} ({100 * (e / o - 1):+.1f} %) | "
                        f"{ora['remote_accesses']} → {est['remote_accesses']} |")
    print("  ".join(line), file=sys.stderr)
print("| workload | scheme | oracle ms | estimate ms | remote accesses (oracle → estimate) |")
print("|---|---|---:|---:|---|")
print("\n".join(rows))
EOF
