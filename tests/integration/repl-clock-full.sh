#!/bin/sh
# A write to a key whose version vector is full (4096 entries, VCLOCK_ENTRIES_MAX) is
# answered with its own error, not max-siblings's, through the node that holds the key
# and through a node that forwards the write to it (status 12, PROTOCOL.md 7.15); the
# sibling cap keeps its error. Two nodes, rf 1 (each key on one node), max-siblings 1;
# the records are put in a stopped node's LMDB (lmdb_edit.py, python3-lmdb):
#
#   - full: one version whose clock names 4096 other actors: SET, DEL, KSET and KDEL
#     with KGET's context, MSET, SET inside MULTI/EXEC, through either node, answer
#     the full-clock error and write nothing; GET still reads the value;
#   - sib: one version of another actor; KSET with the context KGET gave while the key
#     was absent makes a second sibling, over max-siblings 1: the siblings error,
#     through either node.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_lmdb_editor
FLAGS="--rf 1 --r 1 --w 1 --max-siblings 1"
FULL="ERR the key's version vector is full: 4096 entries, one per data-directory life (actor) of each node that wrote the key, with no room for this node's; nothing was written. Write it through a replica whose actor (INFO ringkv_actor) is in the vector (RINGKV REPLICAS key): that write prunes entries older than a day"
SIBS="ERR the key holds max-siblings siblings: resolve them with KSET key value CONTEXT"

# shellcheck disable=SC2086 # one flag a word
it_cluster 2 $FLAGS
# shellcheck disable=SC2046 # one port a word
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 2 $(it_ports 2) || it_fail "2 nodes did not converge"

ctx_empty=$(it_cli n1 KGET sib | head -1 | tr -d '\r')
[ -n "$ctx_empty" ] || it_fail "KGET of an absent key gave no context"
for k in full sib; do
    [ "$(it_cli n1 SET "$k" x)" = OK ] || it_fail "SET $k"
done
it_stop n1
it_stop n2

# The records, in storage/record.h's layout, stamped now (so a store that prunes
# leaves them whole), each clock entry at counter 1.
$PY - "$IT_DIR" << 'PY'
import struct, sys, time
stamp = int(time.time() * 1000) << 16
def sibling(ids, node, value):
    clock = struct.pack(">H", len(ids)) + b"".join(
        bytes([len(i)]) + i + struct.pack(">QQ", 1, stamp) for i in ids)
    return (clock + struct.pack(">Q", stamp) + bytes([len(node)]) + node + b"\x00" +
            struct.pack(">I", len(value)) + value)
def record(*sibs):
    return b"\x01\x00" + struct.pack(">H", len(sibs)) + b"".join(sibs)
full = [b"w%04d" % i for i in range(4096)]
open(sys.argv[1] + "/full.rec", "wb").write(record(sibling(full, b"w0000", b"full")))
open(sys.argv[1] + "/sib.rec", "wb").write(record(sibling([b"a1"], b"a1", b"a")))
PY
# put KEY: store the record on the node that holds KEY; that node's id in $owner
put() {
    for n in n1 n2; do
        if $ED "$IT_DIR/$n.data" put "$1" "$IT_DIR/$1.rec" > /dev/null 2>&1; then
            owner=$n
            return
        fi
    done
    it_fail "no node holds $1"
}
put full
full_on=$owner
put sib
sib_on=$owner
it_log "full is on $full_on, sib on $sib_on"

# shellcheck disable=SC2086
it_node n1 --rack r1 $FLAGS
# shellcheck disable=SC2086
it_node n2 --rack r2 --seeds "$(it_addr n1):$N1_PEER" $FLAGS
it_wait_ping n1
it_wait_ping n2
# shellcheck disable=SC2046
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 2 $(it_ports 2) || it_fail "2 nodes did not converge again"

for n in n1 n2; do
    it_expect_eq "GET full through $n" "$(it_cli "$n" GET full 2>&1)" "full"
done
# the context of a 4096-entry clock is 180 KB of hex: past what one argument of a
# command line may be, so it goes in on stdin (redis-cli -x: the last argument)
ctx_full=$(it_cli n1 KGET full | head -1 | tr -d '\r')
[ ${#ctx_full} -gt 180000 ] || it_fail "KGET full: a context of ${#ctx_full} hex digits"
for n in n1 n2; do
    [ "$n" = "$full_on" ] && how="on the node" || how="forwarded"
    it_expect_eq "SET full through $n ($how)" "$(it_cli "$n" SET full v 2>&1)" "$FULL"
    it_expect_eq "DEL full through $n ($how)" "$(it_cli "$n" DEL full 2>&1)" "$FULL"
    it_expect_eq "MSET full through $n ($how)" "$(it_cli "$n" MSET full v 2>&1)" "$FULL"
    got=$(printf '%s' "$ctx_full" | it_cli "$n" -x KSET full v CONTEXT 2>&1)
    it_expect_eq "KSET full with KGET's context through $n ($how)" "$got" "$FULL"
    got=$(printf '%s' "$ctx_full" | it_cli "$n" -x KDEL full CONTEXT 2>&1)
    it_expect_eq "KDEL full with KGET's context through $n ($how)" "$got" "$FULL"
    # OK, QUEUED, then EXEC's array: its one element
    got=$(printf 'MULTI\nSET full v\nEXEC\n' | it_cli "$n" 2>&1 | sed -n 3p)
    it_expect_eq "SET full in MULTI/EXEC through $n ($how)" "$got" "$FULL"
    it_expect_eq "GET full through $n after the refusals" "$(it_cli "$n" GET full 2>&1)" "full"
done
it_log "a full version vector: its own error on the node and through a forward, nothing written"

for n in n1 n2; do
    [ "$n" = "$sib_on" ] && how="on the node" || how="forwarded"
    got=$(it_cli "$n" KSET sib v CONTEXT "$ctx_empty" 2>&1)
    it_expect_eq "KSET sib with an empty context through $n ($how)" "$got" "$SIBS"
done
it_expect_eq "GET sib after the refusals" "$(it_cli n1 GET sib 2>&1)" "a"
it_log "max-siblings: its own error, on the node and through a forward"
for n in n1 n2; do it_alive "$n" || it_fail "$n died"; done
it_pass "a full version vector and the sibling cap answer apart"
