#!/usr/bin/env bash
# Runs the whole expectation suite (configs/expectations) with two uvmsim binaries and compares the
# statistics of every run bit for bit (the `stats` object of each point, without the wall-clock
# fields). Used to show that a refactor changes no simulated result.
#   bash scripts/compare-expectation-stats.sh OLD_UVMSIM NEW_UVMSIM [SUITE_DIR]
# Exit 0 when every run is identical; 1 (and the differing keys) otherwise.
# With ALLOW_NEW_KEYS=1, keys only the new binary writes (added counters) are listed once and not
# counted as differences: every value both binaries write must still be identical.
set -euo pipefail
old=$1 new=$2 suite=${3:-"$(dirname "$0")/../configs/expectations"}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$old" check "$suite" --keep "$dir/old" --progress none >"$dir/old.log" 2>&1 || true
"$new" check "$suite" --keep "$dir/new" --progress none >"$dir/new.log" 2>&1 || true
python3 - "$dir/old/points" "$dir/new/points" <<'PY'
import json, os, sys
# Fields that measure the host, not the simulation.
volatile = {"accesses_per_second", "wall_seconds", "faults_per_second", "fault_entries_per_second"}
def load(d):
    out = {}
    for f in sorted(os.listdir(d)):
        p = json.load(open(os.path.join(d, f)))
        s = {k: v for k, v in p["stats"].items() if k not in volatile}
        s.get("trace", {}).pop("path", None)  # the two runs write their traces to different dirs
        out[p["label"]] = s
    return out
old, new = load(sys.argv[1]), load(sys.argv[2])
allow_new = os.environ.get("ALLOW_NEW_KEYS") == "1"
added = set()
def diff(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        keys = set(a) | set(b)
        if allow_new:
            for k in set(b) - set(a):
                added.add(f"{path}.{k}" if path else k)
            keys = set(a)
        return [d for k in sorted(keys) for d in diff(a.get(k), b.get(k), f"{path}.{k}" if path else k)]
    return [] if a == b else [f"{path}: {json.dumps(a)[:80]} -> {json.dumps(b)[:80]}"]
bad = 0
for label in sorted(set(old) | set(new)):
    if label not in old or label not in new:
        print(f"DIFF {label}: only in {'old' if label in old else 'new'}"); bad += 1; continue
    d = diff(old[label], new[label])
    if d:
        bad += 1
        print(f"DIFF {label}: {len(d)} field(s)")
        for x in d[:8]: print("   ", x)
if added:
    print("keys only the new binary writes (ALLOW_NEW_KEYS=1): " + ", ".join(sorted(added)))
print(f"compared {len(set(old) & set(new))} runs: {len(set(old) & set(new)) - bad} identical, {bad} different")
sys.exit(1 if bad else 0)
PY
