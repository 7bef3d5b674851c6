#!/usr/bin/env bash
# otel-trace.sh BUILD: one lease's trace from a real run, as docs/observability.md shows
# it. Starts fakedb (system clock) and tests/otel/receiver.py, runs
#   dynalock run --lease 3s nightly-report -- sh -c 'sleep 2.5'
# with OTEL_EXPORTER_OTLP_ENDPOINT and a caller's TRACEPARENT, so the heartbeat renews
# twice while CMD runs, then renders what the receiver captured with
# tests/otel/waterfall.py.
set -eu
build=$1
here=$(cd "$(dirname "$0")/.." && pwd)
w=$(mktemp -d)
trap 'kill -TERM ${rpid:-} ${fpid:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$w"' EXIT
"$build/fakedb/fakedb" --port 0 --port-file "$w/port" >"$w/fakedb.log" 2>&1 &
fpid=$!
python3 "$here/tests/otel/receiver.py" --out "$w/captured.json" >"$w/recv" &
rpid=$!
for _ in $(seq 100); do [ -s "$w/port" ] && [ -s "$w/recv" ] && break; sleep 0.1; done
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$(cat "$w/port")
export DYNALOCK_TABLE=locks
"$build/cli/dynalock" table create locks --exist-ok >/dev/null
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$(awk '{print $3}' "$w/recv")
export OTEL_SERVICE_NAME=nightly-report
TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 \
    "$build/cli/dynalock" run --lease 3s nightly-report -- sh -c 'sleep 2.5'
kill -TERM $rpid; wait $rpid || true
python3 "$here/tests/otel/waterfall.py" "$w/captured.json" 40
