#!/usr/bin/env bash
# Usage: completion.sh COMPLETIONS_DIR DYNALOCK FAKEDB
# Drives the bash completions of dynalock and fakedb as bash does on TAB: sources the
# script, sets COMP_WORDS/COMP_CWORD, calls the completion function and checks
# COMPREPLY. Then checks that the options offered for each subcommand are exactly those
# its --help lists, so the completion cannot fall behind the program.
set -uo pipefail
dir=$1 dynalock=$2 fakedb=$3
# shellcheck source=/dev/null
source "$dir/dynalock.bash" || exit 1
# shellcheck source=/dev/null
source "$dir/fakedb.bash" || exit 1
pass=0 fail=0

# complete LINE: what TAB offers at the end of LINE (a trailing space starts a new
# word), one per line, sorted.
complete_line()
{
    local line=$1 fn
    read -r -a COMP_WORDS <<< "$line"
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE=$line COMP_POINT=${#line}
    fn=$(complete -p "${COMP_WORDS[0]}" | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
    COMPREPLY=()
    "$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]:-}"
    printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort
}

# expect LINE WORD... : TAB offers exactly these words ("" for nothing).
expect()
{
    local line=$1; shift
    local got want
    got=$(complete_line "$line")
    want=$(printf '%s\n' "$@" | LC_ALL=C sort)
    if [ "$got" = "$want" ]; then
        pass=$((pass + 1))
    else
        echo "FAIL '$line<TAB>': got [$(echo $got)], want [$(echo $want)]" >&2
        fail=$((fail + 1))
    fi
}

# offers LINE WORD: TAB offers at least WORD (for lists from the system, e.g. commands).
offers()
{
    local all
    all=$(complete_line "$1")    # not a pipe into grep -q: its early exit fails pipefail
    if grep -qxF -- "$2" <<< "$all"; then
        pass=$((pass + 1))
    else
        echo "FAIL '$1<TAB>' does not offer '$2'" >&2
        fail=$((fail + 1))
    fi
}

complete -p dynalock | grep -q -- '-F _dynalock' || { echo "FAIL: no completion for dynalock" >&2; fail=$((fail + 1)); }
complete -p fakedb | grep -q -- '-F _fakedb' || { echo "FAIL: no completion for fakedb" >&2; fail=$((fail + 1)); }

# dynalock: subcommands, options, option values, positional words, CMD.
expect "dynalock " run leader put state list watch release simulate table --help --version
expect "dynalock l" leader list
expect "dynalock --v" --version
expect "dynalock run --le" --lease
expect "dynalock run --co" --conflict-exit-code
expect "dynalock run --ve" --verbose
expect "dynalock run --conflict-exit-code " ""
expect "dynalock leader --co" ""
expect "dynalock leader --o" --once
expect "dynalock put --i" --if-held --item --item-file
expect "dynalock state --j" --json
expect "dynalock watch --c" --clock --count
expect "dynalock leader --v" --value
expect "dynalock release --i" --if-token
expect "dynalock release --if-token " ""
expect "dynalock list --log-level " trace debug info warn error off
expect "dynalock list --log-level w" warn
expect "dynalock run --log-format j" json
expect "dynalock leader --clock " system server
expect "dynalock simulate " holder release delete
expect "dynalock simulate --lease 5s h" holder
expect "dynalock table c" create
expect "dynalock table --ttl expires d" delete
offers "dynalock run --lease 30s nightly -- " ls
offers "dynalock run nightly l" ls
offers "dynalock leader --table Jobs sweeper -- " bash
# the bad day: values that are free text, unknown subcommands, words past the last
expect "dynalock run --table " ""
expect "dynalock run --lease " ""
expect "dynalock bogus --" ""
expect "dynalock state lockname --pk pk2 x" ""
expect "dynalock table create t " ""

# fakedb
expect "fakedb --c" --clock --cors --credentials
expect "fakedb --cors n" none
expect "fakedb --clock f" fake fake:
expect "fakedb --port " ""
expect "fakedb --threads 4 --l" --log
expect "fakedb --host 0" 0.0.0.0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/data.sqlite"
expect "fakedb --db $tmp/da" "$tmp/data.sqlite"
expect "dynalock put --item-file $tmp/d" "$tmp/data.sqlite"

# The options offered are those of --help, for every subcommand and for fakedb.
# A subcommand's --help lists its own options; 'dynalock help options' those they share.
help_options() { "$@" --help | grep -oE '^  (--[a-z-]+|-h, --help)(, --[a-z-]+)?' | grep -oE -- '--[a-z-]+'; }
common_options() { "$dynalock" help options | grep -oE '^  (--[a-z-]+|-h, --help)(, --[a-z-]+)?' | grep -oE -- '--[a-z-]+'; }
for cmd in $_dynalock_commands; do
  got=$(complete_line "dynalock $cmd --")
  want=$({ help_options "$dynalock" "$cmd"; common_options; } | LC_ALL=C sort -u)
  if [ -n "$want" ] && [ "$got" = "$want" ]; then
    pass=$((pass + 1))
  else
    echo "FAIL dynalock $cmd: completion offers [$(echo $got)], --help lists [$(echo $want)]" >&2
    fail=$((fail + 1))
  fi
done
got=$(complete_line "fakedb --")
want=$(help_options "$fakedb" | LC_ALL=C sort)
if [ -n "$want" ] && [ "$got" = "$want" ]; then
  pass=$((pass + 1))
else
  echo "FAIL fakedb: completion offers [$(echo $got)], --help lists [$(echo $want)]" >&2
  fail=$((fail + 1))
fi

echo "completion: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
