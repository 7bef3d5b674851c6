#!/usr/bin/env bash
# Usage: units.sh BUILD_DIR
# Installs the build into a temporary prefix and checks its systemd units with
# `systemd-analyze verify` (the template through an instance of it), so the ExecStart
# paths point at the installed programs, and scores fakedb.service's sandbox with
# `systemd-analyze security`. Exits 77 (a skip) without systemd-analyze.
set -euo pipefail
build=$1
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "units: systemd-analyze is not installed; skipped"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
units=$tmp/prefix/lib/systemd/system
for u in fakedb.service dynalock-leader@.service; do
  [ -f "$units/$u" ] || { echo "units: $u was not installed into $units" >&2; exit 1; }
done
# The installed units name the installed programs.
grep -qxF "ExecStart=$tmp/prefix/bin/fakedb --db %S/fakedb/fakedb.sqlite \$FAKEDB_OPTS" \
  "$units/fakedb.service" || { echo "units: fakedb.service runs something else" >&2; exit 1; }
grep -q "^ExecStart=$tmp/prefix/bin/dynalock leader " "$units/dynalock-leader@.service" ||
  { echo "units: dynalock-leader@.service runs something else" >&2; exit 1; }
# verify wants a unit it can load: the template is checked through an instance.
mkdir "$tmp/check"
cp "$units/fakedb.service" "$units/dynalock-leader@.service" "$tmp/check/"
ln -s dynalock-leader@.service "$tmp/check/dynalock-leader@order-sweeper.service"
out=$(cd "$tmp/check" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no \
        ./fakedb.service ./dynalock-leader@order-sweeper.service 2>&1) || {
  echo "$out" >&2; echo "units: systemd-analyze verify failed" >&2; exit 1; }
# verify only warns about some mistakes (an unknown key, a bad value): any output fails.
if [ -n "$out" ]; then
  echo "$out" >&2; echo "units: systemd-analyze verify complained" >&2; exit 1
fi
# fakedb.service stays sandboxed: systemd's own exposure score (0 to 10, lower is
# safer; 1.4 when this was written) must stay at or under 2.0.
if ! out=$(cd "$tmp/check" && systemd-analyze security --offline=true --threshold=20 --no-pager \
             ./fakedb.service 2>&1); then
  echo "$out" | tail -n 40 >&2
  echo "units: fakedb.service is exposed more than 2.0 (systemd-analyze security)" >&2; exit 1
fi
echo "units: 2 units verified; $(echo "$out" | grep -o 'Overall exposure level .*' | head -n 1)"
