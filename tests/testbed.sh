#!/bin/sh
# cluster-scripts/testbed against the built binaries: up -n 3 forms one
# ring (status exits 0, converged, three members up and normal); kill n2
# is seen as a member down and start n2 brings it back; a running node is
# not started twice; pause and resume; add n4 joins it and leave n4 makes
# it hand its arcs over and stop (n1, the seed, refuses to leave); down stops every node and clean
# removes the folder; and no process is left behind, judged by the PIDs
# the PID files named.
#
# The testbed runs in a temporary folder on loopback addresses of its own
# (RINGKV_TESTBED_NET, a random 127.x.y), so it never meets a testbed of
# yours on 127.0.0.x, nor a parallel run.  A failed run keeps the folder
# and prints the nodes' last log lines.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
testbed="$top_srcdir/cluster-scripts/testbed"
ringkv="$top_builddir/src/ringkv"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringkv-testbed.XXXXXX")
RINGKV_TESTBED="$tmp/tb"
RINGKV_BIN="$top_builddir/src"
RINGKV_TESTBED_TIMEOUT=30
seed=${RINGKV_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
RINGKV_TESTBED_NET="127.$((seed % 200 + 20)).$((seed / 200 % 250))"
export RINGKV_TESTBED RINGKV_BIN RINGKV_TESTBED_TIMEOUT RINGKV_TESTBED_NET
pids=""
passed=0

log() { echo "testbed: $*"; }
fail() {
    log "FAIL: $*"
    exit 1
}

# Whether PID is a live process (a zombie is not).
alive() {
    st=$(ps -o stat= -p "$1" 2> /dev/null) || return 1
    case $st in *Z*) return 1 ;; esac
    return 0
}

