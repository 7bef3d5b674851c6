# Sourced by the scripts that need a test peer (DynamoDB Local, the JavaScript SDK).
# missing_peer MESSAGE: the peer is not here. A skip (exit 77), or a failure (exit 1)
# where DYNALOCK_REQUIRE_PEERS=1, as .ci/run sets it under CI (CI=true).
missing_peer() {
  if [ "${DYNALOCK_REQUIRE_PEERS:-}" = 1 ]; then
    echo "$1; DYNALOCK_REQUIRE_PEERS=1: a missing peer fails"
    exit 1
  fi
  echo "$1; skipped"
  exit 77
}
