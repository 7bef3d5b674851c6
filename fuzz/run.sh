#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) in build-fuzz/, one per
# fuzz/fuzz_*.c, and runs each on its corpus (fuzz/corpus/NAME/, which may be absent),
# as many side by side as there are cores. Exits non-zero on any crash, leak or sanitizer
# report; the input that did it is left in build-fuzz/ (add it to fuzz/corpus/ once fixed).
#   fuzz/run.sh [SECONDS]          CI: a fixed seed and number of runs, at most SECONDS
#                                  (default 30) each, so that a run is repeatable
#   fuzz/run.sh --explore SECONDS  a random seed for SECONDS each, to find new inputs
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
explore=0
if [ "${1:-}" = "--explore" ]; then explore=1; shift; fi
secs=${1:-30}
if [ "$explore" = 1 ]; then
  limits=(-max_total_time="$secs")
else
  limits=(-seed=1 -runs=300000 -max_total_time="$secs")
fi
build=$root/build-fuzz
CC=clang cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DDYNALOCK_FUZZ=ON \
  -DDYNALOCK_SANITIZE=address,undefined -DDYNALOCK_BUILD_TESTS=OFF -DDYNALOCK_BUILD_BENCH=OFF >/dev/null
# Every target CMake builds: one per fuzz/fuzz_*.c (fuzz/CMakeLists.txt).
targets=()
for src in "$root"/fuzz/fuzz_*.c; do
  t=$(basename "$src" .c); targets+=("${t#fuzz_}")
done
[ "${#targets[@]}" -gt 0 ] || { echo "fuzz: no fuzz/fuzz_*.c" >&2; exit 1; }
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null
# The targets run side by side, as many at once as there are cores (each is one process
# on one core); their summaries are printed when all have ended, in the targets' order.
jobs=$(nproc)
run_one() { # TARGET: runs it on a copy of its corpus; its status into build-fuzz/fuzz_T.rc
  local t=$1 corpus rc=0
  corpus=$(mktemp -d)
  cp "$root/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  (cd "$build" && "$build/fuzz/fuzz_$t" "${limits[@]}" -max_len=4096 -timeout=10 \
    -print_final_stats=1 "$corpus" 2>"$build/fuzz_$t.log") || rc=$?
  rm -rf "$corpus"
  echo "$rc" > "$build/fuzz_$t.rc"
}
for t in "${targets[@]}"; do
  rm -f "$build/fuzz_$t.rc"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$t" &
done
wait
passed=0 failed=0
for t in "${targets[@]}"; do
  echo "fuzz: $t"
  if [ "$(cat "$build/fuzz_$t.rc" 2>/dev/null)" = 0 ]; then
    grep -E 'stat::number_of_executed_units|cov:' "$build/fuzz_$t.log" | tail -n 2
    passed=$((passed + 1))
  else
    tail -n 60 "$build/fuzz_$t.log"
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
