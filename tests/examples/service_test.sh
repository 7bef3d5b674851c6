#!/usr/bin/env bash
# End-to-end test of examples/service.c: against a fakedb, the service leads (the lock
# shows it as the holder), a second instance is refused and waits, SIGTERM makes the
# first release the lease and exit 0, the second takes over at its next poll (10 s of
# real time: the example runs on the system clock), and a missing table is an error of
# the election (exit 1). Usage: service_test.sh ORDER_SWEEPER DYNALOCK FAKEDB
set -uo pipefail
svc=$1 dl=$2 fakedb=$3
. "$(cd "$(dirname "$0")/../support" && pwd)/fakedb.sh"
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
passed=0 failed=0
check() { # NAME CONDITION...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "service: FAILED: $name"; fi
}
# Polls (at most 30 s, every 200 ms: each poll may start the dynalock command, and the
# takeover waits 10 s of real time) until CMD succeeds: a wait for an event, not a sleep
# standing in for one.
poll_until() { local i; for ((i = 0; i < 150; i++)); do eval "$1" && return 0; nap 0.2; done; return 1; }

fakedb_start "$fakedb" "$tmp"; st=$?
pids+=("$fakedb_pid")
[ "$st" = 0 ] || { echo "service: fakedb did not start"; exit 1; }
export AWS_ENDPOINT_URL_DYNAMODB=$fakedb_ep
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
"$dl" table create Shop --pk pk --sk sk >/dev/null || { echo "service: cannot create the table"; exit 1; }
state() { "$dl" state order-sweeper --table Shop --sk sk --json 2>/dev/null; }
state_has() { state | grep -q "$1"; }

"$svc" Shop >"$tmp/first.log" 2>&1 &
first=$!; pids+=($first)
check "the first instance leads" poll_until 'state | grep -q "\"held\": *true"'
token1=$(state | sed -n 's/.*"fencing_token": *\([0-9]*\).*/\1/p')
check "its fencing token is 1" [ "$token1" = 1 ]

failures() { curl -s "$AWS_ENDPOINT_URL_DYNAMODB/fake/stats" | sed -n 's/^{"requests":[0-9]*,"condition_failures":\([0-9]*\).*/\1/p'; }
before=$(failures)
"$svc" Shop >"$tmp/second.log" 2>&1 &
second=$!; pids+=($second)
# The second tries, finds the lock held (its write fails its condition), and waits.
check "a second instance is refused and waits" poll_until '[ "$(failures)" -gt "$before" ]'
check "while the first still leads with token 1" state_has '"fencing_token": *1'

kill -TERM "$first"
wait "$first"; st=$?
check "SIGTERM: the first exits 0" [ "$st" = 0 ]
check "the second takes over at its next poll, with token 2" \
  poll_until 'state | grep -q "\"fencing_token\": *2" && state | grep -q "\"held\": *true"'
kill -TERM "$second"
wait "$second"; st=$?
check "SIGTERM: the second exits 0" [ "$st" = 0 ]
check "and the lock is free" poll_until 'state | grep -q "\"held\": *false"'

"$svc" NoSuchTable >"$tmp/missing.log" 2>&1 &
missing=$!; pids+=($missing)
wait "$missing"; st=$?
check "a missing table ends the service with status 1" [ "$st" = 1 ]
check "naming the error of the election" grep -q "the election failed" "$tmp/missing.log"

echo "service: $passed passed, $failed failed"
[ "$failed" = 0 ]
