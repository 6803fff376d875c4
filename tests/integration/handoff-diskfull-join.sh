#!/bin/sh
# A join whose receiver's disk fills: three nodes of rf 3 hold KEYS keys;
# n4, its data on a tmpfs of its own, joins (a slowed stream) under a
# workload through n1..n3.  Part way, its disk is filled: n4 stays up,
# its stream stops with handoff_retry lines naming a full disk, and it
# does not turn normal.  Once the disk is freed the join resumes and ends;
# `ringkv verify` through all four nodes finds every acknowledged write
# and every preloaded key has rf copies.  The receiver applies each batch
# and its checkpoint in one LMDB transaction (storage/store.c): on a full
# disk that transaction fails whole (RK_ENOSPC) and the arc is tried again.
# Needs root (a tmpfs in a mount namespace of its own); KJ_SYNC (always,
# batch, none) varies the run.  About 45 s.
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup
it_key
it_net
KEYS=${KJ_KEYS:-20000}
SYNC=${KJ_SYNC:-always}
WL_KEYS=300 WL_RATE=200 WL_SECONDS=120 WL_AFTER_OPS=200
it_join_cluster "${KJ_RATE:-64KB}"
it_handoff load "$(it_client_addr n1)" hk: 0 "$KEYS" || it_fail "loading $KEYS keys"
it_load_start n1 n2 n3
it_disk n4 "${KJ_DISK:-24m}"
it_setvar n4 PEER "$(it_free_port "$(it_addr n4)")"
# shellcheck disable=SC2086
it_node n4 --rack r4 --seeds "$(it_peer_addr n1)" $flags
it_wait_ping n4
has_keys() { [ "$(it_info_field n4 ringkv_handoff_keys_received)" -ge "$1" ]; }
IT_WAIT=30 it_wait has_keys 1500 || it_fail "n4 received fewer than 1500 keys in 30 s"
it_diskfull n4 || it_fail "filling n4's disk"
a=$(it_info_field n4 ringkv_handoff_keys_received)
sleep 4
b=$(it_info_field n4 ringkv_handoff_keys_received)
sleep 3
c=$(it_info_field n4 ringkv_handoff_keys_received)
it_alive n4 || it_fail "n4 died on a full disk"
it_log "disk full: n4 received $a, $b, $c keys; status $(it_handoff_status n4)"
it_expect_eq "keys received by n4 with its disk full (4 s after filling, then 3 s later)" "$c" "$b"
[ "$(it_handoff_status n4)" = joining ] || it_fail "n4 turned $(it_handoff_status n4) with a full disk"
grep 'handoff_retry' "$IT_DIR/n4.log" | tail -n 2
grep -q 'event=handoff_retry.*step=apply' "$IT_DIR/n4.log" || it_fail "no handoff_retry step=apply line"
r=$(it_cli n4 SET direct:1 x)
it_log "SET through n4 on a full disk: $r"
it_diskfree n4
it_join_end 'hk:*' "$KEYS"
it_pass "n4's join stopped on a full disk and resumed once freed; nothing acknowledged lost"
