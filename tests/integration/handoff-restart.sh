#!/bin/sh
# A node that left, started again, with real ringkvd processes on
# addresses of their own (four nodes of rf 3 in three racks, handoff at
# --handoff-rate 64KB so that a join takes seconds):
#   - n4 leaves (RINGKV LEAVE): it turns left, every other node lists it
#     left, and it exits with status 0;
#   - meanwhile keys it held change: some are deleted, some written again;
#   - started again on its data directory without seeds, it is refused:
#     a non-zero exit and one line saying it left and to give seeds (or
#     start with an empty data directory), the data directory untouched;
#   - started with seeds, it comes back joining, then normal on every
#     node, and serves nothing stale: through every node the deleted keys
#     read nil, the rewritten ones their new value, the others their
#     value; and no replica of a deleted key holds it live (RINGKV
#     REPLICAS, which asks each replica for its own copy).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
KEYS=3000
CHANGED=300
JOIN_S=120
flags="--handoff-rate 64KB"
# shellcheck disable=SC2086 # one flag a word
it_cluster 4 $flags
it_wait_converged_n 4
# hk: kept, d: deleted while n4 is away, u: written again while it is away
it_handoff load "$(it_client_addr n1)" hk: 0 "$KEYS" || it_fail "loading hk:"
it_handoff load "$(it_client_addr n1)" d: 0 "$CHANGED" || it_fail "loading d:"
it_handoff load "$(it_client_addr n1)" u: 0 "$CHANGED" || it_fail "loading u:"
held=$(it_cli n4 DBSIZE)
[ "$held" -gt $(((KEYS + 2 * CHANGED) / 2)) ] || it_fail "n4 holds $held keys before it leaves"

# --- n4 leaves ---------------------------------------------------------------
it_expect_eq "RINGKV LEAVE on n4" "$(it_cli n4 RINGKV LEAVE)" OK
IT_WAIT=$JOIN_S it_wait sh -c "! kill -0 $N4_PID" || it_fail "n4 did not stop after leaving"
wait "$N4_PID"
it_expect_eq "n4's exit status after leaving" "$?" 0
for n in n1 n2 n3; do
    IT_WAIT=30 it_wait it_ask status left n4 "$(it_client_addr "$n")" || it_fail "$n does not list n4 left"
done
it_log "n4 left (it held $held keys) and stopped; n1, n2 and n3 list it left"
it_handoff del "$(it_client_addr n2)" d: 0 "$CHANGED" || it_fail "deleting d: through n2"
it_handoff load "$(it_client_addr n3)" u: 0 "$CHANGED" new || it_fail "writing u: again through n3"

# --- started again without seeds: refused --------------------------------------
lines=$(wc -l < "$IT_DIR/n4.log")
# shellcheck disable=SC2086
it_node n4 --rack r1 $flags
IT_WAIT=20 it_wait sh -c "! kill -0 $N4_PID" || it_fail "n4 started without seeds did not stop"
wait "$N4_PID"
status=$?
[ "$status" -ne 0 ] || it_fail "n4 started without seeds after leaving exited with status 0"
said=$(tail -n +$((lines + 1)) "$IT_DIR/n4.log")
it_expect_eq "lines n4 wrote when refused" "$(echo "$said" | wc -l)" 1
case $said in
*"left the cluster"*"give seeds"*) ;;
*) it_fail "n4 refused without saying it left and to give seeds: '$said'" ;;
esac
it_log "n4 without seeds: status $status: $said"

# --- started again with seeds: joining, then normal ------------------------------
# shellcheck disable=SC2086
it_node n4 --rack r1 --seeds "$(it_peer_addr n1)" $flags
it_wait_ping n4
it_expect_eq "n4's status as it comes back" \
    "$(it_cli n4 RINGKV TRANSFERS | sed -n '/^status$/{n;p;}')" joining
it_wait_normal n4 4 "$JOIN_S"
it_wait_converged_n 4
it_log "n4 back: joining, then normal on every node ($(it_info_field n4 ringkv_handoff_keys_received) keys" \
    "received, $(it_info_field n4 ringkv_handoff_arcs_same) arcs already held)"
for n in n1 n2 n3 n4; do
    at=$(it_client_addr "$n")
    it_handoff check "$at" d: 0 "$CHANGED" 1 nil > /dev/null || it_fail "a deleted key reads through $n"
    it_handoff check "$at" u: 0 "$CHANGED" 1 new > /dev/null || it_fail "a rewritten key reads stale through $n"
    it_handoff check "$at" hk: 0 "$KEYS" 5 > /dev/null || it_fail "a kept key does not read through $n"
done
it_log "through every node: $CHANGED deleted keys nil, $CHANGED rewritten ones new, the others kept"
i=0
while [ "$i" -lt "$CHANGED" ]; do
    key=$(printf 'd:%06d' "$i")
    rows=$(it_cli n4 RINGKV REPLICAS "$key" | tr -d '\r')
    it_expect_eq "replicas holding deleted $key live" "$(it_present_count "$rows")" 0
    i=$((i + 10))
done
it_pass "a node that left is refused without seeds, and with them comes back with nothing stale"
