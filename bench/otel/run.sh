#!/usr/bin/env bash
# run.sh BUILD [SPANS]: otel_bench against tests/otel/receiver.py (started here, on an
# ephemeral port), then stopped. The receiver decodes every payload in Python: its time
# is in the "real" figures, not in the CPU ones (another process).
set -eu
build=$1
spans=${2:-20000}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
python3 "$here/../../tests/otel/receiver.py" >"$out" &
rpid=$!
trap 'kill -TERM $rpid 2>/dev/null; wait $rpid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.1; done
port=$(awk '{print $3}' "$out")
"$build/bench/otel/otel_bench" "http://127.0.0.1:$port" "$spans"
