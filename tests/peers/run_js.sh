#!/usr/bin/env bash
# Usage: run_js.sh [SCRIPT.mjs]
# Runs SCRIPT (js_session.mjs by default) with the AWS SDK for JavaScript v3 from .peers/
# against $DYNALOCK_TEST_ENDPOINT; exits 77 (skipped) when the SDK is not installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
script=${1:-$root/tests/peers/js_session.mjs}
if [ ! -d "$root/.peers/node_modules/@aws-sdk/client-dynamodb" ]; then
  echo "run_js: the AWS SDK for JavaScript is not in .peers/ (scripts/peers.sh); skipped"
  exit 77
fi
cd "$root/.peers"
NODE_NO_WARNINGS=1 node --input-type=module - "$DYNALOCK_TEST_ENDPOINT" <"$script"