cleanup() {
    status=$?
    set +e
    bash "$testbed" down > /dev/null 2>&1
    # As root each node's data is on a tmpfs of its own (clean unmounts them; a failed run must too).
    grep -o " $tmp/[^ ]*" /proc/mounts 2> /dev/null | while read -r m; do umount "$m"; done
    for pid in $pids; do
        if alive "$pid"; then
            kill -9 "$pid" 2> /dev/null
        fi
    done
    if [ "$passed" -eq 1 ]; then
        rm -rf "$tmp"
    else
        log "kept $tmp (seed $seed, net $RINGKV_TESTBED_NET)"
        for f in "$RINGKV_TESTBED"/n*/ringkvd.log; do
            [ -f "$f" ] || continue
            echo "==== $f (last 20 lines)"
            tail -n 20 "$f"
        done
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Run the testbed script; expect exit code $1; its output in $tmp/out.
tb() {
    want=$1
    shift
    set +e
    bash "$testbed" "$@" > "$tmp/out" 2>&1
    rc=$?
    set -e
    [ "$rc" -eq "$want" ] || fail "'testbed $*' exited $rc, expected $want: $(cat "$tmp/out")"
}

pid_of() { cat "$RINGKV_TESTBED/$1/ringkvd.pid"; }
client_of() { echo "$RINGKV_TESTBED_NET.$((10 + ${1#n})):7370"; }

# Poll CMD... until it succeeds, for up to $1 seconds.
within() {
    limit=$1
    shift
    deadline=$(($(date +%s) + limit))
    until "$@" > /dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}

# n1's status as JSON, checked by the python expression $1 (s: the status).
status_is() {
    "$ringkv" -H "$(client_of n1)" status --json > "$tmp/status.json" 2> /dev/null || [ $? -eq 3 ]
    python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" \
        "$tmp/status.json"
}
member() { echo "[m for m in s['members'] if m['id'] == '$1'][0]"; }

log "seed $seed, net $RINGKV_TESTBED_NET, folder $tmp"

# up: three nodes in three racks, one ring.
tb 0 up -n 3
grep -q '^converged: n1 n2 n3 see each other up' "$tmp/out" || fail "up did not report convergence: $(cat "$tmp/out")"
for id in n1 n2 n3; do
    pid=$(pid_of $id)
    alive "$pid" || fail "$id (pid $pid) is not running after up"
    pids="$pids $pid"
done
grep -qx 'seeds [0-9.]*\.11:7371' "$RINGKV_TESTBED/n3/ringkvd.conf" || fail "n3 is not seeded with n1"
grep -qx 'rack rack-c' "$RINGKV_TESTBED/n3/ringkvd.conf" || fail "n3 is not in rack-c"
tb 0 status
grep -Eq '^UN  n2  ' "$tmp/out" || fail "status does not show n2 up and normal: $(cat "$tmp/out")"
status_is "s['converged'] and len(s['members']) == 3 and all(m['up'] and m['status'] == 'normal' for m in s['members'])" ||
    fail "n1's status is not three members up and converged: $(cat "$tmp/status.json")"
tb 0 status n3 --wait converged -t 10
tb 0 up
grep -q '^n2  running' "$tmp/out" || fail "a second up did not reuse the running nodes: $(cat "$tmp/out")"

# A running node is not started twice.
tb 1 start n2
grep -q 'n2 is already running' "$tmp/out" || fail "start of a running node: $(cat "$tmp/out")"
[ "$(pid_of n2)" = "$(echo "$pids" | awk '{ print $2 }')" ] || fail "the PID file of n2 changed"

# kill n2: gone at once, and down in n1's view; start n2: back in the ring.
old=$(pid_of n2)
tb 0 kill n2
! alive "$old" || fail "n2 (pid $old) survived kill"
[ ! -e "$RINGKV_TESTBED/n2/ringkvd.pid" ] || fail "kill left n2's PID file"
within 30 status_is "not $(member n2)['up']" || fail "n1 never saw n2 down: $(cat "$tmp/status.json")"
tb 3 status
grep -Eq '^DN  n2  ' "$tmp/out" || fail "status does not show n2 down: $(cat "$tmp/out")"
tb 0 start n2
pids="$pids $(pid_of n2)"
[ "$(pid_of n2)" != "$old" ] || fail "n2 restarted with its old PID"
tb 0 wait 30
within 30 status_is "$(member n2)['up'] and s['converged']" || fail "n2 did not come back: $(cat "$tmp/status.json")"

# pause and resume: the process stays, stopped, then runs again.
tb 0 pause n3
tb 0 ps
grep -Eq '^n3 +paused ' "$tmp/out" || fail "ps does not show n3 paused: $(cat "$tmp/out")"
tb 0 resume n3
tb 0 ps
grep -Eq '^n3 +running ' "$tmp/out" || fail "ps does not show n3 running: $(cat "$tmp/out")"

# add n4 (a join: waited for until n4 is normal), then leave n4: its process
# exits and the rest converge without it; n1, the seed, does not leave.
tb 0 add n4
grep -q '^converged: n1 n2 n3 n4 see each other up' "$tmp/out" || fail "add n4: $(cat "$tmp/out")"
pids="$pids $(pid_of n4)"
old=$(pid_of n4)
tb 0 leave n4
grep -q '^n4  left the cluster and stopped' "$tmp/out" || fail "leave n4: $(cat "$tmp/out")"
! alive "$old" || fail "n4 (pid $old) still runs after leave"
status_is "$(member n4)['status'] == 'left' and s['converged']" || fail "n4 not left: $(cat "$tmp/status.json")"
tb 1 leave n1
grep -q "n1 is the testbed's seed" "$tmp/out" || fail "leave n1: $(cat "$tmp/out")"

# down, then clean: every process gone, the folder removed.
tb 0 down
for pid in $pids; do
    ! alive "$pid" || fail "pid $pid is still running after down"
done
for id in n1 n2 n3; do
    [ ! -e "$RINGKV_TESTBED/$id/ringkvd.pid" ] || fail "down left $id's PID file"
done
tb 1 start n9
tb 0 clean
[ ! -e "$RINGKV_TESTBED" ] || fail "clean left $RINGKV_TESTBED"
for pid in $pids; do
    ! alive "$pid" || fail "pid $pid is still running after clean"
done

passed=1
log "ok"
