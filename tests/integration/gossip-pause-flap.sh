#!/bin/sh
# A node whose every round comes late (here SIGSTOP for 1 s, then 50 ms of
# running, over and over: a host that starves it) still sees a member that
# really died down within about the usual bound plus a couple of its late
# rounds (gossip.c, gossip_pause_check()): its pauses excuse only members
# it had heard from just before each one, not a member already silent
# before the pause began.  Forgiving every member each late round let the
# dead member's silence grow by one interval per round, so it was marked
# down only after about 18 late rounds (about 20 s here instead of 7).
#
# Pass: 3 nodes; n3 killed (SIGKILL) while n1 is stopped and resumed in a
# loop; n1 logs member_down for n3 within IT_DOWN_ROUNDS rounds plus four
# 1 s cycles (n3 is forgiven at most its first three late rounds), and n1 marks n2, which is alive, down at no time.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 3
it_wait_converged
lines=$(wc -l < "$IT_DIR/n1.log")

it_stop n3 KILL
killed=$(date +%s%N)
bound_ms=$((IT_DOWN_ROUNDS * IT_ROUND_MS + 4 * 1050))
seen_ms=""
cycles=0
# at most 30 cycles of about 1.05 s: n1 runs 50 ms in each
while [ "$cycles" -lt 30 ]; do
    kill -STOP "$N1_PID"
    sleep 1
    kill -CONT "$N1_PID"
    sleep 0.05
    cycles=$((cycles + 1))
    if tail -n +"$((lines + 1))" "$IT_DIR/n1.log" | grep 'event=member_down' | grep -q 'id=n3 '; then
        seen_ms=$((($(date +%s%N) - killed) / 1000000))
        break
    fi
done
kill -CONT "$N1_PID"
after=$(tail -n +"$((lines + 1))" "$IT_DIR/n1.log")
it_log "n1 flapped $cycles cycles: n3 seen down after ${seen_ms:-never} ms (bound $bound_ms ms)," \
    "$(printf '%s\n' "$after" | grep -c 'event=local_pause') local_pause lines"
[ -n "$seen_ms" ] || it_fail "n1, paused over and over, never marked the dead n3 down in $cycles cycles"
[ "$seen_ms" -le "$bound_ms" ] ||
    it_fail "n1, paused over and over, marked the dead n3 down after $seen_ms ms (bound $bound_ms ms)"
! printf '%s\n' "$after" | grep 'event=member_down' | grep -q 'id=n2 ' ||
    it_fail "n1 marked the live n2 down: $(printf '%s\n' "$after" | grep member_down)"
it_pass "a node paused every round still sees a dead member down in time"
