#!/bin/sh
# The joining node killed again and again while it streams: three nodes of
# rf 3 hold KEYS keys; n4 joins (few tokens, a slowed stream) under a
# workload through n1..n3, and is killed with SIGKILL KILLS times at
# random moments, each time restarted on its data directory.  Once it is
# normal: `ringkv verify` through all four nodes finds every acknowledged
# write, and every preloaded key has rf copies and reads its value through
# n4.  The receiver applies each batch and its checkpoint in one LMDB
# transaction (storage/store.c), which absorbs the write-ahead log the
# workload's replicated writes filled.  KJ_SYNC (always, batch, none),
# KJ_KEYS, KJ_KILLS and KJ_RATE vary the run (defaults: always, 20000, 5,
# 64KB: about 35 s).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
KEYS=${KJ_KEYS:-20000}
KILLS=${KJ_KILLS:-5}
SYNC=${KJ_SYNC:-always}
WL_KEYS=300 WL_RATE=200 WL_SECONDS=120 WL_AFTER_OPS=200
it_join_cluster "${KJ_RATE:-64KB}"
it_handoff load "$(it_client_addr n1)" hk: 0 "$KEYS" || it_fail "loading $KEYS keys"
it_load_start n1 n2 n3
it_setvar n4 PEER "$(it_free_port "$(it_addr n4)")"
n4flags="--rack r4 --seeds $(it_peer_addr n1) $flags"
# shellcheck disable=SC2086
it_node n4 $n4flags
it_wait_ping n4
k=0
while [ "$k" -lt "$KILLS" ]; do
    # 0.3 to 2.8 s from the seed: a run is repeated with RINGKV_TEST_SEED
    ms=$(((IT_SEED / (k + 1) + 7919 * k) % 2500 + 300))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    [ "$(it_handoff_status n4)" = joining ] || break
    recv=$(it_info_field n4 ringkv_handoff_keys_received)
    it_stop n4 KILL
    k=$((k + 1))
    it_log "kill $k of n4 after ${ms} ms, at $recv keys received"
    # shellcheck disable=SC2086
    it_node n4 $n4flags
    it_wait_ping n4
done
it_join_end 'hk:*' "$KEYS"
it_handoff check "$(it_client_addr n4)" hk: 0 "$KEYS" 1 > /dev/null ||
    it_fail "a preloaded key does not read through n4"
it_pass "n4 killed $k times while joining; nothing acknowledged lost, every key $c_min+ copies"
