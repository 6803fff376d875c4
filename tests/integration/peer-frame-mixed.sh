#!/bin/sh
# Shared frames between nodes of different frame-max (PROTOCOL.md 5): each
# node bounds the frames it reads by its own frame-max, which its peers do
# not know, so a frame sharing several messages never exceeds the smallest
# frame-max a node accepts (64 KiB); only a message alone over that travels
# in a larger frame, as before message set 3.
#
#   - two nodes, rf 2: n1 with the default frame-max (17 MiB), n2 with
#     128 KiB (value-max 32 KiB);
#   - four connections to n1 each pipeline 400 SETs of 2,000-byte values
#     in one send, so n1's replica writes to n2 of one loop pass add up to
#     far more than n2's frame-max;
#   - every SET is acknowledged, n2 holds every value in its own copy
#     (KGET R 1), and n2 never rejected a frame from n1 (peer_rejected).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
IT_RF=2
it_node n1 --rack r1
it_setvar n2 PEER "$(it_free_port "$(it_addr n2)")"
it_node n2 --rack r2 --frame-max 128KB --value-max 32KB --seeds "$(it_addr n1):$N1_PEER"
it_wait_ping n1
it_wait_ping n2
# shellcheck disable=SC2046 # one port a word
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 2 $(it_ports 2) ||
    it_fail "2 nodes did not converge"

python3 - "$N1_CLIENT" "$N2_CLIENT" << 'PY' || it_fail "replica writes to a node of smaller frame-max (above)"
import socket, sys, threading
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
values = {b"k%d-%d" % (c, i): bytes([65 + i % 26]) * 2000 for c in range(4) for i in range(400)}
conns = [conn(sys.argv[1]) for _ in range(4)]
bad = []
def pipe(c):
    s, f = conns[c]
    mine = [k for k in values if k.startswith(b"k%d-" % c)]
    s.sendall(b"".join(cmd(b"SET", k, values[k]) for k in mine))
    got = [reply(f) for _ in mine]
    if got != [b"+OK"] * len(mine):
        bad.append("connection %d: %r" % (c, [g for g in got if g != b"+OK"][:3]))
threads = [threading.Thread(target=pipe, args=(c,)) for c in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if bad:
    sys.exit("SETs through n1: %s" % bad)
s, f = conn(sys.argv[2])
for k, v in values.items():
    s.sendall(cmd(b"KGET", k, b"R", b"1"))
    r = reply(f)
    if not isinstance(r, list) or r[1:] != [[v]]:
        sys.exit("n2: %s holds %r" % (k, r if not isinstance(r, list) else [len(x or b"") for x in r]))
PY
! grep -q 'event=peer_rejected' "$IT_DIR/n2.log" ||
    it_fail "n2 rejected n1's frames: $(grep 'event=peer_rejected' "$IT_DIR/n2.log" | tail -n 3)"
it_log "1,600 values of 2,000 bytes written through n1 (frame-max 17 MiB) held by n2 (128 KiB)"
it_pass
