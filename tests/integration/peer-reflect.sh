#!/bin/sh
# A keyless relay sends a node's own outgoing handshake back to the node's
# peer port (its seed list names the relay).  Both ends of that handshake
# are the node itself, so both know the key; the node must see its own
# nonce come back, refuse that connection (counted as reflected), and keep
# running and serving - not take its own IDENT for another process with
# its id and exit.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
RELAY=$(it_free_port)
N1_PEER=$(it_free_port)
python3 "$top_srcdir/tests/integration/relay.py" "$RELAY" "$N1_PEER" "$IT_DIR/relayed" 60 \
    > "$IT_DIR/relay.log" 2>&1 &
relay=$!
IT_PIDS="$IT_PIDS $relay"
it_wait sh -c "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", $RELAY), 1).close()'" ||
    it_fail "the relay does not listen"
rm -f "$IT_DIR/relayed"
it_node n1 --rf 1 --r 1 --w 1 --seeds "127.0.0.1:$RELAY"
it_wait_ping n1
# The node dials its seed again every round: wait for three reflections.
it_wait sh -c "[ \"\$(cat '$IT_DIR/relayed' 2> /dev/null || echo 0)\" -ge 3 ]" ||
    it_fail "the node's handshakes did not go through the relay three times"
it_wait sh -c "[ \"\$(redis-cli -p $N1_CLIENT INFO | tr -d '\r' | sed -n 's/^ringkv_peer_rejected_reflected://p')\" -ge 3 ]" ||
    it_fail "reflected handshakes not counted: $(it_cli n1 INFO | grep reflected)"
it_alive n1 || it_fail "n1 exited on its own reflected handshake"
it_expect_eq "PING after reflections" "$(it_cli n1 PING)" "PONG"
it_expect_eq "INFO run_id answers" "$(it_cli n1 INFO server | grep -c '^run_id:')" "1"
grep -q 'event=peer_rejected .*reason=reflected' "$IT_DIR/n1.log" || it_fail "no reflected line"
! grep -q 'in use' "$IT_DIR/n1.log" || it_fail "n1 took its own IDENT for another node"
it_stop n1
it_expect_eq "exit status" "$IT_STATUS" "0"
it_pass "$(cat "$IT_DIR/relayed") reflected handshakes refused, n1 kept serving"
