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
#
# Nodes on addresses of their own, for faults between them (the helpers
# are cluster-scripts/faults.sh's, which the testbed uses too):
#   it_private_net "$@"            # first line: as root, run the test in a
#                                  # network and mount namespace of its own
#                                  # (exit 77 with one line when not root)
#   it_net [NET]                   # after it_setup: node nK on NET.(10+K)
#   it_partition "n1 | n2 n3"      # it_cut n1 n2, it_loss n1 PCT, it_slow n1 RATE,
#   it_heal                        # it_clear n1: as cluster-scripts/testbed
#   it_faketime; it_skew n1 SECS   # nodes under libfaketime; move n1's wall clock
#   it_disk n1 SIZE                # n1's data on a tmpfs; it_diskfull/it_diskfree n1
set -u

: "${top_builddir:?}" "${top_srcdir:?}"
RINGKVD="$top_builddir/src/ringkvd"
RINGKV="$top_builddir/src/ringkv"
IT_PIDS=""
IT_FAILED=1
IT_NET=""
IT_DISKS=""
FAULT_PROG=$(basename "$0" .sh)
# shellcheck source=cluster-scripts/faults.sh
. "$top_srcdir/cluster-scripts/faults.sh"

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
    if [ -n "$IT_NET" ]; then
        # shellcheck disable=SC2046 # one address a word
        fault_remove "$IT_NET" $(it_addrs) 2> /dev/null
    fi
    for d in $IT_DISKS; do
        fault_disk_umount "$d"
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

# A TCP port nobody has bound on address $1 (default 127.0.0.1), from below
# the ephemeral range so that no outgoing connection takes it while a node
# the test restarts is down.
it_free_port() {
    python3 "$top_srcdir/tests/free_port.py" "${1:-127.0.0.1}"
}

# --- nodes on addresses of their own, and faults between them --------------

# it_private_net "$@": as the test's first line.  Root runs the test again in
# a network namespace of its own (its own lo, with no rule, qdisc or
# listener of anyone else's, and nothing left behind when it ends) and a
# mount namespace of its own (tmpfs disks go with it); without root the
# test is skipped (77).
it_private_net() {
    [ -z "${IT_PRIVATE_NET:-}" ] || return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "$(basename "$0" .sh): SKIP: needs root (iptables, tc, mount in namespaces of its own)"
        exit 77
    fi
    command -v unshare > /dev/null && command -v ip > /dev/null ||
        it_fail "unshare or ip not found: run cluster-scripts/install-deps (util-linux, iproute2)"
    IT_PRIVATE_NET=1 exec unshare -n -m sh -c 'ip link set lo up && exec sh "$@"' sh "$0" "$@"
}

# it_net [NET]: nodes started from now on bind nK's ports on NET.(10+K); NET
# defaults to one chosen by the seed, as tests/testbed.sh does.
it_net() {
    IT_NET=${1:-127.$((IT_SEED % 200 + 20)).$((IT_SEED / 200 % 250))}
    it_log "nodes on $IT_NET.x"
}

# it_addr ID: the address node ID binds (127.0.0.1 unless it_net was called).
it_addr() {
    if [ -z "$IT_NET" ]; then
        echo 127.0.0.1
        return
    fi
    case $1 in
    n[1-9] | n[1-9][0-9] | n1[0-9][0-9]) echo "$IT_NET.$((10 + ${1#n}))" ;;
    *) it_fail "it_addr: '$1' is not nK: nodes on addresses of their own are n1..n199" ;;
    esac
}

# The addresses of the nodes started so far.
it_addrs() {
    for v in $(set | sed -n 's/^\(N[0-9]*\)_PID=.*/\1/p'); do
        it_addr "n${v#N}"
    done
}

# it_fault FUNCTION ARGS...: a cluster-scripts/faults.sh function; fails the test if it fails.
it_fault() {
    "$@" || it_fail "$*: failed"
}

