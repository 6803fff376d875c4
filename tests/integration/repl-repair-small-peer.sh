#!/bin/sh
# A read repair that goes to several stale replicas, one of them a node
# whose frame-max is too small for a single sibling of the record, still
# reaches the others.  The repair bodies are built once, cut to the
# smallest frame-max among the stale replicas (coord.c read_resolve()); a
# 1 MiB sibling does not fit an 800KB frame at all, so part_encode() fails
# with RK_ETOOBIG, repair_bodies() makes none, and no replica is repaired,
# not even the one with a 4MB frame (nor this node itself).  Before the
# bodies were cut to the peer's frame, that replica was repaired and only
# the small one refused (peer_message_over_frame).
#
# n1 has --value-max 512KB --frame-max 800KB, n2 and n3 --value-max 1MB
# --frame-max 4MB.  KSET big <1 MiB> W 2 through n2: n2 and n3 hold it, n1
# never can.  n3 then loses its copy (deleted from its stopped store) and
# comes back without it (no hint: it was up).
#
# Pass: after KGET big R 3 through n2 (n1 and n3 both stale), n3's own copy
# holds the value (KGET big R 1 through n3).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
SMALL="--value-max 512KB --frame-max 800KB"
BIG="--value-max 1MB --frame-max 4MB"
it_cluster_frames "$SMALL" "$BIG"

values() { it_kget_count "$@"; }

got=$(it_kset_mib "$N2_CLIENT" A 2)
[ "$got" = +OK ] || it_fail "KSET big <1 MiB> W 2 through n2: $got"
it_stop n3 TERM
# n3 loses its copy of big (not its whole data directory: a wiped node joins again and
# copies its arcs by handoff, so it would hold the value again)
it_lmdb_editor
$ED "$IT_DIR/n3.data" forget big || it_fail "deleting big from n3's store"
# shellcheck disable=SC2086
it_node n3 --rack r3 --seeds "127.0.0.1:$N2_PEER" $BIG
it_wait_ping n3
# shellcheck disable=SC2046
IT_WAIT=$(it_rounds_s 80) it_wait it_ask converged 3 $(it_ports 3) || it_fail "wiped n3 did not rejoin"
[ "$(values n3 R 1)" = 0 ] || it_fail "the wiped n3's own copy: $(values n3 R 1), want 0 values"
it_log "n2 holds the 1 MiB value, n1 (800KB frame) and the wiped n3 nothing"

got=$(values n2 R 3)
[ "$got" = 1 ] || it_fail "KGET big R 3 through n2: $got"
IT_WAIT=20 it_wait sh -c "[ \"\$(redis-cli -h 127.0.0.1 -p $N3_CLIENT KGET big R 1 | tail -n +2 | grep -c .)\" = 1 ]" ||
    it_fail "n3's own copy after KGET big R 3 through n2: $(values n3 R 1) values, want 1 (the repair did not reach it; n2.log: $(grep -o 'read_repair_not_sent.*' "$IT_DIR/n2.log" | head -n 1))"
it_pass "a repair reaches a replica with a large frame even when another stale one cannot take the record"
