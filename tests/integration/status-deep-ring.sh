#!/bin/sh
# A request finishes under the ring it started with: `ringkv status --deep`
# holds the ring in force when it starts (a reference, src/placement/ring.h)
# and names it in its answer, even when another ring is put in force while
# it waits.
#
#   4 nodes; n4 killed (kill -9) and seen down; n3 paused with SIGSTOP, so
#   the command waits for n3's row until request-timeout, or until n1 marks
#   n3 down and closes its connection (result closed), whichever comes
#   first; meanwhile n4 is removed
#   through n1 (`ringkv remove`: a ring change that takes effect at once,
#   where a join would wait for its handoff, here for the paused n3) and n1
#   puts a new ring in force (event=ring_changed naming the old digest).
#   The answer's digest is the old ring's, n1's status then shows the new
#   one, and the rows of n1 and n2 were answered.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
# Long enough for the removal to spread on a busy machine while n3's request waits.
TIMEOUT_MS=5000

it_setvar n1 PEER "$(it_free_port)"
it_node n1 --rack r1 --request-timeout "${TIMEOUT_MS}ms"
it_setvar n2 PEER "$(it_free_port)"
it_node n2 --rack r2 --request-timeout "${TIMEOUT_MS}ms" --seeds "127.0.0.1:$N1_PEER"
it_setvar n3 PEER "$(it_free_port)"
it_node n3 --rack r3 --request-timeout "${TIMEOUT_MS}ms" --seeds "127.0.0.1:$N2_PEER"
it_setvar n4 PEER "$(it_free_port)"
it_node n4 --rack r1 --request-timeout "${TIMEOUT_MS}ms" --seeds "127.0.0.1:$N1_PEER"
for n in n1 n2 n3 n4; do it_wait_ping "$n"; done
# shellcheck disable=SC2046 # one port a word
IT_WAIT=60 it_wait it_ask converged 4 $(it_ports 4) || it_fail "4 nodes did not converge"
it_stop n4 KILL
IT_WAIT=$(($(it_rounds_s "$IT_DOWN_ROUNDS") + 10)) it_wait it_ask state down n4 "$N1_CLIENT" ||
    it_fail "n1 does not see the killed n4 down"

digest() { it_cli "$1" RINGKV STATUS | awk 'f { print; exit } $0 == "digest" { f = 1 }'; }
before=$(digest n1)
changes=$(grep -c 'event=ring_changed' "$IT_DIR/n1.log")

kill -STOP "$N3_PID"
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" -t 30 status --deep --json > "$IT_DIR/deep.json" 2> "$IT_DIR/deep.err" &
deep=$!
sleep 1 # the command has asked n1, and n1 its members (n3's row waits for request-timeout)
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" remove n4 > /dev/null || it_fail "ringkv remove n4 through n1"
IT_WAIT=$((TIMEOUT_MS / 1000)) it_wait sh -c "[ \$(grep -c 'event=ring_changed' '$IT_DIR/n1.log') -gt $changes ]" ||
    it_fail "n1 put no new ring in force while the command waited"
kill -0 "$deep" 2> /dev/null || it_fail "the command ended before the ring changed: the test proves nothing"
grep 'event=ring_changed' "$IT_DIR/n1.log" | sed -n "$((changes + 1))p" | grep -q "old_digest=$before" ||
    it_fail "n1's first new ring_changed does not name $before as the old ring"
wait "$deep" || true
kill -CONT "$N3_PID"
after=$(digest n1)
[ "$after" != "$before" ] || it_fail "n1's digest did not change"

python3 - "$IT_DIR/deep.json" "$before" << 'PY' || it_fail "answer: $(cat "$IT_DIR/deep.json" "$IT_DIR/deep.err")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["digest"] == sys.argv[2], (d["digest"], sys.argv[2])
rows = {m["id"]: m for m in d["members"]}
assert rows["n3"]["result"] in ("timeout", "closed"), rows["n3"]
assert rows["n1"]["result"] == "ok" and rows["n2"]["result"] == "ok", rows
PY
it_log "status --deep answered under ring $before while n1 moved to $after"
it_pass
