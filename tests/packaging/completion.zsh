#!/usr/bin/env zsh
# Usage: completion.zsh COMPLETIONS_DIR DYNALOCK FAKEDB
# Drives the zsh completions of dynalock and fakedb as a user would: an interactive zsh
# in a pseudo-terminal (zsh/zpty) with compinit and the completions on its fpath gets a
# command line and a TAB; compadd is wrapped to print every match it is given, and a
# function run after completion marks the end (the markers are written split in the
# commands, so the terminal's echo of them never looks like one). Each case checks the
# matches offered; then the options offered for each subcommand must be those of its
# --help.
zmodload zsh/zpty || exit 1
dir=$1 dynalock=$2 fakedb=$3
pass=0 fail=0

# One interactive zsh for every case, with compinit and the completions loaded.
zpty z zsh -f -i
# No listing of matches, which could stop to ask "do you wish to see all N?".
zpty -w z "PS1='' PROMPT='' RPROMPT=''; unsetopt beep autolist listambiguous; fpath=(${(q)dir} \$fpath)"
zpty -w z 'autoload -U compinit; compinit -u -D; bindkey "^I" complete-word'
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a m; builtin compadd -A m "$@"; (( $#m )) && print -rl -- "<""m>"${^m}; builtin compadd "$@"; }'
zpty -w z '_mark_end() { print -r -- "<""end>"; }'
zpty -w z 'zle -C complete-word complete-word _wrapped; _wrapped() { comppostfuncs=(_mark_end); _main_complete "$@" }'

# matches LINE: the matches zsh offers on TAB at the end of LINE, one a line, sorted.
# Ctrl-U clears what the previous case left on the command line.
matches()
{
    zpty -w -n z $'\x15'"$1"$'\t'
    local line
    local -a found
    while zpty -r z line; do
        line=${${line//$'\r'/}%$'\n'}
        [[ $line == *'<end>'* ]] && break
        # the terminal echoes the typed line before the first match
        [[ $line == *'<m>'* && -n ${line##*<m>} ]] && found+=("${line##*<m>}")
    done
    print -rl -- ${(ou)found}
}

expect()
{
    local line=$1; shift
    local got=$(matches "$line") want=$(print -rl -- ${(ou)@:#})
    if [[ $got == "$want" ]]; then
        (( pass++ ))
    else
        print -r -- "FAIL '$line<TAB>': got [${(f)got}], want [$*]" >&2
        (( fail++ ))
    fi
}

# offers LINE WORD: TAB offers at least WORD (for lists from the system: commands).
offers()
{
    if matches "$1" | grep -qxF -- "$2"; then
        (( pass++ ))
    else
        print -r -- "FAIL '$1<TAB>' does not offer '$2'" >&2
        (( fail++ ))
    fi
}

expect "dynalock " run leader put state list watch release simulate table
expect "dynalock --v" --version
expect "dynalock l" leader list
expect "dynalock run --le" --lease
expect "dynalock run --con" --conflict-exit-code
expect "dynalock leader --o" --once
expect "dynalock put --if" --if-held
expect "dynalock list --log-level w" warn
expect "dynalock state --log-format " text json
expect "dynalock simulate " holder release delete
expect "dynalock table c" create
offers "dynalock run nightly l" ls
offers "dynalock leader --lease 30s sweeper -- ba" bash
expect "dynalock run --table " ""
expect "dynalock bogus --" ""
expect "fakedb --c" --clock --cors --credentials
expect "fakedb --port " ""
expect "fakedb --clock sy" system
expect "fakedb --ve" --version
help_options() { "$@" --help | grep -oE '^  (--[a-z-]+|-h, --help)(, --[a-z-]+)?' | grep -oE -- '--[a-z-]+' | sort -u; }
for cmd in run leader put state list watch release simulate table; do
    got=$(matches "dynalock $cmd --" | sort -u)
    # its own options, and those all share ('dynalock help options')
    want=$({ help_options $dynalock $cmd; $dynalock help options | grep -oE '^  (--[a-z-]+|-h, --help)(, --[a-z-]+)?' | grep -oE -- '--[a-z-]+'; } | sort -u)
    if [[ -n $want && $got == "$want" ]]; then
        (( pass++ ))
    else
        print -r -- "FAIL dynalock $cmd: completion offers [${(f)got}], --help lists [${(f)want}]" >&2
        (( fail++ ))
    fi
done
got=$(matches "fakedb --" | sort -u)
want=$(help_options $fakedb)
if [[ -n $want && $got == "$want" ]]; then
    (( pass++ ))
else
    print -r -- "FAIL fakedb: completion offers [${(f)got}], --help lists [${(f)want}]" >&2
    (( fail++ ))
fi

zpty -d z
print "completion.zsh: $pass passed, $fail failed"
(( fail == 0 ))
