#!/bin/sh
# `ringkv verify` of KSETs under `conflicts lww`, real ringkvd processes:
# verify reads the cluster's conflicts setting (CONFIG GET conflicts) and,
# under lww, takes a KSET as replacing a write its context did not see (the
# later version wins), as a blind write does:
# - a causal workload (KGET, then KSET with its context; four workers on
#   twenty keys, so two KSETs over the same context are common) on two lww
#   nodes verifies clean, and verify says it checked under lww;
# - two KSETs over the same empty context, one after the other, the second
#   present: clean on an lww node; on a siblings node (where the first must
#   stay beside the second) the first is reported lost.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 2 --rf 1 --r 1 --w 1 --conflicts lww
H="-H 127.0.0.1:$N1_CLIENT -H 127.0.0.1:$N2_CLIENT"

it_causal_verify "$H"
case "$out" in *"conflicts        lww"*"0 violations"*) ;; *) it_fail "no lww verdict: $out" ;; esac
it_log "causal under lww: $(echo "$out" | tr '\n' ' ' | sed 's/  */ /g')"

# two KSETs over the same context, in turn
two() {
    printf '{"op":"kset","key":"two","value":"v1","context_of":[],"start":0,"end":10,"node":"%s","outcome":"ok"}\n' "$1"
    printf '{"op":"kset","key":"two","value":"v2","context_of":[],"start":20,"end":30,"node":"%s","outcome":"ok"}\n' "$1"
}
[ "$(it_cli n1 SET two v2)" = OK ] || it_fail "SET two v2"
two "127.0.0.1:$N1_CLIENT" > "$IT_DIR/two.jsonl"
out=$("$RINGKV" verify "$IT_DIR/two.jsonl") || it_fail "lww: a KSET replaced by a later one: $out"
it_node n3 --rf 1 --r 1 --w 1
it_wait_ping n3
[ "$(it_cli n3 SET two v2)" = OK ] || it_fail "SET two v2 on n3"
two "127.0.0.1:$N3_CLIENT" > "$IT_DIR/two-siblings.jsonl"
out=$("$RINGKV" verify "$IT_DIR/two-siblings.jsonl")
[ $? -eq 1 ] || it_fail "siblings: the first KSET is gone and verify passed: $out"
case "$out" in *"conflicts        siblings"*"violation lost"*'"v1"'*) ;;
*) it_fail "siblings: no lost v1: $out" ;; esac
it_log "two KSETs over one context: clean under lww, the first lost under siblings"
it_pass "verify under conflicts lww"
