#!/bin/sh
# A join whose receiver's map is full: three nodes of rf 3 hold KEYS keys
# of 16 KiB (about 30 MiB); n4 joins with --map-size-max 16MB, too small
# for the two thirds it gains, under a workload through n1..n3.  Its
# stream stops with handoff_retry lines naming a full store, it stays up
# and joining; restarted with a larger map-size-max, the join ends.
# `ringkv verify` finds every acknowledged write and each key has rf copies.
# The receiver applies each batch and its checkpoint in one LMDB
# transaction (storage/store.c): at map-size-max it fails whole (RK_ENOSPC)
# and the arc is tried again.  KJ_SYNC (always, batch, none) varies the
# run.  About 25 s.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
KEYS=${KJ_KEYS:-2000}
SYNC=${KJ_SYNC:-always}
WL_KEYS=300 WL_RATE=200 WL_SECONDS=150 WL_AFTER_OPS=200
it_join_cluster "${KJ_RATE:-4MB}"
python3 - "$KEYS" > "$IT_DIR/load.resp" << 'PY'
import sys
out = sys.stdout.buffer
for i in range(int(sys.argv[1])):
    k = b"big:%06d" % i
    v = (k + b"|") * (16384 // (len(k) + 1))
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
redis-cli -h "$(it_addr n1)" -p "$N1_CLIENT" --pipe < "$IT_DIR/load.resp" > "$IT_DIR/load.out" 2>&1 ||
    it_fail "loading: $(cat "$IT_DIR/load.out")"
grep -q "errors: 0, replies: $KEYS" "$IT_DIR/load.out" || it_fail "loading: $(cat "$IT_DIR/load.out")"
it_load_start n1 n2 n3
it_setvar n4 PEER "$(it_free_port "$(it_addr n4)")"
n4flags="--rack r4 --seeds $(it_peer_addr n1) $flags"
# shellcheck disable=SC2086
it_node n4 $n4flags --map-size-max 16MB
it_wait_ping n4
retrying() { grep -q 'event=handoff_retry.*step=apply' "$IT_DIR/n4.log"; }
IT_WAIT=60 it_wait retrying || it_fail "n4 never met a full map: $(it_info_field n4 ringkv_handoff_keys_received) keys"
grep 'handoff_retry' "$IT_DIR/n4.log" | tail -n 1
sleep 3
a=$(it_info_field n4 ringkv_handoff_keys_received)
sleep 3
b=$(it_info_field n4 ringkv_handoff_keys_received)
it_alive n4 || it_fail "n4 died on a full map"
it_expect_eq "keys received with the map full, 3 s apart" "$b" "$a"
[ "$(it_handoff_status n4)" = joining ] || it_fail "n4 turned $(it_handoff_status n4) with a full map"
it_log "map full: n4 at $a keys, joining; SET through n4: $(it_cli n4 SET direct:1 x); DEL: $(it_cli n4 DEL direct:1)"
it_stop n4 TERM
it_log "n4 stopped with status $IT_STATUS"
# shellcheck disable=SC2086
it_node n4 $n4flags --map-size-max 128MB
it_wait_ping n4
it_join_end 'big:*' "$KEYS"
it_pass "n4's join stopped on a full map and ended with a larger one; nothing acknowledged lost"
