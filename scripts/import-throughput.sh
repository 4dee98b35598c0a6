#!/usr/bin/env bash
# Measures `uvmsim trace import text` on a synthetic access list (scripts/gen_access_list.py: a
# streaming kernel printed wave-interleaved, as a tracer prints it): wall time, input rate, peak
# resident memory (GNU time) and temporary disk use, for the README's "Importing traces" table.
#   bash scripts/import-throughput.sh [SIZE] [WORKDIR]      # default 10G in build/import-bench
# Needs SIZE of free disk for the input, plus the trace and the sorted runs (about SIZE / 8).
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-10G}
work=${2:-build/import-bench}
mkdir -p "$work"
in="$work/synthetic-$size.accesses"
if [ ! -s "$in" ]; then
  echo "== generating $in"
  python3 scripts/gen_access_list.py "$size" > "$in.tmp" && mv "$in.tmp" "$in"
fi
ls -l "$in"
echo "== importing (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
/usr/bin/time -v build/uvmsim trace import text "$in" -o "$work/synthetic.uvt" --progress lines \
  2> "$work/time.log" | tee "$work/import.log"
grep -E "trace import|^[[].*(read|write)" "$work/time.log" || true
grep -E "Elapsed|Maximum resident|User time|System time" "$work/time.log"
build/uvmsim trace info "$work/synthetic.uvt" | grep -E "^(launches|records|accesses|compressed):"
rm -f "$work/synthetic.uvt"
