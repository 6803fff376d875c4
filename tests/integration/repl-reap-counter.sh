#!/bin/sh
# A write through a replica whose copy of a tombstone was collected is not
# lost to a copy of that tombstone that another replica still holds.
#
# A collection stopped half way (the first replica killed, stopped or
# refused after the other replicas deleted their copies, reaper.h) leaves
# the tombstone on some replicas and "no record" on others until a later
# pass.  A node whose copy is gone must not hand out a (clock id, counter)
# pair of the key again: a version it makes has to stay apart from the
# tombstone, never be taken for an older version the tombstone descends
# from and dropped.
#
# rf 3, r = w = 2, tombstone-grace 1h (no collection runs by itself): a key
# whose first replica is n1 is written and deleted through n2, so the
# tombstone's clock carries n2's counter 2, held by all three.  A peer with
# the cluster key then asks n2 what the first replica's collection asks of
# it (REPLICA_READ, then REPLICA_REAP with the record it answered), and n2
# deletes its copy; n1 and n3 keep theirs, as when n1 stopped before its
# own delete.  `SET key v2` through n2 answers OK: every node must then read
# v2, and no replica may hold the key as a tombstone only.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
FORGE="$top_builddir/tests/integration/peer_forge"

info_field() { it_cli "$1" INFO "$2" | tr -d '\r' | sed -n "s/^$3://p"; }
field_eq() { [ "$(info_field "$1" "$2" "$3")" = "$4" ]; }
primary() {
    "$RINGKV" -H "127.0.0.1:$N1_CLIENT" -t 5 preflist --json "$1" | python3 -c '
import json, sys
print([n["node"] for n in json.load(sys.stdin)["replicas"] if n["role"] == "primary"][0])'
}

it_cluster 3 --tombstone-grace 1h
it_wait_converged

key=""
i=0
while [ $i -lt 64 ] && [ -z "$key" ]; do
    [ "$(primary "k$i")" = n1 ] && key=k$i
    i=$((i + 1))
done
[ -n "$key" ] || it_fail "no key of 64 has n1 for first replica"

it_expect_eq "SET $key v1 through n2" "$(it_cli n2 SET "$key" v1)" OK
it_expect_eq "DEL $key through n2" "$(it_cli n2 DEL "$key")" 1
for n in n1 n2 n3; do
    it_wait field_eq $n cluster ringkv_tombstones_held 1 ||
        it_fail "$n holds $(info_field $n cluster ringkv_tombstones_held) tombstones, not 1"
done

# n2's record of the key, as the first replica's REPLICA_READ gets it
read_step=$(python3 -c '
import sys
k = sys.argv[1].encode()
print("raw=" + (b"\x94\x07\x01\x03" + b"\x91\xc4" + bytes([len(k)]) + k).hex())' "$key")
out=$(FORGE_BODIES=all "$FORGE" "$IT_DIR/key" "127.0.0.1:$N2_PEER" "$read_step" read=1000)
answer=$(echo "$out" | sed -n 's/^msg type=8 id=1 code=0 body=//p')
[ -n "$answer" ] || it_fail "n2 did not answer the REPLICA_READ: $out"
# the REPLICA_REAP of that record: [key, record, nil]
reap_step=$(python3 -c '
import sys
k = sys.argv[1].encode()
a = bytes.fromhex(sys.argv[2])
assert a[0] in (0x95, 0x98) and a[1] == 0, "status not ok"
i = 4
if a[i] == 0xc4:
    n, i = a[i + 1], i + 2
elif a[i] == 0xc5:
    n, i = int.from_bytes(a[i + 1:i + 3], "big"), i + 3
else:
    raise SystemExit("no record in the answer")
rec = a[i:i + n]
bin_ = (b"\xc4" + bytes([n])) if n < 256 else (b"\xc5" + n.to_bytes(2, "big"))
body = b"\x93\xc4" + bytes([len(k)]) + k + bin_ + rec + b"\xc0"
print("raw=" + (b"\x94\x07\x02\x06" + body).hex())' "$key" "$answer") ||
    it_fail "cannot read n2's record from its answer: $answer"
out=$(FORGE_BODIES=1 "$FORGE" "$IT_DIR/key" "127.0.0.1:$N2_PEER" "$reap_step" read=1000)
echo "$out" | grep -q "^msg type=8 id=2 code=0 body=9500000" || it_fail "no answer to the REAP: $out"
echo "$out" | grep -q "^msg type=8 id=2 code=0 body=95000000c0c3" ||
    it_fail "n2 did not delete its copy: $out"
it_wait field_eq n2 cluster ringkv_tombstones_held 0 || it_fail "n2 still holds its tombstone"
it_log "n2's copy of $key deleted; n1 and n3 hold the tombstone"

it_expect_eq "SET $key v2 through n2" "$(it_cli n2 SET "$key" v2)" OK
for n in n1 n2 n3; do
    it_expect_eq "GET $key through $n after the SET" "$(it_cli $n GET "$key")" v2
done
for n in n1 n2 n3; do
    got=$(it_cli $n KGET "$key" R 1 | sed -n 2p)
    it_expect_eq "$n's own copy of $key" "$got" v2
done
it_pass "a write through a replica whose tombstone was collected is kept"
