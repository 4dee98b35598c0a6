#!/usr/bin/env bash
# Grid-fit one knob against validation rows: runs `uvmsim validate` once per value and prints,
# per row, the simulated value and error factor at each value, then the geometric mean of the
# error factors over the rows every value compared (the quantity the presets' fitted knobs
# minimise; docs/validation.md, docs/driver-model.md "Local-reuse duplicates").
#
#   scripts/fit-knob.sh KNOB "V1 V2 ..." FILE|DIR... [-- extra validate options]
#   scripts/fit-knob.sh gpu.fault_write_interval_ns "100 500" \
#       configs/validation/allen-ge-ipdps21.json configs/validation/allen-ge-sc21.json
#
# UVMSIM (default build/uvmsim), JOBS (default 2) and SUBSET (default full) are read from the
# environment. Needs python3 (standard library only).
set -euo pipefail
if [[ $# -lt 3 ]]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
knob=$1
values=$2
shift 2
files=()
while [[ $# -gt 0 && $1 != -- ]]; do
  files+=("$1")
  shift
done
[[ ${1:-} == -- ]] && shift
uvmsim=${UVMSIM:-build/uvmsim}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for v in $values; do
  echo "fit-knob: $knob=$v" >&2
  # Exit status 1 only means a row left its bound; the table shows which.
  "$uvmsim" validate "${files[@]}" --subset "${SUBSET:-full}" --jobs "${JOBS:-2}" \
    --progress none --set "$knob=$v" --json "$out/$v.json" "$@" > "$out/$v.log" 2>&1 ||
    [[ $? -eq 1 && -s $out/$v.json ]] || { cat "$out/$v.log" >&2; exit 1; }
done
python3 - "$knob" "$out" $values <<'EOF'
import json, math, sys
knob, out, values = sys.argv[1], sys.argv[2], sys.argv[3:]
res = {}
for v in values:
    with open(f"{out}/{v}.json") as f:
        doc = json.load(f)
    for src in doc["sources"]:
        for r in src["rows"]:
            if r.get("simulated") is not None and r.get("error_factor") is not None:
                res.setdefault(r["id"], {})[v] = (r["simulated"], r["error_factor"], r["measured"])
common = [k for k, d in res.items() if all(v in d for v in values)]
w = max(len(k) for k in res) + 2
print(f"{'row (measured)':<{w + 12}}" + "".join(f"{' ' + knob + '=' + v:>34}" for v in values))
for k, d in res.items():
    m = next(iter(d.values()))[2]
    cells = "".join(f"{'%.4g x%.2f' % d[v][:2] if v in d else '-':>34}" for v in values)
    print(f"{k:<{w}}{'%.4g' % m:>12}" + cells)
geo = [math.exp(sum(math.log(res[k][v][1]) for k in common) / len(common)) for v in values]
print(f"{'geomean error, %d rows' % len(common):<{w + 12}}" + "".join(f"{'x%.3f' % g:>34}" for g in geo))
EOF
