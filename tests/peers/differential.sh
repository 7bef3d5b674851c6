#!/usr/bin/env bash
# Usage: differential.sh FAKEDB_BINARY
#        differential.sh --self FAKEDB_BINARY
# Runs differential.py with DynamoDB Local as A and fakedb as B (each fresh, in memory);
# with --self, A is a second fakedb (the sanitizer runs, which leave DynamoDB Local out:
# every case runs against the sanitized fakedb, and the two must answer alike).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --self ]; then
  fakedb=$2
  exec "$here/with_server.sh" fakedb "$fakedb" -- sh -c \
    "A=\$DYNALOCK_TEST_ENDPOINT; exec '$here/with_server.sh' fakedb '$fakedb' -- sh -c 'python3 $here/differential.py '\$A' \$DYNALOCK_TEST_ENDPOINT --self'"
fi
fakedb=$1
exec "$here/with_server.sh" ddblocal -- sh -c \
  "A=\$DYNALOCK_TEST_ENDPOINT; exec '$here/with_server.sh' fakedb '$fakedb' -- sh -c 'python3 $here/differential.py '\$A' \$DYNALOCK_TEST_ENDPOINT'"
