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
#     one a frame, every one decodable as a frame of one message;
#   - both connections stay up (a PING after the answers gets its PONG);
#   - replica writes that fill frames: three nodes, rf 3, frame-max 128 KiB,
#     40 SETs of 30,000-byte values pipelined through n1 in one send (two
#     fill a shared frame, so frames are sealed full and the next begins): every
#     SET is acknowledged and n2 and n3 each come to hold every value, byte
#     for byte, in their own copy (KGET R 1; w is 2, so within 60 s), with
#     no peer connection closed.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
FORGE="$top_builddir/tests/integration/peer_forge"
N=64
# shellcheck disable=SC2046 # one port a word
it_cluster 3 --frame-max 128KB --value-max 32KB
# shellcheck disable=SC2046
it_wait_converged
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
it_log "message set 2: $N answers, one a frame"

before=$(shared)
python3 - "$N1_CLIENT" "$N2_CLIENT" "$N3_CLIENT" << 'PY' || it_fail "replica writes in full frames (above)"
import socket, sys
def conn(port):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=60)
    return s, s.makefile("rb")
def cmd(*args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
def reply(f):
    line = f.readline()
    if line[:1] == b"*":
        return [reply(f) for _ in range(int(line[1:]))]
    if line[:1] == b"$":
        n = int(line[1:])
        return None if n < 0 else f.read(n + 2)[:-2]
    return line.strip()
values = {b"big%d" % i: bytes([65 + i % 26]) * 30000 for i in range(40)}
s, f = conn(sys.argv[1])
s.sendall(b"".join(cmd(b"SET", k, v) for k, v in values.items()))
got = [reply(f) for _ in values]
if got != [b"+OK"] * len(values):
    sys.exit("SETs through n1: %r" % got[:5])
# w = 2: the third copy may still be on its way when the SETs are answered; poll for 60 s
import time
deadline = time.monotonic() + 60
for port in sys.argv[2:]:
    s, f = conn(port)
    for k, v in values.items():
        while True:
            s.sendall(cmd(b"KGET", k, b"R", b"1"))
            r = reply(f)
            if isinstance(r, list) and r[1:] == [[v]]:
                break
            if time.monotonic() > deadline:
                sys.exit("port %s: %s holds %r" % (port, k, r if not isinstance(r, list) else [len(x or b"") for x in r]))
            time.sleep(0.05)
PY
after=$(shared)
[ "$after" -gt "$before" ] || it_fail "no shared frame during the replica writes: $before -> $after"
for n in n1 n2 n3; do
    ! grep -q 'event=peer_close.*reason=\(queue_full\|send_failed\)' "$IT_DIR/$n.log" ||
        it_fail "$n closed a peer connection: $(grep 'event=peer_close' "$IT_DIR/$n.log" | tail -n 3)"
done
it_log "40 values of 30,000 bytes on n2 and n3 as written through n1, shared frames $before -> $after"
it_pass
