#!/usr/bin/env bash
# Generates every workload of the library at its default footprint and simulates it at 50 %
# oversubscription, printing one markdown table row per workload: managed footprint, trace
# records, generation time and speed, `uvmsim run` wall time, GPU faults and evictions.
#   usage: bash scripts/workload_table.sh [GPU preset, default titanv] [workload ...]
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/uvmsim
GPU=${1:-titanv}
shift || true
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
NAMES=("$@")
if [ ${#NAMES[@]} -eq 0 ]; then
  mapfile -t NAMES < <($B gen --list | awk '/^  [a-z0-9]/ && $1 != "touch" {print $1}')
fi
echo "| workload | footprint | records | gen s | M records/s | run s (50 %) | GPU faults | evictions |"
echo "|---|---|---|---|---|---|---|---|"
for g in "${NAMES[@]}"; do
  out=$($B gen "$g" -o "$WORK/t.uvt")
  records=$(echo "$out" | head -1 | sed -E 's/.* ([0-9]+) records.*/\1/')
  read -r gen_s speed < <(echo "$out" | tail -1 | sed -E 's/generation: ([0-9.]+) s, ([0-9.]+) M.*/\1 \2/')
  fp=$($B trace info "$WORK/t.uvt" --json | python3 -c \
    "import json,sys; print(sum(a['size'] for a in json.load(sys.stdin)['allocations']) >> 20)")
  start=$(date +%s.%N)
  run=$($B run --gpu "$GPU" --trace "$WORK/t.uvt" --oversub 50)
  end=$(date +%s.%N)
  faults=$(echo "$run" | awk '/GPU faults/ {print $4}')
  evictions=$(echo "$run" | awk '/evictions/ {print $3}')
  printf "| %s | %s MiB | %s | %s | %s | %.1f | %s | %s |\n" "$g" "$fp" "$records" "$gen_s" "$speed" \
    "$(echo "$end - $start" | bc)" "$faults" "$evictions"
done
