#!/bin/sh
# check_launch.sh SECONDS PROGRAM [ARG...]: how ctest runs a check suite. PROGRAM runs
# with a bound of SECONDS of real time; with DYNALOCK_TEST_VALGRIND=1 (what
# `scripts/test.sh --valgrind` sets) it runs under valgrind's memcheck instead (any error,
# and a definite or possible leak, fails it), with six times the bound and
# DYNALOCK_TEST_TIME_SCALE=10, since valgrind runs code tens of times slower. So one build
# serves the normal run and the valgrind run. Under a sanitizer (DYNALOCK_TEST_TIME_SCALE
# above 1, set by its build) the bound is that many times SECONDS. Origins of uninitialised values are not
# tracked (that doubles valgrind's time and finds nothing more): to see where a reported
# value came from, run again with VALGRIND_OPTS=--track-origins=yes.
set -u
secs=$1
shift
if [ "${DYNALOCK_TEST_VALGRIND:-}" = 1 ]; then
    if ! command -v valgrind >/dev/null 2>&1; then
        echo "check_launch: DYNALOCK_TEST_VALGRIND=1, but valgrind is not installed" >&2
        exit 1
    fi
    export DYNALOCK_TEST_TIME_SCALE=10
    secs=$((secs * 6))
    set -- valgrind --quiet --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite,possible --show-leak-kinds=definite,possible \
        --suppressions="$(dirname "$0")/../valgrind.supp" "$@"
elif [ "${DYNALOCK_TEST_TIME_SCALE:-1}" -gt 1 ] 2>/dev/null; then
    # a sanitizer's build (its scale, 3): the bound stretches as the suites' own do
    secs=$((secs * DYNALOCK_TEST_TIME_SCALE))
fi
timeout --kill-after=10 "$secs" "$@"
st=$?
if [ "$st" -eq 124 ]; then
    echo "check_launch: stopped after $secs s: $*" >&2
fi
exit "$st"
