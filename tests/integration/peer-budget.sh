#!/bin/sh
# Idle keyless connections to the peer port cannot keep members out.
# Connections still in the channel handshake have their own budget
# (peer-handshake-max) and a cap per IP address (peer-handshake-per-addr);
# past either, a connection is closed as soon as it is accepted.  40 idle
# connections from 127.0.0.1 keep 8 (the cap), far below peer-maxconn,
# and a real node from 127.0.0.2 still joins while they are held (the
# handshake timeout is long, so it is the budget that lets it in).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_node n1 --rf 1 --r 1 --w 1 --peer-maxconn 32 --peer-handshake-max 16 \
    --peer-handshake-per-addr 8 --handshake-timeout 60s
it_wait_ping n1
python3 "$top_srcdir/tests/integration/holdconn.py" "$N1_PEER" 40 30 --ready "$IT_DIR/held" \
    > "$IT_DIR/held.out" 2>&1 &
held=$!
IT_PIDS="$IT_PIDS $held"
it_wait test -f "$IT_DIR/held" || it_fail "idle connections not opened"
it_expect_eq "idle handshakes kept from one address" "$(cat "$IT_DIR/held")" "open=8"

N2_PEER=$(it_free_port)
it_node n2 --rf 1 --r 1 --w 1 --listen "127.0.0.2:$N2_PEER" --seeds "127.0.0.1:$N1_PEER"
it_wait_ping n2
members() {
    "$RINGKV" -H "127.0.0.1:$N1_CLIENT" members --json | python3 -c '
import json, sys
print(" ".join(sorted(m["id"] for m in json.load(sys.stdin)["members"])))'
}
it_wait sh -c "[ \"\$(\"$RINGKV\" -H 127.0.0.1:$N1_CLIENT members --json | grep -c '\"n2\"')\" -ge 1 ]" ||
    it_fail "n2 did not join beside 8 idle handshakes: n1 knows $(members)"
it_expect_eq "n1's members" "$(members)" "n1 n2"
kill -0 "$held" 2> /dev/null || it_fail "the idle connections ended before n2 joined"
limit=$(it_cli n1 INFO | tr -d '\r' | sed -n 's/^ringkv_peer_rejected_limit://p')
[ "$limit" -ge 32 ] || it_fail "refused handshakes not counted: $limit"
grep -q 'event=peer_rejected .*reason=limit limit=handshakes_per_addr' "$IT_DIR/n1.log" ||
    it_fail "no peer_rejected line for the per-address cap"
it_pass "8 of 40 idle handshakes kept, $limit refused; n2 joined"
