#!/bin/sh
# run.sh: runs libddb's bench_client and the AWS SDK for JavaScript v3 loop against the
# same fakedb server (started here as a separate process) and prints them side by side.
# Usage: bench/client/run.sh [BUILD_DIR] [SECONDS] [THREADS]
# The build dir must hold fakedb/fakedb, bench/client/bench_client and
# bench/client/bench_request_cpu (a Release build is what to measure). The Node
# dependencies are installed with npm on first use. First the client's own CPU per
# request with no network (bench_request_cpu), then both clients against the server,
# then the floor: GetItem over a plain socket without libcurl (bench_client_floor).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
seconds=${2:-3}
threads=${3:-8}
fakedb_bin=$build/fakedb/fakedb
bench_bin=$build/bench/client/bench_client
cpu_bin=$build/bench/client/bench_request_cpu
floor_bin=$build/bench/client/bench_client_floor
for f in "$fakedb_bin" "$bench_bin" "$cpu_bin" "$floor_bin"; do
  [ -x "$f" ] || { echo "missing $f: build the project in $build first" >&2; exit 1; }
done
if [ ! -d "$here/node/node_modules/@aws-sdk/client-dynamodb" ]; then
  (cd "$here/node" && npm install --no-audit --no-fund --silent)
fi

tmp=$(mktemp -d)
"$fakedb_bin" --port 0 --port-file "$tmp/port" --threads 4 >"$tmp/fakedb.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
i=0
while [ ! -s "$tmp/port" ]; do
  i=$((i + 1)); [ $i -lt 200 ] || { echo "fakedb did not start" >&2; cat "$tmp/fakedb.log" >&2; exit 1; }
  sleep 0.05
done
endpoint="http://127.0.0.1:$(cat "$tmp/port")"

"$cpu_bin"

"$bench_bin" --endpoint "$endpoint" --seconds "$seconds" --threads "$threads" | tee "$tmp/c.txt"
node "$here/node/bench.mjs" --endpoint "$endpoint" --seconds "$seconds" --threads "$threads" \
  | grep -v 'op=warmup' | tee "$tmp/js.txt"
"$floor_bin" --endpoint "$endpoint" --seconds "$seconds"

echo
printf '%-11s %-8s %10s %10s %14s %10s %10s %14s %14s\n' op threads c_rps js_rps c_cpu_us/req c_user c_sys js_cpu_us/req c/js_per_core
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
while read -r line; do
  op=$(echo "$line" | field op); th=$(echo "$line" | field threads)
  js=$(grep "op=$op threads=$th " "$tmp/js.txt" || true)
  c_rps=$(echo "$line" | field rps); c_cpu=$(echo "$line" | field cpu_us_per_req)
  c_user=$(echo "$line" | field user_us_per_req); c_sys=$(echo "$line" | field sys_us_per_req)
  c_core=$(echo "$line" | field rps_per_core)
  j_rps=$(echo "$js" | field rps); j_cpu=$(echo "$js" | field cpu_us_per_req)
  j_core=$(echo "$js" | field rps_per_core)
  ratio=$(awk -v a="$c_core" -v b="$j_core" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }')
  printf '%-11s %-8s %10s %10s %14s %10s %10s %14s %14s\n' "$op" "$th" "$c_rps" "${j_rps:--}" "$c_cpu" \
    "$c_user" "$c_sys" "${j_cpu:--}" "$ratio"
done <"$tmp/c.txt"
