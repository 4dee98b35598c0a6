#!/usr/bin/env bash
# OPT's cost against LRU's on the same traces (issue 16, item 2; docs/policies.md, "Oracles"):
# for each workload, generates the trace at FOOTPRINT, runs `uvmsim run --eviction lru` and
# `--eviction opt` at OVERSUB and prints a markdown table of CPU time (user + system), the
# OPT/LRU ratio, peak RSS and evictions. Interleaves the two runs per workload so that the
# machine's load hits both alike; the load average is printed first.
#
#   scripts/opt-vs-lru.sh [BUILD_DIR] [WORKDIR]
#
# Environment: FOOTPRINT (default 1G), OVERSUB (default 50), GPU (default titanv), WORKLOADS
# (space-separated generator names, each optionally name:param=v,param=v; default below),
# OPT_SETS (extra --set arguments for OPT, e.g. "policy.opt.tmpdir=/scratch").
set -euo pipefail
build=${1:-build}
work=${2:-$(mktemp -d /tmp/uvmsim-opt-XXXXXX)}
footprint=${FOOTPRINT:-1G}
oversub=${OVERSUB:-50}
gpu=${GPU:-titanv}
uvmsim="$build/uvmsim"
read -r -a workloads <<<"${WORKLOADS:-stream:iters=4 blackscholes:iters=2 regular random mvt atax bicg gemv bfs cfd srad nn kmeans backprop pathfinder fir hotspot 2dconv fdtd-2d}"
read -r -a opt_sets <<<"${OPT_SETS:-}"
mkdir -p "$work"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores); footprint $footprint, --oversub $oversub, $gpu"
echo
echo "| workload | accesses | LRU CPU s | OPT CPU s | OPT / LRU | LRU peak RSS MiB | OPT peak RSS MiB | LRU evictions | OPT evictions | OPT disk MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for w in "${workloads[@]}"; do
  name=${w%%:*}
  params=()
  if [[ "$w" == *:* ]]; then
    IFS=, read -r -a kv <<<"${w#*:}"
    for p in "${kv[@]}"; do params+=(--param "$p"); done
  fi
  trace="$work/$name-$footprint.uvt"
  [[ -f "$trace" ]] || "$uvmsim" gen "$name" --footprint "$footprint" "${params[@]}" -o "$trace" >/dev/null
  for e in lru opt; do
    sets=()
    if [[ $e == opt ]]; then for s in "${opt_sets[@]}"; do sets+=(--set "$s"); done; fi
    /usr/bin/time -f "%U %S %M" -o "$work/$name.$e.time" "$uvmsim" run --gpu "$gpu" \
      --trace "$trace" --oversub "$oversub" --eviction "$e" "${sets[@]}" -q \
      --stats-out "$work/$name.$e.json" >/dev/null
  done
  python3 - "$name" "$work/$name" <<'EOF'
import json, sys
name, base = sys.argv[1], sys.argv[2]
def t(e):
    u, s, m = open("%s.%s.time" % (base, e)).read().split()[-3:]
    return float(u) + float(s), int(m) / 1024
lru, opt = json.load(open(base + ".lru.json")), json.load(open(base + ".opt.json"))
(tl, ml), (to, mo) = t("lru"), t("opt")
disk = opt.get("policies", {}).get("eviction", {}).get("disk_bytes", 0) / 2**20
print("| %s | %d | %.2f | %.2f | %.2fx | %.0f | %.0f | %d | %d | %.0f |"
      % (name, lru["accesses"], tl, to, to / tl if tl else float("nan"), ml, mo,
         lru["evictions"], opt["evictions"], disk))
EOF
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); work directory: $work"
