#!/usr/bin/env bash
# fakedb's latency tail under load (issue 26), in one command: p50/p99/p99.9 of GetItem,
# PutItem, a lock-style conditional UpdateItem and TransactWriteItems at 32 connections,
# in memory and with --db, beside the bare libmicrohttpd floor (epoll and poll with 4
# event loops as in the earlier rounds, and poll with one, fakedb's default), repeated
# ROUNDS times with every server started afresh in each round and warmed up by a second
# of GetItem before it is measured (so each round compares side by side on this shared
# machine), and what a GetItem costs the server and the load generator in CPU, beside
# the floor, on the shared cores and pinned to one each; then the size sweep: GetItem and PutItem with
# 2,000 and BIG items, a 1 MB Query page from a partition of 12,000 and of 100,000
# items beside the same 1 MB read as the whole of a partition of 10,000 items (the
# reference: what 1 MB costs when the partition holds nothing else), and the memory per
# stored item (RSS growth over the items loaded).
# Usage: bench/fakedb/tails.sh BUILD_DIR [SECONDS_PER_POINT] [ROUNDS] [BIG]
#        (defaults 3 s, 3 rounds, BIG 1000000; ROUNDS 0: the size sweep alone). With BASELINE=path/to/an/older/fakedb in
#        the environment, each round also measures that binary (base-mem, base-db).
set -euo pipefail
build=${1:?usage: tails.sh BUILD_DIR [SECONDS] [ROUNDS] [BIG]}
secs=${2:-3}
rounds=${3:-3}
big=${4:-1000000}
conns=32
load=$build/bench/fakedb/bench_load
floor=$build/bench/fakedb/bench_floor
fakedb=$build/fakedb/fakedb
tmp=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
start() {
  local port=$1; shift
  "$@" >"$tmp/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 2000); do
    if curl -s -o /dev/null -X POST "http://127.0.0.1:$port/" 2>/dev/null; then return 0; fi
    sleep 0.005
  done
  echo "tails.sh: the server on $port did not answer" >&2
  return 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
results=$tmp/results.txt
: >"$results"
# point ROUND SERVER WORKLOAD CONNS [ITEMS]: one measurement into $results.
point() {
  local round=$1 name=$2 w=$3 c=$4 items=${5:-}
  local line
  line=$("$load" 127.0.0.1 "$port" "$w" "$c" "$secs" $items || true)
  echo "$round $name $line" >>"$results"
  echo "$round $name $line" >&2
}

# warm [ITEMS]: a second of GetItem on the server just started, not recorded.
warm() { "$load" 127.0.0.1 "$port" get $conns 1 ${1:-} >/dev/null; }

all="get put cond-update tx"
port=18201
# fakedb_points ROUND PREFIX BINARY: the four workloads in memory and with --db.
fakedb_points() {
  local r=$1 prefix=$2 bin=$3
  start $port "$bin" --port $port
  "$load" 127.0.0.1 $port setup 2000
  warm 2000
  for w in $all; do point "$r" "${prefix}mem" "$w" $conns 2000; done
  stop
  rm -f "$tmp"/bench.db*
  start $port "$bin" --port $port --db "$tmp/bench.db"
  "$load" 127.0.0.1 $port setup 2000
  warm 2000
  for w in $all; do point "$r" "${prefix}db" "$w" $conns 2000; done
  stop
}
# What a GetItem costs: the server's and the load generator's CPU per request, both
# sharing the two cores (as in the points above) and with the load generator on CPU 0
# and the server alone on CPU 1 (the capacity of one core: the server's own cost then
# decides its rate; unpinned, the floor's rate is the load generator's as much as its).
tick=$(getconf CLK_TCK)
TIMEFORMAT='%3U %3S'
pinned=$(( $(nproc) >= 2 ))
# cpoint ROUND NAME PIN [ITEMS]: GetItem at $conns connections; PIN 1: the load generator
# on CPU 0.
cpoint() {
  local round=$1 name=$2 pin=$3 items=${4:-}
  local a b pre=""
  [ "$pin" = 1 ] && pre="taskset -c 0"
  $pre "$load" 127.0.0.1 "$port" get "$conns" 1 $items >/dev/null
  a=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  { time $pre "$load" 127.0.0.1 "$port" get "$conns" "$secs" $items >"$tmp/cpoint.out" 2>/dev/null || true; } 2>"$tmp/cpoint.time"
  b=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  awk -v r="$round" -v n="$name" -v t=$(( b - a )) -v hz="$tick" -v c="$(cat "$tmp/cpoint.time")" \
    '{split(c, u, " "); printf "%s %s %s %.1f %.1f\n", r, n, $4, ($3 > 0 ? t * 1e6 / hz / $3 : 0),
                                ($3 > 0 ? (u[1] + u[2]) * 1e6 / $3 : 0)}' "$tmp/cpoint.out" >>"$tmp/capacity.txt"
  echo "$round $name $(cat "$tmp/cpoint.out")" >&2
}
: >"$tmp/capacity.txt"
for r in $(seq 1 "$rounds"); do
  if [ "$pinned" = 1 ]; then
    start $port "$floor" $port poll; cpoint "$r" floor-poll 0; stop
    start $port "$fakedb" --port $port; "$load" 127.0.0.1 $port setup 2000
    cpoint "$r" fakedb 0 2000; stop
    start $port taskset -c 1 "$floor" $port poll 1; cpoint "$r" floor-poll-1-pinned 1; stop
    start $port taskset -c 1 "$fakedb" --port $port; "$load" 127.0.0.1 $port setup 2000
    cpoint "$r" fakedb-pinned 1 2000; stop
  fi
  start $port "$floor" $port; warm; point "$r" floor get $conns; stop
  start $port "$floor" $port poll; warm; point "$r" floor-poll get $conns; stop
  start $port "$floor" $port poll 1; warm; point "$r" floor-poll-1 get $conns; stop
  if [ -n "${BASELINE:-}" ]; then fakedb_points "$r" base- "$BASELINE"; fi
  fakedb_points "$r" "" "$fakedb"
