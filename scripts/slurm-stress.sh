#!/usr/bin/env bash
# Repeats the real-Slurm sweep tests with every core busy, as in issue 14 (a re-attach that only
# failed on a loaded machine). Each repetition starts its own local Slurm cluster
# (scripts/slurm-local.sh, via the tests).
#
#   scripts/slurm-stress.sh [BUILD_DIR] [REPEATS] [FILTER]
#     BUILD_DIR  a configured and built tree (default: build; build-asan for the sanitizer build)
#     REPEATS    how many times to run the tests (default: 20)
#     FILTER     gtest filter (default: SlurmSweep.*)
#
# The load: one `yes >/dev/null` per core (nproc), started here and stopped when the script
# exits. Stops at the first failure (its output is kept in BUILD_DIR/slurm-stress-N.log) and
# exits 1; prints "N/N passed" and exits 0 otherwise.
set -euo pipefail
build=${1:-build}
repeats=${2:-20}
filter=${3:-SlurmSweep.*}
tests="$build/uvmsim_tests"
[[ -x $tests ]] || { echo "slurm-stress: $tests: not built" >&2; exit 2; }

load=()
cleanup() { for p in "${load[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for _ in $(seq "$(nproc)"); do
  yes >/dev/null &
  load+=($!)
done
echo "slurm-stress: ${#load[@]} busy loop(s) (yes >/dev/null) on $(nproc) core(s); $repeats run(s) of $filter in $build"

for i in $(seq "$repeats"); do
  log="$build/slurm-stress-$i.log"
  start=$(date +%s)
  if ! "$tests" --gtest_filter="$filter" >"$log" 2>&1; then
    echo "slurm-stress: run $i FAILED after $(($(date +%s) - start)) s (log: $log)"
    grep -E '^\[  FAILED|Failure|error' "$log" | head -20
    exit 1
  fi
  echo "slurm-stress: run $i passed ($(($(date +%s) - start)) s)"
  rm -f "$log"
done
echo "slurm-stress: $repeats/$repeats passed"
