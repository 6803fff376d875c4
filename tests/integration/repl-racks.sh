#!/bin/sh
# A whole rack down, with real ringkvd processes: 6 nodes in 3 racks (n1 n4
# in r1, n2 n5 in r2, n3 n6 in r3), rf 3, r = w = 2.  Every preference list
# holds one node of each rack, so with both nodes of r1 killed (kill -9)
# every key still has two replicas up: every write through any live node is
# acknowledged and every key reads back through every live node, before
# and after the rack went down.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
KEYS=60

it_cluster 6
IT_WAIT=$(it_rounds_s 80) it_wait it_ask converged 6 $(it_ports 6) || it_fail "6 nodes did not converge"
i=0
while [ $i -lt $KEYS ]; do
    out=$(it_cli n$((i % 6 + 1)) SET "before$i" "b$i" 2>&1)
    [ "$out" = OK ] || it_fail "SET before$i through n$((i % 6 + 1)): '$out'"
    i=$((i + 1))
done

it_stop n1 KILL
it_stop n4 KILL
live="$N2_CLIENT $N3_CLIENT $N5_CLIENT $N6_CLIENT"
IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait it_ask state down n1 $live ||
    it_fail "n1 not seen down"
IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait it_ask state down n4 $live ||
    it_fail "n4 not seen down"
it_log "rack r1 (n1, n4) killed and seen down"

nodes="n2 n3 n5 n6"
i=0
while [ $i -lt $KEYS ]; do
    set -- $nodes
    shift $((i % 4))
    w=$1
    out=$(it_cli "$w" SET "after$i" "a$i" 2>&1)
    [ "$out" = OK ] || it_fail "SET after$i through $w with r1 down: '$out'"
    for r in $nodes; do
        got=$(it_cli "$r" GET "before$i" 2>&1)
        [ "$got" = "b$i" ] || it_fail "GET before$i through $r with r1 down: '$got'"
    done
    got=$(it_cli n6 GET "after$i" 2>&1)
    [ "$got" = "a$i" ] || it_fail "GET after$i through n6: '$got'"
    i=$((i + 1))
done
it_log "with r1 down: $KEYS keys written and every key read through every live node"
it_pass "a whole rack down: every key readable and writable at r = w = 2"