done

# The size sweep, in memory: the same server before and after it grows (so that both
# points share its warm-up), and the RSS it gains per item; ROUNDS times (at least once),
# each on a new server, since one point of each size says little on two shared cores.
for r in $(seq 1 $(( rounds > 0 ? rounds : 1 ))); do
  start $port "$fakedb" --port $port
  "$load" 127.0.0.1 $port setup 2000
  warm 2000
  rss_small=$(rss_kb "$pid")
  point sweep mem-2000 get $conns 2000
  point sweep mem-2000 put $conns
  "$load" 127.0.0.1 $port setup "$big"
  rss_big=$(rss_kb "$pid")
  warm "$big"
  point sweep "mem-$big" get $conns "$big"
  point sweep "mem-$big" put $conns
  stop
done
# The Query page: each partition's first page (the Query's answer) is measured once for
# its items and bytes, so that the table shows that the points read the same 1 MB.
page() {
  curl -s -X POST "http://127.0.0.1:$port/" -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.Query' -H 'X-Amz-Date: 20260101T000000Z' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=AKIDBENCH/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=0000000000000000000000000000000000000000000000000000000000000000' \
    -d '{"TableName":"BenchQ","KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{":p":{"S":"P"}}}' |
    awk -v name="$1" '{ c = $0; sub(/.*"Count":/, "", c); sub(/[,}].*/, "", c);
                        printf "%s %d %d %s\n", name, c, length($0), (index($0, "LastEvaluatedKey") ? "yes" : "no") }' >>"$tmp/pages.txt"
}
: >"$tmp/pages.txt"
start $port "$fakedb" --port $port
for n in 10000 12000 100000; do
  "$load" 127.0.0.1 $port setup-query $n
  page "query-$n"
  point sweep "query-$n" query 1
done
stop

echo
echo "Per round, $conns connections, $secs s per point (us):"
echo
echo "| round | server | workload | req/s | p50 | p99 | p99.9 | p99/p50 | req/s / floor-poll | req/s / floor-poll-1 |"
echo "|---|---|---|---|---|---|---|---|---|---|"
awk '$2 == "floor-poll" {fl[$1] = $6}
     $2 == "floor-poll-1" {fl1[$1] = $6}
     {rows[NR] = $0}
     END {for (i = 1; i <= NR; i++) { split(rows[i], f, " ");
            if (f[1] == "sweep") continue;
            printf "| %s | %s | %s | %s | %s | %s | %s | %.1f | %.2f | %.2f |\n", f[1], f[2], f[3], f[6], f[7], f[8], f[11],
                   (f[7] > 0 ? f[8] / f[7] : 0), (fl[f[1]] > 0 ? f[6] / fl[f[1]] : 0),
                   (fl1[f[1]] > 0 ? f[6] / fl1[f[1]] : 0) } }' "$results"
