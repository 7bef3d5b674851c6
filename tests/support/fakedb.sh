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
        sleep 0.05
    done
    if [ ! -s "$dir/port" ]; then
        echo "fakedb's output:"
        cat "$dir/fakedb.log"
        return 1
    fi
    fakedb_ep=http://127.0.0.1:$(cat "$dir/port")
}