# it_partition "n1 | n2 n3": no packet between nodes of different groups.
it_partition() {
    spec=""
    for w in $(printf '%s' "$1" | sed 's/|/ | /g'); do
        if [ "$w" = "|" ]; then spec="$spec |"; else spec="$spec $(it_addr "$w")"; fi
    done
    it_fault fault_partition "$IT_NET" "$spec"
}

it_cut() { it_fault fault_cut "$IT_NET" "$(it_addr "$1")" "$(it_addr "$2")"; }
it_loss() { it_fault fault_loss "$IT_NET" "$(it_addr "$1")" "$2"; }
it_slow() { it_fault fault_slow "$(it_addr "$1")" "$2"; }
it_clear() { it_fault fault_clear "$IT_NET" "$(it_addr "$1")"; }
# shellcheck disable=SC2046 # one address a word
it_heal() { it_fault fault_heal "$IT_NET" $(it_addrs); }

# it_faketime: nodes started from now on run under libfaketime, their wall
# clock offset by the seconds in $IT_DIR/ID.clock (it_skew); fails when the
# library is absent.
it_faketime() {
    [ -n "$(fault_faketime_lib)" ] || it_fail "libfaketime not found: run cluster-scripts/install-deps (faketime)"
    IT_REAL_RINGKVD=$RINGKVD
    RINGKVD="$IT_DIR/ringkvd-faked"
    # it_node passes --id first: $2 is the node's id.
    cat > "$RINGKVD" << EOF
#!/bin/sh
. "$top_srcdir/cluster-scripts/faults.sh"
exec env \$(fault_faketime_env "$IT_DIR/\$2.clock") "$IT_REAL_RINGKVD" "\$@"
EOF
    chmod +x "$RINGKVD"
}

it_skew() { it_fault fault_skew "$IT_DIR/$1.clock" "$2"; }

# it_disk ID SIZE: node ID (not started yet) keeps its data on a tmpfs of SIZE.
it_disk() {
    it_fault fault_disk_mount "$IT_DIR/$1.disk" "$2"
    IT_DISKS="$IT_DISKS $IT_DIR/$1.disk"
    mkdir -m 0700 "$IT_DIR/$1.disk/data"
    it_setvar "$1" DATA "$IT_DIR/$1.disk/data"
}

it_diskfull() { it_fault fault_disk_fill "$IT_DIR/$1.disk"; }
it_diskfree() { it_fault fault_disk_free "$IT_DIR/$1.disk"; }

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
    addr=$(it_addr "$id")
    client=$(it_var "$id" CLIENT)
    peer=$(it_var "$id" PEER)
    data=$(it_var "$id" DATA)
    [ -n "$client" ] || client=$(it_free_port "$addr")
    [ -n "$peer" ] || peer=$(it_free_port "$addr")
    [ -n "$data" ] || data=$IT_DIR/$id.data
    it_setvar "$id" CLIENT "$client"
    it_setvar "$id" PEER "$peer"
    # rf 1 unless the test says otherwise (flags; IT_RF, which it_cluster sets to 3; the
    # rf the node started with, for its restarts): a node alone meets its quorums, where
    # rf 3, the default, refuses writes until w nodes have joined
    rf=$(it_var "$id" RF)
    [ -n "$rf" ] || rf=${IT_RF:-1}
    it_setvar "$id" RF "$rf"
    "$RINGKVD" --id "$id" --cluster-key "$IT_DIR/key" --data "$data" --rf "$rf" \
        --client "$addr:$client" --listen "$addr:$peer" "$@" \
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
    redis-cli -e -h "$(it_addr "$id")" -p "$(it_var "$id" CLIENT)" "$@"
}

# it_info_field ID NAME: the value of NAME in node ID's INFO cluster section.
it_info_field() { it_cli "$1" INFO cluster | tr -d '\r' | sed -n "s/^$2://p"; }

# it_info_sum NAME ID...: NAME of those nodes' INFO cluster sections, summed.
it_info_sum() {
    _it_field=$1
    shift
    _it_sum=0
    for _it_node in "$@"; do
        _it_sum=$((_it_sum + $(it_info_field "$_it_node" "$_it_field")))
    done
    echo "$_it_sum"
}

