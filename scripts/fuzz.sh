#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan) and runs them (docs/fuzzing.md).
#
#   bash scripts/fuzz.sh --tier parsers --seconds 5   # CI: each parser target 5 s, fails on findings
#   bash scripts/fuzz.sh --hours 8 --corpus ~/uvmsim-corpus [--parallel 2]
#                                                  # a campaign: every target in turn, 10-minute
#                                                  # slices, corpora kept (and grown) in --corpus
#   bash scripts/fuzz.sh --targets uvt,hints --seconds 60
#   bash scripts/fuzz.sh --list                    # the targets
#
# --nice N: scheduling priority of the fuzzers (default 19 for campaigns, 0 for --seconds).
# --tier parsers builds only uvmsim_fuzz_parsers (the parsers and what they link: a few CPU-minutes
# less than instrumenting the whole simulator); --tier full (the default) also builds uvmsim_fuzz,
# whose extra targets run uvmsim run, sweep specs, expectation files and policy parameters.
# Seeds are regenerated on every run: small traces from `uvmsim gen`, the presets, sweep specs,
# expectation files and measurements of configs/, the importer samples of tests/data/, and the
# saved inputs of tests/data/fuzz/<target>/. Findings (crash-*, timeout-*, oom-*, leak-* inputs)
# are written to <work>/artifacts/<target>/; the script lists them and exits 1 if there are any.
# Per-run statistics (seconds, executions, corpus size) are appended to <corpus>/stats.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)

seconds=""
hours=""
slice=600
parallel=1
build=build-fuzz
corpus=""
targets=""
tier=full
uvmsim=""
nice_level=""
list=0
while (($#)); do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --slice) slice=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --targets) targets=${2//,/ }; shift 2 ;;
    --tier) tier=$2; shift 2 ;;
    --uvmsim) uvmsim=$2; shift 2 ;;
    --nice) nice_level=$2; shift 2 ;;
    --list) list=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$tier" in parsers|full) ;; *) echo "fuzz.sh: --tier parsers|full" >&2; exit 2 ;; esac
