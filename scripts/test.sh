#!/usr/bin/env bash
# Builds and runs every test: the Release build and the ASan+UBSan build, both through CTest.
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --deps-only
jobs=$(nproc)

echo "== Release build + tests =="
# Tests and benchmarks are off in a user build; here they are on (and with them every optional
# feature is required, so CI never silently skips one).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DUVMSIM_BUILD_TESTS=ON \
  -DUVMSIM_BUILD_BENCH=ON
cmake --build build --parallel "$jobs"
ctest --test-dir build --output-on-failure --parallel "$jobs"

echo "== ASan + UBSan build + tests =="
# -O1 keeps the sanitizer build quick to compile and the suite quick to run. -g1 (line tables and
# function names, no variable info) is all a sanitizer report's stack trace needs, and compiles
# ~28 % faster than -g (core/knob.cpp: 8.1 s against 11.2 s of CPU), the largest part of CI time.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DUVMSIM_SANITIZE=ON -DUVMSIM_BUILD_TESTS=ON -DUVMSIM_BUILD_BENCH=OFF
cmake --build build-asan --parallel "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure --parallel "$jobs"

echo "== libFuzzer targets of the parsers (clang), a few seconds each =="
# docs/fuzzing.md. The targets that need the whole simulator instrumented (uvt_run, sweep_spec,
# expectations, policy_params) run in campaigns (scripts/fuzz.sh --hours H); their saved inputs
# are replayed by the test suites above.
bash scripts/fuzz.sh --tier parsers --seconds 4