# The handoff tests' workload: `ringkv workload` through nodes ID... (WL_KEYS keys under
# wl:, WL_RATE operations a second, WL_SECONDS at most), recording to $hist.
# it_load_start ID... returns once it has recorded two seconds' worth (IT_LOAD: its PID);
# it_load_end WHAT waits for WL_AFTER_OPS more operations (WHAT: after what, for the
# message), then ends it (SIGTERM) and fails the test if it failed.
it_load_lines() { wc -l < "$hist" 2> /dev/null || echo 0; }
it_load_has() { [ "$(it_load_lines)" -ge "$1" ]; }
it_load_start() {
    # shellcheck disable=SC2046 # one flag a word
    "$RINGKV" workload $(printf -- '-H %s ' $(it_client_addrs "$@")) \
        --keys "$WL_KEYS" --prefix wl: --duration "$WL_SECONDS" --rate "$WL_RATE" --concurrency 8 \
        --mix 2:2:1 --history "$hist" > "$IT_DIR/workload.out" 2>&1 &
    IT_LOAD=$!
    IT_WAIT=10 it_wait it_load_has $((WL_RATE * 2)) ||
        it_fail "the workload recorded fewer than $((WL_RATE * 2)) operations in 10 s"
}
it_load_end() {
    IT_WAIT=20 it_wait it_load_has $(($(it_load_lines) + WL_AFTER_OPS)) ||
        it_fail "the workload recorded fewer than $WL_AFTER_OPS operations in 20 s after $1"
    kill -TERM "$IT_LOAD"
    wait "$IT_LOAD" || it_fail "the workload failed: $(cat "$IT_DIR/workload.out")"
}

# A 4th node joining 3 under the workload (handoff-kill-join.sh and its siblings).
# it_join_cluster RATE: n1-n3 with $flags (--handoff-rate RATE, 2 arcs at once, 4
# tokens, --sync $SYNC), converged; sets JOIN_S, hist and flags.
it_join_cluster() {
    JOIN_S=120
    hist="$IT_DIR/wl.jsonl"
    flags="--handoff-rate $1 --handoff-concurrency 2 --tokens 4 --sync $SYNC"
    # shellcheck disable=SC2086 # one flag a word
    it_cluster 3 $flags
    it_wait_converged
}
# it_join_end PATTERN KEYS: n4 normal, the workload ended and verified, and each of the
# KEYS preloaded keys matching PATTERN held by at least 3 nodes (c_keys, c_min: the counts).
it_join_end() {
    it_wait_normal n4 4 "$JOIN_S"
    it_wait_converged_n 4
    it_load_end "n4 turned normal"
    # shellcheck disable=SC2046 # one flag a word
    _it_out=$("$RINGKV" verify $(printf -- '-H %s ' $(it_client_addrs n1 n2 n3 n4)) "$hist") ||
        it_fail "verify: $_it_out"
    it_log "verify: $(echo "$_it_out" | tr '\n' ' ' | sed 's/  */ /g')"
    # shellcheck disable=SC2046
    _it_c=$(it_handoff copies "$1" $(it_client_addrs n1 n2 n3 n4)) || it_fail "copies: $_it_c"
    it_log "copies: $_it_c; n4 holds $(it_cli n4 DBSIZE), resumed $(it_info_field n4 ringkv_handoff_resumed)"
    c_keys=0 c_min=0
    eval "$(echo "$_it_c" | tr ' ' '\n' | grep -E '^(keys|min)=' | sed 's/^/c_/')"
    it_expect_eq "distinct preloaded keys" "$c_keys" "$2"
    [ "$c_min" -ge 3 ] || it_fail "a preloaded key has $c_min copies: $_it_c"
}

# it_client_addrs ID...: those nodes' client addresses, ADDRESS:PORT, one a word.
it_client_addrs() {
    for _it_node in "$@"; do
        printf '%s:%s ' "$(it_addr "$_it_node")" "$(it_var "$_it_node" CLIENT)"
    done
}