# --build-dir may be absolute or relative to the source tree.
case "$build" in /*) ;; *) build="$src/$build" ;; esac
# Campaigns yield the machine to everything else (nice 19); short CI runs do not.
[ -n "$nice_level" ] || { [ -n "$hours" ] && nice_level=19 || nice_level=0; }
if [ -z "$seconds" ] && [ -z "$hours" ] && [ "$list" = 0 ]; then
  echo "fuzz.sh: give --seconds N (each target once) or --hours H (a campaign)" >&2
  exit 2
fi

# ---- build ------------------------------------------------------------------------------------
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -O1 and line tables only: quick to compile, fast enough to fuzz, symbolized stacks.
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DUVMSIM_FUZZ=ON \
  -DUVMSIM_BUILD_TESTS=OFF -DUVMSIM_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
binaries=(uvmsim_fuzz_parsers)
[ "$tier" = full ] && binaries+=(uvmsim_fuzz)
# Seeds are generated with a Release uvmsim when there is one (scripts/test.sh builds it first).
[ -n "$uvmsim" ] || { [ -x build/uvmsim ] && uvmsim="$src/build/uvmsim"; }
[ -n "$uvmsim" ] || binaries+=(uvmsim)
cmake --build "$build" --parallel "$(nproc)" --target "${binaries[@]}"
[ -n "$uvmsim" ] || uvmsim="$build/uvmsim"

# Each target runs from the smallest binary that holds it: fuzz_<target> links to it.
declare -A binary_of=()
for b in "${binaries[@]}"; do
  [ "$b" = uvmsim ] && continue
  for t in $(UVMSIM_FUZZ_TARGET=list "$build/$b" | awk '{print $1}'); do
    [ -n "${binary_of[$t]:-}" ] || binary_of[$t]=$b
  done
done
all=$(printf '%s\n' "${!binary_of[@]}" | sort)
if [ "$list" = 1 ]; then
  for b in "${binaries[@]}"; do
    [ "$b" = uvmsim ] || { echo "$b:"; UVMSIM_FUZZ_TARGET=list "$build/$b" | sed 's/^/  /'; }
  done
  exit 0
fi
for t in $all; do ln -sf "${binary_of[$t]}" "$build/fuzz_$t"; done
[ -n "$targets" ] || targets=$all
for t in $targets; do
  grep -qx "$t" <<<"$all" || { echo "fuzz.sh: unknown target '$t' (known: $(echo $all))" >&2; exit 2; }
done

work="$build/fuzz-work"
[ -n "$corpus" ] || corpus="$work/corpus"
mkdir -p "$corpus"
corpus=$(cd "$corpus" && pwd)
rm -rf "$work/seeds" "$work/logs" "$work/artifacts" "$work/failed-runs"
mkdir -p "$work/seeds" "$work/logs" "$work/artifacts"

# ---- seeds ------------------------------------------------------------------------------------
export ASAN_OPTIONS=detect_leaks=0  # in case the seed generator is the instrumented uvmsim
seeds="$work/seeds"
mkdir -p "$seeds"/{uvt,uvt_run,metadata,hints,gpu_preset,set_value,policy_params,sweep_spec}
mkdir -p "$seeds"/{expectations,relation,measurement,nvprof,nsys}
mkdir -p "$seeds"/{import_text,import_nvbit,import_accelsim}
# Small traces of different shapes: one launch and many, host loops, hints, several chunks per
# launch (--chunk-size), unfolded records.
gen() { "$uvmsim" gen "$@" >/dev/null; }
gen regular --footprint 64K -o "$seeds/uvt/regular.uvt"
gen regular --footprint 256K --param init=cpu --chunk-size 256 -o "$seeds/uvt/regular-chunks.uvt"
gen random --footprint 128K -o "$seeds/uvt/random.uvt"
gen stream --footprint 128K -o "$seeds/uvt/stream.uvt"
gen vecadd --param threads=64 --no-fold -o "$seeds/uvt/vecadd.uvt"
gen bfs --footprint 128K -o "$seeds/uvt/bfs.uvt"
gen mvt --footprint 64K -o "$seeds/uvt/mvt.uvt"
gen gramschmidt --footprint 64K -o "$seeds/uvt/gramschmidt.uvt"
gen blackscholes --footprint 64K --param iters=2 --chunk-size 512 -o "$seeds/uvt/blackscholes.uvt"
# format version 3: SetDevice events and a second GPU's ordinal
"$uvmsim" trace import text tests/data/import/devices.accesses -o "$seeds/uvt/devices.uvt" \
  --progress none >/dev/null
cp "$seeds"/uvt/*.uvt "$seeds/uvt_run/"
for t in "$seeds"/uvt/*.uvt; do
  b=$(basename "$t" .uvt)
  "$uvmsim" trace hints "$t" >"$seeds/hints/$b.json" 2>/dev/null || rm -f "$seeds/hints/$b.json"
  "$uvmsim" analyze "$t" -o "$seeds/hints/$b.profile.json" >/dev/null
done
python3 - "$seeds" <<'EOF'
# Trace metadata (the header's JSON) and the relations of the expectation files.
import glob, json, os, struct, sys
seeds = sys.argv[1]
for t in glob.glob(os.path.join(seeds, "uvt", "*.uvt")):
    with open(t, "rb") as f:
        head = f.read(24)
        n = struct.unpack("<Q", head[16:24])[0]
        meta = f.read(n)
    with open(os.path.join(seeds, "metadata", os.path.basename(t)[:-4] + ".json"), "wb") as f:
        f.write(meta)
i = 0
for e in glob.glob("configs/expectations/*.json"):
    for r in json.load(open(e)).get("relations", []):
        text = r if isinstance(r, str) else r.get("check", "")
        with open(os.path.join(seeds, "relation", "r%03d.txt" % i), "w") as f:
            f.write(text)
        i += 1
EOF
cp configs/gpus/*.json configs/calibration/gtx1080ti/base.json "$seeds/gpu_preset/"
"$uvmsim" run --list-knobs | awk 'NR > 1 && NF >= 2 {
  v = ($2 == "string") ? "x" : ($2 == "bool") ? "true" : "1"; print $1 "=" v > (dir "/" NR ".txt") }' \
  dir="$seeds/set_value"
cp "$seeds"/set_value/*.txt "$seeds/policy_params/"
"$uvmsim" policies --json | python3 -c '
import json, sys
doc = json.load(sys.stdin)
i = 0
def walk(v, path):
    global i
    if isinstance(v, dict):
        if "name" in v and "knobs" in v and isinstance(v["knobs"], list):
            for k in v["knobs"]:
                if isinstance(k, dict) and "name" in k:
                    d = k.get("default", 1)
                    with open(sys.argv[1] + "/p%03d.txt" % i, "w") as f:
                        f.write("policy.%s.%s=%s\n" % (v["name"], k["name"], json.dumps(d)))
                    i += 1
        for x in v.values():
            walk(x, path)
    elif isinstance(v, list):
        for x in v:
            walk(x, path)
walk(doc, "")
' "$seeds/policy_params"
cp configs/sweeps/*.json "$seeds/sweep_spec/"
cp configs/expectations/*.json "$seeds/expectations/"
cp configs/calibration/gtx1080ti/*.jsonl "$seeds/measurement/"
cp tests/data/nvprof_p1_gputrace.csv "$seeds/nvprof/"
cp tests/data/nsys_um_sample.sql "$seeds/nsys/"
cp tests/data/import/*.accesses "$seeds/import_text/"
cp tests/data/import/nvbit_*.txt "$seeds/import_nvbit/"
cp tests/data/import/accelsim/*.traceg "$seeds/import_accelsim/"

# Dictionaries: JSON syntax plus every key and short string of the target's JSON seeds.
python3 - "$seeds" <<'EOF'
import glob, json, os, sys
seeds = sys.argv[1]
base = ['"{"', '"}"', '"["', '"]"', '":"', '","', '"true"', '"false"', '"null"', '"-1"',
        '"4294967296"', '"18446744073709551615"', '"1e999"', '"0x"']
for target in os.listdir(seeds):
    words = set()
    for path in glob.glob(os.path.join(seeds, target, "*")):
        lines = open(path, "rb").read().decode("utf-8", "replace").splitlines()
        docs = []
        for text in ["\n".join(lines)] + lines:
            try:
                docs.append(json.loads(text))
            except ValueError:
                pass
        stack = docs
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                words.update(k for k in v if len(k) < 40)
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
            elif isinstance(v, str) and 0 < len(v) < 40:
                words.add(v)
    if not words:
        continue
    with open(os.path.join(seeds, target + ".dict"), "w") as f:
        for w in base:
            f.write(w + "\n")
        for w in sorted(words):
            f.write(json.dumps(json.dumps(w)) + "\n")
EOF

# ---- fuzzing ----------------------------------------------------------------------------------
declare -A max_len=([uvt]=65536 [uvt_run]=65536)
run_one() {  # target seconds
  local t=$1 secs=$2 log
  log="$work/logs/$t-$(date +%s%N).log"
  mkdir -p "$corpus/$t" "$work/artifacts/$t"
  local opts=(-max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=1024
              -print_final_stats=1 -artifact_prefix="$work/artifacts/$t/"
              -max_len="${max_len[$t]:-16384}")
  [ -f "$seeds/$t.dict" ] && opts+=(-dict="$seeds/$t.dict")
  local dirs=("$corpus/$t" "$seeds/$t")
  [ -d "tests/data/fuzz/$t" ] && dirs+=("tests/data/fuzz/$t")
  local rc=0
  nice -n "$nice_level" "$build/fuzz_$t" "${opts[@]}" "${dirs[@]}" >"$log" 2>&1 || rc=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$secs" "${execs:-0}" \
    "$(find "$corpus/$t" -type f | wc -l)" "$rc" >>"$corpus/stats.tsv"
  if [ "$rc" -ne 0 ]; then
    # A target that could not run at all (exit 127, a missing library, ...) leaves no artifact:
    # it must fail the run all the same, or CI would report "no findings" for fuzzing nothing.
    echo "$t: exit $rc, log $log" >>"$work/failed-runs"
    echo "fuzz.sh: $t: finding (exit $rc), log $log" >&2
    grep -E "ERROR|FINDING|SUMMARY|Test unit written" "$log" | head -5 >&2 || true
  fi
  printf '  %-16s %6s s %10s execs  exit %s\n' "$t" "$secs" "${execs:-0}" "$rc"
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
echo "== fuzzing: $(echo $targets | wc -w) targets, corpus $corpus =="
if [ -n "$seconds" ]; then
  for t in $targets; do run_one "$t" "$seconds"; done
else
  deadline=$(python3 -c "import time; print(int(time.time() + float('$hours') * 3600))")
  while (($(date +%s) < deadline)); do
    for t in $targets; do
      left=$((deadline - $(date +%s)))
      ((left > 0)) || break
      while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
      run_one "$t" $((left < slice ? left : slice)) &
    done
    wait
  done
  echo "== totals over $corpus/stats.tsv (all runs so far) =="
  awk -F'\t' '{s[$2] += $3; e[$2] += $4} END {
    for (t in s) printf "  %-16s %8.2f h %12d execs\n", t, s[t] / 3600, e[t] }' "$corpus/stats.tsv" | sort
fi

findings=$(find "$work/artifacts" -type f | sort)
if [ -z "$findings" ] && [ -s "$work/failed-runs" ]; then
  echo "== targets that ended with an error and wrote no finding =="
  cat "$work/failed-runs"
  exit 1
fi
if [ -n "$findings" ]; then
  echo "== findings (replay one with: $build/fuzz_<target> FILE) =="
  echo "$findings"
  mkdir -p "$corpus/findings"
  cp -r "$work/artifacts/." "$corpus/findings/"
  echo "(copied to $corpus/findings/)"
  exit 1
fi
echo "== no findings =="
