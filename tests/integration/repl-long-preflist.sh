#!/bin/sh
# Preference lists longer than a request holds in itself (six nodes: rf 3
# with as many fallbacks), with real ringkvd processes: 7 nodes, rf 5,
# w 5, r 3, sloppy.  With two nodes killed (kill -9) and seen down, a key
# whose replicas include them is planned on its five replicas and the
# fallbacks standing for the dead ones, up to seven nodes: every write is
# acknowledged (the fallbacks keeping hints), every key reads back through
# every live node, and once both are restarted every hint is delivered and
# every write is on all five of its replicas.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

KEYS=40
hints_total() { it_hints_total n1 n2 n3 n4 n5 "$@"; }
sees_down() { it_ask state down "$2" "$(it_addr "$1"):$(it_var "$1" CLIENT)"; }

IT_RF=5
it_cluster 7 --w 5 --r 3
# shellcheck disable=SC2046 # one port a word
IT_WAIT=$(it_rounds_s 80) it_wait it_ask converged 7 $(it_ports 7) || it_fail "7 nodes did not converge"

it_stop n6 KILL
it_stop n7 KILL
for d in n6 n7; do
    for s in n1 n2 n3 n4 n5; do
        IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait sees_down $s $d || it_fail "$s never saw $d down"
    done
done
it_log "n6 and n7 killed and seen down by every live node"

long=0
i=0
while [ $i -lt $KEYS ]; do
    through=n$((i % 5 + 1))
    out=$(it_cli $through SET "long$i" "v$i" 2>&1)
    [ "$out" = OK ] || it_fail "SET long$i through $through with n6 and n7 down: '$out'"
    n=$("$RINGKV" -H "$(it_addr n1):$N1_CLIENT" -t 5 preflist --json "long$i" |
        python3 -c 'import json, sys; print(len(json.load(sys.stdin)["replicas"]))')
    [ "$n" -gt 6 ] && long=$((long + 1))
    for r in n1 n2 n3 n4 n5; do
        got=$(it_cli $r GET "long$i" 2>&1)
        [ "$got" = "v$i" ] || it_fail "GET long$i through $r: '$got'"
    done
    i=$((i + 1))
done
[ "$long" -gt 0 ] || it_fail "no key had a preference list of more than six nodes"
held=$(hints_total)
[ "$held" -gt 0 ] || it_fail "no hints kept for the writes"
it_log "$KEYS writes acknowledged at w 5 ($long of them over seven-node lists), $held hints kept"

it_node n6 --rack r3
it_node n7 --rack r1
it_wait_ping n6
it_wait_ping n7
deadline=$(($(date +%s) + 60))
while [ "$(hints_total n6 n7)" -ne 0 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || it_fail "hints left after the restarts: $(hints_total n6 n7)"
    sleep 0.2
done
i=0
while [ $i -lt $KEYS ]; do
    rows=$(it_cli n1 RINGKV REPLICAS "long$i" | tr -d '\r')
    present=$(it_present_count "$rows")
    [ "$present" = 5 ] || it_fail "long$i is on $present of its 5 replicas after the restarts: $rows"
    i=$((i + 1))
done
it_pass "seven-node preference lists: writes acknowledged through fallbacks, hints delivered, all five replicas hold every write"
