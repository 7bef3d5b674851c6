#!/usr/bin/env bash
# Usage: abi.sh [--update] LIST_DIR LIB.so... --headers HEADER_DIR...
# Checks what each shared library exports (nm -D --defined-only):
#  1. Only the public API: every exported symbol must be a function or object that a
#     public header under a HEADER_DIR declares, and no internal `ddb__*` function may be
#     exported.
#  2. No change by accident: the exports equal the checked-in list
#     LIST_DIR/<name>.symbols (libddb.symbols for libddb.so.0), whose first line names
#     the SONAME; the difference is printed ("+" exported but not listed, "-" listed but
#     no longer exported; a new SONAME is a difference too). An export that changes on
#     purpose is recorded with --update, which rewrites the lists (rule 1 still holds).
set -euo pipefail
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
dir=$1; shift
libs=() headers=()
while [ $# -gt 0 ] && [ "$1" != "--headers" ]; do libs+=("$1"); shift; done
[ "${1:-}" = "--headers" ] && shift
headers=("$@")
[ ${#libs[@]} -gt 0 ] || { echo "abi: no library given" >&2; exit 2; }
[ ${#headers[@]} -gt 0 ] || { echo "abi: no public header folder given (--headers DIR...)" >&2; exit 2; }

# The names the public headers declare: an identifier followed by "(" (a function) or
# declared `extern` (an object).
public=$(find "${headers[@]}" -name '*.h' -exec cat {} + |
  sed 's,/\*.*\*/,,g' |
  grep -oE '\b[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(|extern[^;(]*\b[A-Za-z_][A-Za-z0-9_]*[[:space:]]*;' |
  sed -E 's/[[:space:]]*[(;]$//; s/.*[^A-Za-z0-9_]//' | LC_ALL=C sort -u)

bad=0
for lib in "${libs[@]}"; do
  soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
  [ -n "$soname" ] || { echo "abi: $lib has no SONAME" >&2; exit 1; }
  syms=$(nm -D --defined-only "$lib" | awk '{ print $NF }' | LC_ALL=C sort -u)
  # Rule 1: only the public API.
  internal=$(echo "$syms" | grep -E '^ddb__' || true)
  private=$(echo "$syms" | grep -vE '^ddb__' | LC_ALL=C comm -23 - <(echo "$public") || true)
  if [ -n "$internal" ] || [ -n "$private" ]; then
    echo "abi: $soname exports what no public header declares:" >&2
    echo "$internal" "$private" | tr ' ' '\n' | awk 'NF { print "  ! " $0 }' >&2
    bad=$((bad + 1))
    continue
  fi
  now=$(echo "SONAME $soname"; echo "$syms")
  list=$dir/${soname%%.so*}.symbols
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
if [ "$bad" -gt 0 ]; then
  echo "abi: $bad problems; an export must be public API (declared in a public header)." \
       "If a change of the public exports" \
       "is meant, run tests/packaging/abi.sh --update $dir LIB.so... --headers DIR..." \
       "and say so in CHANGELOG.md" >&2
  exit 1
fi
[ "$update" = 1 ] && exit 0
echo "abi: ${#libs[@]} libraries, 0 differ, only public API exported"
