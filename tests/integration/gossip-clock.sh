#!/bin/sh
# Steps of the wall clock change nothing in membership.  Three ringkvd
# processes run under libfaketime with their monotonic clock left real, and
# their wall clocks are stepped while they run, as NTP or `date -s` would:
# n1 an hour ahead, n2 two hours back, n3 a day ahead; then all back to now.
#
#   - TIME on each node shows that the step took effect;
#   - for IT_DOWN_ROUNDS rounds after each step (the time a dead member
#     takes to be marked down), no node suspects any member, no log has a
#     member_suspect or member_down, and the cluster stays converged;
#   - uptime (INFO, RINGKV STATUS) does not move with the wall clock, nor
#     does a client connection's idleness (timeout);
#   - a kill -9 afterwards is still seen down everywhere within the bound.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

lib=""
for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
    [ -f "$f" ] && lib=$f && break
done
[ -n "$lib" ] || it_fail "libfaketime not found: run cluster-scripts/install-deps"

# ringkvd with its wall clock offset by the contents of $IT_DIR/<id>.clock,
# read again at every call; it_node passes --id first.
real=$RINGKVD
RINGKVD="$IT_DIR/ringkvd-faked"
cat > "$RINGKVD" << EOF
#!/bin/sh
export LD_PRELOAD="$lib" FAKETIME_TIMESTAMP_FILE="$IT_DIR/\$2.clock"
export FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1
# An ASan build wants its runtime first; libfaketime comes before it here.
export ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}verify_asan_link_order=0"
exec "$real" "\$@"
EOF
chmod +x "$RINGKVD"

ids="n1 n2 n3"
# set_clock ID SECONDS: replaced whole, never seen half written.
set_clock() {
    printf '%+d\n' "$2" > "$IT_DIR/$1.clock.new"
    mv "$IT_DIR/$1.clock.new" "$IT_DIR/$1.clock"
}
for id in $ids; do set_clock "$id" 0; done
it_cluster 3
PORTS=$(it_ports 3)
IT_WAIT=$(it_rounds_s 12) it_wait it_ask converged 3 $PORTS || it_fail "3 nodes did not converge"

# offset ID: the node's wall clock minus ours, in seconds.
offset() { echo $(($(it_cli "$1" TIME | head -n 1) - $(date +%s))); }

# near GOT WANT: within 5 s.
near() { [ $(($1 - $2)) -le 5 ] && [ $(($2 - $1)) -le 5 ]; }

uptime() { it_cli "$1" INFO server | tr -d '\r' | awk -F: '$1 == "uptime_in_seconds" { print $2 }'; }

# step "ID SECONDS ...": set each node's offset, see it take effect, then
# watch the cluster for IT_DOWN_ROUNDS rounds.
step() {
    set -- $1
    while [ $# -gt 0 ]; do
        set_clock "$1" "$2"
        got=$(offset "$1")
        near "$got" "$2" || it_fail "$1's wall clock is off by $got s, not $2 s"
        shift 2
    done
    deadline=$(($(date +%s) + $(it_rounds_s "$IT_DOWN_ROUNDS")))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        bad=$(it_ask wrongly-down none $PORTS) || it_fail "after a clock step: $bad"
        it_ask converged 3 $PORTS || it_fail "the cluster lost convergence after a clock step"
        sleep 0.2
    done
    for id in $ids; do
        up=$(uptime "$id")
        [ "$up" -lt 600 ] || it_fail "$id's uptime followed the wall clock: $up s"
    done
    if grep -l 'event=member_suspect\|event=member_down' "$IT_DIR"/n*.log; then
        it_fail "a member was suspected after a clock step"
    fi
}

# Client idleness: a connection idle 5 s, timeout 10 s, with n1's wall
# clock stepped an hour ahead in between, is still open when n1's idle
# timer fires 10 s after it was opened.
it_cli n1 CONFIG SET timeout 10 > /dev/null
python3 - "$N1_CLIENT" "$IT_DIR/n1.clock" << 'PY' || it_fail "n1 closed a client that was idle 5 s of a 10 s timeout"
import os, socket, sys, time
port, clock = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=5)
def ping():
    s.sendall(b"PING\r\n")
    return s.recv(64)
assert ping() == b"+PONG\r\n"
time.sleep(5)
assert ping() == b"+PONG\r\n"
with open(clock + ".new", "w") as f:
    f.write("+3600\n")
os.rename(clock + ".new", clock)
time.sleep(6.5)
reply = ping()
print("after the step:", reply)
sys.exit(0 if reply == b"+PONG\r\n" else 1)
PY
set_clock n1 0
it_cli n1 CONFIG SET timeout 300 > /dev/null
it_log "client idle 5 s of a 10 s timeout across a +1 h step: kept open"

step "n1 3600 n2 -7200 n3 86400"
it_log "wall clocks +1 h, -2 h, +1 day: nobody suspected, still converged"
step "n1 0 n2 0 n3 0"
it_log "wall clocks back to now: nobody suspected, still converged"

# The detector still works: kill -9 of n3 seen down within the bound.
it_stop n3 KILL
start=$(date +%s%N)
IT_WAIT=$(it_rounds_s "$IT_DOWN_ROUNDS") it_wait it_ask state down n3 "$N1_CLIENT" "$N2_CLIENT" ||
    it_fail "n3 not marked down within $IT_DOWN_ROUNDS rounds"
it_log "kill -9 of n3 seen down in $((($(date +%s%N) - start) / 1000000)) ms (bound $((IT_DOWN_ROUNDS * IT_ROUND_MS)) ms)"
it_pass
