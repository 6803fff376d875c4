# lib.sh - helpers for integration tests: real ringkvd processes on
# loopback, each with its own free ports and temporary directory.
#
# Sourced by tests/integration/*.sh.  Processes are tracked by PID and
# stopped by PID; waits poll with a deadline, never a fixed sleep; a failed
# run keeps its logs and prints where they are and the seed it ran with.
# cluster-scripts/testbed follows the same rules with helpers of its own,
# since it runs outside a build tree, for people, on fixed addresses.
#
#   . "$top_srcdir/tests/integration/lib.sh"
#   it_setup                       # temp dir, cleanup trap, seed
#   it_key                         # cluster key in $IT_DIR/key
#   it_node n1 [--flag value ...]  # start; sets N1_CLIENT, N1_PEER, N1_PID
#   it_wait_ping n1                # until PING answers
#   it_cli n1 SET k v              # redis-cli -e against n1
#   it_pass "message"              # end: remove temp dir
set -u

: "${top_builddir:?}" "${top_srcdir:?}"
RINGKVD="$top_builddir/src/ringkvd"
RINGKV="$top_builddir/src/ringkv"
IT_PIDS=""
IT_FAILED=1

it_log() { printf '%s: %s\n' "${IT_NAME:-test}" "$*"; }

it_fail() {
    it_log "FAIL: $*"
    exit 1
}

