#!/usr/bin/env bash
# Installs the test peers from the npm registry into .peers/ (not tracked): DynamoDB
# Local (inside amplify-dynamodb-simulator) and the AWS SDK for JavaScript v3. Tests that
# need them look for .peers/ and skip when it is absent. Safe to run repeatedly.
# The installed tree is kept once per machine, under DYNALOCK_PEERS_CACHE (default
# ~/.cache/dynalock/peers), in a folder named by scripts/peers-package.json's hash, and
# .peers is a link to it: a new checkout (a CI run, a worktree) links it in a moment
# instead of installing 400 MB again. An empty DYNALOCK_PEERS_CACHE installs into .peers/
# itself, as does a .peers/ that is already a folder of its own.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/.peers
list=$root/scripts/peers-package.json
command -v npm >/dev/null 2>&1 || { echo "peers: npm not found" >&2; exit 1; }

# installed DIR: true when DIR holds an install of this package list.
installed() { [ -f "$1/node_modules/.installed" ] && cmp -s "$list" "$1/node_modules/.installed"; }
# install DIR: npm install of the package list into DIR.
install() {
  mkdir -p "$1"
  cp "$list" "$1/package.json"
  (cd "$1" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$list" "$1/node_modules/.installed"
}

cache=${DYNALOCK_PEERS_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/dynalock/peers}
if [ -z "$cache" ] || { [ -d "$dir" ] && [ ! -L "$dir" ]; }; then
  installed "$dir" || install "$dir"
  exit 0
fi
key=$(sha256sum "$list" | cut -c1-16)
target=$cache/$key
if ! installed "$target"; then
  # Installed beside the cache's entry and renamed into place, so that a run beside this
  # one sees either no entry or a whole one.
  mkdir -p "$cache"
  work=$(mktemp -d "$cache/.install.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  install "$work"
  rm -rf "$target.old"
  [ ! -e "$target" ] || mv "$target" "$target.old"
  mv "$work" "$target"
  rm -rf "$target.old"
fi
ln -sfn "$target" "$dir"
