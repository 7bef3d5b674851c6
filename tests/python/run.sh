#!/usr/bin/env bash
# Usage: run.sh plugin|cmake-install|pip-install SOURCE_DIR BINARY_DIR FAKEDB
# Runs the dynalock_fakedb tests with a python3 that has pytest and boto3 (Debian's
# /usr/bin/python3 first: python3-pytest, python3-boto3); exits 77 (skipped) if none has.
#   plugin         test_plugin.py, with the package from the source tree (-p ...plugin)
#   cmake-install  installs the package with `cmake --install --component fakedb-python`
#                  and runs a test file with no -p: the .dist-info's entry point loads it
#   pip-install    the same after `pip install --no-build-isolation --target` of python/
set -euo pipefail
mode=$1 src=$2 bin=$3 fakedb=$4
py=""
for c in /usr/bin/python3 python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import pytest, boto3' 2>/dev/null; then
    py=$(command -v "$c"); break
  fi
done
[ -n "$py" ] || { echo "python: skipped: no python3 with pytest and boto3 (scripts/deps.sh --test)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FAKEDB_BIN=$fakedb PYTHONDONTWRITEBYTECODE=1
unset FAKEDB_ARGS PYTEST_DISABLE_PLUGIN_AUTOLOAD PYTEST_ADDOPTS
case "$mode" in
  plugin)
    cd "$tmp"
    # The package of the source tree alone, named by -p here and in each inner run: never
    # one installed on the machine, such as the fakedb .deb that packaging_deb installs
    # while the suites run side by side (loaded twice, pytest would refuse it).
    export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
    PYTHONPATH=$src/python exec "$py" -m pytest -p no:cacheprovider -p pytester -p dynalock_fakedb.plugin \
      -q "$src/tests/python/test_plugin.py"
    ;;
  cmake-install)
    cmake --install "$bin" --component fakedb-python --prefix "$tmp/prefix" >/dev/null
    site=$tmp/prefix/lib/python3/dist-packages
    [ -f "$site/dynalock_fakedb/plugin.py" ] || { echo "FAIL: cmake --install put no plugin.py in $site"; exit 1; }
    ;;
  pip-install)
    "$py" -m pip --version >/dev/null 2>&1 || { echo "python: skipped: no pip for $py"; exit 77; }
    "$py" -c 'import setuptools' 2>/dev/null || { echo "python: skipped: no setuptools for $py"; exit 77; }
    # A copy of python/, so that the build leaves nothing in the source tree.
    cp -r "$src/python" "$tmp/python"
    "$py" -m pip install -q --no-build-isolation --no-deps --no-index --target "$tmp/site" "$tmp/python" \
      >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; echo "FAIL: pip install ./python"; exit 1; }
    site=$tmp/site
    ;;
  *) echo "run.sh: unknown mode $mode" >&2; exit 64 ;;
esac
# The installed package, found through its entry point alone (no -p, no source tree).
version=$(sed -n 's/^project(dynalock VERSION \([0-9.]*\) .*/\1/p' "$src/CMakeLists.txt")
cd "$tmp"
PYTHONPATH=$site "$py" - "$version" <<'PY'
import importlib.metadata as md, sys
dist = md.distribution("dynalock-fakedb")
assert dist.version == sys.argv[1], (dist.version, sys.argv[1])
eps = [e for e in dist.entry_points if e.group == "pytest11"]
assert [e.value for e in eps] == ["dynalock_fakedb.plugin"], eps
import dynalock_fakedb
assert dynalock_fakedb.__version__ == sys.argv[1], dynalock_fakedb.__version__
PY
cp "$src/tests/python/installed_check.py" "$tmp/test_installed.py"
PYTHONPATH=$site exec "$py" -m pytest -p no:cacheprovider -q "$tmp/test_installed.py"
