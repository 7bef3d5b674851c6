#!/usr/bin/env bash
# Compares two builds of fakedb, e.g. before and after a change to the request path:
# requests/s, p50/p99 and the server's CPU per request (utime+stime of the fakedb process
# over the run, divided by the requests), at 1 and 32 connections, for each workload of
# bench_load in $WORKLOADS (default: get; e.g. WORKLOADS="get put cond-update tx"). The
# two alternate over ROUNDS rounds (these machines are shared and noisy: compare medians),
# then DynamoDB Local runs twice when the npm peers and java are there, for the ratios.
# Usage: [WORKLOADS=...] bench/fakedb/ab.sh BEFORE_BUILD AFTER_BUILD [SECONDS] [ROUNDS]
#        (3 s, 5 rounds)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
before=${1:?usage: ab.sh BEFORE_BUILD AFTER_BUILD [SECONDS] [ROUNDS]}
after=${2:?usage: ab.sh BEFORE_BUILD AFTER_BUILD [SECONDS] [ROUNDS]}
secs=${3:-3}
rounds=${4:-5}
workloads=${WORKLOADS:-get}
load=$after/bench/fakedb/bench_load
emu=$root/.peers/node_modules/amplify-dynamodb-simulator/emulator
tick=$(getconf CLK_TCK)
port=18201
pid=""
results=$(mktemp)
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -f "$results"; }
trap cleanup EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run NAME CMD...: starts a server, loads items, measures each workload at 1 and 32
# connections.
run() {
  local name=$1; shift
  "$@" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 3000); do
    if curl -s -o /dev/null -X POST "http://127.0.0.1:$port/" 2>/dev/null; then break; fi
    sleep 0.01
  done
  "$load" 127.0.0.1 "$port" setup
  for w in $workloads; do for c in 1 32; do
    local c0 c1 line
    c0=$(cpu_ticks "$pid")
    line=$("$load" 127.0.0.1 "$port" "$w" "$c" "$secs" || true)
    c1=$(cpu_ticks "$pid")
    echo "$name $line $(awk -v a="$c0" -v b="$c1" -v n="$(echo "$line" | awk '{print $3}')" -v t="$tick" \
      'BEGIN { printf "%.1f", (n > 0 ? (b - a) * 1e6 / t / n : 0) }')" | tee -a "$results" >&2
  done; done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  port=$((port + 1))
}

for _ in $(seq 1 "$rounds"); do
  run before "$before/fakedb/fakedb" --port "$port"
  run after "$after/fakedb/fakedb" --port "$port"
done
if [ -f "$emu/DynamoDBLocal.jar" ] && command -v java >/dev/null; then
  for _ in 1 2; do
    run ddblocal java -Djava.library.path="$emu/DynamoDBLocal_lib" -jar "$emu/DynamoDBLocal.jar" -inMemory -port "$port"
  done
fi

echo
echo "| server | workload | conns | runs | req/s (median) | min..max | p50 us | p99 us | server CPU us/request |"
echo "|---|---|---|---|---|---|---|---|---|"
# fields: name workload conns requests rps p50 p99 errors cond cpu
sort -k2,2 -k1,1 -k3,3n "$results" | awk '
  function median(s,   n, a, i, j, t) {
    n = split(s, a, " ");
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { k = $1 " " $2 " " $3; rps[k] = rps[k] " " $5; p50[k] = p50[k] " " $6; p99[k] = p99[k] " " $7; cpu[k] = cpu[k] " " $10
    runs[k]++; if (!(k in lo) || $5 < lo[k]) lo[k] = $5; if ($5 > hi[k]) hi[k] = $5; order[++n] = k }
  END {
    for (i = 1; i <= n; i++) { k = order[i]; if (k in done) continue; done[k] = 1; split(k, f, " ");
      printf "| %s | %s | %s | %d | %d | %d..%d | %d | %d | %.1f |\n", f[1], f[2], f[3], runs[k], median(rps[k]), lo[k], hi[k], median(p50[k]), median(p99[k]), median(cpu[k]) }
    printf "\nRatios at 32 connections (median req/s over DynamoDB Local'"'"'s):\n";
    for (i = 1; i <= n; i++) { k = order[i]; split(k, f, " ");
      if (f[1] != "ddblocal" || f[3] != 32 || (("r " k) in said)) continue; said["r " k] = 1;
      printf "  %-12s before: %.1fx  after: %.1fx\n", f[2], median(rps["before " f[2] " 32"]) / median(rps[k]), median(rps["after " f[2] " 32"]) / median(rps[k]) }
  }'
