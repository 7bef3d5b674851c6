#!/usr/bin/env bash
# Installs the Debian packages dynalock needs to build and test, when any is missing.
# Usage: scripts/deps.sh [--test | --package | --python]
#   --test adds what the test suite's peers need; --package what scripts/package.sh needs;
#   --python what Python tests on the pytest plugin need (docs/ci.md)
set -euo pipefail
pkgs=(build-essential cmake pkg-config libcurl4-openssl-dev libssl-dev libjson-c-dev
      libexpat1-dev libmicrohttpd-dev libsqlite3-dev zlib1g-dev check curl pandoc)
if [ "${1:-}" = "--test" ]; then
  pkgs+=(groff-base ccache clang libclang-rt-14-dev valgrind python3 python3-boto3 python3-pytest python3-venv python3-setuptools nodejs npm spin zsh chromium)
elif [ "${1:-}" = "--package" ]; then
  pkgs+=(dpkg-dev debhelper lintian)
elif [ "${1:-}" = "--python" ]; then
  pkgs+=(python3 python3-pytest python3-boto3 python3-venv python3-setuptools)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A node or npm outside Debian's packages (e.g. from nodesource) counts as present.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
filtered=()
for p in "${missing[@]}"; do [ -n "$p" ] && filtered+=("$p"); done
if [ "${#filtered[@]}" -gt 0 ]; then
  echo "deps: installing ${filtered[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${filtered[@]}" >/dev/null
fi