echo
echo "Median over the rounds (min..max):"
echo
echo "| server | workload | req/s | p50 | p99 | p99.9 | p99/p50 | req/s / floor-poll | req/s / floor-poll-1 |"
echo "|---|---|---|---|---|---|---|---|---|"
awk '$1 != "sweep" {k = $2 " " $3; keys[k] = 1; n[k]++; i = n[k];
       rps[k, i] = $6; p50[k, i] = $7; p99[k, i] = $8; p999[k, i] = $11; ratio[k, i] = ($7 > 0 ? $8 / $7 : 0)}
     $2 == "floor-poll" {fl[$1] = $6}
     $2 == "floor-poll-1" {fl1[$1] = $6}
     $1 != "sweep" {rel[k, i] = $6; rel1[k, i] = $6; rnd[k, i] = $1}
     function med(a, k, m,   v, j, t, x, y) {
       for (j = 1; j <= m; j++) v[j] = a[k, j] + 0;
       for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (v[y] < v[x]) { t = v[x]; v[x] = v[y]; v[y] = t }
       return sprintf((m > 1 ? "%g (%g..%g)" : "%g"), v[int((m + 1) / 2)], v[1], v[m]) }
     END {for (k in keys) { m = n[k];
            for (j = 1; j <= m; j++) rel[k, j] = (fl[rnd[k, j]] > 0 ? sprintf("%.2f", rel[k, j] / fl[rnd[k, j]]) : 0);
            for (j = 1; j <= m; j++) rel1[k, j] = (fl1[rnd[k, j]] > 0 ? sprintf("%.2f", rel1[k, j] / fl1[rnd[k, j]]) : 0);
            split(k, f, " ");
            for (j = 1; j <= m; j++) ratio[k, j] = sprintf("%.1f", ratio[k, j]);
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], med(rps, k, m), med(p50, k, m),
                   med(p99, k, m), med(p999, k, m), med(ratio, k, m), med(rel, k, m), med(rel1, k, m) } }' "$results" | sort
if [ -s "$tmp/capacity.txt" ]; then
  echo
  echo "What a GetItem costs, per round: CPU per request (us) of the server and of the load"
  echo "generator; the two cores' limit is 2 s of CPU over their sum; pinned: the load generator"
  echo "on CPU 0, the server alone on CPU 1:"
  echo
  echo "| round | server | req/s | server CPU | load generator CPU | 2 cores' limit, req/s | req/s / floor |"
  echo "|---|---|---|---|---|---|---|"
  awk '{r[NR] = $0; if ($2 == "floor-poll" || $2 == "floor-poll-1-pinned") fl[$1, ($2 ~ /pinned/)] = $3}
       END {for (i = 1; i <= NR; i++) { split(r[i], f, " ");
              printf "| %s | %s | %s | %s | %s | %.0f | %.2f |\n", f[1], f[2], f[3], f[4], f[5],
                     (f[4] + f[5] > 0 ? 2e6 / (f[4] + f[5]) : 0),
                     (fl[f[1], (f[2] ~ /pinned/)] > 0 ? f[3] / fl[f[1], (f[2] ~ /pinned/)] : 0) } }' "$tmp/capacity.txt"
fi
echo
echo "Size sweep (in memory; query: 1 connection, a Query of the partition with no Limit):"
echo
echo "| point | workload | conns | req/s | p50 | p99 | p99.9 |"
echo "|---|---|---|---|---|---|---|"
awk '$1 == "sweep" {printf "| %s | %s | %s | %s | %s | %s | %s |\n", $2, $3, $4, $6, $7, $8, $11}' "$results"
echo
echo "Throughput at $big items over that at 2,000, per round (the rounds of the sweep, in order):"
echo
awk -v big="mem-$big" '$1 == "sweep" && ($2 == "mem-2000" || $2 == big) && ($3 == "get" || $3 == "put") {
       k = $2 " " $3; n[k]++; v[k, n[k]] = $6 }
     END { for (w = 1; w <= 2; w++) { op = (w == 1 ? "get" : "put"); line = ""; m = n["mem-2000 " op];
             for (i = 1; i <= m; i++) { x[i] = (v["mem-2000 " op, i] > 0 ? v[big " " op, i] / v["mem-2000 " op, i] : 0);
                                        line = line sprintf(" %.2f", x[i]) }
             for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
             printf "- %s:%s (median %.2f)\n", op, line, x[int((m + 1) / 2)] } }' "$results"
echo
echo "The Query's page (query-10000: the whole partition; the others: its first 1 MB):"
echo
echo "| point | items in the page | bytes of the answer | LastEvaluatedKey |"
echo "|---|---|---|---|"
awk '{printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4}' "$tmp/pages.txt"
echo
awk -v s="$rss_small" -v b="$rss_big" -v n="$big" 'BEGIN {
  printf "Memory per stored item (in memory): RSS %d KiB with 2,000 items, %d KiB with %d: %.0f bytes per item\n",
         s, b, n, (b - s) * 1024 / (n - 2000) }'
