#!/bin/sh
# RINGKV REPLICAS answered inside its own call: on a single node (its key's
# only replica is itself), coord_inspect() runs its callback before
# ringkv_replicas() returns CMD_ASYNC, so client_finish() has already
# replied and recycled the entry when client_start() marks it in flight.
# With more than CLIENT_SPARE_MAX (64) earlier replies popped in the same
# pass, the entry is freed, not recycled: a write after free (fails under
# --enable-asan: the node dies), else an in-flight count that never returns
# to zero (the connection's client is never freed).
#
# Pass: one connection sends 80 PINGs, RINGKV REPLICAS k and a PING in one
# write; it gets 82 replies in order and the node still answers.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_node n1
it_wait_ping n1
it_cli n1 SET k v > /dev/null || it_fail "SET k"

out=$(python3 - "$N1_CLIENT" << 'PY'
import socket, sys, time
def enc(*a):
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(enc(b"PING") * 80 + enc(b"RINGKV", b"REPLICAS", b"k") + enc(b"PING"))
data, end = b"", time.time() + 10
while data.count(b"+PONG\r\n") < 81 and time.time() < end:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
pongs = data.count(b"+PONG\r\n")
ok = pongs == 81 and data.endswith(b"+PONG\r\n") and b"primary" in data
print("ok" if ok else "pongs=%d bytes=%d" % (pongs, len(data)))
PY
)
[ "$out" = ok ] || it_fail "80 PINGs, RINGKV REPLICAS, PING in one write: $out"
it_alive n1 || it_fail "n1 died after RINGKV REPLICAS answered inside its call"
it_cli n1 PING > /dev/null || it_fail "n1 stopped answering"
it_pass "RINGKV REPLICAS answered inside its call: 82 replies in order, node alive"
