#!/bin/sh
# A hint refused for good is dropped, not retried every round forever:
# serve_replica_write() keeps each version of a REPLICA_WRITE with a hint
# as a hint without the max-siblings check a replica applies, and the
# refusal comes at delivery.
#
# 1. Target n2, a replica: n2 answers status 8 (over max-siblings) to the
#    last version; delivery_answer() drops the hint.
# 2. Target "gone", not in the ring: the hint goes to the key's replicas
#    now, n1 itself among them, whose own store refuses the last version
#    (delivery_applied()); n1 drops the hint (it was re-applied every round).
#
# Pass, each case: n1 takes a REPLICA_WRITE holding 101 concurrent versions
# of one key as hints for the target (max-siblings 100); within 15 s n1
# holds no hint and its log has a hint_dropped line for the target.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
FORGE="$top_builddir/tests/integration/peer_forge"
it_cluster 3
it_wait_converged

hints() { it_cli n1 INFO | tr -d '\r' | sed -n 's/^ringkv_hints://p'; }

# refused KEY TARGET
refused() {
    step=$(python3 - "$1" "$2" << 'PY'
import struct, sys
key, target = sys.argv[1].encode(), sys.argv[2].encode()
def sibling(actor):
    clock = struct.pack(">H", 1) + bytes([len(actor)]) + actor + struct.pack(">QQ", 1, 1)
    return clock + struct.pack(">Q", 1) + b"\x02zz" + b"\x00" + struct.pack(">I", 0)
rec = b"\x01\x00" + struct.pack(">H", 101) + b"".join(sibling(b"a%04d" % i) for i in range(101))
# [7, 1, 2, [key, record, target]]: a REQUEST, REPLICA_WRITE, kept as hints for target
body = (b"\x93" + b"\xc4" + bytes([len(key)]) + key + b"\xc5" + struct.pack(">H", len(rec)) + rec +
        bytes([0xa0 | len(target)]) + target)
print("raw=" + (b"\x94\x07\x01\x02" + body).hex())
PY
    )
    out=$(FORGE_BODIES=1 "$FORGE" "$IT_DIR/key" "127.0.0.1:$N1_PEER" "$step" read=1000)
    echo "$out" | grep -q "^msg type=8 id=1 code=0 body=9500" || it_fail "the hints for $2 were not taken: $out"
    IT_WAIT=15 it_wait sh -c "[ \"\$(redis-cli -p $N1_CLIENT INFO | tr -d '\r' | sed -n 's/^ringkv_hints://p')\" = 0 ]" ||
        it_fail "n1 still holds $(hints) hints for $2 after 15 s"
    grep -q "event=hint_dropped target=$2 " "$IT_DIR/n1.log" || it_fail "no hint_dropped line for $2 in n1's log"
    it_log "hints for $2 refused for good: dropped"
}

refused many n2
refused many2 gone
it_pass "a hint refused for good, by a replica or by its own node, does not stay forever"
