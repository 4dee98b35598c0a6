#!/usr/bin/env bash
# Side-by-side speed of uvmsim against libCacheSim, the standard trace-driven cache simulator
# (issue 16, item 1). For each trace of the README's comparison table it
#  1. generates the uvmsim trace (titanv, 50 % oversubscription);
#  2. converts it to the 4 KB page stream libCacheSim reads fastest (oracleGeneral binary,
#     24 bytes per request: one request per simulated access, `repeat` folded records expanded,
#     in the trace's threadblock / warp / program order);
#  3. runs, REPEAT times and interleaved (uvmsim, libCacheSim, libCacheSim start-up), the full
#     uvmsim GPU + driver simulation and libCacheSim's `cachesim ... LRU SIZE` with the cache
#     sized to the HBM capacity uvmsim simulated (its stats JSON, memory.capacity_bytes);
#  4. prints, per trace, the median accesses (requests) per CPU-second: user + system of the
#     whole process for uvmsim (start-up included), and for libCacheSim minus the CPU time of
#     the same command on a trace of the first request alone (its start-up and cache set-up,
#     ~0.5 CPU-s; cachesim's -n does not shorten a run).
# CPU time, not wall time: the machine is usually shared, and CPU seconds move far less with
# load (the load average before each trace is printed). Usage:
#   CACHESIM=/path/to/libCacheSim/build/bin/cachesim bash scripts/libcachesim-compare.sh
#   REPEAT=5 UVMSIM=build/uvmsim CACHESIM=... bash scripts/libcachesim-compare.sh [--quick]
# --quick uses 1/16 of the page-touch footprints (a check that the harness works).
# libCacheSim is not a dependency of uvmsim: build it from https://github.com/1a1a11a/libCacheSim
# (cmake + ninja; needs libglib2.0-dev and libzstd-dev) and point CACHESIM at its `cachesim`.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${UVMSIM:-build/uvmsim}
# Debian's interpreter (python3-numpy, python3-zstandard), not the first python3 on PATH.
PY=${PYTHON:-/usr/bin/python3}
C=${CACHESIM:-}
repeat=${REPEAT:-3}
big=4G
small_bfs=32M
if [ "${1:-}" = "--quick" ]; then big=256M; fi
if [ -z "$C" ] || [ ! -x "$C" ]; then
  echo "libcachesim-compare: set CACHESIM to libCacheSim's cachesim binary (see the header)" >&2
  exit 2
fi
C=$(realpath "$C")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "uvmsim: $B ($("$B" --version 2>/dev/null | head -1)); libCacheSim: $C; $(nproc) cores; REPEAT=$repeat"
gen() { "$B" gen "$@" >/dev/null; }
gen regular --footprint "$big" -o "$dir/regular.uvt"
gen random --footprint "$big" -o "$dir/random.uvt"
gen stream --footprint 768M --param iters=4 -o "$dir/stream.uvt"
gen gemm --footprint 4M -o "$dir/gemm.uvt"
gen bfs --footprint "$small_bfs" -o "$dir/bfs.uvt"

# The trace's accesses as libCacheSim requests (oracleGeneral: u32 time, u64 object id,
# u32 size, i64 next access = -1), written chunk by chunk.
to_lcs() {
  PYTHONPATH=python "$PY" - "$1" "$2" <<'PY'
import sys
import numpy as np
from uvmsim import open_trace
src, dst = sys.argv[1], sys.argv[2]
dt = np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")], align=False)
n = 0
with open_trace(src) as t, open(dst, "wb") as out:
    for launch in range(len(t.launches)):
        for rec in t.records(launch):
            pages = np.repeat(rec["va"] >> np.uint64(12), rec["repeat"].astype(np.int64))
            r = np.empty(len(pages), dtype=dt)
            r["t"] = (np.arange(n, n + len(pages)) & 0xFFFFFFFF).astype(np.uint32)
            r["id"] = pages
            r["size"] = 4096
            r["next"] = -1
            out.write(r.tobytes())
            n += len(pages)
print(n)
PY
}

printf '%-28s %5s %12s  %-18s %-18s %-8s %s\n' trace load accesses "uvmsim M acc/CPU-s" \
  "lcs M req/CPU-s" "ratio" "lcs miss ratio"
cpu_of() { awk '{print $1 + $2}' "$1"; }
compare() {
  local name=$1 trace=$2
  "$B" run --gpu titanv --oversub 50 --trace "$trace" -q --stats-out "$dir/probe.json" >/dev/null
  local cap acc req
  cap=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['memory']['capacity_bytes'])" "$dir/probe.json")
  acc=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['accesses'])" "$dir/probe.json")
  req=$(to_lcs "$trace" "$dir/lcs.oracleGeneral.bin")
  if [ "$req" != "$acc" ]; then
    echo "libcachesim-compare: $name: $req requests converted, uvmsim simulated $acc accesses" >&2
    exit 1
  fi
  head -c 24 "$dir/lcs.oracleGeneral.bin" >"$dir/one.oracleGeneral.bin"
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  : >"$dir/u" && : >"$dir/l" && : >"$dir/l0"
  for i in $(seq "$repeat"); do
    /usr/bin/time -f '%U %S' -o "$dir/t" "$B" run --gpu titanv --oversub 50 --trace "$trace" -q \
      >/dev/null
    cpu_of "$dir/t" >>"$dir/u"
    # cachesim writes a result file into its working directory: run it in the scratch one.
    (cd "$dir" && /usr/bin/time -f '%U %S' -o "$dir/t" "$C" "$dir/lcs.oracleGeneral.bin" \
      oracleGeneralBin LRU "$cap" >"$dir/lcs.out" 2>&1)
    cpu_of "$dir/t" >>"$dir/l"
    (cd "$dir" && /usr/bin/time -f '%U %S' -o "$dir/t" "$C" "$dir/one.oracleGeneral.bin" \
      oracleGeneralBin LRU "$cap" >/dev/null 2>&1)
    cpu_of "$dir/t" >>"$dir/l0"
  done
  "$PY" - "$name" "$load" "$acc" "$dir" <<'PY'
import re, statistics, sys
name, load, acc, d = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
u = [float(x) for x in open(f"{d}/u")]
l = [float(x) for x in open(f"{d}/l")]
l0 = [float(x) for x in open(f"{d}/l0")]
mu = statistics.median(acc / c / 1e6 for c in u)
ml = statistics.median(acc / max(a - b, 1e-3) / 1e6 for a, b in zip(l, l0))
m = re.findall(r"miss ratio (\d+\.\d+)", open(f"{d}/lcs.out").read())
miss = m[-1] if m else "?"
print(f"{name:<28} {load:>5} {acc:>12}  {mu:<18.2f} {ml:<18.2f} {mu / ml:<8.2f} {miss}")
PY
}
compare "regular $big" "$dir/regular.uvt"
compare "random $big" "$dir/random.uvt"
compare "stream 768M x4" "$dir/stream.uvt"
compare "gemm 4M" "$dir/gemm.uvt"
compare "bfs $small_bfs" "$dir/bfs.uvt"
