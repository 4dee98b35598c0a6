#!/usr/bin/env bash
# Measures the simulator's own speed on the traces the README's speed table reports: regular and
# random page-touch kernels at 0 % and 50 % oversubscription (random at 50 % is the heavy-faulting
# case), and a TLB-hit-dominated STREAM triad. For each trace it prints accesses/s and fault
# entries/s (fault-buffer entries, `gpu_faults`, per second), each as min / median / max of
# REPEAT runs, per wall-clock second and per CPU-second (user + system of the whole process,
# start-up included; far less disturbed by other jobs than wall time), and the machine's load
# average just before that trace's runs. Usage:
#   bash scripts/throughput.sh [FOOTPRINT]      (default 4G for the page-touch kernels)
#   REPEAT=5 bash scripts/throughput.sh 1G      (min/median/max of 5 runs per trace)
#   UVMSIM=/path/to/uvmsim bash scripts/throughput.sh
set -euo pipefail
cd "$(dirname "$0")/.."
B=${UVMSIM:-build/uvmsim}
fp=${1:-4G}
repeat=${REPEAT:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "binary: $B ($("$B" --version 2>/dev/null | head -1)); $(nproc) cores; load before generation: $(cut -d' ' -f1-3 /proc/loadavg)"
$B gen regular --footprint "$fp" -o "$dir/regular.uvt" >/dev/null
$B gen random --footprint "$fp" -o "$dir/random.uvt" >/dev/null
$B gen stream --footprint 768M --param iters=4 -o "$dir/stream.uvt" >/dev/null
$B gen stream --footprint 768M --param iters=4 --param grid=160 -o "$dir/stream-gs.uvt" >/dev/null
printf '%-32s %6s %10s %11s  %-22s %-22s %-22s %-22s\n' trace load accesses "fault ent." \
  "M acc/s min/med/max" "M acc/CPU-s" "M fault ent/s" "M fault ent/CPU-s"
run() {
  local name=$1; shift
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  for i in $(seq "$repeat"); do
    python3 scripts/cpu_seconds.py "$dir/t$i" \
      $B run --gpu titanv --stats-out "$dir/s$i.json" -q "$@" >/dev/null
  done
  python3 - "$name" "$dir" "$repeat" "$load" <<'PY'
import json, sys, statistics
name, d, n, load = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
runs = [json.load(open(f"{d}/s{i}.json")) for i in range(1, n + 1)]
cpu = [sum(map(float, open(f"{d}/t{i}").read().split()[-2:])) for i in range(1, n + 1)]
acc, ent = runs[0]["accesses"], runs[0]["gpu_faults"]
def mmm(xs):
    xs = sorted(xs)
    return f"{xs[0]:.2f}/{statistics.median(xs):.2f}/{xs[-1]:.2f}"
wall = [r["wall_seconds"] for r in runs]
print(f"{name:<32} {load:>6} {acc:>10} {ent:>11}  "
      f"{mmm([acc / w / 1e6 for w in wall]):<22} {mmm([acc / c / 1e6 for c in cpu]):<22} "
      f"{mmm([ent / w / 1e6 for w in wall]):<22} {mmm([ent / c / 1e6 for c in cpu]):<22}")
PY
}
run "regular $fp, oversub 0%" --trace "$dir/regular.uvt" --oversub 0
run "regular $fp, oversub 50%" --trace "$dir/regular.uvt" --oversub 50
run "random $fp, oversub 0%" --trace "$dir/random.uvt" --oversub 0
run "random $fp, oversub 50%" --trace "$dir/random.uvt" --oversub 50
run "stream 768M x4 (1 elem/thread)" --trace "$dir/stream.uvt"
run "stream 768M x4 (grid-stride 160)" --trace "$dir/stream-gs.uvt"
