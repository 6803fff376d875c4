#!/bin/sh
# The churn alarm: a node restarted with another token count than it joined
# the ring with is refused, with the figures (the part of the ring whose
# replicas would move, its share before and after); forced
# (force-ring-change yes), it starts, the ring changes at once, and the
# nodes that gain arcs copy them from the surviving old replicas (repair
# transfers), so every key written before is still read with its value.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
it_cluster 4
IT_WAIT=30 it_wait it_ask converged 4 $(it_ports 4) || it_fail "4 nodes did not converge"

i=0
while [ $i -lt 300 ]; do
    printf 'SET k%s v%s\n' "$i" "$i"
    i=$((i + 1))
done | it_cli n1 > /dev/null || it_fail "loading 300 keys"

it_stop n4
set +e
"$RINGKVD" --id n4 --cluster-key "$IT_DIR/key" --data "$IT_DIR/n4.data" --rf 3 --rack r1 \
    --client "$(it_addr n4):$N4_CLIENT" --listen "$(it_addr n4):$N4_PEER" --tokens 16 \
    --seeds "$(it_addr n1):$N1_PEER" > "$IT_DIR/alarm.out" 2> "$IT_DIR/alarm.err"
status=$?
set -e
[ "$status" -ne 0 ] || it_fail "a restart with 16 tokens instead of 256 was not refused"
grep -q "would move the replicas of [0-9.]*% of the ring" "$IT_DIR/alarm.err" ||
    it_fail "the refusal does not give the figures: $(cat "$IT_DIR/alarm.err")"
grep -q "256 tokens" "$IT_DIR/alarm.err" || it_fail "the refusal does not name the old count"
it_log "refused: $(cat "$IT_DIR/alarm.err")"

it_node n4 --rack r1 --tokens 16 --force-ring-change yes --seeds "$(it_addr n1):$N1_PEER"
it_wait_ping n4
IT_WAIT=30 it_wait it_ask converged 4 $(it_ports 4) || it_fail "no convergence after the forced restart"
grep -q "event=handoff_repair" "$IT_DIR"/n[1-3].log || it_fail "no node copied the arcs it gained"
i=0
while [ $i -lt 300 ]; do
    got=$(it_cli n2 GET "k$i")
    [ "$got" = "v$i" ] || it_fail "k$i after the forced restart: '$got'"
    i=$((i + 1))
done
it_log "forced: the ring changed, 300 keys all read back"
it_pass
