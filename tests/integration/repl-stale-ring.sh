#!/bin/sh
# Requests from a peer whose ring differs from the node's (PROTOCOL.md
# 7.15, coord.h "Rings that differ"), with real ringkvd processes: four
# nodes of rf 3 in racks r1 r2 r3 r1, so each key has one node that is no
# replica of it (n1 or n4), N below.  The peer is tests/integration/
# peer_forge, standing in for a member whose ring is behind: it sends N
# the requests a node that still takes N for a replica of the key sends.
#
#   - k1 is written through n2 (acknowledged);
#   - a FORWARD read of k1 that travelled one forward (hops 1) is
#     forwarded on by N to a replica and answered with the value (status
#     0), where a forwarded request used to be refused with TRYAGAIN; so
#     is a FORWARD write of k2, which then reads back through n2;
#   - a FORWARD without hops (an older node's) and one of 2 hops are
#     still refused with TRYAGAIN (status 3): never forwarded again;
#   - a REPLICA_READ of k1 (as a coordinator whose ring is behind asks
#     it) is answered NOTMINE (status 13), not "not found" (status 1): N
#     holds no copy and is no replica, so its empty store is no vote;
#   - a REPLICA_WRITE of k3 is answered NOTMINE and N stores nothing
#     (its DBSIZE does not change; GET k3 is nil), where it used to take
#     the version and acknowledge it as a replica's copy;
#   - N counts both (INFO ringkv_replica_not_mine 2).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
FORGE="$top_builddir/tests/integration/peer_forge"
it_cluster 4
it_wait_converged_n 4

# non_replica KEY: n1 or n4, the one that is no replica of KEY
non_replica() {
    "$RINGKV" -H "127.0.0.1:$N2_CLIENT" preflist --json "$1" | python3 -c '
import json, sys
nodes = [r["node"] for r in json.load(sys.stdin)["replicas"]]
print("n4" if "n1" in nodes else "n1")'
}

# Three keys with the same non-replica: k1, k2, k3.
N=$(non_replica sr:0)
keys=""
i=0
while [ "$i" -lt 200 ] && [ "$(echo "$keys" | wc -w)" -lt 3 ]; do
    [ "$(non_replica "sr:$i")" = "$N" ] && keys="$keys sr:$i"
    i=$((i + 1))
done
# shellcheck disable=SC2086 # one key a word
set -- $keys
[ $# -eq 3 ] || it_fail "no three keys with the same non-replica among 200: $keys"
K1=$1 K2=$2 K3=$3
NPEER=$(it_var "$N" PEER)
it_log "$N is no replica of $K1, $K2, $K3"

it_expect_eq "SET $K1 through n2" "$(it_cli n2 SET "$K1" v1)" OK
IT_WAIT=20 it_wait "$RINGKV" -H "127.0.0.1:$N2_CLIENT" replicas --json "$K1" ||
    it_fail "the replicas of $K1 never agreed"

# forge STEP...: run the forge against N's peer port, bodies printed whole
forge() { FORGE_BODIES=all "$FORGE" "$IT_DIR/key" "127.0.0.1:$NPEER" "$@" read=3000; }

# requests: the REQUESTs, one raw= step each (ids 1..6)
steps=$(python3 - "$K1" "$K2" << 'PY'
import sys
k1, k2 = (a.encode() for a in sys.argv[1:3])
def b(x):
    return b"\xc4" + bytes([len(x)]) + x
def req(rid, op, body):
    return "raw=" + (b"\x94\x07" + bytes([rid, op]) + body).hex()
# FORWARD (op 4) read in parts: [0, key, nil, false, nil, 0, from 0, digest 0] (+ expiry 0 0, hops)
def fread(key, hops):
    if hops is None:
        return b"\x98\x00" + b(key) + b"\xc0\xc2\xc0\x00\x00\x00"
    return b"\x9b\x00" + b(key) + b"\xc0\xc2\xc0\x00\x00\x00\x00\x00" + bytes([hops])
fwrite = b"\x9b\x01" + b(k2) + b(b"v2") + b"\xc2\xc0\x00\x00\x00\x00\x00\x01"
print(" ".join([
    req(1, 4, fread(k1, 1)),       # forwarded once: forwarded on
    req(2, 4, fread(k1, None)),    # an older node's: never forwarded again
    req(3, 4, fread(k1, 2)),       # two forwards already
    req(4, 4, fwrite),             # a write forwarded once
    req(5, 3, b"\x93" + b(k1) + b"\x00\x00"),  # REPLICA_READ in parts
]))
PY
)
# shellcheck disable=SC2086 # one step a word
out=$(forge $steps) || it_fail "forge: $out"
answer() { echo "$out" | sed -n "s/^msg type=8 id=$1 code=0 body=//p"; }
case $(answer 1) in
9500*) ;;
*) it_fail "a FORWARD read of hops 1 at $N was not answered with status 0: $(answer 1) ($out)" ;;
esac
answer 1 | grep -q "7631" || it_fail "the forwarded read of $K1 did not bring v1: $(answer 1)"
it_expect_eq "a FORWARD without hops at $N: TRYAGAIN" "$(answer 2 | cut -c1-4)" 9503
it_expect_eq "a FORWARD of hops 2 at $N: TRYAGAIN" "$(answer 3 | cut -c1-4)" 9503
it_expect_eq "a FORWARD write of hops 1 at $N: ok" "$(answer 4 | cut -c1-4)" 9500
it_expect_eq "GET $K2 through n2 after the forwarded write" "$(it_cli n2 GET "$K2")" v2
it_expect_eq "a REPLICA_READ of $K1 at $N: NOTMINE, not 'not found'" "$(answer 5 | cut -c1-4)" 950d

# A REPLICA_WRITE of K3 at N, with the record of K1 as a replica (n2) stores it.
rec=$(FORGE_BODIES=all "$FORGE" "$IT_DIR/key" "127.0.0.1:$N2_PEER" \
    "raw=$(python3 -c 'import sys; k = sys.argv[1].encode(); print((b"\x94\x07\x01\x03\x91\xc4" + bytes([len(k)]) + k).hex())' "$K1")" \
    read=2000 | sed -n 's/^msg type=8 id=1 code=0 body=//p')
case $rec in 95000000c4*) ;; *) it_fail "n2's copy of $K1: $rec" ;; esac
size_before=$(it_cli "$N" DBSIZE)
step=$(python3 - "$K3" "$rec" << 'PY'
import sys
key, ans = sys.argv[1].encode(), bytes.fromhex(sys.argv[2])
n = ans[5]
record = ans[6:6 + n]  # the answer [0, 0, 0, record (bin 8), false]
body = b"\x93\xc4" + bytes([len(key)]) + key + b"\xc4" + bytes([len(record)]) + record + b"\xc0"
print("raw=" + (b"\x94\x07\x06\x02" + body).hex())
PY
)
out=$(forge "$step") || it_fail "forge: $out"
it_expect_eq "a REPLICA_WRITE of $K3 at $N: NOTMINE" "$(answer 6 | cut -c1-4)" 950d
it_expect_eq "$N's DBSIZE after the refused REPLICA_WRITE" "$(it_cli "$N" DBSIZE)" "$size_before"
it_expect_eq "GET $K3 through n2" "$(it_cli n2 GET "$K3")" ""
it_expect_eq "$N's ringkv_replica_not_mine" "$(it_info_field "$N" ringkv_replica_not_mine)" 2
it_pass "a node whose ring makes it no replica forwards a forwarded request on and answers replica requests NOTMINE"