# it_handoff_status ID: node ID's own status (joining, normal, leaving, left), from RINGKV TRANSFERS.
it_handoff_status() { it_cli "$1" RINGKV TRANSFERS | sed -n '/^status$/{n;p;}'; }

# it_present_count ROWS: how many replicas a RINGKV REPLICAS reply (its lines, \r removed)
# shows holding the key ("present" followed by 1)
it_present_count() {
    printf '%s\n' "$1" | awk 'p { if ($0 == "1") n++; p = 0 } $0 == "present" { p = 1 } END { print n + 0 }'
}

# it_lmdb_editor: PY, Debian's python3 (its python3-lmdb belongs to it, and it need not
# be the first on PATH), and ED, the command that edits a stopped node's LMDB
# (lmdb_edit.py); the test fails when python3-lmdb is missing
it_lmdb_editor() {
    PY=/usr/bin/python3
    $PY -c 'import lmdb' 2> /dev/null ||
        it_fail "python3-lmdb is missing: run cluster-scripts/install-deps"
    # shellcheck disable=SC2034 # read by the test that asked for it
    ED="$PY $top_srcdir/tests/integration/lmdb_edit.py"
}

# it_hints_total ID...: the hints those nodes hold, summed.
it_hints_total() {
    _it_hints=0
    for _it_node in "$@"; do
        _it_hints=$((_it_hints + $(it_info_field "$_it_node" ringkv_hints)))
    done
    echo "$_it_hints"
}

# it_wait_no_hints WHAT ID...: until those nodes hold no hint (60 s), else fail saying WHAT.
it_wait_no_hints() {
    _it_what=$1
    shift
    _it_deadline=$(($(date +%s) + 60))
    while [ "$(it_hints_total "$@")" -ne 0 ]; do
        [ "$(date +%s)" -lt "$_it_deadline" ] || it_fail "$_it_what: hints left: $(it_hints_total "$@")"
        sleep 0.2
    done
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

# it_client_addr ID, it_peer_addr ID: node ID's client and peer addresses, ADDRESS:PORT.
it_client_addr() { echo "$(it_addr "$1"):$(it_var "$1" CLIENT)"; }
it_peer_addr() { echo "$(it_addr "$1"):$(it_var "$1" PEER)"; }

# it_handoff QUESTION ARGS...: tests/integration/handoff.py (data and questions of the
# ownership-handoff tests).
it_handoff() { python3 "$top_srcdir/tests/integration/handoff.py" "$@"; }

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

# The client ports of nodes n1..nN (ADDRESS:PORT after it_net).
it_ports() {
    i=1
    while [ "$i" -le "$1" ]; do
        if [ -n "$IT_NET" ]; then
            printf '%s:%s ' "$(it_addr "n$i")" "$(it_var "n$i" CLIENT)"
        else
            printf '%s ' "$(it_var "n$i" CLIENT)"
        fi
        i=$((i + 1))
    done
}

# it_ask QUESTION ARGS...: tests/integration/cluster.py against the built CLI.
it_ask() {
    python3 "$top_srcdir/tests/integration/cluster.py" "$RINGKV" "$@"
}

# it_generation PORT ID: the generation of member ID in the table of the node at
# PORT (on 127.0.0.1, or ADDRESS:PORT).
it_generation() {
    case $1 in *:*) at=$1 ;; *) at=127.0.0.1:$1 ;; esac
    "$RINGKV" -H "$at" members --json | python3 -c '
import json, sys
print([m["generation"] for m in json.load(sys.stdin)["members"] if m["id"] == sys.argv[1]][0])' "$2"
}

