#!/bin/sh
# A node that did not run for a while (SIGSTOP, a stalled loop) does not
# hold the others' silence over that time against them (gossip.c,
# gossip_pause_check()): resumed, it logs event=local_pause and marks
# nobody down, and its clients' writes succeed at once.  Without it the
# node's first round after the pause found every member silent for the
# whole pause (phi about 17), marked them all down, closed their
# connections and answered its clients NOREPLICAS until their heartbeats
# came back.
#
# Pass: 3 nodes (rf 3, w 2); n3 paused until n1 sees it down; resumed,
# 20 SETs through n3 started at once all answer OK, n3's log has
# local_pause with the pause's length and no member_down after it, and n1
# sees n3 up again.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 3 --w 2
it_wait_converged
it_cli n3 SET before v > /dev/null || it_fail "SET before through n3"

kill -STOP "$N3_PID"
paused=$(date +%s)
IT_WAIT=$(($(it_rounds_s "$IT_DOWN_ROUNDS") * 2)) it_wait it_ask state down n3 "$N1_CLIENT" ||
    it_fail "n1 does not see the paused n3 down"
lines=$(wc -l < "$IT_DIR/n3.log")
kill -CONT "$N3_PID"
# The writes start as n3 runs again: its first round is overdue, so it
# comes before or among them.
out=$(python3 - "$N3_CLIENT" << 'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
f = s.makefile("rb")
replies = []
for i in range(20):
    key = b"k%d" % i
    s.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n" % (len(key), key))
    replies.append(f.readline().decode().strip())
print("\n".join(replies))
PY
)
sleep 1
after=$(tail -n +"$((lines + 1))" "$IT_DIR/n3.log")
it_log "n3 paused $(($(date +%s) - paused)) s: $(printf '%s\n' "$after" | grep -o 'event=local_pause ms=[0-9]*')"
[ "$(printf '%s\n' "$out" | grep -cx '+OK')" -eq 20 ] ||
    it_fail "SETs through n3 right after its pause: $(printf '%s\n' "$out" | sort | uniq -c)"
printf '%s\n' "$after" | grep -q 'event=local_pause ms=[0-9]' || it_fail "n3 logged no local_pause"
! printf '%s\n' "$after" | grep -q 'event=member_down' ||
    it_fail "n3 marked members down after its pause: $(printf '%s\n' "$after" | grep member_down)"
IT_WAIT=$(it_rounds_s 20) it_wait it_ask state alive n3 "$N1_CLIENT" || it_fail "n1 does not see n3 up again"
it_pass "a node resumed after a pause marks nobody down and serves its writes at once"
