#!/bin/sh
# Counters are never reused across a wiped data directory (Riak's kv679),
# with real ringkvd processes, 3 nodes, rf 3, r = w = 2:
#
#   n1 coordinates a write of k, so every replica holds a version counted
#   under n1's actor; n1 is stopped, its data directory wiped, and it comes
#   back (seeded with n2) empty.  Its new write of k is counted under a new
#   actor: every replica keeps it beside the old one (a sibling: neither saw
#   the other), none drops it as a version it already has, and a later read
#   returns it; the client resolves the siblings with KSET ... CONTEXT as
#   for any conflict, and GET then returns the new value.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

it_cluster 3
it_wait it_ask converged 3 $(it_ports 3) || it_fail "3 nodes did not converge"
[ "$(it_cli n1 SET k old)" = OK ] || it_fail "SET k old through n1"
actor_before=$(it_cli n1 INFO server | tr -d '\r' | sed -n 's/^ringkv_actor://p')

it_stop n1 TERM
rm -rf "$IT_DIR/n1.data"
it_node n1 --rack r1 --seeds "127.0.0.1:$N2_PEER"
it_wait_ping n1
IT_WAIT=$(it_rounds_s 80) it_wait it_ask converged 3 $(it_ports 3) || it_fail "wiped n1 did not rejoin"
actor_after=$(it_cli n1 INFO server | tr -d '\r' | sed -n 's/^ringkv_actor://p')
[ -n "$actor_after" ] && [ "$actor_after" != "$actor_before" ] ||
    it_fail "the wiped n1 counts under actor '$actor_after', before '$actor_before'"

[ "$(it_cli n1 KSET k new W 3)" = OK ] || it_fail "KSET k new W 3 through the wiped n1"
for n in n2 n3; do
    got=$(it_cli $n KGET k R 1 | tr -d '\r')
    printf '%s\n' "$got" | grep -qx new || it_fail "$n dropped the wiped node's new write of k: $got"
done
got=$(it_cli n2 KGET k | tr -d '\r')
printf '%s\n' "$got" | grep -qx new || it_fail "a quorum read of k lacks the new value: $got"
ctx=$(printf '%s\n' "$got" | head -1)
[ "$(it_cli n2 KSET k new CONTEXT "$ctx")" = OK ] || it_fail "KSET k new CONTEXT"
[ "$(it_cli n3 GET k)" = new ] || it_fail "GET k after resolving: $(it_cli n3 GET k 2>&1)"
it_log "the wiped n1 (actor $actor_before, now $actor_after) wrote k: kept by every replica"
it_pass "counters are never reused after a wiped data directory"
