#!/usr/bin/env bash
# Measures the simulator's own speed (simulated warp accesses per wall-clock second) on the
# traces the README reports: regular and random page-touch kernels at 0 % and 50 %
# oversubscription, and a TLB-hit-dominated STREAM triad. Usage:
#   bash scripts/throughput.sh [FOOTPRINT]      (default 4G for the page-touch kernels)
#   REPEAT=5 bash scripts/throughput.sh          (median and range of 5 runs per trace)
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
repeat=${REPEAT:-1}
printf '%-34s %10s %12s %22s\n' trace accesses "median M/s" "range M/s"
run() {
  local name=$1; shift
  for i in $(seq "$repeat"); do
    $B run --gpu titanv --stats-out "$dir/s$i.json" -q "$@" >/dev/null
  done
  python3 - "$name" "$dir" "$repeat" <<'PY'
import json, sys, statistics
runs = [json.load(open(f"{sys.argv[2]}/s{i}.json")) for i in range(1, int(sys.argv[3]) + 1)]
rates = sorted(r["accesses_per_second"] / 1e6 for r in runs)
print(f"{sys.argv[1]:<34} {runs[0]['accesses']:>10} {statistics.median(rates):>12.2f} "
      f"{rates[0]:>10.2f} .. {rates[-1]:<8.2f}")
PY
}
run "regular $fp, oversub 0%" --trace "$dir/regular.uvt" --oversub 0
run "regular $fp, oversub 50%" --trace "$dir/regular.uvt" --oversub 50
run "random $fp, oversub 0%" --trace "$dir/random.uvt" --oversub 0
run "random $fp, oversub 50%" --trace "$dir/random.uvt" --oversub 50
run "stream 768M x4 (1 elem/thread)" --trace "$dir/stream.uvt"
run "stream 768M x4 (grid-stride 160)" --trace "$dir/stream-gs.uvt"