# it_cluster N [flags]: start n1..nN, node k seeded with node k-1 only, in racks r1..r3,
# rf IT_RF (3 unless set; flags may set another).
it_cluster() {
    count=$1
    shift
    IT_RF=${IT_RF:-3} # and for the nodes the test adds to this cluster later
    i=1
    while [ "$i" -le "$count" ]; do
        seeds=""
        [ "$i" -gt 1 ] && seeds="--seeds $(it_addr "n$((i - 1))"):$(it_var "n$((i - 1))" PEER)"
        it_setvar "n$i" PEER "$(it_free_port "$(it_addr "n$i")")"
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

# it_wait_converged: until n1, n2 and n3 each see all three up and the ring converged (60
# gossip rounds), else the test fails
it_wait_converged() {
    # shellcheck disable=SC2046 # one port a word
    IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 3 $(it_ports 3) || it_fail "3 nodes did not converge"
}

# it_wait_normal ID N [SECONDS]: until nodes n1..nN each list member ID normal (default 120 s),
# else the test fails
it_wait_normal() {
    # shellcheck disable=SC2046 # one port a word
    IT_WAIT=${3:-120} it_wait it_ask status normal "$1" $(it_ports "$2") ||
        it_fail "$1 is not normal on every node of n1..n$2 after ${3:-120} s"
}

# it_wait_converged_n N: until nodes n1..nN each see all N up and the ring converged (60
# gossip rounds), else the test fails
it_wait_converged_n() {
    # shellcheck disable=SC2046 # one port a word
    IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged "$1" $(it_ports "$1") ||
        it_fail "$1 nodes did not converge"
}

# it_causal_verify "-H ... -H ...": a causal workload (KGET, then KSET with
# its context; 4 workers on 20 keys for 3 s) through those nodes into
# $IT_DIR/causal.jsonl, which must hold KSETs over contexts, then `ringkv
# verify --monotonic` of it, whose output is left in $out (the test fails
# when it does not pass).
it_causal_verify() {
    # shellcheck disable=SC2086 # one flag a word
    "$RINGKV" workload $1 --keys 20 --duration 3 --concurrency 4 --mix 1:1:0 --causal \
        --history "$IT_DIR/causal.jsonl" > "$IT_DIR/causal.out" ||
        it_fail "causal workload: $(cat "$IT_DIR/causal.out")"
    grep -q '"op":"kset".*"context_of":\["' "$IT_DIR/causal.jsonl" ||
        it_fail "no KSET over a context in the causal history"
    out=$("$RINGKV" verify --monotonic "$IT_DIR/causal.jsonl") || it_fail "a causal run: $out"
}

# it_kset_mib PORT BYTE [W]: KSET big <1 MiB of BYTE> W w (default 1) through the node
# whose client port is PORT, in one send (a value past what a command line carries);
# prints the reply line
it_kset_mib() {
    python3 - "$1" "$2" "${3:-1}" << 'PY'
import socket, sys
v = sys.argv[2].encode() * (1 << 20)
args = [b"KSET", b"big", v, b"W", sys.argv[3].encode()]
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
print(s.makefile("rb").readline().decode().strip())
PY
}

# it_cluster_frames "SMALL-FLAGS" "BIG-FLAGS": three nodes of rf 3 on 127.0.0.1 in racks
# r1-r3, n1 started with SMALL-FLAGS and n2, n3 with BIG-FLAGS (frame-max and value-max
# that differ), each seeded with the one before; returns once the three converged
it_cluster_frames() {
    IT_RF=3
    for n in n1 n2 n3; do it_setvar "$n" PEER "$(it_free_port 127.0.0.1)"; done
    # shellcheck disable=SC2086 # flags a word each
    it_node n1 --rack r1 $1
    # shellcheck disable=SC2086
    it_node n2 --rack r2 --seeds "127.0.0.1:$N1_PEER" $2
    # shellcheck disable=SC2086
    it_node n3 --rack r3 --seeds "127.0.0.1:$N2_PEER" $2
    for n in n1 n2 n3; do it_wait_ping "$n"; done
    it_wait_converged
}

# it_kget_count ID [R n]: how many values KGET big through node ID returns (an error: its
# first 200 bytes)
it_kget_count() {
    id=$1
    shift
    out=$(it_cli "$id" KGET big "$@" 2>&1)
    case $out in
    *TRYAGAIN* | *NOREPLICAS* | *ERR*) echo "$out" | head -c 200 ;;
    *) echo "$out" | tail -n +2 | grep -c . ;;
    esac
}
