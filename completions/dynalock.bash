# bash completion for dynalock(1): subcommands, their options, the values of options
# that take a fixed set, and the program (then its arguments) after `run`/`leader` NAME.
# Installed as share/bash-completion/completions/dynalock; tests/packaging checks that
# the options here are those of `dynalock COMMAND --help`.

_dynalock_commands="run leader put state list watch release simulate table"
_dynalock_common="--table --pk --sk --endpoint --region --profile --log-level --log-format --clock --help"

# The options of one subcommand.
_dynalock_options()
{
    case $1 in
        run) echo "$_dynalock_common --lease --label --value --wait --verbose --conflict-exit-code --slots --kill-after" ;;
        leader) echo "$_dynalock_common --lease --label --value --kill-after --pause --once" ;;
        put) echo "$_dynalock_common --if-held --item --item-file --lock-table --lock --owner --token" ;;
        state) echo "$_dynalock_common --json --for --slots" ;;
        list) echo "$_dynalock_common --json --index" ;;
        watch) echo "$_dynalock_common --json --count" ;;
        release) echo "$_dynalock_common --if-token --owner --json" ;;
        simulate) echo "$_dynalock_common --lease --label --json" ;;
        table) echo "$_dynalock_common --ttl --exist-ok" ;;
    esac
}

# Succeeds when option $1 takes a value (the next word).
_dynalock_takes_value()
{
    case $1 in
        --table | --pk | --sk | --endpoint | --region | --profile | --log-level | \
        --log-format | --clock | --lease | --label | --wait | --kill-after | --pause | \
        --item | --item-file | --lock-table | --lock | --owner | --token | --ttl | --index | \
        --if-token | --value | --for | --count | --conflict-exit-code | --slots)
            return 0 ;;
    esac
    return 1
}

_dynalock()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=""
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()

    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$_dynalock_commands --help --version" -- "$cur"))
        return 0
    fi
    local cmd=${COMP_WORDS[1]}

    case $prev in
        --log-level) COMPREPLY=($(compgen -W "trace debug info warn error off" -- "$cur")); return 0 ;;
        --log-format) COMPREPLY=($(compgen -W "text json" -- "$cur")); return 0 ;;
        --clock) COMPREPLY=($(compgen -W "system server" -- "$cur")); return 0 ;;
        --item-file) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
    esac
    if _dynalock_takes_value "$prev"; then
        return 0    # a name, duration or text: nothing to offer
    fi

    # Where the words after the subcommand stand: the positional arguments before this
    # word, and where CMD starts for run and leader (after `--`, or after NAME).
    local i word npos=0 cmd_at=0
    for ((i = 2; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [ "$word" = "--" ]; then
            cmd_at=$((i + 1)); break
        elif [[ $word == -* ]]; then
            _dynalock_takes_value "$word" && ((i++))
        else
            npos=$((npos + 1))
            if [ "$npos" -eq 1 ] && { [ "$cmd" = run ] || [ "$cmd" = leader ]; }; then
                cmd_at=$((i + 1))
                [ "$cmd_at" -lt "$COMP_CWORD" ] && [ "${COMP_WORDS[cmd_at]}" = "--" ] &&
                    cmd_at=$((cmd_at + 1))
                break
            fi
        fi
    done
    if [ "$cmd_at" -gt 0 ]; then
        if [ "$COMP_CWORD" -eq "$cmd_at" ]; then
            COMPREPLY=($(compgen -c -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return 0
    fi

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_dynalock_options "$cmd")" -- "$cur"))
        return 0
    fi
    if [ "$npos" -eq 0 ]; then
        case $cmd in
            simulate) COMPREPLY=($(compgen -W "holder release delete" -- "$cur")) ;;
            table) COMPREPLY=($(compgen -W "create delete" -- "$cur")) ;;
        esac
    fi
    return 0
}
complete -F _dynalock dynalock
