#!/usr/bin/env bash
# Installs the test peers from the npm registry into .peers/ (not tracked): DynamoDB
# Local (inside amplify-dynamodb-simulator) and the AWS SDK for JavaScript v3. Tests that
# need them look for .peers/ and skip when it is absent. Safe to run repeatedly.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/.peers
command -v npm >/dev/null 2>&1 || { echo "peers: npm not found" >&2; exit 1; }
mkdir -p "$dir"
if [ ! -f "$dir/package.json" ]; then
  cp "$root/scripts/peers-package.json" "$dir/package.json"
fi
if [ ! -f "$dir/node_modules/.installed" ] || ! cmp -s "$root/scripts/peers-package.json" "$dir/node_modules/.installed"; then
  cp "$root/scripts/peers-package.json" "$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$root/scripts/peers-package.json" "$dir/node_modules/.installed"
fi
