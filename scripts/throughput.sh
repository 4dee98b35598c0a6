#!/usr/bin/env bash
# Measures the simulator's own speed (simulated warp accesses per wall-clock second) on the
# traces the README reports: regular and random page-touch kernels at 0 % and 50 %
# oversubscription, and a TLB-hit-dominated STREAM triad. Usage:
#   bash scripts/throughput.sh [FOOTPRINT]      (default 4G for the page-touch kernels)
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/uvmsim
fp=${1:-4G}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
$B gen regular --footprint "$fp" -o "$dir/regular.uvt" >/dev/null
$B gen random --footprint "$fp" -o "$dir/random.uvt" >/dev/null
$B gen stream --footprint 768M --param iters=4 -o "$dir/stream.uvt" >/dev/null
$B gen stream --footprint 768M --param iters=4 --param grid=160 -o "$dir/stream-gs.uvt" >/dev/null
printf '%-34s %12s %10s %14s\n' trace accesses wall_s accesses/s
run() {
  local name=$1; shift
  $B run --gpu titanv --stats-out "$dir/s.json" -q "$@" >/dev/null
  python3 - "$name" "$dir/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[2]))
print(f"{sys.argv[1]:<34} {s['accesses']:>12} {s['wall_seconds']:>10.3f} {s['accesses_per_second']/1e6:>12.2f} M")
PY
}
run "regular $fp, oversub 0%" --trace "$dir/regular.uvt" --oversub 0
run "regular $fp, oversub 50%" --trace "$dir/regular.uvt" --oversub 50
run "random $fp, oversub 0%" --trace "$dir/random.uvt" --oversub 0
run "random $fp, oversub 50%" --trace "$dir/random.uvt" --oversub 50
run "stream 768M x4 (1 elem/thread)" --trace "$dir/stream.uvt"
run "stream 768M x4 (grid-stride 160)" --trace "$dir/stream-gs.uvt"