it_cleanup() {
    status=$?
    set +e
    for pid in $IT_PIDS; do
        kill -9 "$pid" 2> /dev/null
    done
    for pid in $IT_PIDS; do
        wait "$pid" 2> /dev/null
    done
    if [ "$IT_FAILED" -ne 0 ] && [ -n "${IT_DIR:-}" ]; then
        it_log "logs kept in $IT_DIR (seed $IT_SEED)"
        for f in "$IT_DIR"/*.log; do
            [ -f "$f" ] || continue
            echo "==== $f (last 30 lines)"
            tail -n 30 "$f"
        done
    elif [ -n "${IT_DIR:-}" ]; then
        rm -rf "$IT_DIR"
    fi
    exit "$status"
}

it_setup() {
    IT_NAME=$(basename "$0" .sh)
    IT_SEED=${RINGKV_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
    IT_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ringkv-$IT_NAME.XXXXXX")
    trap it_cleanup EXIT
    trap 'exit 1' INT TERM
    command -v redis-cli > /dev/null || it_fail "redis-cli not found: run cluster-scripts/install-deps"
    it_log "seed $IT_SEED, directory $IT_DIR"
}

it_pass() {
    IT_FAILED=0
    it_log "ok${1:+: $1}"
}

# A TCP port nobody listens on, on 127.0.0.1.
it_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

it_key() {
    "$RINGKV" keygen "$IT_DIR/key" > /dev/null || it_fail "keygen failed"
}

# it_var NAME SUFFIX: the value of variable NAME_SUFFIX (NAME upper-cased).
it_var() {
    eval "printf '%s' \"\${$(printf '%s' "$1" | tr 'a-z.:-' 'A-Z___')_$2:-}\""
}

it_setvar() {
    eval "$(printf '%s' "$1" | tr 'a-z.:-' 'A-Z___')_$2=\"\$3\""
}

# it_node ID [flags...]: start a node with fresh ports and data dir under IT_DIR.
it_node() {
    id=$1
    shift
    client=$(it_var "$id" CLIENT)
    peer=$(it_var "$id" PEER)
    [ -n "$client" ] || client=$(it_free_port)
    [ -n "$peer" ] || peer=$(it_free_port)
    it_setvar "$id" CLIENT "$client"
    it_setvar "$id" PEER "$peer"
    "$RINGKVD" --id "$id" --cluster-key "$IT_DIR/key" --data "$IT_DIR/$id.data" \
        --client "127.0.0.1:$client" --listen "127.0.0.1:$peer" "$@" \
        >> "$IT_DIR/$id.log" 2>&1 &
    pid=$!
    it_setvar "$id" PID "$pid"
    IT_PIDS="$IT_PIDS $pid"
}

# it_wait CMD...: run CMD until it succeeds, for up to IT_WAIT seconds (default 10).
it_wait() {
    deadline=$(($(date +%s) + ${IT_WAIT:-10}))
    while ! "$@" > /dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.05
    done
}

it_cli() {
    id=$1
    shift
    redis-cli -e -p "$(it_var "$id" CLIENT)" "$@"
}

it_wait_ping() {
    it_wait it_cli "$1" PING || it_fail "$1 does not answer PING (log: $IT_DIR/$1.log)"
}

# it_stop ID [SIGNAL]: signal the node's PID and wait for it to exit; its status in IT_STATUS.
it_stop() {
    pid=$(it_var "$1" PID)
    kill "-${2:-TERM}" "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    IT_STATUS=$?
}

# it_kill_load ID DIR LOAD WHAT: SIGKILL node ID while `ringkv workload` (process LOAD) loads
# it, the time in DIR/killed (tests/integration/durability.py), then wait for the node, end the
# workload (SIGTERM) and wait for it; fails, naming WHAT, if the workload failed.
it_kill_load() {
    pid=$(it_var "$1" PID)
    python3 "$top_srcdir/tests/integration/durability.py" kill "$pid" "$2"
    wait "$pid" 2> /dev/null || true
    kill -TERM "$3" 2> /dev/null
    wait "$3" || it_fail "$4: the workload failed"
}

# it_alive ID: is the node's process still running?
it_alive() {
    kill -0 "$(it_var "$1" PID)" 2> /dev/null
}

# it_expect_eq WHAT GOT WANT
it_expect_eq() {
    [ "$2" = "$3" ] || it_fail "$1: got '$2', expected '$3'"
}

# --- clusters (gossip) ---------------------------------------------------

# Rounds at the default gossip-interval, and the bound on seeing a dead
# member down, from the settings and src/membership/detector.h: a member's heartbeats
# arrive at least every gossip-interval, so phi reaches the down threshold
# 8 after 8 / log10(e) = 18.4 silent intervals; the detector is evaluated
# once a round (+1) and the last heartbeat may have just arrived (+1):
# 20.4 rounds.  Half again for a 2-core machine running every node and the
# test: IT_DOWN_ROUNDS = 31, 6.2 s.
IT_ROUND_MS=200
IT_DOWN_ROUNDS=31

# it_rounds_s R: seconds for R rounds, rounded up.
it_rounds_s() {
    echo $((($1 * IT_ROUND_MS + 999) / 1000))
}

# The client ports of nodes n1..nN.
it_ports() {
    i=1
    while [ "$i" -le "$1" ]; do
        printf '%s ' "$(it_var "n$i" CLIENT)"
        i=$((i + 1))
    done
}

# it_ask QUESTION ARGS...: tests/integration/cluster.py against the built CLI.
it_ask() {
    python3 "$top_srcdir/tests/integration/cluster.py" "$RINGKV" "$@"
}

# it_generation PORT ID: the generation of member ID in the table of the node at PORT.
it_generation() {
    "$RINGKV" -H "127.0.0.1:$1" members --json | python3 -c '
import json, sys
print([m["generation"] for m in json.load(sys.stdin)["members"] if m["id"] == sys.argv[1]][0])' "$2"
}

# it_cluster N [flags]: start n1..nN, node k seeded with node k-1 only, in racks r1..r3.
it_cluster() {
    count=$1
    shift
    i=1
    while [ "$i" -le "$count" ]; do
        seeds=""
        [ "$i" -gt 1 ] && seeds="--seeds 127.0.0.1:$(it_var "n$((i - 1))" PEER)"
        it_setvar "n$i" PEER "$(it_free_port)"
        # shellcheck disable=SC2086
        it_node "n$i" --rack "r$(((i - 1) % 3 + 1))" $seeds "$@"
        i=$((i + 1))
    done
    i=1
    while [ "$i" -le "$count" ]; do
        it_wait_ping "n$i"
        i=$((i + 1))
    done
}
