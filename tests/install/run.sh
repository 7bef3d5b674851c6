#!/usr/bin/env bash
# Usage: run.sh BUILD_DIR CONSUMER_SRC CC
# Installs BUILD_DIR into a fresh prefix, then builds and runs the consumer with CMake
# (shared and static targets) and with pkg-config. Prints "2 passed, 0 failed" at the end.
set -euo pipefail
build=$1 src=$2 cc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -n 1)

# 1. CMake package
cmake -S "$src" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/consumer"
"$tmp/cmake-build/consumer_static"
if [ -f "$libdir/pkgconfig/dynalock-otel.pc" ]; then
  LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/otel_consumer"
  "$tmp/cmake-build/otel_consumer_static"
fi

# 2. pkg-config
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror -o "$tmp/consumer_pc" "$src/consumer.c" \
  $(pkg-config --cflags --libs dynalock-testing)
LD_LIBRARY_PATH="$libdir" "$tmp/consumer_pc"
if [ -f "$libdir/pkgconfig/dynalock-otel.pc" ]; then
  # shellcheck disable=SC2046
  "$cc" -std=c11 -Wall -Wextra -Werror -o "$tmp/otel_consumer_pc" "$src/otel_consumer.c" \
    $(pkg-config --cflags --libs dynalock-otel)
  LD_LIBRARY_PATH="$libdir" "$tmp/otel_consumer_pc"
  objdump -p "$libdir/libddb_otel.so" | grep -q 'SONAME *libddb_otel.so.0'
fi
# the shared objects carry their SONAME
objdump -p "$libdir/libddb.so" | grep -q 'SONAME *libddb.so.0'
echo "install: 2 passed, 0 failed"
