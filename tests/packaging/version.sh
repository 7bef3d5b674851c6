#!/usr/bin/env bash
# Usage: version.sh VERSION BUILD_DIR SOURCE_DIR VERSION_PRINT DYNALOCK FAKEDB
# Checks that every place that states dynalock's version states VERSION, the one in
# project() of CMakeLists.txt: dynalock/version.h, ddb_version(), fakedb_version(),
# `dynalock --version`, `fakedb --version`, the CMake package's version file, the
# pkg-config files, the man pages, the newest release of CHANGELOG.md and the version
# scripts/package.sh gives the Debian packages. Prints each disagreement.
set -euo pipefail
want=$1 build=$2 src=$3 printer=$4 dynalock=$5 fakedb=$6
found=()    # "where version" lines

while IFS= read -r line; do found+=("$line"); done < <("$printer")
found+=("dynalock--version $("$dynalock" --version | sed -n 's/^dynalock //p')")
found+=("fakedb--version $("$fakedb" --version | sed -n 's/^fakedb //p')")
found+=("dynalockConfigVersion.cmake $(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/dynalockConfigVersion.cmake")")
for pc in dynalock-ddb dynalock-coord dynalock-fakedb dynalock-testing; do
  found+=("$pc.pc $(sed -n 's/^Version: //p' "$build/$pc.pc")")
done
# fakedb.1 is written by hand; dynalock.1 is made from docs/cli.md by the build (pandoc).
for man in "$src"/docs/man/*.1 "$build"/cli/dynalock.1; do
  [ -f "$man" ] || continue
  found+=("$(basename "$man") $(sed -n 's/^\.TH .*"dynalock \([^"]*\)".*/\1/p' "$man")")
done
found+=("CHANGELOG.md $(awk 'match($0, /^## \[[0-9][^]]*\]/) { print substr($0, 5, RLENGTH - 5); exit }' "$src/CHANGELOG.md")")
found+=("scripts/package.sh $("$src/scripts/package.sh" --print-version)")

bad=0
for f in "${found[@]}"; do
  where=${f% *} got=${f##* }
  if [ "$got" != "$want" ]; then
    echo "version: $where says '$got', CMakeLists.txt says '$want'" >&2
    bad=$((bad + 1))
  fi
done
echo "version: ${#found[@]} places checked, $bad disagree with $want"
[ "$bad" -eq 0 ]
