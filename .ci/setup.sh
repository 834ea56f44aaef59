#!/usr/bin/env bash
# Installs the Debian packages ncclscan needs and builds it into build/.
# Usage: bash .ci/setup.sh [extra cmake args]    (as root, or with sudo available)
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS="build-essential cmake ninja-build pkg-config libre2-dev libsimdjson-dev libboost-program-options-dev \
  libtbb-dev libfmt-dev libgtest-dev libyaml-cpp-dev zlib1g-dev libzstd-dev zstd liblzma-dev libarchive-dev python3 python3-jsonschema \
  ripgrep time gzip util-linux clang clang-format libclang-rt-14-dev libbenchmark-dev slurm-wlm munge"
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
