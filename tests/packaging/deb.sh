#!/usr/bin/env bash
# Usage: deb.sh SOURCE_DIR CC
# Builds the Debian packages (scripts/package.sh, lintian included), installs them with
# dpkg -i, checks what they ship (programs, docs, examples, manual pages, units), runs
# `dynalock --version`, `fakedb --version`, the installed fakedb and its
# pytest plugin, builds and runs a consumer against libdynalock-dev with CMake and with
# pkg-config, then purges them and checks that the machine is as it was: the same
# packages in the same states, none of the packages' files left.
# With DYNALOCK_DEBS_OUT=DIR it leaves a copy of the packages in DIR.
# It changes the machine, so it runs only with DYNALOCK_PACKAGE_TEST=1 (as .ci/run
# does), as root, with dpkg, and when none of the four packages is installed; else it
# reports a skip (77).
set -euo pipefail
src=$1 cc=$2
pkgs=(libdynalock0 libdynalock-dev dynalock fakedb)
skip() { echo "deb: skipped: $*"; exit 77; }
[ "${DYNALOCK_PACKAGE_TEST:-}" = 1 ] ||
  skip "set DYNALOCK_PACKAGE_TEST=1 to build, install and purge the Debian packages"
[ "$(id -u)" -eq 0 ] || skip "needs root to install packages"
command -v dpkg >/dev/null 2>&1 || skip "dpkg is not installed"
version=$("$src/scripts/package.sh" --print-version)

# One run at a time on a machine.
exec 9>/var/lock/dynalock-packaging-test.lock
flock 9
for p in "${pkgs[@]}"; do
  if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -qv '^un'; then
    skip "$p is installed already; purging it afterwards would change the machine"
  fi
done

tmp=$(mktemp -d)
state() { dpkg-query -W -f='${Package}:${Architecture} ${Version} ${db:Status-Abbrev}\n' | LC_ALL=C sort; }
state > "$tmp/before"
purge() { dpkg --purge "${pkgs[@]}" >"$tmp/purge.log" 2>&1; }
trap 'purge || true; [ -n "${fakedb_pid:-}" ] && kill "$fakedb_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0
ok() { pass=$((pass + 1)); }
fail() { echo "deb: FAIL: $*" >&2; exit 1; }

"$src/scripts/package.sh" --out "$tmp/debs" > "$tmp/debs.txt" || fail "scripts/package.sh failed"
mapfile -t debs < "$tmp/debs.txt"
[ "${#debs[@]}" -eq 4 ] || fail "scripts/package.sh built ${#debs[@]} packages, not 4"
# For docs_ci_deb after this test (.ci/run): the packages of this tree, built and checked
# once (DYNALOCK_DEBS_OUT, a folder; ci_recipe.py's DYNALOCK_DEBS_PREBUILT).
if [ -n "${DYNALOCK_DEBS_OUT:-}" ]; then
  mkdir -p "$DYNALOCK_DEBS_OUT" && cp "${debs[@]}" "$DYNALOCK_DEBS_OUT/" || fail "cannot copy the packages to $DYNALOCK_DEBS_OUT"
fi
ok
dpkg -i "${debs[@]}" > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; fail "dpkg -i"; }
for p in "${pkgs[@]}"; do
  [ "$(dpkg-query -W -f='${Version} ${db:Status-Abbrev}' "$p")" = "$version ii " ] ||
    fail "$p is not installed at version $version"
done
ok

# The programs, from the installed packages.
[ "$(/usr/bin/dynalock --version)" = "dynalock $version" ] || fail "dynalock --version"
[ "$(/usr/bin/fakedb --version)" = "fakedb $version" ] || fail "fakedb --version"
ok
for f in /usr/share/bash-completion/completions/dynalock /usr/share/bash-completion/completions/fakedb \
         /usr/share/zsh/vendor-completions/_dynalock /usr/share/zsh/vendor-completions/_fakedb \
         /lib/systemd/system/fakedb.service /lib/systemd/system/dynalock-leader@.service \
         /usr/share/man/man1/dynalock.1.gz /usr/share/man/man1/fakedb.1.gz; do
  [ -f "$f" ] || fail "$f was not installed"
done
grep -q '^ExecStart=/usr/bin/fakedb ' /lib/systemd/system/fakedb.service || fail "fakedb.service ExecStart"
ok
# The docs and examples, each in the package that needs it, where the programs and the
# manual pages say they are; dynalock(1) is docs/cli.md, systemd template included.
contents() { dpkg -L "$1" | LC_ALL=C sort; }
for f in dynalock:/usr/share/doc/dynalock/cli.md dynalock:/usr/share/doc/dynalock/coordination.md \
         dynalock:/usr/share/doc/dynalock/client.md dynalock:/usr/share/doc/dynalock/observability.md \
         fakedb:/usr/share/doc/fakedb/fakedb.md fakedb:/usr/share/doc/fakedb/ci.md \
         fakedb:/usr/share/doc/fakedb/fakedb-console.png \
         libdynalock-dev:/usr/share/doc/libdynalock-dev/client.md \
         libdynalock-dev:/usr/share/doc/libdynalock-dev/testing.md \
         libdynalock-dev:/usr/share/doc/libdynalock-dev/building.md \
         libdynalock-dev:/usr/share/doc/libdynalock-dev/examples/guide.c \
         libdynalock-dev:/usr/share/doc/libdynalock-dev/examples/service.c \
         libdynalock-dev:/usr/share/doc/libdynalock-dev/examples/recipes/queue.c \
         dynalock:/usr/share/man/man1/dynalock.1.gz fakedb:/usr/share/man/man1/fakedb.1.gz; do
  contents "${f%%:*}" | grep -qxF "${f#*:}" || fail "package ${f%%:*} does not ship ${f#*:}"
  [ -s "${f#*:}" ] || fail "${f#*:} is not installed"
