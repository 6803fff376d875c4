#!/bin/sh
# Shared frames (message set 3, PROTOCOL.md 4.1 and 5): the messages one
# loop pass sends to a peer share one sealed frame when that peer reads
# several a frame, and never otherwise.
#
#   - a peer of message set 3 (tests/integration/peer_forge) sends 64
#     REQUESTs of an unknown operation with one send(): all 64 answers
#     (result 1) arrive, at least one frame carries several of them, and
#     the node counts the shared frames (ringkv_peer_frames_shared);
#   - the same from a peer announcing message set 2: all 64 answers arrive,
#     one a frame, every one decodable as a frame of one message, and the
#     node's shared-frame count does not move;
#   - both connections stay up (a PING after the answers gets its PONG).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
# the forged peer announces rf 3: the node runs rf 3
IT_RF=3
FORGE="$top_builddir/tests/integration/peer_forge"
N=64
it_setvar n1 PEER "$(it_free_port)"
it_node n1 --rack r1
it_wait_ping n1
shared() { it_cli n1 INFO all | tr -d '\r' | sed -n 's/^ringkv_peer_frames_shared://p'; }

# forge PROTO: 64 requests at once, read their answers, then a PING.
forge() {
    FORGE_FRAMES=1 "$FORGE" "$IT_DIR/key" "127.0.0.1:$N1_PEER" --proto "$1" "reqs=$N,99" read=1500 ping
}

before=$(shared)
out=$(forge 3)
answers=$(echo "$out" | grep -c '^msg type=8 id=[0-9]* code=1$')
[ "$answers" = "$N" ] || it_fail "message set 3: $answers answers of $N: $out"
echo "$out" | grep -q '^pong$' || it_fail "message set 3: no PONG after the answers: $out"
most=$(echo "$out" | sed -n 's/^frame messages=//p' | sort -n | tail -n 1)
[ "${most:-0}" -gt 1 ] || it_fail "message set 3: no frame carried several messages: $out"
after=$(shared)
[ "$after" -gt "$before" ] || it_fail "ringkv_peer_frames_shared did not grow: $before -> $after"
it_log "message set 3: $N answers, up to $most a frame, shared frames $before -> $after"

before=$(shared)
out=$(forge 2)
answers=$(echo "$out" | grep -c '^msg type=8 id=[0-9]* code=1$')
[ "$answers" = "$N" ] || it_fail "message set 2: $answers answers of $N: $out"
echo "$out" | grep -q undecodable && it_fail "message set 2 got a frame it cannot read: $out"
echo "$out" | grep -q '^pong$' || it_fail "message set 2: no PONG after the answers: $out"
after=$(shared)
[ "$after" = "$before" ] || it_fail "a shared frame went to a peer of message set 2: $before -> $after"
it_log "message set 2: $N answers, one a frame"
it_pass
