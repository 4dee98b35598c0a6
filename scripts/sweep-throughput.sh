#!/usr/bin/env bash
# Sweep throughput against the number of local worker processes: runs every point of a sweep spec
# (default configs/sweeps/knobs.json, 72 points) with --jobs 1, 2, ... up to the CPU count, REPEAT
# times each (alternating, so background load hits all settings alike), and prints points per
# second (median and range). Traces are generated once beforehand and not timed.
#   bash scripts/sweep-throughput.sh [SPEC]            REPEAT=3 JOBS="1 2" by default
set -euo pipefail
cd "$(dirname "$0")/.."
spec=${1:-configs/sweeps/knobs.json}
repeat=${REPEAT:-3}
jobs_list=${JOBS:-$(seq 1 "$(nproc)" | tr '\n' ' ')}
bin=${UVMSIM:-build/uvmsim}
out=$(mktemp -d /tmp/uvmsim-throughput.XXXXXX)
trap 'rm -rf "$out"' EXIT

"$bin" sweep "$spec" --out "$out" --progress none >/dev/null # traces + a warm-up run
points=$("$bin" sweep "$spec" --out "$out" --list | tail -n 1 | cut -d' ' -f1)
declare -A rates
for ((r = 0; r < repeat; r++)); do
  for j in $jobs_list; do
    t0=$(date +%s.%N)
    "$bin" sweep "$spec" --out "$out" --rerun --jobs "$j" --progress none >/dev/null
    t1=$(date +%s.%N)
    rates[$j]+="$(awk -v p="$points" -v a="$t0" -v b="$t1" 'BEGIN { print p / (b - a) }') "
  done
done
echo "sweep $spec: $points points, $repeat run(s) per setting, $(nproc) CPUs"
for j in $jobs_list; do
  # shellcheck disable=SC2086
  sorted=$(printf '%s\n' ${rates[$j]} | sort -g)
  n=$(echo "$sorted" | wc -l)
  med=$(echo "$sorted" | sed -n "$(((n + 1) / 2))p")
  printf -- "--jobs %-3s %7.1f points/s (range %.1f-%.1f)\n" "$j" "$med" \
    "$(echo "$sorted" | head -n 1)" "$(echo "$sorted" | tail -n 1)"
done