done
cmp -s /usr/share/doc/dynalock/cli.md "$src/docs/cli.md" || fail "the installed cli.md is not docs/cli.md"
cmp -s /usr/share/doc/libdynalock-dev/examples/guide.c "$src/examples/guide.c" || fail "the installed guide.c"
guide=$(/usr/bin/fakedb --help | grep -o '/[^ ]*/fakedb\.md') || fail "fakedb --help names no guide"
[ "$guide" = /usr/share/doc/fakedb/fakedb.md ] || fail "fakedb --help names $guide"
man=$(zcat /usr/share/man/man1/dynalock.1.gz)
grep -q '^\.SS The systemd template: dynalock-leader\\\[at\]\.service$' <<< "$man" ||
  fail "dynalock(1) has no section on the systemd template"
grep -q '^\.SH EXIT STATUSES$' <<< "$man" || fail "dynalock(1) has no EXIT STATUSES"
grep -q '/usr/share/doc/dynalock/cli\.md' /lib/systemd/system/dynalock-leader@.service ||
  fail "dynalock-leader@.service's Documentation= does not name the installed cli.md"
ok
# The installed fakedb serves, and says its version on /fake/health.
mkfifo "$tmp/out"
/usr/bin/fakedb --port 0 > "$tmp/out" &
fakedb_pid=$!
read -r line < "$tmp/out"
url=${line#fakedb listening on }
health=$(curl -sf "$url/fake/health") || fail "GET $url/fake/health"
[ "$health" = "{\"ok\":true,\"version\":\"$version\"}" ] || fail "health answered $health"
kill "$fakedb_pid"; wait "$fakedb_pid" || fail "fakedb did not exit 0 on SIGTERM"
fakedb_pid=""
ok

# The pytest plugin of the fakedb package: Debian's python3 finds the module and its
# pytest11 entry point, and (with python3-pytest) a test on its fixture passes against
# the installed fakedb.
if [ -x /usr/bin/python3 ]; then
  export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ left in the package's folder
  (cd "$tmp" && /usr/bin/python3 -c '
import importlib.metadata as md, dynalock_fakedb
assert dynalock_fakedb.__file__.startswith("/usr/lib/python3/dist-packages/"), dynalock_fakedb.__file__
eps = [e.value for e in md.distribution("dynalock-fakedb").entry_points if e.group == "pytest11"]
assert eps == ["dynalock_fakedb.plugin"], eps') || fail "the dynalock_fakedb module or its entry point"
  if /usr/bin/python3 -c 'import pytest' 2>/dev/null; then
    printf 'def test_health(fakedb):\n    assert fakedb.health()["ok"] is True\n' > "$tmp/test_plugin_deb.py"
    (cd "$tmp" && env -u FAKEDB_BIN -u PYTHONPATH /usr/bin/python3 -m pytest -q -p no:cacheprovider \
      test_plugin_deb.py > "$tmp/pytest.log" 2>&1) || { cat "$tmp/pytest.log" >&2; fail "pytest with the packaged plugin"; }
  fi
  ok
fi

# A consumer against libdynalock-dev: CMake (shared and static) and pkg-config.
cmake -S "$src/tests/packaging/consumer" -B "$tmp/consumer" -DCMAKE_C_COMPILER="$cc" \
  -DDYNALOCK_VERSION="$version" > "$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log" >&2; fail "cmake consumer"; }
dir=$(sed -n 's/^dynalock_DIR:PATH=//p' "$tmp/consumer/CMakeCache.txt")
[[ $dir == /usr/lib/*/cmake/dynalock ]] || fail "CMake found dynalock in '$dir', not the package's"
cmake --build "$tmp/consumer" > "$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log" >&2; fail "build consumer"; }
"$tmp/consumer/consumer" || fail "consumer (CMake, shared)"
"$tmp/consumer/consumer_static" || fail "consumer (CMake, static)"
[ "$("$tmp/consumer/version_consumer")" = "$version" ] || fail "version_consumer"
libs=$(ldd "$tmp/consumer/consumer")
grep -Eq '=> (/usr)?/lib/[^ ]*-linux-[^ ]*/libddb\.so\.0 ' <<< "$libs" ||
  fail "consumer does not use the package's libddb.so.0"
ok
[ "$(pkg-config --modversion dynalock-coord)" = "$version" ] || fail "pkg-config --modversion"
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror -o "$tmp/consumer_pc" "$src/tests/install/consumer/consumer.c" \
  $(pkg-config --cflags --libs dynalock-testing) || fail "pkg-config consumer build"
"$tmp/consumer_pc" || fail "consumer (pkg-config)"
ok

# Purge, and the machine is as it was.
purge || { cat "$tmp/purge.log" >&2; fail "dpkg --purge"; }
state > "$tmp/after"
diff "$tmp/before" "$tmp/after" >&2 || fail "the installed packages differ from before the test"
for deb in "${debs[@]}"; do
  while read -r path; do
    if { [ -e "$path" ] || [ -L "$path" ]; } && [ ! -d "$path" ]; then
      fail "$path is left after the purge"
    fi
  done < <(dpkg-deb -c "$deb" | awk '{ print substr($6, 2) }')
done
ok
echo "deb: $pass passed, 0 failed (dynalock $version)"
