#!/usr/bin/env bash
# Usage: ddblocal.sh start DIR | ddblocal.sh stop DIR
# The ctest fixture `ddblocal` (tests/CMakeLists.txt): one DynamoDB Local, in memory, on a
# free loopback port, shared by every *_ddblocal test of a ctest run instead of a JVM per
# test. `start` writes DIR/port once it answers and DIR/pid; `stop` ends it. Where java
# or scripts/peers.sh's .peers/ is missing, `start` writes no port and passes, and the
# tests that need it (tests/peers/with_server.sh ddblocal) report a skip; where
# DYNALOCK_REQUIRE_PEERS=1 it fails instead (tests/peers/missing.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/peers/missing.sh"
action=$1 dir=$2
emu=$root/.peers/node_modules/amplify-dynamodb-simulator/emulator

stop() {
  if [ -f "$dir/pid" ]; then
    pid=$(cat "$dir/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

case "$action" in
  start)
    stop  # what an interrupted run left
    mkdir -p "$dir"
    if ! command -v java >/dev/null 2>&1 || [ ! -f "$emu/DynamoDBLocal.jar" ]; then
      # its tests skip (with_server.sh), unless a missing peer is a failure
      [ "${DYNALOCK_REQUIRE_PEERS:-}" = 1 ] &&
        missing_peer "ddblocal: DynamoDB Local is not available here (java and .peers/ are needed)"
      echo "ddblocal: DynamoDB Local is not available here (java and .peers/ are needed); its tests skip"
      exit 0
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    # Its own session, every stream closed: ctest does not wait for it.
    setsid java -Djava.library.path="$emu/DynamoDBLocal_lib" -jar "$emu/DynamoDBLocal.jar" \
      -inMemory -port "$port" </dev/null >"$dir/server.log" 2>&1 &
    echo $! > "$dir/pid"
    for _ in $(seq 1 1200); do
      if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
        echo "$port" > "$dir/port"
        echo "ddblocal: listening on 127.0.0.1:$port (pid $(cat "$dir/pid"))"
        exit 0
      fi
      kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
      sleep 0.1
    done
    echo "ddblocal: DynamoDB Local did not start"; cat "$dir/server.log"
    stop
    exit 1
    ;;
  stop) stop ;;
  *) echo "ddblocal: unknown action '$action'" >&2; exit 64 ;;
esac
