#!/bin/sh
# A hint whose target has left the ring goes to the key's replicas now, the
# node holding it among them; the node's own store refusing it for good
# (over max-siblings) drops it, as a replica's answer of the same refusal
# does (repl-hint-refused.sh).  Before, delivery_applied() took every local
# failure as "try again": the hint was re-applied every round, forever.
#
# Pass: n1 takes a REPLICA_WRITE holding 101 concurrent versions of one
# key as hints for "gone", a node that is not in the ring (max-siblings
# 100, so each replica, n1 too, refuses the last); within 15 s n1 holds no
# hint.
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
# [7, 1, 2, [key, record, "gone"]]: a REQUEST, REPLICA_WRITE, kept as hints for "gone"
body = b"\x93" + b"\xc4" + bytes([len(key)]) + key + b"\xc5" + struct.pack(">H", len(rec)) + rec + b"\xa4gone"
print("raw=" + (b"\x94\x07\x01\x02" + body).hex())
PY
)
out=$(FORGE_BODIES=1 "$FORGE" "$IT_DIR/key" "127.0.0.1:$N1_PEER" "$step" read=1000)
echo "$out" | grep -q "^msg type=8 id=1 code=0 body=9500" || it_fail "the hints were not taken: $out"
hints() { it_cli n1 INFO | tr -d '\r' | sed -n 's/^ringkv_hints://p'; }
it_log "n1 holds $(hints) hints"
IT_WAIT=15 it_wait sh -c "[ \"\$(redis-cli -p $N1_CLIENT INFO | tr -d '\r' | sed -n 's/^ringkv_hints://p')\" = 0 ]" ||
    it_fail "n1 still holds $(hints) hints for a node gone from the ring after 15 s"
grep -q "event=hint_dropped target=gone" "$IT_DIR/n1.log" || it_fail "no hint_dropped line for target gone in n1's log"
it_pass "a hint its own node refuses for good does not stay forever"
