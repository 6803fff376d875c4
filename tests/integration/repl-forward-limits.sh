#!/bin/sh
# A FORWARD (PROTOCOL.md 7.15) whose key is over the store's key limit
# must be refused alone.  serve_forward() hands the write to req_begin()
# without kv_write_start()'s kv_write_ok() check, so the oversized write is
# queued with the others of the event-loop iteration, and
# store_submit_list() refuses the whole list: every write that arrived
# with it fails with status 8 (over a limit) and is not stored.
#
# Pass: three bursts of 10 valid FORWARD writes, one with a 504-byte key,
# 10 more valid ones; the oversized one is answered status 8, every valid
# one status 0 and readable.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
FORGE="$top_builddir/tests/integration/peer_forge"
it_cluster 3
it_wait_converged

bad=0
for burst in 1 2 3; do
    steps=$(python3 - "$burst" << 'PY'
import sys
b = sys.argv[1]
def bin_(x):
    return (b"\xc4" + bytes([len(x)]) if len(x) < 256 else b"\xc5" + len(x).to_bytes(2, "big")) + x
def forward_write(rid, key):
    # [7, id, 4, [1, key, "v", false, nil, 0]]: a REQUEST, FORWARD, a blind write at the cluster's w
    body = b"\x96\x01" + bin_(key) + bin_(b"v") + b"\xc2\xc0\x00"
    return (b"\x94\x07" + bytes([rid]) + b"\x04" + body).hex()
steps = [forward_write(i, b"ok%s_%d" % (b.encode(), i)) for i in range(1, 11)]
steps.append(forward_write(99, b"K" * 504))
steps += [forward_write(i, b"ok%s_%d" % (b.encode(), i)) for i in range(11, 21)]
print(" ".join("raw=" + s for s in steps))
PY
)
    # shellcheck disable=SC2086 # one step a word
    out=$(FORGE_BODIES=1 "$FORGE" "$IT_DIR/key" "127.0.0.1:$N1_PEER" $steps read=3000)
    echo "$out" | grep -q "^msg type=8 id=99 code=0 body=9508" ||
        it_fail "burst $burst: the 504-byte key was not refused with status 8: $out"
    n=$(echo "$out" | grep "^msg type=8 id=" | grep -v "id=99 " | grep -c "body=9500")
    [ "$n" -eq 20 ] || {
        it_log "burst $burst: $((20 - n)) of 20 valid forwarded writes failed"
        bad=$((bad + 20 - n))
    }
done
[ "$bad" -eq 0 ] || it_fail "$bad valid forwarded writes failed with the oversized one"
got=$(it_cli n2 GET ok3_20)
[ "$got" = v ] || it_fail "GET ok3_20 through n2: '$got'"
it_pass "an oversized forwarded key is refused alone"
