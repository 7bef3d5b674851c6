#!/usr/bin/env bash
# Usage: scripts/check-dockerfile.sh BUILD_DIR
# Checks the Dockerfile where no container daemon runs: installs BUILD_DIR as its build
# stage does (prefix /usr into a staging folder), then checks that
#  - every file the final stage copies from the build stage is installed there,
#  - the final stage installs the Debian package of every library fakedb needs,
#  - the final stage runs as a user other than root,
#  - its ENTRYPOINT and CMD run from the installed tree (on a free port instead of
#    8000), and its HEALTHCHECK command passes against it and fails with no server.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
dockerfile=$root/Dockerfile
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "check-dockerfile: FAIL: $*" >&2; exit 1; }
checks=0

# The final stage, with continued lines joined.
sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' "$dockerfile" |
  awk '/^FROM /{ stage = "" } { stage = stage $0 "\n" } END { printf "%s", stage }' > "$tmp/final"
grep -q '^FROM debian:12' "$tmp/final" || fail "the final stage is not based on Debian 12"

DESTDIR=$tmp/stage cmake --install "$build" --prefix /usr > /dev/null
declare -A copied    # destination in the image -> file in the staging folder
while read -r _ from srcpath dest; do
  [ "$from" = "--from=build" ] || fail "the final stage copies '$srcpath' from outside the build stage"
  [[ $srcpath == /stage/* ]] || fail "'$srcpath' is not from the build stage's install (/stage)"
  [ -f "$tmp$srcpath" ] || fail "'$srcpath' is not installed by the build (cmake --install)"
  copied[$dest]=$tmp$srcpath
done < <(grep '^COPY ' "$tmp/final")
[ "${#copied[@]}" -gt 0 ] || fail "the final stage copies nothing"
checks=$((checks + 1))

# The runtime libraries of every copied program come from the final stage's packages.
pkgs=" $(grep -o 'apt-get install [^&]*' "$tmp/final" | tr -s ' ' | cut -d' ' -f3-) libc6 "
for f in "${copied[@]}"; do
  objdump -p "$f" >/dev/null 2>&1 || continue
  for lib in $(objdump -p "$f" | awk '$1 == "NEEDED" { print $2 }'); do
    pkg=$(dpkg -S "*/$lib" 2>/dev/null | awk -F: 'NR == 1 { print $1 }')
    [ -n "$pkg" ] || fail "no Debian package here holds $lib, which $f needs"
    [[ $pkgs == *" $pkg "* ]] || fail "$lib ($pkg) is needed by $(basename "$f") but not installed by the final stage"
  done
done
checks=$((checks + 1))

user=$(sed -n 's/^USER  *//p' "$tmp/final" | tail -n 1)
[ -n "$user" ] && [ "$user" != root ] && [ "$user" != 0 ] || fail "the final stage runs as root"
checks=$((checks + 1))

# ENTRYPOINT + CMD, and the health check, from their JSON arrays.
json_words() { sed -n "s/^$1 *//p" "$tmp/final" | tail -n 1 |
  python3 -c 'import json,sys; print("\n".join(json.loads(sys.stdin.read())))'; }
mapfile -t entry < <(json_words ENTRYPOINT)
mapfile -t cmd < <(json_words CMD)
mapfile -t health < <(sed -n 's/^HEALTHCHECK .* CMD /CMD /p' "$tmp/final" > "$tmp/hc"; sed -n 's/^CMD *//p' "$tmp/hc" |
  python3 -c 'import json,sys; print("\n".join(json.loads(sys.stdin.read())))')
[ "${#entry[@]}" -gt 0 ] && [ "${#health[@]}" -gt 0 ] || fail "no ENTRYPOINT or HEALTHCHECK"
[ -n "${copied[${entry[0]}]:-}" ] || fail "the ENTRYPOINT ${entry[0]} is not a copied file"
prog=${copied[${entry[0]}]}
args=("${entry[@]:1}" "${cmd[@]}")
[ "${args[*]}" = "--host 0.0.0.0 --port 8000" ] || fail "the command's arguments are '${args[*]}'"
checks=$((checks + 1))

args=("${args[@]/#8000/0}")    # any free port here: 8000 may be taken on this machine
mkfifo "$tmp/out"
"$prog" "${args[@]}" > "$tmp/out" &
pid=$!
read -r line < "$tmp/out" || fail "the command did not start: ${prog#"$tmp"} ${args[*]}"
port=${line##*:}
[[ $line == "fakedb listening on http://0.0.0.0:$port" ]] || fail "the command printed '$line'"
check=("${health[@]//\/8000/\/$port}")
"${check[@]}" || fail "the health check fails against the running server"
checks=$((checks + 1))
kill "$pid"; wait "$pid" || fail "fakedb did not exit 0 on SIGTERM"
pid=""
if "${check[@]}" 2>/dev/null; then fail "the health check passes with no server"; fi
checks=$((checks + 1))
echo "check-dockerfile: $checks checks passed"
