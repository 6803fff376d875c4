#!/bin/sh
# A KSET context that names another node's actor at a counter of 2^64-1
# (storage/record.c, record_context_check(): "a context carrying node's
# counter at 2^64-2 makes the key unwritable (every later write overflows
# it)") must not leave the key unwritable on that node.  The check bounds
# only the coordinating node's own actor ("Other actors' counters may
# legitimately run ahead of this replica"), so the same context sent to
# another replica is taken, replicated, and the named node (here n1) can
# never write the key again: every SET, DEL or forwarded write it
# coordinates fails with "-ERR write failed: value out of range" (the
# counter increment in vclock.c overflows), for good.
#
# 3 nodes, rf 3: k written through n1; KSET k evil CONTEXT <n1's actor at
# 2^64-1> through n2 (answered OK on current code; refusing it is fine
# too); then SET k v2 through n1 must answer OK and GET k read v2.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 3
it_wait_converged
it_cli n1 SET k v1 > /dev/null || it_fail "SET k v1"
actor=$(it_cli n1 INFO | tr -d '\r' | sed -n 's/^ringkv_actor://p')
[ -n "$actor" ] || it_fail "no ringkv_actor in n1's INFO"
# a context: 2-byte entry count, then per entry a 1-byte id length, the id,
# an 8-byte counter and an 8-byte stamp (big-endian)
ctx=$(python3 -c '
import struct, sys
a = sys.argv[1].encode()
print((struct.pack(">H", 1) + bytes([len(a)]) + a + struct.pack(">QQ", 2**64 - 1, 1)).hex())' "$actor")
out=$(it_cli n2 KSET k evil CONTEXT "$ctx" 2>&1)
it_log "KSET k through n2 with $actor at 2^64-1 in its context: '$out'"
out=$(it_cli n1 SET k v2 2>&1)
[ "$out" = OK ] || it_fail "SET k v2 through n1 after that KSET: '$out' (the key is unwritable on n1)"
got=$(it_cli n3 GET k 2>&1)
[ "$got" = v2 ] || it_fail "GET k after SET k v2: '$got'"
it_pass "a context naming another node's actor at 2^64-1 leaves the key writable"
