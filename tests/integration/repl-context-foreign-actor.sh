#!/bin/sh
# A KSET context that names another node's actor at a counter of 2^64-1
# must not leave the key unwritable on that node.  The store bounds only
# the coordinating node's own counters (storage/record.c,
# record_context_check(): "Other actors' counters may legitimately run
# ahead of this replica"), so such a clock, once taken through another
# replica and replicated, would leave the named node (here n1) unable to
# write the key for good: every write it coordinates would overflow the
# counter.  Clients cannot send one: a context is KGET's clock and its tag
# under the cluster key, bound to the key (src/node/commands.c), and a
# clock built by hand is refused before it is decoded.
#
# 3 nodes, rf 3: k written through n1; KSET k evil CONTEXT <n1's actor at
# 2^64-1>, with no tag, with the tag of k's genuine context and with a tag
# of zeros, through each node: each answers ERR invalid CONTEXT and k stays
# as it was on every replica; then a KSET with the genuine context through
# n2 and SET k v2 through n1 answer OK, and GET k reads v2 (the bound on
# n1's own counter and the rest of record_context_check() are
# tests/unit/check_record.c's).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 3
it_wait_converged
it_cli n1 SET k v1 > /dev/null || it_fail "SET k v1"
actor=$(it_cli n1 INFO | tr -d '\r' | sed -n 's/^ringkv_actor://p')
[ -n "$actor" ] || it_fail "no ringkv_actor in n1's INFO"
ctx=$(it_cli n2 KGET k R 3 | tr -d '\r' | head -1)
[ ${#ctx} -gt 32 ] || it_fail "KGET k gave no context: '$ctx'"
before=$(it_cli n3 KGET k R 3 | tr -d '\r' | tr '\n' ' ')
# a clock: 2-byte entry count, then per entry a 1-byte id length, the id,
# an 8-byte counter and an 8-byte stamp (big-endian); a context: its hex
# and 32 hex digits of tag
clock=$(python3 -c '
import struct, sys
a = sys.argv[1].encode()
print((struct.pack(">H", 1) + bytes([len(a)]) + a + struct.pack(">QQ", 2**64 - 1, 1)).hex())' "$actor")
tag=$(printf '%s' "$ctx" | tail -c 32)
for forged in "$clock" "$clock$tag" "${clock}00000000000000000000000000000000"; do
    for n in n1 n2 n3; do
        out=$(it_cli $n KSET k evil CONTEXT "$forged" 2>&1)
        [ "$out" = "ERR invalid CONTEXT: use the context KGET returned" ] ||
            it_fail "KSET k through $n with $actor at 2^64-1 in its context: '$out'"
    done
done
got=$(it_cli n3 KGET k R 3 | tr -d '\r' | tr '\n' ' ')
[ "$got" = "$before" ] || it_fail "k after the refused KSETs: '$got', was '$before'"
it_log "KSET with $actor at 2^64-1 in a context built by hand: refused through every node"
out=$(it_cli n2 KSET k v1b CONTEXT "$ctx" 2>&1)
[ "$out" = OK ] || it_fail "KSET k through n2 with KGET's context: '$out'"
out=$(it_cli n1 SET k v2 2>&1)
[ "$out" = OK ] || it_fail "SET k v2 through n1 after those KSETs: '$out' (the key is unwritable on n1)"
got=$(it_cli n3 GET k 2>&1)
[ "$got" = v2 ] || it_fail "GET k after SET k v2: '$got'"
it_pass "a context naming another node's actor at 2^64-1 is refused and the key stays writable"
