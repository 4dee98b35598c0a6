#!/usr/bin/env bash
# Paired speed comparison of two uvmsim binaries on the README's throughput traces: runs OLD and
# NEW alternately (so both see the same machine load) and reports the median of accesses per
# CPU-second (user + system time of the whole process), which a loaded machine disturbs far less
# than wall time. Traces are generated once, by NEW.
#   bash scripts/throughput-compare.sh OLD NEW [FOOTPRINT] [REPEAT]   (defaults 1G, 3)
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_UVMSIM NEW_UVMSIM [FOOTPRINT] [REPEAT]" >&2; exit 2; }
old=$1 new=$2 fp=${3:-1G} repeat=${4:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$new" gen regular --footprint "$fp" -o "$dir/regular.uvt" >/dev/null
"$new" gen random --footprint "$fp" -o "$dir/random.uvt" >/dev/null
"$new" gen stream --footprint 768M --param iters=4 -o "$dir/stream.uvt" >/dev/null
# Prints "ACCESSES CPU_SECONDS" of one run.
one() {
  local bin=$1; shift
  /usr/bin/time -f '%U %S' -o "$dir/time" "$bin" run --gpu titanv -q --stats-out "$dir/s.json" "$@" \
    >/dev/null
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['accesses'], \
sum(map(float, open(sys.argv[2]).read().split()[-2:])))" "$dir/s.json" "$dir/time"
}
printf '%-28s %12s %14s %14s %8s\n' trace accesses "old M acc/CPU-s" "new M acc/CPU-s" new/old
compare() {
  local name=$1; shift
  local o=() n=() acc=0
  for _ in $(seq "$repeat"); do
    read -r acc t < <(one "$old" "$@"); o+=("$t")
    read -r acc t < <(one "$new" "$@"); n+=("$t")
  done
  python3 - "$name" "$acc" "${o[*]}" "${n[*]}" <<'PY'
import statistics, sys
name, acc = sys.argv[1], int(sys.argv[2])
o = statistics.median(map(float, sys.argv[3].split()))
n = statistics.median(map(float, sys.argv[4].split()))
print(f"{name:<28} {acc:>12} {acc / o / 1e6:>14.2f} {acc / n / 1e6:>14.2f} {o / n:>8.2f}")
PY
}
compare "regular $fp, oversub 0%" --trace "$dir/regular.uvt" --oversub 0
compare "regular $fp, oversub 50%" --trace "$dir/regular.uvt" --oversub 50
compare "random $fp, oversub 0%" --trace "$dir/random.uvt" --oversub 0
compare "random $fp, oversub 50%" --trace "$dir/random.uvt" --oversub 50
compare "stream 768M x4" --trace "$dir/stream.uvt"
