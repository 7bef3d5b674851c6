#!/usr/bin/env bash
# console_browser.sh: runs console_browser.js (fakedb's console in headless Chromium)
# against a `fakedb --clock fake` started here, with a lock table and a crashed holder
# whose label is HTML made by the `dynalock` command. Skips (77) without Chromium, node
# or the peers (puppeteer-core, from scripts/peers.sh). Screenshots land in OUT_DIR.
# Usage: console_browser.sh FAKEDB DYNALOCK OUT_DIR PEERS_DIR
set -euo pipefail
FAKEDB=$1 DL=$2 OUT=$3 PEERS=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../support/fakedb.sh"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then echo "SKIP: no Chromium at $CHROMIUM (apt-get install chromium)"; exit 77; fi
if ! command -v node >/dev/null 2>&1; then echo "SKIP: node not found"; exit 77; fi
if [ ! -f "$PEERS/node_modules/puppeteer-core/package.json" ]; then
    echo "SKIP: puppeteer-core is not in $PEERS (scripts/peers.sh)"; exit 77
fi
W=$(mktemp -d)
fakedb_pid=
cleanup() {
    [ -n "$fakedb_pid" ] && kill "$fakedb_pid" 2>/dev/null && wait "$fakedb_pid" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
fakedb_start "$FAKEDB" "$W" --clock fake:1767225600000 || { echo "console: fakedb did not start"; exit 1; }
EP=$fakedb_ep
export AWS_ACCESS_KEY_ID=console AWS_SECRET_ACCESS_KEY=console AWS_REGION=us-east-1
"$DL" table create Locks --endpoint "$EP" >/dev/null
"$DL" simulate --table Locks --endpoint "$EP" --lease 30s --label '<img src=x onerror=alert(1)>' holder nightly >/dev/null
mkdir "$W/profile"
CHROMIUM=$CHROMIUM CHROMIUM_PROFILE=$W/profile DYNALOCK_PEERS=$PEERS node "$here/console_browser.js" "$EP" "$DL" "$OUT"
