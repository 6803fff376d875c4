#!/bin/sh
# A hint its replica refuses for good is retried every round, forever.
# serve_replica_write() keeps each version of a REPLICA_WRITE with a hint
# as a hint without the max-siblings check a replica applies; delivery
# (delivery_answer()) treats every status but ok as "try again", so a hint
# refused with status 8 (over max-siblings) is re-sent every second, never
# deleted, and the node's hint backlog never drains.
#
# Pass: n1 takes a REPLICA_WRITE holding 101 concurrent versions of one
# key as hints for n2 (max-siblings 100); within 15 s n1 holds no hint
# (refused when taken, or dropped with a log line once n2 refused it).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
FORGE="$top_builddir/tests/integration/peer_forge"
it_cluster 3
it_wait_converged

step=$(python3 << 'PY'
import struct
def sibling(actor):
    clock = struct.pack(">H", 1) + bytes([len(actor)]) + actor + struct.pack(">QQ", 1, 1)
    return clock + struct.pack(">Q", 1) + b"\x02zz" + b"\x00" + struct.pack(">I", 0)
rec = b"\x01\x00" + struct.pack(">H", 101) + b"".join(sibling(b"a%04d" % i) for i in range(101))
key = b"many"
# [7, 1, 2, [key, record, "n2"]]: a REQUEST, REPLICA_WRITE, kept as hints for n2
body = b"\x93" + b"\xc4" + bytes([len(key)]) + key + b"\xc5" + struct.pack(">H", len(rec)) + rec + b"\xa2n2"
print("raw=" + (b"\x94\x07\x01\x02" + body).hex())
PY
)
out=$(FORGE_BODIES=1 "$FORGE" "$IT_DIR/key" "127.0.0.1:$N1_PEER" "$step" read=1000)
echo "$out" | grep -q "^msg type=8 id=1 code=0 body=9500" || it_fail "the hints were not taken: $out"
hints() { it_cli n1 INFO | tr -d '\r' | sed -n 's/^ringkv_hints://p'; }
IT_WAIT=15 it_wait sh -c "[ \"\$(redis-cli -p $N1_CLIENT INFO | tr -d '\r' | sed -n 's/^ringkv_hints://p')\" = 0 ]" ||
    it_fail "n1 still holds $(hints) hints for n2 after 15 s"
it_pass "a hint its replica refuses for good does not stay forever"
