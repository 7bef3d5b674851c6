#!/usr/bin/env bash
# Usage: run_js.sh [SCRIPT.mjs]
# Runs SCRIPT (js_session.mjs by default) with the AWS SDK for JavaScript v3 from .peers/
# against $DYNALOCK_TEST_ENDPOINT; exits 77 (skipped) when the SDK is not installed, 1 where
# DYNALOCK_REQUIRE_PEERS=1 (tests/peers/missing.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/peers/missing.sh"
script=${1:-$root/tests/peers/js_session.mjs}
if [ ! -d "$root/.peers/node_modules/@aws-sdk/client-dynamodb" ]; then
  missing_peer "run_js: the AWS SDK for JavaScript is not in .peers/ (scripts/peers.sh)"
fi
cd "$root/.peers"
NODE_NO_WARNINGS=1 node --input-type=module - "$DYNALOCK_TEST_ENDPOINT" <"$script"
