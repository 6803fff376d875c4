#!/bin/sh
# File descriptors.  At start the node raises its soft RLIMIT_NOFILE to what
# its settings need or refuses with one line naming the setting to lower.
# When it runs out anyway (its limit lowered under it), accept() backs off:
# over 2 s the node uses little CPU and logs a handful of lines, not the
# hundreds of thousands a spinning accept would, and once connections
# close it accepts again.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

# Defaults (maxclients 10000, peer-maxconn 1024) under a 64-descriptor hard limit: refused.
out=$(prlimit --nofile=64:64 "$RINGKVD" --id n0 --cluster-key "$IT_DIR/key" \
    --data "$IT_DIR/n0.data" --client "127.0.0.1:$(it_free_port)" \
    --listen "127.0.0.1:$(it_free_port)" 2>&1)
status=$?
it_expect_eq "exit status under a 64-descriptor limit" "$status" "2"
it_expect_eq "lines" "$(printf '%s\n' "$out" | wc -l)" "1"
case "$out" in
"ringkvd: maxclients: the settings need 11056 file descriptors"*"hard limit 64; lower maxclients"*) ;;
*) it_fail "refusal line: $out" ;;
esac

# Small enough settings start under the same limit; a soft limit below them is raised.
N1_CLIENT=$(it_free_port)
N1_PEER=$(it_free_port)
prlimit --nofile=16:64 "$RINGKVD" --id n1 --cluster-key "$IT_DIR/key" --data "$IT_DIR/n1.data" \
    --client "127.0.0.1:$N1_CLIENT" --listen "127.0.0.1:$N1_PEER" --rf 1 --r 1 --w 1 \
    --maxclients 16 --peer-maxconn 8 >> "$IT_DIR/n1.log" 2>&1 &
N1_PID=$!
IT_PIDS="$IT_PIDS $N1_PID"
it_wait_ping n1
soft=$(awk '/^Max open files/ {print $4}' "/proc/$N1_PID/limits")
it_expect_eq "soft limit raised to the settings' need" "$soft" "56"

# Lower the limit under the running node to what it holds now plus 2, then flood the client port.
open_fds=$(ls "/proc/$N1_PID/fd" | wc -l)
prlimit --pid "$N1_PID" --nofile=$((open_fds + 2)):$((open_fds + 2)) ||
    it_fail "cannot lower the node's limit"
python3 "$top_srcdir/tests/integration/holdconn.py" "$N1_CLIENT" 12 4 --ready "$IT_DIR/held" \
    > "$IT_DIR/held.out" 2>&1 &
held=$!
it_wait test -f "$IT_DIR/held" || it_fail "the connections were not opened"

# cpu_ticks: the node's user + system time, in clock ticks (/proc/PID/stat fields 14 and 15).
cpu_ticks() {
    sed 's/.*) //' "/proc/$N1_PID/stat" | awk '{print $12 + $13}'
}
# The window is the measurement itself: a spinning accept burns it whole (200 ticks at 100 Hz).
ticks0=$(cpu_ticks)
lines0=$(wc -l < "$IT_DIR/n1.log")
sleep 2
ticks=$(($(cpu_ticks) - ticks0))
lines=$(($(wc -l < "$IT_DIR/n1.log") - lines0))
it_log "out of descriptors for 2 s: $ticks CPU ticks, $lines log lines"
[ "$ticks" -le 30 ] || it_fail "the node used $ticks CPU ticks in 2 s out of descriptors"
[ "$lines" -le 5 ] || it_fail "the node logged $lines lines in 2 s out of descriptors"
grep -q 'event=accept_failed port=client error="Too many open files"' "$IT_DIR/n1.log" ||
    it_fail "no accept_failed line"
wait "$held"

# The held connections are closed: the node accepts again (its pause is at most 1 s).
it_wait_ping n1
errors=$(it_cli n1 INFO stats | tr -d '\r' | sed -n 's/^ringkv_accept_errors://p')
[ "${errors:-0}" -ge 1 ] || it_fail "accept errors not counted: '$errors'"
it_stop n1
it_expect_eq "exit status" "$IT_STATUS" "0"
it_pass "refused at 64 descriptors; out of them: $ticks ticks, $lines lines in 2 s; accepts again"
