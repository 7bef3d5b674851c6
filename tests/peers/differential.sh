#!/usr/bin/env bash
# Usage: differential.sh FAKEDB_BINARY
# Runs differential.py with DynamoDB Local as A and fakedb as B (each fresh, in memory).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fakedb=$1
exec "$here/with_server.sh" ddblocal -- sh -c \
  "A=\$DYNALOCK_TEST_ENDPOINT; exec '$here/with_server.sh' fakedb '$fakedb' -- sh -c 'python3 $here/differential.py '\$A' \$DYNALOCK_TEST_ENDPOINT'"
