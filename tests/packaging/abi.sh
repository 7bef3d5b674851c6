#!/usr/bin/env bash
# Usage: abi.sh [--update] LIST_DIR LIB.so...
# Compares the dynamic symbols each shared library exports (nm -D --defined-only) with
# the checked-in list LIST_DIR/<name>.symbols (libddb.symbols for libddb.so.0), whose
# first line names the SONAME, and prints the difference ("+" exported but not listed,
# "-" listed but no longer exported; a new SONAME is a difference too). An export that
# changes on purpose is recorded with --update, which rewrites the lists.
set -euo pipefail
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
dir=$1; shift
bad=0
for lib in "$@"; do
  soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
  [ -n "$soname" ] || { echo "abi: $lib has no SONAME" >&2; exit 1; }
  list=$dir/${soname%%.so*}.symbols
  now=$(echo "SONAME $soname"; nm -D --defined-only "$lib" | awk '{ print $NF }' | LC_ALL=C sort -u)
  if [ "$update" = 1 ]; then
    { echo "# The dynamic symbols ${soname%%.so*} exports (tests/packaging/abi.sh --update)"
      echo "$now"; } > "$list"
    echo "abi: wrote $list ($(($(echo "$now" | wc -l) - 1)) symbols)"
    continue
  fi
  if [ ! -f "$list" ]; then
    echo "abi: no list $list for $lib" >&2; bad=$((bad + 1)); continue
  fi
  if ! diff=$(diff <(grep -v '^#' "$list") <(echo "$now")); then
    echo "abi: $soname exports differ from $list:" >&2
    echo "$diff" | sed -n 's/^> /  + /p; s/^< /  - /p' >&2
    bad=$((bad + 1))
  else
    echo "abi: $soname: $(($(echo "$now" | wc -l) - 1)) symbols, as listed"
  fi
done
[ "$update" = 1 ] && exit 0
if [ "$bad" -gt 0 ]; then
  echo "abi: $bad of $# libraries differ; if the change is meant, run" \
       "tests/packaging/abi.sh --update $dir LIB.so... and say so in CHANGELOG.md" >&2
  exit 1
fi
echo "abi: $# libraries, 0 differ"
