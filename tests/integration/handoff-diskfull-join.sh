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
JOIN_S=120
WL_KEYS=300 WL_RATE=200 WL_SECONDS=120 WL_AFTER_OPS=200
hist="$IT_DIR/wl.jsonl"
flags="--handoff-rate ${KJ_RATE:-64KB} --handoff-concurrency 2 --tokens 4 --sync $SYNC"
# shellcheck disable=SC2086
it_cluster 3 $flags
it_wait_converged
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
it_wait_normal n4 4 "$JOIN_S"
it_wait_converged_n 4
it_load_end "n4 turned normal"
# shellcheck disable=SC2046 # one flag a word
out=$("$RINGKV" verify $(printf -- '-H %s ' $(it_client_addrs n1 n2 n3 n4)) "$hist") ||
    it_fail "verify: $out"
it_log "verify: $(echo "$out" | tr '\n' ' ' | sed 's/  */ /g')"
# shellcheck disable=SC2046
c=$(it_handoff copies 'hk:*' $(it_client_addrs n1 n2 n3 n4)) || it_fail "copies: $c"
it_log "copies: $c; n4 holds $(it_cli n4 DBSIZE); df: $(df -k "$IT_DIR/n4.disk" | tail -1)"
c_keys=0 c_min=0
eval "$(echo "$c" | tr ' ' '\n' | grep -E '^(keys|min)=' | sed 's/^/c_/')"
it_expect_eq "distinct preloaded keys" "$c_keys" "$KEYS"
[ "$c_min" -ge 3 ] || it_fail "a preloaded key has $c_min copies: $c"
it_pass "n4's join stopped on a full disk and resumed once freed; nothing acknowledged lost"
