#!/usr/bin/env bash
# Measures whether an open console slows fakedb's request serving: GetItem throughput,
# p50/p99 and the server's CPU per GetItem at 1 and 32 connections, alone and while a
# console client polls, side by side in one run (alternating over ROUNDS rounds, one
# fresh server per round; compare medians, these machines are shared). The console client
# polls as the page does on its busiest views, ten times as often: the recent requests
# (from sequence 1, so each answer copies the whole ring) and the clock at 5/s, the lock
# items and the faults at 5/s, over two keep-alive connections (curl --rate).
# Usage: bench/fakedb/console.sh BUILD_DIR [SECONDS] [ROUNDS]   (3 s, 5 rounds)
set -euo pipefail
build=${1:?usage: console.sh BUILD_DIR [SECONDS] [ROUNDS]}
secs=${2:-3}
rounds=${3:-5}
load=$build/bench/fakedb/bench_load
fakedb=$build/fakedb/fakedb
tick=$(getconf CLK_TCK)
port=18301
pid=""
pollers=()
results=$(mktemp)
cleanup() {
  for p in "${pollers[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -f "$results"
}
trap cleanup EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

poll_start() {
  local ep=http://127.0.0.1:$port/fake/console/api
  curl -s -o /dev/null --rate 5/s "$ep/requests?after=[1-100000]" "$ep/clock" &
  pollers+=($!)
  curl -s -o /dev/null --rate 5/s "$ep/locks?n=[1-100000]" "$ep/faults" &
  pollers+=($!)
}
poll_stop() {
  for p in "${pollers[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pollers=()
}

# measure NAME: GetItem at 1 and 32 connections against the running server
measure() {
  local name=$1 c c0 c1 line
  for c in 1 32; do
    c0=$(cpu_ticks "$pid")
    line=$("$load" 127.0.0.1 "$port" get "$c" "$secs" || true)
    c1=$(cpu_ticks "$pid")
    echo "$name $line $(awk -v a="$c0" -v b="$c1" -v n="$(echo "$line" | awk '{print $3}')" -v t="$tick" \
      'BEGIN { printf "%.1f", (n > 0 ? (b - a) * 1e6 / t / n : 0) }')" | tee -a "$results" >&2
  done
}

for r in $(seq 1 "$rounds"); do
  "$fakedb" --port "$port" --clock fake >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 3000); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/fake/health" 2>/dev/null; then break; fi
    sleep 0.01
  done
  "$load" 127.0.0.1 "$port" setup
  # (setup loads 1000 items and 64 lock items: the lock view scans them all)
  if [ $((r % 2)) -eq 1 ]; then
    measure alone; poll_start; measure console; poll_stop
  else
    poll_start; measure console; poll_stop; measure alone
  fi
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  port=$((port + 1))
done

echo
echo "| GetItem | conns | runs | req/s (median) | min..max | p50 us | p99 us | server CPU us/request |"
echo "|---|---|---|---|---|---|---|---|"
# fields: name workload conns requests rps p50 p99 errors cond cpu
sort -k3,3n -k1,1 "$results" | awk '
  function median(s,   n, a, i, j, t) {
    n = split(s, a, " ");
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { k = $1 " " $3; rps[k] = rps[k] " " $5; p50[k] = p50[k] " " $6; p99[k] = p99[k] " " $7; cpu[k] = cpu[k] " " $10
    runs[k]++; if (!(k in lo) || $5 < lo[k]) lo[k] = $5; if ($5 > hi[k]) hi[k] = $5; order[++n] = k }
  END {
    for (i = 1; i <= n; i++) { k = order[i]; if (k in done) continue; done[k] = 1; split(k, f, " ");
      printf "| %s | %s | %d | %d | %d..%d | %d | %d | %.1f |\n", f[1], f[2], runs[k], median(rps[k]), lo[k], hi[k], median(p50[k]), median(p99[k]), median(cpu[k]) }
  }'
