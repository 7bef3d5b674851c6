#!/usr/bin/env bash
# Measures fakedb side by side with DynamoDB Local and with a bare libmicrohttpd server
# (the HTTP floor), in one run, on this machine: requests/s and p50/p99 latency per
# workload at 1 and 32 connections, start-up time to first answer, idle and peak RSS.
# Usage: bench/fakedb/run.sh BUILD_DIR [SECONDS_PER_POINT]   (default 3 s)
# Needs DynamoDB Local in .peers/ (scripts/peers.sh) and java; without them those
# columns are skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: run.sh BUILD_DIR [SECONDS]}
secs=${2:-3}
load=$build/bench/fakedb/bench_load
floor=$build/bench/fakedb/bench_floor
fakedb=$build/fakedb/fakedb
emu=$root/.peers/node_modules/amplify-dynamodb-simulator/emulator
tmp=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

now_ms() { date +%s%3N; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

# start NAME PORT CMD...: starts a server, waits for its first answer, records start-up ms.
start() {
  local name=$1 port=$2; shift 2
  local t0; t0=$(now_ms)
  "$@" >"$tmp/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 3000); do
    if curl -s -o /dev/null -X POST "http://127.0.0.1:$port/" 2>/dev/null; then break; fi
    sleep 0.005
  done
  startup_ms=$(( $(now_ms) - t0 ))
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }

results=$tmp/results.txt
: >"$results"
run_server() {
  local name=$1 port=$2 workloads=$3; shift 3
  start "$name" "$port" "$@"
  sleep 1
  local idle; idle=$(rss_kb "$pid")
  if [ "$name" != floor ]; then "$load" 127.0.0.1 "$port" setup; fi
  for w in $workloads; do
    for c in 1 32; do
      line=$("$load" 127.0.0.1 "$port" "$w" "$c" "$secs" || true)
      echo "$name $line" >>"$results"
      echo "$name $line" >&2
    done
  done
  echo "$name startup_ms=$startup_ms idle_rss_kb=$idle peak_rss_kb=$(hwm_kb "$pid")" >>"$tmp/servers.txt"
  stop
}

all="get put cond-update tx"
run_server floor 18101 get "$floor" 18101
run_server fakedb-mem 18102 "$all" "$fakedb" --port 18102
run_server fakedb-db 18103 "$all" "$fakedb" --port 18103 --db "$tmp/bench.db"
if [ -f "$emu/DynamoDBLocal.jar" ] && command -v java >/dev/null; then
  run_server ddblocal-mem 18104 "$all" java -Djava.library.path="$emu/DynamoDBLocal_lib" -jar "$emu/DynamoDBLocal.jar" -inMemory -port 18104
  mkdir -p "$tmp/ddbl"
  run_server ddblocal-db 18105 "$all" java -Djava.library.path="$emu/DynamoDBLocal_lib" -jar "$emu/DynamoDBLocal.jar" -dbPath "$tmp/ddbl" -port 18105
fi

echo
echo "| server | workload | conns | req/s | p50 us | p99 us | p99.9 us | errors | cond failed |"
echo "|---|---|---|---|---|---|---|---|---|"
while read -r server w c n rps p50 p99 err cf p999; do
  echo "| $server | $w | $c | $rps | $p50 | $p99 | $p999 | $err | $cf |"
done <"$results"
echo
echo "| server | start-up to first answer (ms) | idle RSS (KiB) | peak RSS (KiB) |"
echo "|---|---|---|---|"
while read -r server s i p; do
  echo "| $server | ${s#*=} | ${i#*=} | ${p#*=} |"
done <"$tmp/servers.txt"
echo
echo "Ratios at 32 connections (fakedb-mem / ddblocal-mem, fakedb-mem / floor):"
awk '$3==32 {rps[$1" "$2]=$5} END {
  split("get put cond-update tx", ws, " ");
  for (i=1;i<=4;i++) { w=ws[i];
    if (rps["ddblocal-mem "w] > 0) printf "  %-12s vs DynamoDB Local: %.1fx\n", w, rps["fakedb-mem "w]/rps["ddblocal-mem "w];
    if (rps["ddblocal-db "w] > 0 && rps["fakedb-db "w] > 0) printf "  %-12s --db vs -dbPath:   %.1fx\n", w, rps["fakedb-db "w]/rps["ddblocal-db "w];
  }
  if (rps["floor get"] > 0) printf "  get vs the HTTP floor: %.2f\n", rps["fakedb-mem get"]/rps["floor get"];
}' "$results"
