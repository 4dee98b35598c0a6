#!/usr/bin/env bash
# Paired speed comparison of two uvmsim binaries on the README's throughput traces: runs OLD and
# NEW alternately (so both see the same machine load) and reports the median of accesses per
# CPU-second (user + system time of the whole process, to the microsecond from the kernel's
# rusage: scripts/cpu_seconds.py), which a loaded machine disturbs far less than wall time.
# Each binary generates the traces it runs, once, with the same generators and
# parameters (the trace format may differ between the two versions), and runs with its own
# presets: against an old commit the two simulate what each version models, which is what the
# README's "within 20 % of the old speed" comparisons ask.
#   bash scripts/throughput-compare.sh OLD NEW [FOOTPRINT] [REPEAT]   (defaults 1G, 3)
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_UVMSIM NEW_UVMSIM [FOOTPRINT] [REPEAT]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
old=$(realpath "$1") new=$(realpath "$2") fp=${3:-1G} repeat=${4:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Run from the scratch directory: a binary looks for presets under ./configs first, and each
# must find its own (those of the source tree it was built from).
cd "$dir"
echo "load before generation: $(cut -d' ' -f1-3 /proc/loadavg)"
for v in old new; do
  bin=$old
  [ "$v" = new ] && bin=$new
  "$bin" gen regular --footprint "$fp" -o "$dir/$v-regular.uvt" >/dev/null
  "$bin" gen random --footprint "$fp" -o "$dir/$v-random.uvt" >/dev/null
  "$bin" gen stream --footprint 768M --param iters=4 -o "$dir/$v-stream.uvt" >/dev/null
  "$bin" gen stream --footprint 768M --param iters=4 --param grid=160 \
    -o "$dir/$v-stream-gs.uvt" >/dev/null
done
# Prints "ACCESSES CPU_SECONDS" of one run.
one() {
  local bin=$1; shift
  python3 "$here/cpu_seconds.py" "$dir/time" "$bin" run --gpu titanv -q --stats-out "$dir/s.json" \
    "$@" >/dev/null
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['accesses'], \
float(open(sys.argv[2]).read()))" "$dir/s.json" "$dir/time"
}
printf '%-28s %12s %14s %14s %8s\n' trace accesses "old M acc/CPU-s" "new M acc/CPU-s" new/old
# compare NAME TRACE ARGS...: TRACE is the file name after the version prefix.
compare() {
  local name=$1 trace=$2; shift 2
  local o=() n=() acc=0
  for _ in $(seq "$repeat"); do
    read -r acc t < <(one "$old" --trace "$dir/old-$trace" "$@"); o+=("$t")
    read -r acc t < <(one "$new" --trace "$dir/new-$trace" "$@"); n+=("$t")
  done
  python3 - "$name" "$acc" "${o[*]}" "${n[*]}" <<'PY'
import statistics, sys
name, acc = sys.argv[1], int(sys.argv[2])
o = statistics.median(map(float, sys.argv[3].split()))
n = statistics.median(map(float, sys.argv[4].split()))
print(f"{name:<28} {acc:>12} {acc / o / 1e6:>14.2f} {acc / n / 1e6:>14.2f} {o / n:>8.2f}")
PY
}
compare "regular $fp, oversub 0%" regular.uvt --oversub 0
compare "regular $fp, oversub 50%" regular.uvt --oversub 50
compare "random $fp, oversub 0%" random.uvt --oversub 0
compare "random $fp, oversub 50%" random.uvt --oversub 50
compare "stream 768M x4" stream.uvt
compare "stream 768M x4, grid-stride" stream-gs.uvt
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
