#!/usr/bin/env bash
# The InstallConsumer test: installs the build into a scratch prefix, then configures, builds and
# runs the consumer project against it with find_package(uvmsim). Checks what a user gets from
# `cmake --install`: the CLI, the presets, the docs, the headers and the uvmsim::trace package.
#   run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/uvmsim-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Every step's output goes to a log that is printed if the step fails: the scratch directory is
# removed on exit, so a failure would otherwise leave nothing to diagnose it by.
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" 2>&1 ||
  { echo "cmake --install failed:"; cat "$work/install.log"; exit 1; }
for f in bin/uvmsim share/uvmsim/configs/gpus/titanv.json share/doc/uvmsim/README.md \
         share/doc/uvmsim/trace-import.md include/uvmsim/traces/trace.h \
         include/uvmsim/traces/import/import_builder.h include/uvmsim/core/types.h \
         lib/cmake/uvmsim/uvmsimConfig.cmake lib/libuvmsim_trace.a; do
  [ -e "$work/prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
# The installed CLI finds its presets without the source tree (run from an empty directory).
(cd "$work" && "$work/prefix/bin/uvmsim" gpus > "$work/gpus.txt" 2>&1) ||
  { echo "installed uvmsim gpus failed:"; cat "$work/gpus.txt"; exit 1; }
grep -q titanv "$work/gpus.txt" || { echo "installed uvmsim gpus lists no titanv"; cat "$work/gpus.txt"; exit 1; }

cmake -S "$src/tests/install" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/consumer" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
mkdir "$work/run"
"$work/consumer/consumer" "$work/run"
