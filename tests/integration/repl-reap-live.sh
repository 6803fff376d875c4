#!/bin/sh
# A replica asked to delete a key (REPLICA_REAP) keeps it when the record
# named is a value it would still serve, even byte for byte the one it
# holds: the first replica judges a record dead by its own wall clock, and
# a clock ahead by more than tombstone-grace would otherwise delete a value
# other replicas still serve before its expiry.
#
# rf 3: `SET live v` through n1; a peer with the cluster key reads n2's
# record of it (REPLICA_READ) and sends it back in a REPLICA_REAP: n2
# answers flag false, keeps its copy (KGET R 1), and every node reads v.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
FORGE="$top_builddir/tests/integration/peer_forge"
it_cluster 3
it_wait_converged
it_expect_eq "SET live v" "$(it_cli n1 SET live v)" OK
own() { [ "$(it_cli "$1" KGET live R 1 | sed -n 2p)" = v ]; }
it_wait own n2 || it_fail "n2 does not hold live"

read_step=$(python3 -c 'print("raw=" + (b"\x94\x07\x01\x03\x91\xc4\x04live").hex())')
out=$(FORGE_BODIES=all "$FORGE" "$IT_DIR/key" "127.0.0.1:$N2_PEER" "$read_step" read=1000)
answer=$(echo "$out" | sed -n 's/^msg type=8 id=1 code=0 body=//p')
[ -n "$answer" ] || it_fail "n2 did not answer the REPLICA_READ: $out"
reap_step=$(python3 -c '
import sys
a = bytes.fromhex(sys.argv[1])
assert a[0] in (0x95, 0x98) and a[1] == 0 and a[4] == 0xc4, "no record in the answer"
rec = a[6:6 + a[5]]
body = b"\x93\xc4\x04live\xc4" + bytes([len(rec)]) + rec + b"\xc0"
print("raw=" + (b"\x94\x07\x02\x06" + body).hex())' "$answer") ||
    it_fail "cannot read n2's record from its answer: $answer"
out=$(FORGE_BODIES=1 "$FORGE" "$IT_DIR/key" "127.0.0.1:$N2_PEER" "$reap_step" read=1000)
echo "$out" | grep -q "^msg type=8 id=2 code=0 body=95000000c0c2" ||
    it_fail "n2 did not answer the REAP of a live value with flag false: $out"
own n2 || it_fail "n2 deleted its copy of a live value"
for n in n1 n2 n3; do
    it_expect_eq "GET live through $n" "$(it_cli $n GET live)" v
done
it_pass "a replica keeps a value it would serve when asked to delete it"
