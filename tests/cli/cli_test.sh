#!/usr/bin/env bash
# cli_test.sh: end-to-end tests of the `dynalock` command. Several dynalock processes run
# against one `fakedb --clock fake` and follow its clock (--clock server): a test moves
# time with POST /fake/clock/advance instead of sleeping for a lease, and waits for what
# the processes do by polling with a bound, never by a fixed sleep.
# Usage: cli_test.sh PATH/TO/dynalock PATH/TO/fakedb [TEST... | --shard K/N]
# Without TEST, every test but t_lease_deadline and t_lost_answers (ctest runs them as
# cli_lease_deadline and cli_lost_answers, beside cli_e2e).
# --shard K/N runs the K-th of N interleaved parts of that list (K from 1), so that ctest
# runs the parts side by side (cli_e2e_1of6 ...) and a new test lands in one of them.
set -u
DL=$1
FAKEDB=$2
shift 2
shard=""
if [ "${1:-}" = --shard ]; then shard=$2; shift 2; fi
only=("$@")
. "$(cd "$(dirname "$0")/../support" && pwd)/fakedb.sh"

W=$(mktemp -d "${TMPDIR:-/tmp}/dynalock-cli.XXXXXX")
export W DL
bg_pids=()
fakedb_pid=""

cleanup() {
    for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    [ -n "$fakedb_pid" ] && kill -TERM "$fakedb_pid" 2>/dev/null && wait "$fakedb_pid" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT

# A clean environment: no DYNALOCK_* from outside, dummy credentials, no IMDS lookups.
for v in $(compgen -e DYNALOCK_); do unset "$v"; done
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_DEFAULT_REGION
mkdir -p "$W/home"
export HOME=$W/home AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true

# ------------------------------------------------------------------ helpers

failures=0   # failures of the current test

fail() { echo "    FAIL: $*"; failures=$((failures + 1)); }

expect_eq() { # DESCRIPTION EXPECTED ACTUAL
    [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}

expect_match() { # DESCRIPTION PATTERN TEXT   (grep -E pattern, matched line by line)
    grep -Eq -- "$2" <<<"$3" || fail "$1: '$3' does not match /$2/"
}

# Runs a command; its status in $st, its stdout in $out, its stderr in $err.
capture() {
    "$@" >"$W/out" 2>"$W/err"
    st=$?
    out=$(<"$W/out")
    err=$(<"$W/err")
}

# expect_usage NEEDLE CMD...: exit 64, and on stderr a line naming NEEDLE and the
# usage line, nothing else.
expect_usage() {
    local needle=$1
    shift
    capture "$@"
    expect_eq "status of '$*'" 64 "$st"
    local e
    mapfile -t e <<<"$err"
    expect_match "error line of '$*'" "$needle" "${e[0]}"
    expect_match "usage line of '$*'" "^usage: dynalock " "${e[1]:-}"
    expect_eq "stderr lines of '$*'" 2 "${#e[@]}"
}

# Starts a command in the background, its output in $W/NAME.out and .err; pid in $bg.
start_bg() { # NAME CMD...
    local name=$1
    shift
    "$@" >"$W/$name.out" 2>"$W/$name.err" &
    bg=$!
    bg_pids+=("$bg")
}

running() { # PID: true while the process runs (a zombie does not count)
    local s
    { IFS= read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
    s=${s##*) }
    s=${s%% *}
    [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
}

# poll_until TRIES CONDITION: evaluates CONDITION every 50 ms of real time, TRIES times.
poll_until() {
    local tries=$1 i
    shift
    for ((i = 0; i < tries; i++)); do
        eval "$*" && return 0
        nap 0.05
    done
    eval "$*"
}

# bound_ms MS: a bound of real time on how promptly something happens, stretched by
# DYNALOCK_TEST_TIME_SCALE (3 under the sanitizers: tests/cli/CMakeLists.txt) and by the
# machine's load: one more MS for each runnable task per core over one, as the load
# average counts them, so that a promptness check measures the command, not the machine.
bound_ms() {
    local scale=${DYNALOCK_TEST_TIME_SCALE:-1} load cores extra
    load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)
    load=${load%%.*}
    cores=$(nproc 2>/dev/null || echo 1)
    extra=$(( ${load:-0} / cores - 1 ))
    [ "$extra" -gt 0 ] || extra=0
    echo $(( $1 * scale + $1 * extra ))
}

advance() { # MS: moves the fake server's clock
    fakedb_admin POST /fake/clock/advance "{\"ms\":$1}" || fail "advancing the server clock"
}

# pass_time MS: lets MS of server time pass in steps of 2 s, with a pause of real time
# after each, so that a live holder (lease 30 s) has 15 pauses to get a renewal answered
# before its lease could run out on its clock.
pass_time() {
    local left=$1
    while [ "$left" -gt 0 ]; do
        advance 2000
        left=$((left - 2000))
        nap 0.05
    done
}

# advance_until STEP_MS TRIES CONDITION: moves the server clock by STEP_MS until
# CONDITION holds, giving the processes 200 ms of real time to react after each move (a
# move too many only lets more time pass). Keep STEP_MS below a third of the lease of a
# live holder, so that its renewals keep up.
advance_until() {
    local step=$1 tries=$2 i
    shift 2
    for ((i = 0; i < tries; i++)); do
        poll_until 4 "$*" && return 0
        advance "$step"
    done
    poll_until 40 "$*"
}

# finish PID: waits (bounded) until the process exits; its status in $st.
finish() {
    if ! poll_until 400 "! running $1"; then
        fail "process $1 did not exit"
        kill -KILL "$1" 2>/dev/null
    fi
    { wait "$1"; } 2>/dev/null
    st=$?
}

# kill9 PID: SIGKILL, as a machine that dies; waits for it (its status in $st).
kill9() {
    { kill -KILL "$1"; finish "$1"; } 2>/dev/null
}

lines() { # FILE: its number of lines (0 when it does not exist)
    local l=()
    [ -f "$1" ] && mapfile -t l <"$1"
    echo "${#l[@]}"
}

C=(--clock server --table cli)

state_json() { "$DL" state "${C[@]}" --json "$@"; }
# The random ids of a holder (owner id, record version) as O and R, for comparing JSON.
stable() { sed -E 's/"owner":"[0-9a-z]+"/"owner":"O"/g; s/"record_version":"[0-9a-z]+"/"record_version":"R"/g'; }
holder_of() { state_json "$1" | sed -n 's/.*"holder":"\([^"]*\)".*/\1/p'; }
token_of() { state_json "$1" | sed -n 's/.*"fencing_token":\([0-9]*\).*/\1/p'; }
held() { state_json "$1" | grep -q '"held":true'; }

# The item at pk PK of TABLE, as the fake's raw GetItem answer.
get_item() { # TABLE PK
    curl -sf -X POST "$EP/" -H 'Content-Type: application/x-amz-json-1.0' \
        -H 'X-Amz-Target: DynamoDB_20120810.GetItem' \
        -H 'X-Amz-Date: 20260101T000000Z' \
        -H 'Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0000000000000000000000000000000000000000000000000000000000000000' \
        -d "{\"TableName\":\"$1\",\"Key\":{\"pk\":{\"S\":\"$2\"}},\"ConsistentRead\":true}"
}

# ------------------------------------------------------- a DynamoDB that does not answer

# hang [OPERATION] TABLE KEY: from now on, requests that match wait a minute of real time
# before fakedb handles them (a delay fault): for the command, DynamoDB does not answer.
# An empty OPERATION matches every operation.
hang() {
    local op=${1:+\"operation\":\"$1\",} key=${3:+,\"key\":\"$3\"}
    fakedb_admin POST /fake/faults "{\"kind\":\"delay\",$op\"table\":\"$2\"$key,\"delay_ms\":60000}" ||
        fail "installing a delay fault"
}
# hung: true once a request has met the delay fault (with one fault installed).
hung() { fakedb_admin GET /fake/faults && [[ $fakedb_reply =~ \"fired\":[1-9] ]]; }
unhang() { fakedb_admin DELETE /fake/faults || fail "removing the faults"; }
now_ms() { date +%s%3N; }

# term_hung NAME: the background command $bg (started as NAME) waits for a request that
# met the fault; SIGTERM it and measure how long it takes to exit: $st, $err, $took (ms).
term_hung() {
    local t0
    poll_until 200 hung || fail "$1: no request met the fault"
    t0=$(now_ms)
    kill -TERM "$bg"
    finish "$bg"
    took=$(($(now_ms) - t0))
    err=$(cat "$W/$1.err")
    local b; b=$(bound_ms 3000)
    [ "$took" -lt "$b" ] || fail "$1: exited $took ms after SIGTERM (bound $b ms)"
}

# ------------------------------------------------------------------ the server

fakedb_start "$FAKEDB" "$W" --clock fake:1767225600000 || { echo "cli: fakedb did not start"; exit 1; }
EP=$fakedb_ep
export AWS_ENDPOINT_URL_DYNAMODB=$EP
poll_until 100 'fakedb_admin GET /fake/health' || { echo "cli: fakedb unhealthy"; exit 1; }
"$DL" table create cli --exist-ok >/dev/null || { echo "cli: cannot create table cli"; exit 1; }
"$DL" table create items --exist-ok >/dev/null || { echo "cli: cannot create table items"; exit 1; }

# ------------------------------------------------------------------ the tests

t_usage_and_help() {
    expect_usage "dynalock" "$DL"
    expect_usage "frobnicate" "$DL" frobnicate
    expect_usage "'run' needs 1 argument before CMD, got 0" "$DL" run "${C[@]}"
    expect_usage "missing CMD" "$DL" run "${C[@]}" name
    expect_usage "--lease" "$DL" run --lease 500ms name -- true
    expect_usage "soon.*--wait" "$DL" run --wait soon name -- true
    expect_usage "--bogus" "$DL" state --bogus name
    expect_usage "--wait.*state" "$DL" state --wait 1s name
    expect_usage "sundial" "$DL" list --clock sundial
    expect_usage "xml" "$DL" list --log-format xml
    expect_usage "--kill-after" "$DL" run --kill-after name -- true
    expect_usage "--label" "$DL" run --label "" name -- true
    expect_usage "explode" "$DL" simulate "${C[@]}" explode name
    expect_usage "--if-held needs a lease" "$DL" put "${C[@]}" --if-held --item '{"pk":{"S":"x"}}'
    expect_usage "invalid item" "$DL" put "${C[@]}" --item 'not json'
    expect_usage "--item" "$DL" put "${C[@]}" --if-held
    expect_usage "invalid fencing token" "$DL" put "${C[@]}" --if-held --lock a --owner o \
        --token 1x --item '{"pk":{"S":"x"}}'
    expect_usage "unexpected argument 'extra'" "$DL" state "${C[@]}" name extra
    expect_usage "--clock server needs" env -u AWS_ENDPOINT_URL_DYNAMODB \
        "$DL" state --clock server --table cli name
    expect_usage "no table" "$DL" state name
    expect_usage "'ab'" "$DL" state --clock server --table ab name
    for sub in run leader put state list watch release simulate table; do
        capture "$DL" "$sub" --help
        expect_eq "$sub --help status" 0 "$st"
        expect_match "$sub --help" "^usage: dynalock $sub" "$(printf '%s\n' "$out" | head -1)"
        # Short: its own options, and where the shared parts are told once.
        expect_match "$sub --help points at the exit statuses" "'dynalock help exit-status'" "$out"
        expect_match "$sub --help points at the common options" "'dynalock help options'" "$out"
        printf '%s\n' "$out" | grep -q -- '^  --table' && fail "$sub --help repeats the common options"
        printf '%s\n' "$out" | grep -Eq '^  77 ' && fail "$sub --help repeats the exit table"
        [ "$(printf '%s\n' "$out" | wc -l)" -le 40 ] || fail "$sub --help is longer than 40 lines"
        capture "$DL" help "$sub"
        expect_match "help $sub" "^usage: dynalock $sub" "$(printf '%s\n' "$out" | head -1)"
    done
    capture "$DL" help exit-status
    expect_eq "help exit-status status" 0 "$st"
    expect_match "help exit-status lists the statuses" "77 +put --if-held refused" "$out"
    expect_match "help exit-status has 79" "^  79 " "$out"
    capture "$DL" help options
    expect_eq "help options status" 0 "$st"
    expect_match "help options lists --table" "^  --table NAME" "$out"
    expect_match "help options lists --clock" "^  --clock CLOCK" "$out"
    expect_usage "unknown help topic 'bogus'" "$DL" help bogus
    capture "$DL" put --help
    expect_match "put's usage: --if-held is optional" \
        '^usage: dynalock put \[OPTIONS\] \[--if-held\] \(--item JSON \| --item-file PATH\)$' \
        "$(printf '%s\n' "$out" | head -1)"
    capture "$DL" --help
    expect_eq "--help status" 0 "$st"
    capture "$DL" --version
    expect_match "--version" "^dynalock [0-9]+\.[0-9]+\.[0-9]+$" "$out"
}

t_run_environment_and_statuses() {
    capture "$DL" run "${C[@]}" basic -- sh -c \
        'echo "$DYNALOCK_LOCK $DYNALOCK_FENCING_TOKEN $DYNALOCK_TABLE $DYNALOCK_PK ${DYNALOCK_OWNER:+owner} $DYNALOCK_ENDPOINT"'
    expect_eq "first run" 0 "$st"
    expect_eq "CMD's environment" "basic 1 cli pk owner $EP" "$out"
    capture "$DL" run "${C[@]}" basic -- sh -c 'echo "$DYNALOCK_FENCING_TOKEN"'
    expect_eq "the token rises" 2 "$out"
    held basic && fail "the lock is released after CMD exits"
    expect_eq "released lock keeps its token" 2 "$(token_of basic)"
    capture "$DL" run "${C[@]}" basic sh -c 'exit 7'
    expect_eq "CMD's status passes through (no --)" 7 "$st"
    capture "$DL" run "${C[@]}" basic -- sh -c 'kill -USR1 $$'
    expect_eq "a CMD killed by SIGUSR1" 138 "$st"
    capture "$DL" run "${C[@]}" basic -- "$W/no/such/command"
    expect_eq "CMD not found" 127 "$st"
    expect_match "CMD not found message" "cannot run" "$err"
    held basic && fail "the lock is released when CMD cannot run"
    capture "$DL" run "${C[@]}" --wait 0 basic -- true
    expect_eq "--wait 0 on a free lock" 0 "$st"
    capture "$DL" run "${C[@]}" basic -- sh -c 'ls -l /proc/$$/fd' 7</dev/null
    expect_match "CMD inherits dynalock's descriptors" " 7 -> " "$out"
    printf '%s\n' "$out" | grep -q 'socket:' && fail "CMD inherits dynalock's connections"
    capture "$DL" run "${C[@]}" --log-level info --log-format json basic -- true
    expect_match "--log-format json" '^\{.*"msg":"acquiring the lock"' "$(printf '%s\n' "$err" | head -1)"
    capture "$DL" run "${C[@]}" --log-level info basic -- true
    expect_match "--log-format text" '^ts=.* msg="acquiring the lock"' "$(printf '%s\n' "$err" | head -1)"
}

# The region the command's client uses, as CMD sees it in DYNALOCK_REGION: --region, else
# DYNALOCK_REGION, else AWS_REGION, else the profile's (--profile, else AWS_PROFILE).
t_region_and_profile() {
    local show=(region -- sh -c 'echo "$DYNALOCK_REGION"')
    capture "$DL" run "${C[@]}" "${show[@]}"
    expect_eq "AWS_REGION" us-east-1 "$out"
    capture env DYNALOCK_REGION=eu-west-3 "$DL" run "${C[@]}" "${show[@]}"
    expect_eq "DYNALOCK_REGION over AWS_REGION" eu-west-3 "$out"
    capture env DYNALOCK_REGION=eu-west-3 "$DL" run "${C[@]}" --region ap-south-1 "${show[@]}"
    expect_eq "--region over DYNALOCK_REGION" ap-south-1 "$out"
    # A profile named by --profile is where the credentials come from too, as in the AWS
    # SDKs: each profile has its own.
    mkdir -p "$W/home/.aws"
    printf '[default]\nregion = ca-central-1\n[profile other]\nregion = sa-east-1\n' \
        > "$W/home/.aws/config"
    printf '[default]\naws_access_key_id = test\naws_secret_access_key = test\n[other]\naws_access_key_id = test\naws_secret_access_key = test\n' \
        > "$W/home/.aws/credentials"
    capture env -u AWS_REGION "$DL" run "${C[@]}" "${show[@]}"
    expect_eq "the default profile's region" ca-central-1 "$out"
    capture env -u AWS_REGION "$DL" run "${C[@]}" --profile other "${show[@]}"
    expect_eq "--profile's region" sa-east-1 "$out"
    capture env -u AWS_REGION AWS_PROFILE=other "$DL" run "${C[@]}" "${show[@]}"
    expect_eq "AWS_PROFILE's region" sa-east-1 "$out"
    capture env -u AWS_REGION AWS_PROFILE=other "$DL" run "${C[@]}" --profile default "${show[@]}"
    expect_eq "--profile over AWS_PROFILE" ca-central-1 "$out"
    capture env -u AWS_REGION "$DL" run "${C[@]}" --profile other --region eu-north-1 "${show[@]}"
    expect_eq "--region over the profile's" eu-north-1 "$out"
    rm -f "$W/home/.aws/config" "$W/home/.aws/credentials"
}

t_run_not_acquired() {
    start_bg busy_a "$DL" run "${C[@]}" --label holder-a busy -- sh -c \
        'touch "$W/busy.in"; while [ ! -e "$W/busy.go" ]; do sleep 0.05; done'
    local a=$bg
    poll_until 200 '[ -e "$W/busy.in" ]' || fail "the holder did not start"
    capture "$DL" run "${C[@]}" --wait 0 busy -- true
    expect_eq "--wait 0 on a held lock" 75 "$st"
    expect_match "the reason names the holder" "held by 'holder-a' \(fencing token 1\)" "$err"
    expect_eq "the reason is one line" 1 "$(printf '%s\n' "$err" | wc -l)"
    start_bg busy_b "$DL" run "${C[@]}" --wait 5s busy -- touch "$W/busy.b"
    local b=$bg
    advance_until 2500 20 "! running $b"
    finish "$b"
    expect_eq "--wait 5s on a held lock" 75 "$st"
    expect_match "--wait reason" "after waiting 5s" "$(cat "$W/busy_b.err")"
    [ -e "$W/busy.b" ] && fail "CMD ran without the lock"
    touch "$W/busy.go"
    finish "$a"
    expect_eq "the holder's status" 0 "$st"
}

t_run_mutual_exclusion() {
    local cmd='set -C
        if ! : > "$W/mx.inside" 2>/dev/null; then echo overlap >> "$W/mx.bad"; fi
        echo "$DYNALOCK_FENCING_TOKEN" >> "$W/mx.order"
        while [ ! -e "$W/mx.go.$DYNALOCK_FENCING_TOKEN" ]; do sleep 0.05; done
        rm -f "$W/mx.inside"'
    local p=() k t
    for k in 1 2 3; do
        start_bg "mx$k" "$DL" run "${C[@]}" --label "mx$k" mx -- sh -c "$cmd"
        p+=("$bg")
    done
    for k in 1 2 3; do
        advance_until 5000 40 "[ \$(lines \"\$W/mx.order\") -ge $k ]" || fail "holder $k never ran"
        expect_eq "holders after $k turns" "$k" "$(lines "$W/mx.order")"
        t=$(tail -1 "$W/mx.order")
        # A minute passes while it holds the lock: nobody else enters.
        pass_time 60000
        expect_eq "no second holder while one holds it ($k)" "$k" "$(lines "$W/mx.order")"
        expect_eq "the state names the holder's token" "$t" "$(token_of mx)"
        touch "$W/mx.go.$t"
    done
    for k in 0 1 2; do
        finish "${p[$k]}"
        expect_eq "run $k status" 0 "$st"
    done
    [ -e "$W/mx.bad" ] && fail "two CMDs ran at once"
    expect_eq "tokens in order" "1 2 3" "$(tr '\n' ' ' <"$W/mx.order" | sed 's/ $//')"
}

t_run_takeover_after_sigkill() {
    start_bg tk_a "$DL" run "${C[@]}" --label a tk -- sh -c \
        'echo "$DYNALOCK_FENCING_TOKEN" > "$W/tk.a"; echo $$ > "$W/tk.cmd"; exec sleep 1000'
    local a=$bg
    poll_until 200 '[ -s "$W/tk.cmd" ]' || fail "the first holder did not start"
    start_bg tk_b "$DL" run "${C[@]}" --label b tk -- sh -c 'echo "$DYNALOCK_FENCING_TOKEN" > "$W/tk.b"'
    local b=$bg
    kill9 "$a"
    poll_until 200 "! running $(cat "$W/tk.cmd")" ||
        fail "CMD outlived its dynalock (no parent-death signal)"
    # Less than two thirds of a lease: the crashed holder still has the lock.
    pass_time 14000
    [ -e "$W/tk.b" ] && fail "taken over before a whole lease"
    expect_eq "the crashed holder still named" a "$(holder_of tk)"
    advance_until 5000 30 '[ -s "$W/tk.b" ]' || fail "no takeover"
    finish "$b"
    expect_eq "the contender's status" 0 "$st"
    expect_eq "the takeover raises the token" "$(($(cat "$W/tk.a") + 1))" "$(cat "$W/tk.b")"
}

t_run_signal_forwarding() {
    start_bg sig "$DL" run "${C[@]}" sig -- sh -c \
        'trap "echo USR1 >> \"\$W/sig.got\"" USR1
         trap "echo TERM >> \"\$W/sig.got\"; exit 3" TERM
         touch "$W/sig.ready"; while :; do sleep 0.05; done'
    local p=$bg
    poll_until 200 '[ -e "$W/sig.ready" ]' || fail "CMD did not start"
    kill -USR1 "$p"
    poll_until 200 'grep -q USR1 "$W/sig.got" 2>/dev/null' || fail "SIGUSR1 not forwarded"
    running "$p" || fail "dynalock stopped on SIGUSR1"
    kill -TERM "$p"
    finish "$p"
    expect_eq "status of CMD after SIGTERM" 3 "$st"
    expect_eq "CMD got" "USR1 TERM" "$(tr '\n' ' ' <"$W/sig.got" | sed 's/ $//')"
    held sig && fail "the lock is released after CMD exits"

    if env --default-signal=INT true 2>/dev/null; then
        start_bg sigint env --default-signal=INT "$DL" run "${C[@]}" sig -- sh -c \
            'trap "exit 4" INT; touch "$W/sigint.ready"; while :; do sleep 0.05; done'
        p=$bg
        poll_until 200 '[ -e "$W/sigint.ready" ]' || fail "CMD did not start (INT)"
        kill -INT "$p"
        finish "$p"
        expect_eq "status of CMD after SIGINT" 4 "$st"
    fi

    # A signal while waiting for the lock: 128+N, and nothing runs.
    start_bg sigh "$DL" run "${C[@]}" sig -- sh -c 'touch "$W/sigw.in"; exec sleep 1000'
    local h=$bg
    poll_until 200 '[ -e "$W/sigw.in" ]' || fail "holder did not start"
    start_bg sigw "$DL" run "${C[@]}" --log-level info sig -- touch "$W/sigw.ran"
    p=$bg
    poll_until 200 'grep -q "acquiring the lock" "$W/sigw.err"' || fail "the waiter did not start"
    advance 1000
    kill -TERM "$p"
    finish "$p"
    expect_eq "interrupted while waiting" 143 "$st"
    expect_match "interrupted message" "interrupted while waiting for lock 'sig'" \
        "$(cat "$W/sigw.err")"
    [ -e "$W/sigw.ran" ] && fail "CMD ran without the lock"
    kill -TERM "$h"
    finish "$h"
    expect_eq "holder stopped by SIGTERM (sleep's status)" 143 "$st"
}

t_run_lease_lost() {
    # Another owner writes the item: the renewal finds it, CMD gets SIGTERM, exit 76.
    start_bg lost "$DL" run "${C[@]}" --kill-after 1s lost -- sh -c \
        'trap "echo TERM > \"\$W/lost.got\"; exit 0" TERM
         touch "$W/lost.ready"; while :; do sleep 0.05; done'
    local p=$bg
    poll_until 200 '[ -e "$W/lost.ready" ]' || fail "CMD did not start"
    capture "$DL" simulate "${C[@]}" --label thief holder lost
    expect_eq "simulate holder" 0 "$st"
    advance_until 5000 20 "! running $p"
    finish "$p"
    expect_eq "lost lease status" 76 "$st"
    expect_match "lost lease message" "lost the lease on lock 'lost' \(taken_over\)" \
        "$(cat "$W/lost.err")"
    expect_eq "CMD got" TERM "$(cat "$W/lost.got" 2>/dev/null)"
    expect_eq "the lock's holder" thief "$(holder_of lost)"

    # The item is deleted; CMD ignores SIGTERM, so it gets SIGKILL after --kill-after.
    start_bg gone "$DL" run "${C[@]}" --kill-after 1s gone -- sh -c \
        'trap "" TERM; touch "$W/gone.ready"; while :; do sleep 0.05; done'
    p=$bg
    poll_until 200 '[ -e "$W/gone.ready" ]' || fail "CMD did not start (gone)"
    capture "$DL" simulate "${C[@]}" delete gone
    expect_eq "simulate delete" 0 "$st"
    advance_until 5000 20 "! running $p"
    finish "$p"
    expect_eq "deleted lease status" 76 "$st"
    expect_match "deleted lease message" "\(deleted\).*SIGTERM and SIGKILL after 1s" \
        "$(cat "$W/gone.err")"
    capture "$DL" run "${C[@]}" gone -- sh -c 'echo "$DYNALOCK_FENCING_TOKEN"'
    expect_eq "a deleted lock starts at token 1" 1 "$out"
}

t_put_if_held() {
    start_bg fence_a "$DL" run "${C[@]}" --label a fence -- sh -c \
        'env | grep "^DYNALOCK_" > "$W/fence.env"
         "$DL" put --if-held --table items --item "{\"pk\":{\"S\":\"by-a\"},\"t\":{\"N\":\"$DYNALOCK_FENCING_TOKEN\"}}"
         echo $? > "$W/fence.a"; exec sleep 1000'
    local a=$bg
    poll_until 200 '[ -s "$W/fence.a" ]' || fail "holder a did not write"
    expect_eq "a's fenced write" 0 "$(cat "$W/fence.a")"
    expect_match "a's item" '"t":\{"N":"1"\}' "$(get_item items by-a)"
    kill9 "$a"
    start_bg fence_b "$DL" run "${C[@]}" --label b fence -- sh -c \
        '"$DL" put --if-held --table items --item "{\"pk\":{\"S\":\"by-b\"},\"t\":{\"N\":\"$DYNALOCK_FENCING_TOKEN\"}}"
         echo $? > "$W/fence.b"; exec sleep 1000'
    local b=$bg
    advance_until 5000 30 '[ -s "$W/fence.b" ]' || fail "no takeover by b"
    expect_eq "b's fenced write" 0 "$(cat "$W/fence.b")"
    # a's lease, replayed after b took over: refused, nothing written.
    capture env $(cat "$W/fence.env") "$DL" put --if-held --table items \
        --item '{"pk":{"S":"stale"}}'
    expect_eq "a stale fenced write" 77 "$st"
    expect_match "refusal message" "put refused: .*lock 'fence' with fencing token 1.*'b' holds it now with fencing token 2" "$err"
    expect_eq "nothing written" "{}" "$(get_item items stale)"
    # The same with the lease given as options.
    local owner
    owner=$(sed -n 's/^DYNALOCK_OWNER=//p' "$W/fence.env")
    capture "$DL" put "${C[@]}" --if-held --table items --lock-table cli --lock fence \
        --owner "$owner" --token 1 --item '{"pk":{"S":"stale"}}'
    expect_eq "a stale fenced write (options)" 77 "$st"
    # Without --if-held: a plain put; the item from a file or standard input.
    capture "$DL" put "${C[@]}" --table items --item '{"pk":{"S":"plain"}}'
    expect_eq "plain put" 0 "$st"
    expect_match "plain item" '"plain"' "$(get_item items plain)"
    echo '{"pk":{"S":"from-file"},"n":{"N":"5"}}' >"$W/item.json"
    capture "$DL" put "${C[@]}" --table items --item-file "$W/item.json"
    expect_eq "put --item-file" 0 "$st"
    expect_match "item from a file" '"n":\{"N":"5"\}' "$(get_item items from-file)"
    capture sh -c 'echo "{\"pk\":{\"S\":\"from-stdin\"}}" | "$DL" put --table items --item-file -'
    expect_eq "put --item-file -" 0 "$st"
    expect_match "item from stdin" '"from-stdin"' "$(get_item items from-stdin)"
    capture "$DL" put "${C[@]}" --table items --item-file "$W/no/such/file"
    expect_eq "put with a missing --item-file" 66 "$st"
    capture "$DL" put "${C[@]}" --table items --item '{"nokey":{"S":"x"}}'
    expect_eq "an item without its key" 65 "$st"
    kill -TERM "$b"
    finish "$b"
}

t_leader_failover() {
    local i p=()
    start_bg lead1 "$DL" leader "${C[@]}" --label c1 lead -- sh -c \
        'echo "$0 $DYNALOCK_FENCING_TOKEN" >> "$W/lead.log"; exec sleep 1000' c1
    p+=("$bg")
    poll_until 200 '[ "$(lines "$W/lead.log")" -ge 1 ]' || fail "c1 does not lead"
    for i in 2 3; do
        start_bg "lead$i" "$DL" leader "${C[@]}" --label "c$i" lead -- sh -c \
            'echo "$0 $DYNALOCK_FENCING_TOKEN" >> "$W/lead.log"; exec sleep 1000' "c$i"
        p+=("$bg")
    done
    pass_time 50000
    expect_eq "one leader while it lives" "c1 1" "$(cat "$W/lead.log")"
    expect_eq "state names the leader" c1 "$(holder_of lead)"
    kill9 "${p[0]}"
    advance_until 5000 30 '[ "$(lines "$W/lead.log")" -ge 2 ]' || fail "no failover"
    local second
    second=$(sed -n 2p "$W/lead.log")
    expect_match "the next leader" "^c[23] 2$" "$second"
    pass_time 30000
    expect_eq "two terms after the failover" 2 "$(lines "$W/lead.log")"
    # The leader is stopped: its lease is released and the last one leads next.
    local n=${second%% *} k
    k=${n#c}
    kill -TERM "${p[$((k - 1))]}"
    finish "${p[$((k - 1))]}"
    expect_eq "a leader stopped by SIGTERM" 0 "$st"
    advance_until 5000 30 '[ "$(lines "$W/lead.log")" -ge 3 ]' || fail "no handover"
    expect_match "the third leader" "^c[23] 3$" "$(sed -n 3p "$W/lead.log")"
    for i in 1 2; do
        running "${p[$i]}" && { kill -TERM "${p[$i]}"; finish "${p[$i]}"; expect_eq "last leader" 0 "$st"; }
    done
    held lead && fail "the lock is released when the leaders stop"
}

t_leader_terms() {
    # CMD exits 0 with --once: the lock is handed on and dynalock exits 0.
    capture "$DL" leader "${C[@]}" --once once -- sh -c 'echo "$DYNALOCK_FENCING_TOKEN"'
    expect_eq "--once status" 0 "$st"
    expect_eq "--once output" 1 "$out"
    held once && fail "--once releases the lock"
    # Without --once, a clean exit pauses and leads again.
    start_bg again "$DL" leader "${C[@]}" --pause 5s again -- sh -c 'echo x >> "$W/again.log"'
    local p=$bg
    poll_until 200 '[ "$(lines "$W/again.log")" -ge 1 ]' || fail "no first term"
    advance_until 2500 20 '[ "$(lines "$W/again.log")" -ge 2 ]' || fail "no second term"
    kill -TERM "$p"
    finish "$p"
    expect_eq "stopped leader" 0 "$st"
    # A failing CMD is a fault: logged, paused, and contended again.
    start_bg fault "$DL" leader "${C[@]}" --pause 5s fault -- sh -c 'echo x >> "$W/fault.log"; exit 3'
    p=$bg
    poll_until 200 '[ "$(lines "$W/fault.log")" -ge 1 ]' || fail "no first faulty term"
    advance_until 2500 20 '[ "$(lines "$W/fault.log")" -ge 2 ]' || fail "no term after a fault"
    kill -TERM "$p"
    finish "$p"
    expect_eq "stopped after faults" 0 "$st"
    expect_match "the fault is logged" "CMD failed.*exited with status 3" "$(cat "$W/fault.err")"
    # An error of the election ends dynalock.
    capture "$DL" leader --clock server --table nosuch elect -- true
    expect_eq "election error status" 69 "$st"
    expect_match "election error message" "leader election for lock 'elect' on table 'nosuch' failed" "$err"
    # A CMD that cannot run ends dynalock too.
    capture "$DL" leader "${C[@]}" nocmd -- "$W/no/such/command"
    expect_eq "leader with a missing CMD" 127 "$st"
}

t_leader_lease_lost() {
    # While c1 leads, another owner writes the lock: CMD is stopped, and dynalock
    # contends again; once that holder's lease has run out, c1 leads again.
    start_bg lost_leader "$DL" leader "${C[@]}" --label c1 llost -- sh -c \
        'trap "echo stopped >> \"\$W/llost.log\"; exit 0" TERM
         echo "lead $DYNALOCK_FENCING_TOKEN" >> "$W/llost.log"
         while :; do sleep 0.05; done'
    local p=$bg
    poll_until 200 'grep -q "lead 1" "$W/llost.log" 2>/dev/null' || fail "c1 does not lead"
    capture "$DL" simulate "${C[@]}" --label thief holder llost
    expect_eq "simulate holder" 0 "$st"
    advance_until 5000 20 'grep -q stopped "$W/llost.log"' || fail "CMD not stopped"
    running "$p" || fail "dynalock ended with the lost lease"
    expect_eq "the thief holds it" thief "$(holder_of llost)"
    advance_until 5000 30 'grep -q "lead 3" "$W/llost.log"' || fail "c1 did not lead again"
    expect_eq "terms" "lead 1,stopped,lead 3" "$(paste -sd, "$W/llost.log")"
    expect_match "the loss is logged" 'lease lost; CMD stopped; contending again.*reason=taken_over' \
        "$(cat "$W/lost_leader.err")"
    kill -TERM "$p"
    finish "$p"
    expect_eq "stopped leader" 0 "$st"
}

t_state_list_simulate() {
    "$DL" table create listing --exist-ok >/dev/null
    local L=(--clock server --table listing)
    capture "$DL" list "${L[@]}"
    expect_eq "empty list" "NAME  HOLDER   TOKEN   LEASE  HELD  VALUE" "$out"
    capture "$DL" simulate "${L[@]}" --json --label ghost --lease 1m holder beta
    expect_eq "simulate holder" '{"name":"beta","action":"holder","holder":"ghost","fencing_token":1}' "$out"
    "$DL" simulate "${L[@]}" holder alpha >/dev/null
    "$DL" simulate "${L[@]}" release alpha >/dev/null
    capture "$DL" list "${L[@]}"
    expect_eq "list status" 0 "$st"
    expect_eq "list rows" "3" "$(printf '%s\n' "$out" | wc -l)"
    expect_match "list header" "^NAME +HOLDER +TOKEN +LEASE +HELD +VALUE$" "$(printf '%s\n' "$out" | sed -n 1p)"
    expect_match "released row" "^alpha +- +1 +- +no +-$" "$(printf '%s\n' "$out" | sed -n 2p)"
    expect_match "held row" "^beta +ghost +1 +1m +yes +-$" "$(printf '%s\n' "$out" | sed -n 3p)"
    capture "$DL" list "${L[@]}" --json
    expect_eq "list --json" '[{"name":"alpha","held":false,"holder":null,"owner":null,"fencing_token":1,"lease_ms":0,"value":null},{"name":"beta","held":true,"holder":"ghost","owner":"O","fencing_token":1,"lease_ms":60000,"value":null}]' "$(printf '%s' "$out" | stable)"
    capture "$DL" state "${L[@]}" beta
    expect_match "state text" "holder +ghost" "$out"
    "$DL" simulate "${L[@]}" delete beta >/dev/null
    capture "$DL" state "${L[@]}" --json beta
    expect_eq "state of a deleted lock" '{"name":"beta","table":"listing","exists":false,"held":false,"holder":null,"owner":null,"record_version":null,"fencing_token":0,"lease_ms":0,"value":null,"unchanged_ms":0}' "$out"
}

# release --if-token: an operator hands back a stuck holder's lock, on condition that it
# still has the token shown; a takeover since is never cleared (77). Bad arguments are 64
# before any request. Names and labels with control characters print escaped.
t_release_and_safe_output() {
    "$DL" table create handback --exist-ok >/dev/null
    local L=(--clock server --table handback)
    "$DL" simulate "${L[@]}" --label stuck holder job >/dev/null
    local shown
    shown=$("$DL" state "${L[@]}" --json job | sed -n 's/.*"fencing_token":\([0-9]*\).*/\1/p')
    expect_eq "the token shown" 1 "$shown"
    capture "$DL" release "${L[@]}" job --if-token 2
    expect_eq "release with another token" 77 "$st"
    expect_match "the refusal says why" "^dynalock: lock 'job' was not released: it is not held with fencing token 2 any more" "$err"
    expect_eq "nothing on stdout when refused" "" "$out"
    capture "$DL" release "${L[@]}" job --if-token "$shown" --json
    expect_eq "release status" 0 "$st"
    expect_eq "release --json" '{"name":"job","table":"handback","if_token":1,"owner":null,"released":true}' "$out"
    capture "$DL" state "${L[@]}" --json job
    expect_eq "released: free, token kept" '{"name":"job","table":"handback","exists":true,"held":false,"holder":null,"owner":null,"record_version":null,"fencing_token":1,"lease_ms":0,"value":null,"unchanged_ms":0}' "$out"
    capture "$DL" release "${L[@]}" job --if-token "$shown"
    expect_eq "release of a free lock" 77 "$st"
    capture "$DL" run "${L[@]}" --wait 0 job -- sh -c 'echo "$DYNALOCK_FENCING_TOKEN"'
    expect_eq "the next acquire's token" "0 2" "$st $out"

    # Shown token 3, then a takeover (token 4): the release by 3 leaves the new holder.
    "$DL" simulate "${L[@]}" --label old holder job >/dev/null
    shown=$("$DL" state "${L[@]}" --json job | sed -n 's/.*"fencing_token":\([0-9]*\).*/\1/p')
    expect_eq "the token shown before the takeover" 3 "$shown"
    "$DL" simulate "${L[@]}" --label new holder job >/dev/null
    capture "$DL" release "${L[@]}" job --if-token "$shown"
    expect_eq "release after a takeover" 77 "$st"
    capture "$DL" release "${L[@]}" job --if-token 4 --owner not-the-owner --json
    expect_eq "release by another owner" 77 "$st"
    expect_eq "release --json refused" '{"name":"job","table":"handback","if_token":4,"owner":"not-the-owner","released":false}' "$out"
    capture "$DL" state "${L[@]}" --json job
    expect_eq "the new holder is intact" '{"name":"job","table":"handback","exists":true,"held":true,"holder":"new","owner":"O","record_version":"R","fencing_token":4,"lease_ms":30000,"value":null,"unchanged_ms":0}' "$(printf '%s' "$out" | stable)"

    # Bad arguments: 64, before any request (the endpoint answers nothing).
    local N=(--table handback --endpoint http://127.0.0.1:9)
    expect_usage "missing --if-token" "$DL" release "${N[@]}" job
    expect_usage "invalid --if-token '0'" "$DL" release "${N[@]}" job --if-token 0
    expect_usage "invalid --if-token '1x'" "$DL" release "${N[@]}" job --if-token 1x
    expect_usage "invalid --if-token '-3'" "$DL" release "${N[@]}" job --if-token=-3
    expect_usage "--owner must not be empty" "$DL" release "${N[@]}" job --if-token 1 --owner ""
    expect_usage "'release' needs 1 argument" "$DL" release "${N[@]}" --if-token 1
    expect_usage "'--if-token' does not apply to 'state'" "$DL" state "${N[@]}" --if-token 1 job

    # A label written by anyone with table access: an ESC sequence, a new line, a C1
    # control (U+009B, CSI) and a euro sign, which stays.
    capture "$DL" put "${L[@]}" --item '{"pk":{"S":"LOCK#evil"},"_type":{"S":"LOCK"},"owner":{"S":"o1"},"rvn":{"S":"r1"},"fence":{"N":"7"},"leaseMs":{"N":"30000"},"holder":{"S":"x\u001b[31mred\nlock  fake\u009b2J\u20ac"}}'
    expect_eq "put of the evil label" 0 "$st"
    local esc=$'\033' csi=$'\302\233'
    capture "$DL" state "${L[@]}" evil
    expect_eq "state status" 0 "$st"
    expect_eq "state lines" 9 "$(printf '%s\n' "$out" | wc -l)"
    expect_eq "state holder escaped" 'holder     x\x1b[31mred\x0alock  fake\xc2\x9b2J€' "$(printf '%s\n' "$out" | sed -n 5p)"
    case "$out" in *"$esc"* | *"$csi"*) fail "state printed a control character" ;; esac
    capture "$DL" list "${L[@]}"
    expect_eq "list status" 0 "$st"
    expect_eq "list lines" 3 "$(printf '%s\n' "$out" | wc -l)"
    expect_match "list row escaped" '^evil +x\\x1b\[31mred\\x0alock  fake\\xc2\\x9b2J€ +7 +30s +yes +-$' "$(printf '%s\n' "$out" | sed -n 2p)"
    expect_match "list columns by characters" '^job {3}new {41}4 ' "$(printf '%s\n' "$out" | sed -n 3p)"
    case "$out" in *"$esc"* | *"$csi"*) fail "list printed a control character" ;; esac
    capture "$DL" list "${L[@]}" --json
    expect_match "list --json escapes as JSON" '"holder":"x\\u001b\[31mred\\nlock  fake' "$out"
    # Labels are counted in characters: 256 euro signs (768 bytes) are a label, 257 are
    # not (64, before any request); a label of 257 characters read back is refused (65).
    local euros257
    euros257=$(printf '€%.0s' $(seq 257))
    capture "$DL" simulate "${L[@]}" --label "${euros257#€}" holder wide --json
    expect_eq "a label of 256 euro signs" 0 "$st"
    expect_match "the label whole" "\"holder\":\"${euros257#€}\"" "$out"
    expect_usage "--label must have 1 to 256 characters" "$DL" simulate "${N[@]}" --label "$euros257" holder wide
    capture "$DL" put "${L[@]}" --item "{\"pk\":{\"S\":\"LOCK#long\"},\"_type\":{\"S\":\"LOCK\"},\"owner\":{\"S\":\"o\"},\"rvn\":{\"S\":\"r\"},\"fence\":{\"N\":\"1\"},\"leaseMs\":{\"N\":\"1000\"},\"holder\":{\"S\":\"$(printf 'a%.0s' $(seq 257))\"}}"
    expect_eq "put of a label of 257 characters" 0 "$st"
    capture "$DL" state "${L[@]}" long
    expect_eq "state of a label of 257 characters" 65 "$st"
    expect_match "the refusal" "longer than 256 characters" "$err"
    # A C1 control (CSI) passes the label check; simulate's text prints it escaped.
    capture "$DL" simulate "${L[@]}" --label "a${csi}5nb" holder c1
    expect_eq "simulate with a C1 label" "lock 'c1' is held by 'a\xc2\x9b5nb' with fencing token 1 for a lease of 30s, never renewed" "$out"
    # A name with an ESC sequence in an error message.
    capture "$DL" state "${L[@]}" "a${esc}[2Jb"
    expect_eq "state of a bad name" 64 "$st"
    expect_match "the name is escaped" "invalid lock name 'a\\\\x1b\[2Jb'" "$err"
    case "$err" in *"$esc"*) fail "an error message printed ESC" ;; esac
}

# watch and --value: a watch follows a failover between two leaders and prints the new
# token and value; state shows the owner, the value and how long it has seen the holder
# unchanged (--for); values are checked before any request; a watch ends 0 on SIGTERM;
# bidirectional controls in a label print escaped.
t_watch_and_values() {
    "$DL" table create following --exist-ok >/dev/null
    local L=(--clock server --table following)
    start_bg watch "$DL" watch "${L[@]}" --json svc
    local wpid=$bg
    poll_until 200 '[ "$(lines "$W/watch.out")" -ge 1 ]' || fail "the watch printed no first line"
    expect_match "the first line: no item" '^\{"time":"[0-9T:.-]+Z","name":"svc",.*"exists":false' "$(sed -n 1p "$W/watch.out")"
    start_bg lead1 "$DL" leader "${L[@]}" --label c1 --value 10.0.0.1:8080 svc -- sh -c \
        'echo "c1 $DYNALOCK_FENCING_TOKEN" >> "$W/svc.log"; exec sleep 1000'
    local p1=$bg
    poll_until 200 '[ "$(lines "$W/svc.log")" -ge 1 ]' || fail "c1 does not lead"
    start_bg lead2 "$DL" leader "${L[@]}" --label c2 --value 10.0.0.2:8080 svc -- sh -c \
        'echo "c2 $DYNALOCK_FENCING_TOKEN" >> "$W/svc.log"; exec sleep 1000'
    local p2=$bg
    advance_until 1000 10 '[ "$(lines "$W/watch.out")" -ge 2 ]' || fail "the watch did not see c1"
    expect_match "the watch sees c1 and its value" \
        '"held":true,"holder":"c1",.*"fencing_token":1,.*"value":"10.0.0.1:8080"' "$(sed -n 2p "$W/watch.out")"
    capture "$DL" state "${L[@]}" svc
    expect_eq "state status" 0 "$st"
    expect_match "state shows the value" "^value +10.0.0.1:8080$" "$(printf '%s\n' "$out" | grep '^value')"
    expect_match "state shows the owner" "^owner +[0-9a-f]{32}$" "$(printf '%s\n' "$out" | grep '^owner')"
    expect_match "one read sees no change" "^unchanged +0ms \(one read" "$(printf '%s\n' "$out" | grep '^unchanged')"
    capture "$DL" list "${L[@]}"
    expect_match "list shows the value" "^svc +c1 +1 +30s +yes +10.0.0.1:8080$" "$(printf '%s\n' "$out" | sed -n 2p)"

    kill9 "$p1"
    advance_until 5000 30 '[ "$(lines "$W/svc.log")" -ge 2 ]' || fail "no failover"
    expect_eq "c2 leads with token 2" "c2 2" "$(sed -n 2p "$W/svc.log")"
    advance_until 5000 10 'grep -q "\"holder\":\"c2\"" "$W/watch.out"' || fail "the watch did not see the failover"
    expect_eq "three lines: no item, c1, c2" 3 "$(lines "$W/watch.out")"
    expect_match "the watch sees c2, token 2 and its value" \
        '"holder":"c2",.*"fencing_token":2,.*"value":"10.0.0.2:8080"' "$(sed -n 3p "$W/watch.out")"
    capture "$DL" watch "${L[@]}" --count 1 svc
    expect_eq "watch --count 1" 0 "$st"
    expect_match "a watch line" '^[0-9T:.-]+Z  held  token 2  holder c2  value 10.0.0.2:8080  lease 30s  owner [0-9a-f]{32}$' "$out"
    kill -TERM "$wpid"
    finish "$wpid"
    expect_eq "a watch ends 0 on SIGTERM" 0 "$st"
    expect_eq "nothing on the watch's stderr" "" "$(cat "$W/watch.err")"
    kill -TERM "$p2"
    finish "$p2"
    expect_eq "the leader stopped" 0 "$st"

    # run --value: CMD sees its own value in the lock.
    capture "$DL" run "${L[@]}" --wait 0 --value "hello world" job -- "$DL" state "${L[@]}" --json job
    expect_match "run --value" '"value":"hello world"' "$out"

    # A holder that stopped: state --for reads it for 10 s and says so.
    "$DL" simulate "${L[@]}" --lease 3s holder stuck >/dev/null
    start_bg for "$DL" state "${L[@]}" --for 10s stuck
    local fpid=$bg
    advance_until 1000 30 '! running $fpid' || fail "state --for did not end"
    finish "$fpid"
    expect_eq "state --for status" 0 "$st"
    expect_match "unchanged past the lease" "^unchanged +[0-9]+s, longer than its lease: the holder has stopped renewing$" \
        "$(grep '^unchanged' "$W/for.out")"

    # Bad values: 64 before any request.
    local N=(--table following --endpoint http://127.0.0.1:9)
    expect_usage "--value must have 1 to 1024 bytes" "$DL" leader "${N[@]}" --value "" svc -- true
    expect_usage "--value must have 1 to 1024 bytes" "$DL" run "${N[@]}" --value "$(printf 'x%.0s' $(seq 1025))" svc -- true
    expect_usage "--value is not valid UTF-8" "$DL" leader "${N[@]}" --value $'a\xc0\xafb' svc -- true
    expect_usage "'--value' does not apply to 'state'" "$DL" state "${N[@]}" --value x svc
    expect_usage "invalid --count '0'" "$DL" watch "${N[@]}" --count 0 svc
    expect_usage "invalid duration 'x' for --for" "$DL" state "${N[@]}" --for x svc

    # A label with a right-to-left override and a line separator: shown escaped.
    capture "$DL" put "${L[@]}" --item '{"pk":{"S":"LOCK#bidi"},"_type":{"S":"LOCK"},"owner":{"S":"o1"},"rvn":{"S":"r1"},"fence":{"N":"1"},"leaseMs":{"N":"30000"},"holder":{"S":"admin\u202etxt.exe\u2028x"},"value":{"S":"v\u2066w"}}'
    expect_eq "put of the bidi label" 0 "$st"
    capture "$DL" state "${L[@]}" bidi
    expect_eq "the label escaped" 'holder     admin\xe2\x80\xaetxt.exe\xe2\x80\xa8x' "$(printf '%s\n' "$out" | grep '^holder')"
    expect_eq "the value escaped" 'value      v\xe2\x81\xa6w' "$(printf '%s\n' "$out" | grep '^value')"
}

# list --index: a table with a global index on _type; the list queries it (no Scan).
t_list_index() {
    curl -sf -X POST "$EP/" -H 'Content-Type: application/x-amz-json-1.0' \
        -H 'X-Amz-Target: DynamoDB_20120810.CreateTable' \
        -H 'X-Amz-Date: 20260101T000000Z' \
        -H 'Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0000000000000000000000000000000000000000000000000000000000000000' \
        -d '{"TableName":"indexed","BillingMode":"PAY_PER_REQUEST","KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"_type","AttributeType":"S"}],"GlobalSecondaryIndexes":[{"IndexName":"locks","KeySchema":[{"AttributeName":"_type","KeyType":"HASH"}],"Projection":{"ProjectionType":"ALL"}}]}' \
        >/dev/null || { fail "creating the indexed table"; return; }
    local L=(--clock server --table indexed)
    "$DL" simulate "${L[@]}" --label one holder first >/dev/null
    "$DL" simulate "${L[@]}" holder second >/dev/null
    "$DL" simulate "${L[@]}" release second >/dev/null
    capture "$DL" list "${L[@]}" --index locks --json
    expect_eq "list --index status" 0 "$st"
    expect_eq "list --index" '[{"name":"first","held":true,"holder":"one","owner":"O","fencing_token":1,"lease_ms":30000,"value":null},{"name":"second","held":false,"holder":null,"owner":null,"fencing_token":1,"lease_ms":0,"value":null}]' "$(printf '%s' "$out" | stable)"
    capture "$DL" list "${L[@]}" --index missing
    expect_eq "list --index of no such index" 65 "$st"
    expect_match "the missing index is named" "index" "$err"
}

t_table() {
    capture "$DL" table create --sk sk --ttl expires twice
    expect_eq "create" 0 "$st"
    capture "$DL" table create twice
    expect_eq "create again" 69 "$st"
    capture "$DL" table create twice --exist-ok
    expect_eq "create again, --exist-ok" 0 "$st"
    capture "$DL" run --clock server --table twice --sk sk skl -- sh -c 'echo "$DYNALOCK_SK"'
    expect_eq "a lock in a table with a sort key" "0 sk" "$st $out"
    capture "$DL" table delete twice
    expect_eq "delete" 0 "$st"
    capture "$DL" state --table twice skl
    expect_eq "state on a deleted table" 69 "$st"
    # An error of DynamoDB names its type, the request id and the region, as an operator
    # needs them to look it up with AWS.
    expect_match "what a failed request says" \
        "\(ResourceNotFoundException; request id [A-Z0-9]+; region us-east-1\)" "$err"
    # A name DynamoDB would refuse is a usage error before any request: the endpoint
    # here answers nothing.
    capture env AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9 "$DL" table create ab
    expect_eq "a table name of two characters" 64 "$st"
    expect_match "its message" "table name 'ab': 3 to 255 characters" "$err"
    capture env AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9 "$DL" table delete 'has space'
    expect_eq "a table name with a space" 64 "$st"
    # An item DynamoDB accepts is not refused for the size of its JSON: 300 KB of binary
    # is 400 KB of base64.
    "$DL" table create bigitems --exist-ok >/dev/null
    python3 -c 'import base64,json,sys; json.dump({"pk":{"S":"big"},"b":{"B":base64.b64encode(bytes(300*1024)).decode()}}, sys.stdout)' >"$W/big.json"
    capture "$DL" put --table bigitems --item-file "$W/big.json"
    expect_eq "put of an item with 300 KB of binary" 0 "$st"
    head -c $((5 * 1024 * 1024)) /dev/zero >"$W/huge.json"
    capture "$DL" put --table bigitems --item-file "$W/huge.json"
    expect_eq "an item file past the cap" 66 "$st"
}

t_signal_during_hung_request() {
    # Reads: 128+N at once, saying which request DynamoDB did not answer.
    hang GetItem cli LOCK#hung-state
    start_bg hung_state "$DL" state "${C[@]}" hung-state
    term_hung hung_state
    expect_eq "state interrupted" 143 "$st"
    expect_match "state's message" "^dynalock: cannot read lock 'hung-state' on table 'cli': interrupted by SIGTERM: DynamoDB did not answer GetItem \(waited [0-9.]+m?s\)$" "$err"
    unhang
    "$DL" table create hunglist --exist-ok >/dev/null
    hang Scan hunglist
    start_bg hung_list "$DL" list --clock server --table hunglist
    term_hung hung_list
    expect_eq "list interrupted" 143 "$st"
    expect_match "list's message" "interrupted by SIGTERM: DynamoDB did not answer Scan" "$err"
    unhang

    # Writes: the outcome is unknown, 79.
    hang TransactWriteItems items
    start_bg hung_put "$DL" put "${C[@]}" --table items --if-held --lock-table cli \
        --lock hung-put --owner someone --token 1 --item '{"pk":{"S":"hung-put"}}'
    term_hung hung_put
    expect_eq "put --if-held interrupted" 79 "$st"
    expect_match "put's message" "^dynalock: put failed: interrupted by SIGTERM: DynamoDB did not answer TransactWriteItems \(waited [0-9.]+m?s\); the write may or may not have been applied$" "$err"
    unhang
    hang PutItem items hung-plain
    start_bg hung_plain "$DL" put "${C[@]}" --table items --item '{"pk":{"S":"hung-plain"}}'
    term_hung hung_plain
    expect_eq "put interrupted" 79 "$st"
    expect_match "plain put's message" "did not answer PutItem .*may or may not have been applied" "$err"
    unhang
    hang CreateTable hungt
    start_bg hung_table "$DL" table create hungt
    term_hung hung_table
    expect_eq "table create interrupted" 79 "$st"
    expect_match "table's message" "cannot create table 'hungt': interrupted by SIGTERM: DynamoDB did not answer CreateTable" "$err"
    unhang
    # simulate calls the testing helpers, which take no cancel token: the watchdog ends it.
    hang UpdateItem cli LOCK#hung-sim
    start_bg hung_sim "$DL" simulate "${C[@]}" holder hung-sim
    term_hung hung_sim
    expect_eq "simulate interrupted" 79 "$st"
    expect_match "simulate's message" "cannot simulate holder of lock 'hung-sim' on table 'cli': interrupted by SIGTERM: DynamoDB did not answer UpdateItem .*may or may not have been applied" "$err"
    unhang

    # run: the acquire.
    hang UpdateItem cli LOCK#hung-acq
    start_bg hung_acq "$DL" run "${C[@]}" hung-acq -- touch "$W/hung-acq.ran"
    term_hung hung_acq
    expect_eq "run interrupted in its acquire" 143 "$st"
    # The acquire returns interrupted, or, in a run slowed down (a sanitizer, a loaded
    # machine) past the stop's grace, the watchdog names the request it was waiting for.
    expect_match "run's message" "interrupted while waiting for lock 'hung-acq'|^dynalock: cannot acquire lock 'hung-acq' on table 'cli': interrupted by SIGTERM: DynamoDB did not answer the acquire" "$err"
    [ -e "$W/hung-acq.ran" ] && fail "CMD ran without the lock"
    unhang
    # run: the release after CMD exited. run keeps CMD's status.
    start_bg hung_rel "$DL" run "${C[@]}" hung-rel -- sh -c \
        'touch "$W/hung-rel.in"; while [ ! -e "$W/hung-rel.go" ]; do sleep 0.05; done; exit 3'
    poll_until 200 '[ -e "$W/hung-rel.in" ]' || fail "hung-rel: CMD did not start"
    hang UpdateItem cli LOCK#hung-rel
    touch "$W/hung-rel.go"
    term_hung hung_rel
    expect_eq "run interrupted in its release" 3 "$st"
    expect_match "release message" "releasing lock 'hung-rel': interrupted by SIGTERM: DynamoDB did not answer UpdateItem .*the lock frees itself once its lease runs out" "$err"
    unhang
    # leader: SIGTERM while it leads; CMD exits, and the release does not answer.
    start_bg hung_lead "$DL" leader "${C[@]}" hung-lead -- sh -c \
        'trap "exit 0" TERM; touch "$W/hung-lead.in"; while :; do sleep 0.05; done'
    poll_until 200 '[ -e "$W/hung-lead.in" ]' || fail "hung-lead: CMD did not start"
    hang UpdateItem cli LOCK#hung-lead
    local t0
    t0=$(now_ms)
    kill -TERM "$bg"
    finish "$bg"
    took=$(($(now_ms) - t0))
    local b; b=$(bound_ms 3000)
    [ "$took" -lt "$b" ] || fail "leader: exited $took ms after SIGTERM (bound $b ms)"
    expect_eq "leader stopped during a hung release" 0 "$st"
    expect_match "leader's message" "releasing lock 'hung-lead': interrupted by SIGTERM: DynamoDB did not answer UpdateItem" \
        "$(cat "$W/hung_lead.err")"
    unhang
}

t_run_wait_hung() {
    # --wait on the system clock, DynamoDB answering nothing about the lock: 75 on time.
    local t0
    hang "" cli LOCK#hung-wait
    t0=$(now_ms)
    capture "$DL" run --table cli --wait 2s hung-wait -- touch "$W/hung-wait.ran"
    took=$(($(now_ms) - t0))
    expect_eq "--wait 2s, DynamoDB hung" 75 "$st"
    [ "$took" -ge 2000 ] || fail "--wait 2s returned after $took ms"
    [ "$took" -lt "$(bound_ms 5000)" ] || fail "--wait 2s returned after $took ms (bound $(bound_ms 5000) ms)"
    expect_match "--wait message" "^dynalock: lock 'hung-wait' not acquired after waiting 2s; its holder is not known: DynamoDB did not answer GetItem \(waited [0-9]+ms\)$" "$err"
    [ -e "$W/hung-wait.ran" ] && fail "CMD ran without the lock"
    unhang
    # Only the writes hang: the lock reads free, and the message says so (not "held").
    hang UpdateItem cli LOCK#hung-free
    t0=$(now_ms)
    capture "$DL" run --table cli --wait 2s hung-free -- touch "$W/hung-free.ran"
    took=$(($(now_ms) - t0))
    expect_eq "--wait 2s, writes hung" 75 "$st"
    [ "$took" -lt "$(bound_ms 5000)" ] || fail "--wait 2s returned after $took ms (bound $(bound_ms 5000) ms)"
    expect_match "--wait message, free lock" "^dynalock: lock 'hung-free' not acquired after waiting 2s; it is free now$" "$err"
    unhang
}

# The holder's renewal hangs: its CMD is signalled at the lease's deadline on the holder's
# clock (the send time of its acquire plus the lease), before the contender's CMD starts.
# Both CMDs note the server's clock when they act, so the order is read on the clock that
# both dynalocks follow, not on the wall. Needs a lease that ends at its deadline whatever
# is in flight (issue 10): a separate ctest entry, cli_lease_deadline.
t_lease_deadline() {
    local log=$W/deadline.log t0 d=3000
    cat >"$W/now.sh" <<'EOS'
#!/bin/sh
curl -sf "$DYNALOCK_ENDPOINT/fake/clock" | sed -n 's/.*"now_ms":\([0-9]*\).*/\1/p'
EOS
    cat >"$W/holder.sh" <<'EOS'
#!/bin/sh
trap 'echo "holder-stopped $("$W/now.sh")" >> "$W/deadline.log"; exit 0' TERM
echo "holder-started $("$W/now.sh")" >> "$W/deadline.log"
while :; do sleep 0.05; done
EOS
    cat >"$W/contender.sh" <<'EOS'
#!/bin/sh
echo "contender-started $("$W/now.sh")" >> "$W/deadline.log"
EOS
    chmod +x "$W/now.sh" "$W/holder.sh" "$W/contender.sh"
    at() { sed -n "s/^$1 //p" "$log" 2>/dev/null; }
    server_now() { DYNALOCK_ENDPOINT=$EP "$W/now.sh"; }
    refusals() {
        fakedb_admin GET /fake/stats &&
            [[ $fakedb_reply =~ ^\{\"requests\":[0-9]*,\"condition_failures\":([0-9]*) ]] &&
            echo "${BASH_REMATCH[1]}"
    }
    gets() {
        if fakedb_admin GET /fake/stats && [[ $fakedb_reply =~ \"GetItem\":\{\"requests\":([0-9]+) ]]; then
            echo "${BASH_REMATCH[1]}"
        else
            echo 0
        fi
    }

    t0=$(server_now)
    start_bg dl_holder "$DL" run "${C[@]}" --lease 3s --label holder --kill-after 5s deadline -- "$W/holder.sh"
    local holder=$bg
    poll_until 200 '[ -n "$(at holder-started)" ]' || fail "the holder's CMD did not start"
    expect_eq "the holder acquired at" "$t0" "$(at holder-started)"
    # The contender starts half a second later and is refused once (its first write).
    advance 500
    local before
    before=$(refusals)
    start_bg dl_contender "$DL" run "${C[@]}" --lease 3s --label contender deadline -- "$W/contender.sh"
    local contender=$bg
    poll_until 200 '[ "$(refusals)" -gt "$before" ]' || fail "the contender was not refused"
    # The holder's next renewal hangs.
    curl -sf "$EP/fake/faults" -d '{"kind":"delay","operation":"UpdateItem","table":"cli","key":"LOCK#deadline","count":1,"delay_ms":60000}' >/dev/null ||
        fail "installing the delay fault"
    # A fault with a count is removed once it has fired that many times.
    fired_once() { fakedb_admin GET /fake/faults && [ "$fakedb_reply" = '{"faults":[]}' ]; }
    local i
    for ((i = 0; i < 9; i++)); do
        poll_until 10 fired_once && break
        [ $(($(server_now) - t0 + 250)) -lt "$d" ] || break
        advance 250
    done
    poll_until 100 fired_once || fail "the holder's renewal did not meet the fault before its deadline"
    # Let the contender's polls (every second from its first look, at t0+500) happen on
    # time, so that none of them waits until the deadline: it reads at t0+1500 and
    # t0+2500, and could take over at t0+3500 at the earliest.
    local k reads
    for k in 1500 2500; do
        [ $((t0 + k)) -gt "$(server_now)" ] || continue
        reads=$(gets)
        advance $((t0 + k - $(server_now)))
        poll_until 100 '[ "$(gets)" -gt "$reads" ]' || fail "the contender did not poll at t0+$k"
    done
    [ -z "$(at contender-started)" ] || fail "the contender's CMD started before the deadline"
    # The lease's deadline on the holder's clock: its CMD gets SIGTERM then, at once.
    advance $((t0 + d - $(server_now)))
    expect_eq "the server's clock at the deadline" $((t0 + d)) "$(server_now)"
    poll_until 100 '[ -n "$(at holder-stopped)" ]' ||
        fail "the holder's CMD was not signalled at its lease's deadline"
    expect_eq "the holder's CMD stopped at the deadline" $((t0 + d)) "$(at holder-stopped)"
    # The contender takes over once it has seen the holder unchanged for a lease.
    advance_until 250 20 '[ -n "$(at contender-started)" ]' || fail "the contender never started"
    local stopped started
    stopped=$(at holder-stopped)
    started=$(at contender-started)
    if [ -z "$stopped" ] || [ -z "$started" ] || [ "$stopped" -ge "$started" ]; then
        fail "the holder's CMD stopped at '$stopped', the contender's started at '$started' (server clock)"
    fi
    if [ "$failures" -gt 0 ]; then
        # Without leases that end at their deadline the holder waits for its renewal (the
        # client's timeouts): no need to wait for that too.
        kill -KILL "$holder" "$contender" 2>/dev/null
        unhang
        return
    fi
    finish "$holder"
    expect_eq "the holder's status" 76 "$st"
    expect_match "the holder's message" "lost the lease on lock 'deadline' \(expired\) while CMD ran" \
        "$(cat "$W/dl_holder.err")"
    finish "$contender"
    expect_eq "the contender's status" 0 "$st"
    unhang
}

# lose OPERATION COUNT: fakedb applies the matching writes and closes the connection
# before the answer (a lost_response fault); COUNT 0 loses every answer until unhang.
lose() {
    curl -sf "$EP/fake/faults" -d "{\"kind\":\"lost_response\",\"operation\":\"$1\",\"table\":\"lost\",\"count\":$2}" \
        >/dev/null || fail "installing a lost_response fault"
}
# fail_reads: every GetItem answers 500, so the read that would tell what happened fails.
fail_reads() {
    curl -sf "$EP/fake/faults" -d '{"kind":"error","operation":"GetItem","table":"lost","error_type":"InternalServerError"}' \
        >/dev/null || fail "installing an error fault"
}

# Writes whose answer is lost: 0 where the command can know it was applied, 79 (with what
# to do) where it cannot, never 69 or 77 for a write that was applied.
t_lost_answers() {
    "$DL" table create lost --exist-ok >/dev/null
    local L=(--table lost)
    lose PutItem 0
    capture "$DL" put "${L[@]}" --item '{"pk":{"S":"p1"}}'
    unhang
    expect_eq "put, every answer lost" 79 "$st"
    expect_match "put's message" "may or may not have been applied" "$err"
    expect_match "what to do" "dynalock state NAME" "$err"
    expect_match "the put was applied all the same" '"p1"' "$(get_item lost p1)"

    "$DL" simulate "${L[@]}" --label stuck holder job >/dev/null
    lose UpdateItem 1
    capture "$DL" release "${L[@]}" job --if-token 1
    unhang
    expect_eq "release --if-token, the first answer lost" 0 "$st"
    expect_match "it says released" "lock 'job' is released" "$out"

    "$DL" simulate "${L[@]}" --label stuck holder job2 >/dev/null
    lose UpdateItem 0
    fail_reads
    capture "$DL" release "${L[@]}" job2 --if-token 1
    unhang
    expect_eq "release --if-token, every answer lost and no read" 79 "$st"
    expect_match "release's message" "may or may not have been applied" "$err"

    lose UpdateItem 0
    capture "$DL" simulate "${L[@]}" --label sim holder job3
    unhang
    expect_eq "simulate holder, every answer lost (a read tells)" 0 "$st"
    expect_eq "the simulated holder is there" sim "$("$DL" state "${L[@]}" --json job3 | sed -n 's/.*"holder":"\([^"]*\)".*/\1/p')"

    curl -sf "$EP/fake/faults" -d '{"kind":"lost_response","operation":"CreateTable","count":1}' >/dev/null
    capture "$DL" table create lost_create
    unhang
    expect_eq "table create, the first answer lost" 0 "$st"

    lose UpdateItem 0
    fail_reads
    capture "$DL" run "${L[@]}" --wait 0 job4 -- true
    unhang
    expect_eq "run --wait 0, every answer lost and no read" 79 "$st"
    expect_match "run says what it handed back" "release on condition of this acquire's owner id" "$err"
    expect_eq "the lock is not left blocked" '"held":false' "$("$DL" state "${L[@]}" --json job4 | grep -o '"held":false')"

    lose UpdateItem 1
    capture "$DL" run "${L[@]}" --wait 0 job5 -- sh -c 'echo "$DYNALOCK_FENCING_TOKEN"'
    unhang
    expect_eq "run --wait 0, the acquire's answer lost (a read tells)" "0 1" "$st $out"

    curl -sf "$EP/fake/faults" -d '{"kind":"lost_response","operation":"TransactWriteItems"}' >/dev/null ||
        fail "installing a lost_response fault"
    capture "$DL" run "${L[@]}" --wait 0 job6 -- sh -c \
        '"$DL" put --if-held --table lost --item "{\"pk\":{\"S\":\"f1\"}}"; echo "put=$?"'
    unhang
    expect_eq "put --if-held, every answer lost" "0 put=79" "$st $out"
    expect_match "the fenced put was applied all the same" '"f1"' "$(get_item lost f1)"
    curl -sf "$EP/fake/faults" -d '{"kind":"lost_response","operation":"TransactWriteItems","count":1}' >/dev/null
    capture "$DL" run "${L[@]}" --wait 0 job6 -- sh -c \
        '"$DL" put --if-held --table lost --item "{\"pk\":{\"S\":\"f2\"}}"; echo "put=$?"'
    unhang
    expect_eq "put --if-held, the first answer lost (the token makes the retry succeed)" "0 put=0" "$st $out"
}

# run --conflict-exit-code N (flock -E): N instead of 75 when not acquired, by a
# holder or after --wait; CMD's own statuses untouched; statuses of dynalock's own
# meaning refused before any request (the endpoint here answers nothing).
t_conflict_exit_code() {
    start_bg cx_a "$DL" run "${C[@]}" --label cx-holder cx -- sh -c \
        'touch "$W/cx.in"; while [ ! -e "$W/cx.go" ]; do sleep 0.05; done'
    local a=$bg
    poll_until 200 '[ -e "$W/cx.in" ]' || fail "the holder did not start"
    capture "$DL" run "${C[@]}" --wait 0 --conflict-exit-code 3 cx -- touch "$W/cx.ran"
    expect_eq "--conflict-exit-code 3, --wait 0 on a held lock" 3 "$st"
    expect_match "the message is the same" "not acquired: held by 'cx-holder'" "$err"
    capture "$DL" run "${C[@]}" --wait 0 --conflict-exit-code=100 cx -- true
    expect_eq "--conflict-exit-code=100" 100 "$st"
    start_bg cx_b "$DL" run "${C[@]}" --wait 3s --conflict-exit-code 42 cx -- touch "$W/cx.ran"
    local b=$bg
    advance_until 2000 20 "! running $b"
    finish "$b"
    expect_eq "--conflict-exit-code after --wait ran out" 42 "$st"
    [ -e "$W/cx.ran" ] && fail "CMD ran without the lock"
    touch "$W/cx.go"
    finish "$a"
    expect_eq "the holder's status" 0 "$st"
    capture "$DL" run "${C[@]}" --wait 0 --conflict-exit-code 3 cx -- sh -c 'exit 5'
    expect_eq "acquired: CMD's status passes through" 5 "$st"
    capture "$DL" run "${C[@]}" --wait 0 --conflict-exit-code 75 cx -- true
    expect_eq "75 itself is allowed" 0 "$st"
    local bad
    for bad in 0 256 -1 3x "" 64 76 79 126 127 128 255 99999999999999999999; do
        expect_usage "conflict-exit-code" env AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9 \
            "$DL" run "${C[@]}" --conflict-exit-code "$bad" cx -- true
    done
    expect_usage "dynalock's own statuses" "$DL" run --conflict-exit-code 77 cx -- true
    expect_usage "signals" "$DL" run --conflict-exit-code 137 cx -- true
    expect_usage "does not apply to 'leader'" "$DL" leader --conflict-exit-code 3 cx -- true
    expect_usage "does not apply to 'state'" "$DL" state --conflict-exit-code 3 cx
    capture "$DL" run --help
    expect_match "run --help names it" "--conflict-exit-code N" "$out"
}

# Messages that diagnose (issue 29): what to change when the options do not fit the
# table, the lock name, the credentials; what `table` did; the log's clock.
t_messages() {
    "$DL" table create --sk sk msgsk >/dev/null || fail "creating table msgsk"
    capture "$DL" state --clock server --table msgsk job
    expect_eq "state on a table with a sort key, without --sk" 65 "$st"
    expect_match "the sort key is named" "table 'msgsk' has the sort key 'sk': give --sk sk" "$err"
    capture "$DL" run --clock server --table msgsk --wait 0 job -- touch "$W/msg.ran"
    expect_eq "run on it without --sk" 65 "$st"
    expect_match "run names the sort key" "give --sk sk" "$err"
    [ -e "$W/msg.ran" ] && fail "CMD ran without a lock"
    capture "$DL" state --clock server --table cli --sk sk job
    expect_eq "--sk on a table without one" 65 "$st"
    expect_match "no sort key: leave it out" "table 'cli' has no sort key: leave out --sk sk" "$err"
    capture "$DL" state --clock server --table cli --pk id job
    expect_match "the partition key is named" "has the partition key 'pk', not 'id': give --pk pk" "$err"

    capture "$DL" state --clock server --table nosuchtable job
    expect_eq "state on a missing table" 69 "$st"
    expect_match "how to create it" \
        "no table 'nosuchtable' in region us-east-1: create it with 'dynalock table create nosuchtable'" "$err"
    capture "$DL" run --clock server --table nosuchtable --sk s --wait 0 job -- true
    expect_match "with its keys" "create it with 'dynalock table create --sk s nosuchtable'" "$err"
    capture "$DL" list --clock server --table nosuchtable
    expect_match "list on a missing table" "create it with 'dynalock table create nosuchtable'" "$err"
    capture "$DL" table delete nosuchtable
    expect_eq "table delete of a missing table" 69 "$st"
    printf '%s\n' "$err" | grep -q 'create it' && fail "table delete says to create the table"

    # No credentials, off EC2 (the metadata endpoint refuses): that none were found and
    # what was tried, not the last provider's refusal alone.
    capture env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_EC2_METADATA_DISABLED \
        AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:9 \
        AWS_CONFIG_FILE="$W/none" AWS_SHARED_CREDENTIALS_FILE="$W/none" \
        "$DL" state --table cli job
    expect_eq "no credentials" 78 "$st"
    expect_match "none found, and what was tried" \
        "no AWS credentials were found; tried: environment.*profile 'default'.*instance metadata" "$err"
    expect_eq "in one line" 1 "$(printf '%s\n' "$err" | wc -l)"

    # A lock name no lock can have: 64 before any request (the endpoint answers nothing).
    local bad
    for bad in 'has space' $'esc\x1b[31m' $'\xff\xfe' "$(head -c 256 /dev/zero | tr '\0' a)"; do
        expect_usage "invalid lock name" env AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9 \
            "$DL" state --table cli "$bad"
    done
    expect_usage "invalid lock name 'esc\\\\x1b\\[31m'" env AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9 \
        "$DL" run --table cli $'esc\x1b[31m' -- true
    expect_usage "invalid lock name" env AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9 \
        "$DL" simulate --table cli holder 'a b'
    expect_usage "invalid lock name" env AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9 \
        "$DL" release --table cli --if-token 1 'a b'

    # table: one line on stdout that says what it did, the keys as DynamoDB has them.
    capture "$DL" table create --sk sk --ttl expires msgtable
    expect_eq "table create" "0" "$st"
    expect_eq "what it created" \
        "created table 'msgtable': partition key 'pk', sort key 'sk'; on-demand billing; time to live on 'expires'" "$out"
    capture "$DL" table create --exist-ok msgtable
    expect_eq "--exist-ok: the table as it is, not as asked" \
        "table 'msgtable' is ready: partition key 'pk', sort key 'sk'" "$out"
    capture "$DL" table delete msgtable
    expect_eq "table delete" "0 deleted table 'msgtable'" "$st $out"

    # --clock server: ts= is the server's time, the lock's clock, in every line.
    local now want
    now=$(curl -sf "$EP/fake/clock" | sed -n 's/.*"now_ms":\([0-9]*\).*/\1/p')
    want=$(date -u -d "@$((now / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf '%03d' $((now % 1000)))Z
    capture "$DL" run "${C[@]}" --log-level info msgclock -- true
    expect_eq "run status" 0 "$st"
    expect_match "lines logged" "msg=\"lock acquired; running CMD\"" "$err"
    local other
    other=$(printf '%s\n' "$err" | grep -v "^ts=$want " | head -1)
    expect_eq "every ts= is the server's time ($want)" "" "$other"
    capture "$DL" run "${C[@]}" --log-level info --log-format json msgclock -- true
    expect_match "json ts too" "^\\{\"ts\":\"$want\"" "$(printf '%s\n' "$err" | head -1)"
}

# run --verbose: a line per poll on what it waits for (holder, token, lease, how long
# unchanged), and once it has the lock, its token, how long it took and whom it took
# over from; on a terminal one line rewritten in place (\r, cleared at the end).
t_run_verbose_wait() {
    # A holder that crashed, its label with a C1 control (CSI) that must reach no terminal.
    "$DL" simulate "${C[@]}" --label $'holder-A\xc2\x9b' holder vb >/dev/null ||
        fail "simulating the holder"
    start_bg vb_b "$DL" run "${C[@]}" --verbose vb -- sh -c 'echo "$DYNALOCK_FENCING_TOKEN" > "$W/vb.b"'
    local b=$bg
    poll_until 200 'grep -q "waiting for" "$W/vb_b.err"' || fail "no waiting line"
    expect_match "the waiting line" \
        "^dynalock: waiting for 'vb': held by 'holder-A\\\\xc2\\\\x9b' \\(token 1, lease 30s, unchanged 0ms\\)$" \
        "$(head -1 "$W/vb_b.err")"
    advance_until 5000 30 '[ -s "$W/vb.b" ]' || fail "no takeover"
    finish "$b"
    expect_eq "the contender's status" 0 "$st"
    local e
    e=$(cat "$W/vb_b.err")
    expect_match "unchanged grows with the polls" "unchanged [1-9][0-9]*s\\)" "$e"
    expect_match "the acquired line" \
        "^dynalock: acquired 'vb' with token 2 after [0-9]+\\.[0-9]s \\(took over from holder-A\\\\xc2\\\\x9b\\)$" \
        "$(tail -1 "$W/vb_b.err")"
    case "$e" in *$'\xc2\x9b'*) fail "a label's CSI reached stderr" ;; esac
    expect_eq "not a terminal: no carriage return" 0 "$(tr -cd '\r' <"$W/vb_b.err" | wc -c)"
    capture "$DL" run "${C[@]}" --verbose vb -- true
    expect_eq "a free lock, --verbose" "0" "$st"
    expect_match "acquired at once, no takeover" "^dynalock: acquired 'vb' with token 3 after 0\\.0s$" "$err"
    capture "$DL" run "${C[@]}" vb -- true
    expect_eq "without --verbose: silent" "" "$err"

    # On a terminal (script(1) gives dynalock a pty): the line is rewritten, then cleared.
    if ! command -v script >/dev/null; then
        echo "    (script(1) not found: the terminal case is not checked)"
        return
    fi
    start_bg vt_a "$DL" run "${C[@]}" --label holder-T vt -- sh -c \
        'touch "$W/vt.in"; while [ ! -e "$W/vt.go" ]; do sleep 0.05; done'
    a=$bg
    poll_until 200 '[ -e "$W/vt.in" ]' || fail "the terminal test's holder did not start"
    start_bg vt_b script -qefc "\"$DL\" run --clock server --table cli --verbose vt -- true" "$W/vt.typescript"
    b=$bg
    poll_until 200 'grep -q "waiting for" "$W/vt.typescript" 2>/dev/null' || fail "no waiting line on the terminal"
    advance_until 5000 6 '[ "$(grep -o "waiting for" "$W/vt.typescript" | wc -l)" -ge 2 ]' ||
        fail "no second poll on the terminal"
    touch "$W/vt.go"
    finish "$a"
    advance_until 5000 20 "! running $b"
    finish "$b"
    expect_eq "the terminal run's status" 0 "$st"
    local ts
    ts=$(cat "$W/vt.typescript")
    expect_match "rewritten in place" $'\r\x1b\\[Kdynalock: waiting for .vt.: held by .holder-T.' "$ts"
    expect_match "cleared before the acquired line" $'\r\x1b\\[Kdynalock: acquired .vt. with token 2' "$ts"
    expect_eq "the waiting lines end in no new line" 0 \
        "$(printf '%s' "$ts" | grep -c 'waiting for.*)$')"
}

# run --slots N (issue 29): N commands hold NAME at once, each a slot of its own (the lock
# NAME#slotK, its token its own) with DYNALOCK_SLOT; the next waits for a slot freed, or
# with --wait 0 exits with the conflict status; state and list show the slots.
t_run_slots() {
    local cmd='echo "$DYNALOCK_SLOT $DYNALOCK_FENCING_TOKEN $DYNALOCK_LOCK" > "$W/sl.$DYNALOCK_SLOT"
        while [ ! -e "$W/sl.go.$DYNALOCK_SLOT" ]; do sleep 0.05; done'
    local p=() k
    for k in 1 2 3; do
        start_bg "sl$k" "$DL" run "${C[@]}" --slots 3 --label "sl$k" sl -- sh -c "$cmd"
        p+=("$bg")
    done
    poll_until 200 '[ -s "$W/sl.0" ] && [ -s "$W/sl.1" ] && [ -s "$W/sl.2" ]' ||
        fail "three commands did not run at once with --slots 3"
    for k in 0 1 2; do
        expect_eq "slot $k's environment" "$k 1 sl#slot$k" "$(cat "$W/sl.$k" 2>/dev/null)"
    done
    capture "$DL" run "${C[@]}" --slots 3 --wait 0 sl -- touch "$W/sl.ran"
    expect_eq "--wait 0 with every slot held" 75 "$st"
    expect_match "the reason" "lock 'sl' not acquired: all 3 of its slots are held$" "$err"
    capture "$DL" run "${C[@]}" --slots 3 --wait 0 --conflict-exit-code 9 sl -- touch "$W/sl.ran"
    expect_eq "--conflict-exit-code with slots" 9 "$st"
    [ -e "$W/sl.ran" ] && fail "CMD ran without a slot"
    # A plain lock of the same name is another lock.
    capture "$DL" run "${C[@]}" --wait 0 sl -- true
    expect_eq "the plain lock 'sl' is apart from its slots" 0 "$st"

    capture "$DL" state "${C[@]}" --slots 3 sl
    expect_eq "state --slots status" 0 "$st"
    expect_match "state --slots counts" "^slots +3, 3 held, 0 free$" "$out"
    expect_match "state --slots shows each slot" "^sl#slot2 +sl[123] +1 +30s +yes " "$out"
    expect_eq "state --slots: a row per slot" 3 "$(printf '%s\n' "$out" | grep -c '^sl#slot')"
    capture "$DL" state "${C[@]}" --slots 4 --json sl
    expect_match "state --slots --json" \
        '^\{"name":"sl","table":"cli","slots":4,"held":3,"locks":\[\{"name":"sl#slot0",.*"held":true.*"slot":0\},.*\{"name":"sl#slot3","table":"cli","exists":false,"held":false.*"slot":3\}\]\}$' "$out"
    capture "$DL" state "${C[@]}" --json 'sl#slot1'
    expect_match "a slot read by its name" '"name":"sl#slot1",.*"held":true' "$out"
    capture "$DL" list "${C[@]}" --json
    expect_match "list --json: which name a slot is of" \
        '\{"name":"sl#slot1","held":true,[^}]*"slot_of":"sl","slot":1\}' "$out"
    capture "$DL" list "${C[@]}"
    expect_eq "list shows the slots in order" "sl#slot0 sl#slot1 sl#slot2" \
        "$(printf '%s\n' "$out" | awk '$1 ~ /^sl#slot/ {print $1}' | tr '\n' ' ' | sed 's/ $//')"

    # The fourth waits while live holders renew, and gets the slot that is released,
    # with that slot's next token.
    start_bg sl4 "$DL" run "${C[@]}" --slots 3 --label sl4 sl -- sh -c \
        'echo "$DYNALOCK_SLOT $DYNALOCK_FENCING_TOKEN $DYNALOCK_LOCK" > "$W/sl.fourth"'
    local w=$bg
    pass_time 40000
    [ -e "$W/sl.fourth" ] && fail "a fourth command ran with three slots held"
    touch "$W/sl.go.1"
    advance_until 5000 20 '[ -s "$W/sl.fourth" ]' || fail "the fourth never got the freed slot"
    expect_eq "the fourth has slot 1, token 2" "1 2 sl#slot1" "$(cat "$W/sl.fourth" 2>/dev/null)"
    finish "$w"
    expect_eq "the fourth's status" 0 "$st"
    expect_eq "slot 0's token stayed" 1 "$(token_of 'sl#slot0')"
    touch "$W/sl.go.0" "$W/sl.go.2"
    for k in 0 1 2; do
        finish "${p[$k]}"
        expect_eq "holder $k's status" 0 "$st"
    done
    capture "$DL" state "${C[@]}" --slots 3 sl
    expect_match "all released" "^slots +3, 0 held, 3 free$" "$out"

    # DYNALOCK_SLOT is a slot's only: a plain run removes one from outside.
    capture env DYNALOCK_SLOT=9 "$DL" run "${C[@]}" plain-sl -- sh -c 'echo "${DYNALOCK_SLOT-none}"'
    expect_eq "no DYNALOCK_SLOT without --slots" none "$out"

    # Bad input is a usage error before any request (no server at that endpoint).
    local bad long
    long=$(printf 'n%.0s' $(seq 250))
    for bad in 0 -1 x 3x "" 101 99999999999999999999; do
        expect_usage "invalid --slots" env AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9 \
            "$DL" run "${C[@]}" --slots "$bad" sl -- true
    done
    expect_usage "too long for slots" env AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9 \
        "$DL" run "${C[@]}" --slots 2 "$long" -- true
    expect_usage "is a slot's; use --slots" env AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9 \
        "$DL" run "${C[@]}" 'sl#slot1' -- true
    expect_usage "is a slot's" "$DL" leader "${C[@]}" 'sl#slot0' -- true
    expect_usage "does not apply to 'leader'" "$DL" leader --slots 2 sl -- true
    expect_usage "--for does not apply with --slots" "$DL" state "${C[@]}" --slots 2 --for 1s sl
    capture "$DL" run --help
    expect_match "run --help names --slots" "--slots N" "$out"
    expect_match "run --help names DYNALOCK_SLOT" "DYNALOCK_SLOT" "$out"
}

# A slot holder killed with SIGKILL (it never releases) is taken over after its lease by
# a command waiting for a slot, with that slot's next token; the other slot's live holder
# keeps its own.
t_run_slots_takeover() {
    start_bg stk_a "$DL" run "${C[@]}" --slots 2 --label a stk -- sh -c \
        'env | grep "^DYNALOCK_" > "$W/stk.env"
         echo "$DYNALOCK_SLOT $DYNALOCK_FENCING_TOKEN" > "$W/stk.a"; echo $$ > "$W/stk.cmd"; exec sleep 1000'
    local a=$bg
    poll_until 200 '[ -s "$W/stk.cmd" ]' || fail "the first holder did not start"
    start_bg stk_b "$DL" run "${C[@]}" --slots 2 --label b stk -- sh -c \
        'echo "$DYNALOCK_SLOT" > "$W/stk.b"; while [ ! -e "$W/stk.go" ]; do sleep 0.05; done'
    local b=$bg
    poll_until 200 '[ -s "$W/stk.b" ]' || fail "the second holder did not start"
    start_bg stk_c "$DL" run "${C[@]}" --slots 2 --verbose --label c stk -- sh -c \
        '"$DL" put --if-held --table items --item "{\"pk\":{\"S\":\"by-slot\"},\"t\":{\"N\":\"$DYNALOCK_FENCING_TOKEN\"}}"
         echo $? > "$W/stk.put"
         echo "$DYNALOCK_SLOT $DYNALOCK_FENCING_TOKEN" > "$W/stk.c"'
    local c=$bg
    poll_until 200 'grep -q "waiting for a slot of .stk.: all 2 held" "$W/stk_c.err"' ||
        fail "--verbose does not say it waits for a slot"
    kill9 "$a"
    poll_until 200 "! running $(cat "$W/stk.cmd")" || fail "CMD outlived its dynalock"
    pass_time 14000
    [ -e "$W/stk.c" ] && fail "a slot taken over before a whole lease"
    advance_until 5000 30 '[ -s "$W/stk.c" ]' || fail "no takeover of the killed holder's slot"
    finish "$c"
    expect_eq "the waiter's status" 0 "$st"
    local slot_a tok_a
    read -r slot_a tok_a <"$W/stk.a"
    expect_eq "the killed holder's slot, its token plus one" "$slot_a $((tok_a + 1))" \
        "$(cat "$W/stk.c" 2>/dev/null)"
    expect_match "--verbose names the slot's lock" "acquired 'stk#slot$slot_a' with token $((tok_a + 1)) .*took over from a holder that stopped" \
        "$(cat "$W/stk_c.err")"
    held "stk#slot$(cat "$W/stk.b")" || fail "the live holder's slot is still held"
    # Fencing per slot: the new holder's write passes, the killed holder's is refused.
    expect_eq "the slot's fenced write" 0 "$(cat "$W/stk.put" 2>/dev/null)"
    expect_match "its item" "\"t\":\\{\"N\":\"$((tok_a + 1))\"\\}" "$(get_item items by-slot)"
    capture env $(cat "$W/stk.env") "$DL" put --if-held --table items --item '{"pk":{"S":"stk-stale"}}'
    expect_eq "the killed holder's fenced write" 77 "$st"
    expect_eq "nothing written" "{}" "$(get_item items stk-stale)"
    touch "$W/stk.go"
    finish "$b"
    expect_eq "the live holder's status" 0 "$st"
}

# ------------------------------------------------------------------ the runner

passed=0
failed=0
tests=(t_usage_and_help t_run_environment_and_statuses t_region_and_profile t_run_not_acquired
       t_run_mutual_exclusion t_run_takeover_after_sigkill t_run_signal_forwarding
       t_run_lease_lost t_put_if_held t_leader_failover t_leader_terms
       t_leader_lease_lost t_state_list_simulate t_release_and_safe_output t_watch_and_values t_list_index t_table
       t_signal_during_hung_request
       t_run_wait_hung t_conflict_exit_code t_messages t_run_verbose_wait t_run_slots
       t_run_slots_takeover)
[ ${#only[@]} -gt 0 ] && tests=("${only[@]}")
if [ -n "$shard" ]; then
    k=${shard%/*} n=${shard#*/}
    part=()
    for i in "${!tests[@]}"; do [ $((i % n)) -eq $((k - 1)) ] && part+=("${tests[$i]}"); done
    tests=("${part[@]}")
fi
for t in "${tests[@]}"; do
    failures=0
    "$t"
    for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null && { wait "$p"; } 2>/dev/null; done
    bg_pids=()
    if [ "$failures" -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok   $t"
    else
        failed=$((failed + 1))
        echo "FAIL $t"
    fi
done
echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
