# bash completion for fakedb(1): its options, and the values of --clock and of the
# options that take a path. Installed as share/bash-completion/completions/fakedb.

_fakedb()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=""
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    case $prev in
        --db | --port-file) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --clock) COMPREPLY=($(compgen -W "system fake fake:" -- "$cur")); return 0 ;;
        --host) COMPREPLY=($(compgen -W "127.0.0.1 0.0.0.0 ::1 ::" -- "$cur")); return 0 ;;
        --cors) COMPREPLY=($(compgen -W "none" -- "$cur")); return 0 ;;
        --port | --credentials | --threads | --idle-timeout | --max-connections | --account-id) return 0 ;;
    esac
    COMPREPLY=($(compgen -W "--host --port --port-file --db --clock --credentials --threads --idle-timeout --max-connections --log --cors --account-id --delay-transient-statuses --separate-databases --help --version" -- "$cur"))
    return 0
}
complete -F _fakedb fakedb
