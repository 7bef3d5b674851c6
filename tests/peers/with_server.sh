#!/usr/bin/env bash
# Usage: with_server.sh fakedb FAKEDB_BINARY -- CMD...
#        with_server.sh ddblocal -- CMD...
# Starts a server on a free loopback port, runs CMD with DYNALOCK_TEST_ENDPOINT set to
# it, stops the server, and exits with CMD's status. Exits 77 (skipped) when the server
# cannot be had here (DynamoDB Local needs java and scripts/peers.sh's .peers/), or 1
# where DYNALOCK_REQUIRE_PEERS=1 (tests/peers/missing.sh). Under ctest (the `ddblocal`
# fixture sets DYNALOCK_DDBLOCAL_DIR) `ddblocal` is the run's one DynamoDB Local.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/peers/missing.sh"
. "$root/tests/support/fakedb.sh"
kind=$1; shift
bin=""
if [ "$kind" = fakedb ]; then bin=$1; shift; fi
[ "${1:-}" = "--" ] && shift
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

case "$kind" in
  fakedb)
    started=0
    # DYNALOCK_FAKEDB_ARGS: more options for fakedb (a session that needs a fake clock)
    # shellcheck disable=SC2086
    fakedb_start "$bin" "$tmp" ${DYNALOCK_FAKEDB_ARGS:-} && started=1
    pid=$fakedb_pid
    [ "$started" = 1 ] || { echo "with_server: fakedb did not start"; exit 1; }
    port=${fakedb_ep##*:}
    ;;
  ddblocal)
    # Under ctest, the fixture's shared DynamoDB Local (tests/peers/ddblocal.sh).
    if [ -n "${DYNALOCK_DDBLOCAL_DIR:-}" ]; then
      if [ ! -s "$DYNALOCK_DDBLOCAL_DIR/port" ]; then
        missing_peer "with_server: DynamoDB Local is not available here (java and .peers/ are needed)"
      fi
      export DYNALOCK_TEST_ENDPOINT="http://127.0.0.1:$(cat "$DYNALOCK_DDBLOCAL_DIR/port")"
      exec "$@"
    fi
    emu=$root/.peers/node_modules/amplify-dynamodb-simulator/emulator
    if ! command -v java >/dev/null 2>&1 || [ ! -f "$emu/DynamoDBLocal.jar" ]; then
      missing_peer "with_server: DynamoDB Local is not available here (java and .peers/ are needed)"
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    java -Djava.library.path="$emu/DynamoDBLocal_lib" -jar "$emu/DynamoDBLocal.jar" -inMemory \
      -port "$port" >"$tmp/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 300); do
      curl -s -o /dev/null "http://127.0.0.1:$port/" && break
      sleep 0.1
    done
    ;;
  *) echo "with_server: unknown server '$kind'" >&2; exit 64 ;;
esac
export DYNALOCK_TEST_ENDPOINT="http://127.0.0.1:$port"
set +e
"$@"
rc=$?
set -e
exit $rc
