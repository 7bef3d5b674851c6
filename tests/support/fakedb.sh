# fakedb.sh: sourced by the shell tests that run the fakedb program (tests/cli,
# tests/console, tests/examples, tests/peers): one way to start it on a free loopback
# port and wait until it listens.
#
# fakedb_start FAKEDB DIR [ARG...]: runs FAKEDB --port 0 --port-file DIR/port ARG... in
# the background, its output in DIR/fakedb.log, and waits for the port file, which the
# server writes (atomically) once it listens: polled every 50 ms, for at most 30 s of
# real time, and no longer once the process has exited. Sets fakedb_pid (even when the
# start fails, for the caller's clean-up) and fakedb_ep, http://127.0.0.1:PORT. Returns
# 1, the log on stdout, when the server did not start.
fakedb_start() {
    local bin=$1 dir=$2 i
    shift 2
    "$bin" --port 0 --port-file "$dir/port" "$@" >"$dir/fakedb.log" 2>&1 &
    fakedb_pid=$!
    for ((i = 0; i < 600; i++)); do
        [ -s "$dir/port" ] && break
        kill -0 "$fakedb_pid" 2>/dev/null || break
        nap 0.05
    done
    if [ ! -s "$dir/port" ]; then
        echo "fakedb's output:"
        cat "$dir/fakedb.log"
        return 1
    fi
    fakedb_ep=http://127.0.0.1:$(cat "$dir/port")
}

# nap SECONDS: waits SECONDS (a decimal) of real time without starting a process, which
# a test that polls every 50 ms would otherwise do thousands of times (`sleep`): a read
# with a time-out on a pipe that nothing writes (opened for reading and writing, so that
# the open does not wait for a writer).
nap() {
    if [ -z "${nap_fifo:-}" ]; then
        nap_fifo=$(mktemp -u "${TMPDIR:-/tmp}/fakedb-nap.XXXXXX")
        mkfifo -m 600 "$nap_fifo" || { sleep "$1"; return 0; }
        exec {nap_fd}<>"$nap_fifo"
        rm -f "$nap_fifo"
    fi
    read -r -t "$1" -u "$nap_fd" _ || :
}

# fakedb_admin METHOD PATH [JSON]: one request to fakedb's admin API (/fake/...) at
# $fakedb_ep, over bash's /dev/tcp rather than curl, since tests poll it: the answer's
# body in $fakedb_reply (without trailing newlines, as $(curl ...) gives it); true when
# the status is 2xx. JSON is ASCII (its length in bytes
# is its length in characters).
fakedb_admin() {
    local method=$1 path=$2 body=${3:-} hostport fd line status
    hostport=${fakedb_ep#http://}
    fakedb_reply=""
    exec {fd}<>"/dev/tcp/${hostport%:*}/${hostport##*:}" 2>/dev/null || return 1
    printf '%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
        "$method" "$path" "$hostport" "${#body}" "$body" >&"$fd"
    IFS= read -r line <&"$fd"
    status=${line#HTTP/1.? }
    status=${status%% *}
    while IFS= read -r line <&"$fd" && [ -n "${line%$'\r'}" ]; do :; done
    IFS= read -r -d '' fakedb_reply <&"$fd"
    exec {fd}<&-
    while [ "${fakedb_reply%$'\n'}" != "$fakedb_reply" ]; do fakedb_reply=${fakedb_reply%$'\n'}; done
    [ "${status:0:1}" = 2 ]
}
