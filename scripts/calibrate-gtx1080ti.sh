#!/usr/bin/env bash
# Regenerates the shipped GTX 1080 Ti preset: fits configs/gpus/gtx1080ti.json to the derived
# measurements in configs/calibration/gtx1080ti/ (calibration-facts.md) with `uvmsim calibrate`,
# starting from configs/calibration/gtx1080ti/base.json (published specs + the hand fit).
#   bash scripts/calibrate-gtx1080ti.sh [BUILD_DIR]     (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}/uvmsim
D=configs/calibration/gtx1080ti
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# The prefetch micro-tests: one thread touches 64 KB blocks of a CPU-written 2 MB buffer.
$B gen touch --param offsets=0K,64K,128K,256K,512K,1024K --param delay_us=500 -o "$T/p1.uvt" >/dev/null
$B gen touch --param offsets=64K,192K,0K,256K,512K,1024K --param delay_us=500 -o "$T/p2.uvt" >/dev/null
$B gen touch --param offsets=64K,192K,320K,448K,0K,512K,1024K --param delay_us=500 -o "$T/p3.uvt" >/dev/null
$B calibrate --gpu $D/base.json --name gtx1080ti \
  --measured $D/p1.jsonl $D/p2.jsonl $D/p3.jsonl $D/dtoh-readback.jsonl $D/memcpy-htod.jsonl \
  --trace "$T/p1.uvt" "$T/p2.uvt" "$T/p3.uvt" none none \
  --max-evals 400 --cross-validate --report-json "${1:-build}/gtx1080ti-calibration.json" \
  -o configs/gpus/gtx1080ti.json "${@:2}"
