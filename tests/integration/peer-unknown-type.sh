#!/bin/sh
# Message-set versioning with a real ringkvd (proto/PROTOCOL.md 4.1): a
# peer's message of a type the node does not know is counted and dropped,
# and the connection stays (the node still answers a PING sent after it);
# a malformed message of a known type still closes the connection.  The
# peer is tests/integration/peer_probe, which speaks the sealed channel.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
PROBE="$top_builddir/tests/integration/peer_probe"

# unknown: the node's count of messages of unknown types.
unknown() {
    it_cli n1 INFO | tr -d '\r' | sed -n 's/^ringkv_peer_messages_unknown://p'
}

it_node n1
it_wait_ping n1
addr="127.0.0.1:$N1_PEER"

out=$("$PROBE" "$IT_DIR/key" "$addr" 2>&1) || it_fail "probe without extra messages: $out"
it_expect_eq "unknown types before" "$(unknown)" 0

# Types 100 and 200 and 4294967295 are no type of message set 2.
out=$("$PROBE" "$IT_DIR/key" "$addr" 100 2>&1) || it_fail "connection lost after type 100: $out"
it_expect_eq "probe answer after type 100" "$out" pong
out=$("$PROBE" "$IT_DIR/key" "$addr" 200 4294967295 2>&1) ||
    it_fail "connection lost after types 200 and 4294967295: $out"
it_expect_eq "probe answer after two unknown types" "$out" pong
it_expect_eq "unknown types counted" "$(unknown)" 3

# [2, 1] is a PING without its sent_ms: malformed, the connection closes.
if out=$("$PROBE" "$IT_DIR/key" "$addr" 2 2>&1); then
    it_fail "a malformed PING did not close the connection: $out"
fi
case "$out" in *"closed the connection"*) ;; *) it_fail "malformed PING: $out" ;; esac
grep -q 'event=peer_rejected .*reason=syntax' "$IT_DIR/n1.log" ||
    it_fail "n1 did not log the malformed PING"
it_expect_eq "unknown types after the malformed PING" "$(unknown)" 3
it_cli n1 PING > /dev/null || it_fail "n1 stopped serving"
it_pass "unknown types dropped with the connection kept; a malformed PING closed it"
