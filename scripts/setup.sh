#!/usr/bin/env bash
# One-command set-up on a fresh Debian 12 machine: install the Debian packages the build needs,
# build uvmsim (Release) and run a real demo simulation.
#   bash scripts/setup.sh            # install + build + demo
#   bash scripts/setup.sh --deps-only   # only install the Debian packages
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake ninja-build pkg-config
      libboost-dev libboost-program-options-dev
      libzstd-dev zlib1g-dev nlohmann-json3-dev
      googletest libgtest-dev libgmock-dev libbenchmark-dev clang-format
      # optional in a user build (the build says what it skipped), required by the tests:
      # NLopt for calibrate's fit, SQLite for importing Nsight Systems exports
      libnlopt-cxx-dev libsqlite3-dev
      # the libFuzzer targets of fuzz/ (scripts/fuzz.sh, run briefly by scripts/test.sh)
      clang libclang-rt-14-dev
      # uvmsim report draws with matplotlib; the Slurm backend's tests run a real local
      # cluster (slurmctld + slurmd + munged, started by scripts/slurm-local.sh)
      python3 python3-matplotlib slurm-wlm munge
      # the Python module (python/uvmsim, docs/python.md) and its tests
      python3-numpy python3-pandas python3-zstandard python3-pytest)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ "${1:-}" = "--deps-only" ] && exit 0

# The simulator alone (tests and benchmarks off; scripts/test.sh turns them on).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel "$(nproc)"

mkdir -p build/demo
{
  echo "== demo: regular page-touch kernel, 256 MB CPU-initialised footprint, GTX 1080 Ti, 50% oversubscription =="
  ./build/uvmsim gen regular --footprint 256M --param init=cpu -o build/demo/regular.uvt
  ./build/uvmsim trace info build/demo/regular.uvt
  ./build/uvmsim run --gpu gtx1080ti --trace build/demo/regular.uvt --oversub 50 \
      --stats-out build/demo/regular-oversub50.json --events-out build/demo/regular-oversub50.csv
  echo "stats: build/demo/regular-oversub50.json  events: build/demo/regular-oversub50.csv"
  echo "== demo: a small sweep (2 workloads x 2 prefetchers x 3 oversubscription levels) and its report =="
  ./build/uvmsim sweep configs/sweeps/quick.json --out build/demo/sweep-quick
  ./build/uvmsim report build/demo/sweep-quick
}
