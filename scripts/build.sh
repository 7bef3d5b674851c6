#!/usr/bin/env bash
# Configures and builds dynalock into BUILD_DIR (default: build/) and installs it into
# PREFIX (default: _install/). Extra arguments go to cmake's configure step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
prefix=${PREFIX:-$root/_install}
"$root/scripts/deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_INSTALL_PREFIX="$prefix" "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
cmake --install "$build" >/dev/null
echo "build: installed into $prefix"
