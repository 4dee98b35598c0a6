#!/usr/bin/env bash
# Compares the placement schemes with the driver default at 50 % oversubscription on the
# workloads of the SUV and Li & Chapman papers; prints a Markdown table (docs/placement.md).
#   bash scripts/placement_table.sh [OUTDIR]        (default OUTDIR: placement-table)
# Environment: UVMSIM (default build/uvmsim), GPU (default gtx1080ti), OVERSUB (default 50).
set -euo pipefail
cd "$(dirname "$0")/.."
uvmsim=${UVMSIM:-build/uvmsim}
gpu=${GPU:-gtx1080ti}
oversub=${OVERSUB:-50}
out=${1:-placement-table}
mkdir -p "$out"

# name | gen arguments | extra run arguments
workloads=(
  "floyd-warshall|floyd-warshall|"
  "gramschmidt|gramschmidt|"
  "mvt|mvt|"
  "bicg|bicg|"
  "mm-tiled (8 SMs)|mm-tiled|--set gpu.num_sms=8"
  "bfs|bfs|"
  "cfd|cfd|"
)
schemes=(driver suv ac sc rlm glm glm-oracle rdm rdm-oracle object-lru host)

scheme_args() {
  case "$1" in
    ac | sc) echo "--policy-preset $1" ;;
    *) echo "--placement $1" ;;
  esac
}

echo "| workload | scheme | faults | evictions | HtoD MiB | DtoH MiB | remote accesses | sim time ms |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for w in "${workloads[@]}"; do
  IFS='|' read -r name gen extra <<<"$w"
  trace="$out/$gen.uvt"
  [ -f "$trace" ] || "$uvmsim" gen $gen -o "$trace" >/dev/null
  for s in "${schemes[@]}"; do
    stats="$out/${gen}_${s}.json"
    # shellcheck disable=SC2046
    "$uvmsim" run --gpu "$gpu" --trace "$trace" --oversub "$oversub" $(scheme_args "$s") $extra \
      --stats-out "$stats" -q >/dev/null
    python3 - "$stats" "$name" "$s" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
print("| %s | %s | %d | %d | %.1f | %.1f | %d | %.2f |" % (
    sys.argv[2], sys.argv[3], j["gpu_faults"], j["evictions"], j["htod_bytes"] / 2**20,
    j["dtoh_bytes"] / 2**20, j["remote_accesses"], j["sim_time_ns"] / 1e6))
EOF
  done
done
