#!/usr/bin/env bash
# Builds the Debian packages libdynalock0, libdynalock-dev, dynalock and fakedb from
# this tree with debian/ (dpkg-buildpackage, debhelper's CMake build), checks them with
# lintian (any error or warning fails), and puts the .deb files into OUT_DIR.
#   scripts/package.sh [--out OUT_DIR] [--no-lintian]   (default OUT_DIR: build-deb/)
#   scripts/package.sh --print-version                  the packages' version
# The version is the one of project() in CMakeLists.txt; debian/changelog is written
# from it, with the date of that release in CHANGELOG.md, and
# debian/libdynalock0.symbols from the export lists in tests/packaging/abi/. The build runs in a copy of
# the tree (tracked and untracked files, not ignored ones) in a temporary folder, so
# the checkout stays as it is. Installs dpkg-dev, debhelper and lintian when missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build-deb
lintian=1
print_version=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --no-lintian) lintian=0; shift ;;
    --print-version) print_version=1; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "package.sh: unknown argument '$1'" >&2; exit 64 ;;
  esac
done

version=$(sed -n 's/^project(dynalock VERSION \([0-9][0-9.]*\) .*/\1/p' "$root/CMakeLists.txt")
if [ -z "$version" ]; then
  echo "package.sh: no version in project() of CMakeLists.txt" >&2; exit 1
fi
if [ "$print_version" = 1 ]; then echo "$version"; exit 0; fi
released=$(sed -n "s/^## \[$version\] - \([0-9-]*\)$/\1/p" "$root/CHANGELOG.md")
if [ -z "$released" ]; then
  echo "package.sh: CHANGELOG.md has no '## [$version] - YYYY-MM-DD' heading" >&2; exit 1
fi

"$root/scripts/deps.sh" --package

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$tmp/dynalock-$version
mkdir -p "$src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$root" && git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do
     [ -e "$f" ] && printf '%s\0' "$f"; done | tar --null -T - -cf -) | tar -C "$src" -xf -
else
  tar -C "$root" --exclude='./build*' --exclude=./_install --exclude=./.peers -cf - . \
    | tar -C "$src" -xf -
fi
maintainer=$(sed -n 's/^Maintainer: //p' "$root/debian/control")
cat > "$src/debian/changelog" <<CHANGELOG
dynalock ($version) unstable; urgency=medium

  * Release $version; the changes are listed in the project's CHANGELOG.md.

 -- $maintainer  $(LC_ALL=C date -u -R -d "$released 00:00:00 UTC")
CHANGELOG

# The shared libraries' symbols file, from the checked-in export lists that the ctest
# packaging_abi compares with the build (one list, so they cannot disagree):
# dpkg-gensymbols then fails the build if an export disappears.
for list in "$root"/tests/packaging/abi/*.symbols; do
  awk -v v="$version" '
    /^#/ { next }
    $1 == "SONAME" { print $2 " libdynalock0 #MINVER#"; next }
    { print " " $1 "@Base " v }' "$list"
done > "$src/debian/libdynalock0.symbols"

echo "package: building dynalock $version packages in $tmp" >&2
if ! (cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
      dpkg-buildpackage -b -us -uc >"$tmp/build.log" 2>&1); then
  tail -n 60 "$tmp/build.log" >&2
  echo "package.sh: dpkg-buildpackage failed" >&2; exit 1
fi
debs=()
for p in libdynalock0 libdynalock-dev dynalock fakedb; do
  f=$(ls "$tmp"/"${p}"_"${version}"_*.deb 2>/dev/null | head -n 1)
  if [ -z "$f" ]; then echo "package.sh: $p was not built" >&2; exit 1; fi
  debs+=("$f")
done
if [ "$lintian" = 1 ]; then
  if ! lintian --fail-on error,warning --tag-display-limit 0 "${debs[@]}" >&2; then
    echo "package.sh: lintian found errors or warnings" >&2; exit 1
  fi
fi
mkdir -p "$out"
rm -f "$out"/*.deb
cp "${debs[@]}" "$out"/
for f in "${debs[@]}"; do echo "$out/$(basename "$f")"; done
