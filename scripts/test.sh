#!/usr/bin/env bash
# Runs the whole test suite: installs missing packages, builds, and runs every test under
# ctest (unit, end to end over HTTP against the in-process fake server, the installed
# package consumer, and the real-client and DynamoDB Local checks when their peers are
# available).
#   scripts/test.sh                          the normal build (build/)
#   scripts/test.sh --sanitize address,undefined   ASan+UBSan build (build-asan/)
#   scripts/test.sh --sanitize thread        TSan build (build-tsan/)
#                                            (both without the *_ddblocal runs: see below)
#   scripts/test.sh --valgrind               every check suite under valgrind, in build/ (the
#                                            normal build: DYNALOCK_TEST_VALGRIND=1 for ctest)
#   CC=clang scripts/test.sh ...             the same with clang (build-clang/, build-asan-clang/, ...)
#   Extra arguments after -- go to ctest (e.g. -- -R coord).
# DYNALOCK_TEST_JOBS=N runs N tests at once (default: twice the cores and two; the cores
# under valgrind).
# DYNALOCK_SETUP_DONE=1 skips the packages and peers set-up (.ci/run does it once);
# DYNALOCK_REQUIRE_PEERS=1 makes missing test peers a failure (tests/peers/missing.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sanitize=""
valgrind=0
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize="$2"; shift 2 ;;
    --valgrind) valgrind=1; shift ;;
    --) shift; ctest_args=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument '$1'" >&2; exit 64 ;;
  esac
done
if [ "${DYNALOCK_SETUP_DONE:-}" != 1 ]; then
  "$root/scripts/deps.sh" --test
fi
# The test build checks the code's invariants (DL_ASSERT), as the sanitizer builds do.
cfg=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DDYNALOCK_ASSERTS=ON)
# The simulator's profile under the sanitizers, which run it several times slower.
sim_small="--seeds 200 --steps 60 --replay-check 5 --quiet"
# A compiler other than the default gets build folders of its own (CC=clang -> build-clang).
cc_suffix=""
if [ -n "${CC:-}" ] && [ "$(basename "$CC")" != cc ] && [ "$(basename "$CC")" != gcc ]; then
  cc_suffix=-$(basename "$CC")
fi
build=$root/build$cc_suffix
case "$sanitize" in
  "") ;;
  thread) build=$root/build-tsan$cc_suffix; cfg=(-DCMAKE_BUILD_TYPE=Debug -DDYNALOCK_SANITIZE=thread -DDYNALOCK_BUILD_BENCH=OFF "-DDYNALOCK_SIM_FAST=$sim_small") ;;
  *) build=$root/build-asan$cc_suffix; cfg=(-DCMAKE_BUILD_TYPE=Debug -DDYNALOCK_SANITIZE="$sanitize" -DDYNALOCK_BUILD_BENCH=OFF "-DDYNALOCK_SIM_FAST=$sim_small") ;;
esac
# Under the sanitizers, the runs against DynamoDB Local are left out: the boto3 ones run
# none of this project's code, and the suites' runs against it are the same client code
# as their runs against fakedb, which stay. Each starts a JVM and runs alone (RUN_SERIAL),
# so together they were minutes of each sanitizer run. The normal run keeps them all.
# Nor do they repeat the checks that only read the source tree (label `static`).
if [ -n "$sanitize" ] && [ "${#ctest_args[@]}" -eq 0 ]; then
  ctest_args=(-E '_ddblocal$|^ddblocal_' -LE static)
fi
if [ "$valgrind" = 1 ]; then
  # The normal build, each check suite run under valgrind by its launcher
  # (tests/support/check_launch.sh); the shell-driven tests add nothing there.
  export DYNALOCK_TEST_VALGRIND=1
  [ "${#ctest_args[@]}" -gt 0 ] || ctest_args=(-L check)
fi
if [ "${DYNALOCK_SETUP_DONE:-}" != 1 ] && ! "$root/scripts/peers.sh"; then
  if [ "${DYNALOCK_REQUIRE_PEERS:-}" = 1 ]; then
    echo "test.sh: scripts/peers.sh failed and DYNALOCK_REQUIRE_PEERS=1" >&2; exit 1
  fi
  echo "test.sh: test peers unavailable; their tests will be skipped" >&2
fi
cmake -S "$root" -B "$build" "${cfg[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
# ctest's job slots: twice the cores and two more, since most tests spend their time
# waiting for a server or a process to answer; the ones that keep a core busy take two
# slots (their PROCESSORS property), so two of them leave room for the waiting ones.
# Under valgrind every test keeps a core busy: one slot per core.
jobs=${DYNALOCK_TEST_JOBS:-$(( $(nproc) * 2 + 2 ))}
[ "$valgrind" = 0 ] || jobs=${DYNALOCK_TEST_JOBS:-$(nproc)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
cd "$build"
ctest --output-on-failure -j"$jobs" "${ctest_args[@]}"
