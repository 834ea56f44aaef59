#!/usr/bin/env bash
# Installs the Debian packages ncclscan needs and builds it into build/.
# Usage: bash .ci/setup.sh [--runtime] [extra cmake args]    (as root, or with sudo available)
#   --runtime: only what building the tool needs (no tests, benchmarks, fuzzers or CI tools)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNTIME=0
if [ "${1:-}" = --runtime ]; then
  RUNTIME=1
  shift
fi
# Building the tool: a compiler, CMake, and the libraries it links.
PKGS="build-essential cmake ninja-build pkg-config libre2-dev libsimdjson-dev libboost-program-options-dev \
  libtbb-dev libfmt-dev libyaml-cpp-dev zlib1g-dev libzstd-dev liblzma-dev libarchive-dev python3"
# Testing it (ctest), its benchmarks and fuzzers, and CI's checks.
if [ "$RUNTIME" = 0 ]; then
  PKGS="$PKGS libgtest-dev zstd python3-jsonschema ripgrep time gzip util-linux clang clang-format \
    libclang-rt-14-dev libbenchmark-dev slurm-wlm munge"
  set -- "$@"
else
  set -- -DNCCLSCAN_BUILD_TESTS=OFF -DNCCLSCAN_BUILD_BENCH=OFF "$@"
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
