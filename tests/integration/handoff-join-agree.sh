#!/bin/sh
# A joiner waits for every live member to name the target ring before it
# pulls anything; each member tells it at once, not at its next gossip
# round.  Three nodes run with --gossip-interval 3s, and n4 joins the
# (empty) cluster: each of n1..n3 learns of n4 when n4 dials it, which
# moves its target ring, and it then sends n4 its SYN at once
# (gossip_push_target()), so n4 holds all three targets within
# milliseconds, plans nothing to stream (an empty cluster: every arc's
# count is 0), and turns normal at its next handoff ticks.  Without the
# push, n4 would hear the new targets only from gossip rounds, one peer
# every 3 s: it must be normal within JOIN_WAIT_MS, half an
# interval.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
INTERVAL=3s
# n4 normal within this, half an interval: ample for a push (about 0.2 s here)
JOIN_WAIT_MS=1500

t0=$(date +%s)
it_cluster 3 --gossip-interval "$INTERVAL"
# shellcheck disable=SC2046 # one port a word
IT_WAIT=60 it_wait it_ask converged 3 $(it_ports 3) || it_fail "3 nodes did not converge"
it_log "3 nodes converged in $(($(date +%s) - t0)) s"

is_normal() { [ "$(it_handoff_status "$1")" = normal ]; }

it_setvar n4 PEER "$(it_free_port "$(it_addr n4)")"
it_node n4 --rack r1 --seeds "$(it_addr n1):$N1_PEER" --gossip-interval "$INTERVAL"
it_wait_ping n4
started=$(date +%s%N)
until is_normal n4; do
    took=$((($(date +%s%N) - started) / 1000000))
    [ "$took" -le "$JOIN_WAIT_MS" ] ||
        it_fail "n4 is not normal $took ms after it started ($(it_handoff_status n4)): the members' targets did not reach it before a gossip round"
    sleep 0.05
done
it_log "n4 normal $((($(date +%s%N) - started) / 1000000)) ms after it answered a ping"
# shellcheck disable=SC2046
IT_WAIT=60 it_wait it_ask converged 4 $(it_ports 4) || it_fail "4 nodes did not converge"
it_pass "a joiner heard every member's target ring at once, not at their rounds"
