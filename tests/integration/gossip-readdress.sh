#!/bin/sh
# A member restarted at other addresses (same id and data directory, new
# peer and client ports): every node takes its new entry (the table keeps
# an entry's strings in one allocation, which a new address replaces and
# a heartbeat keeps), lists the new addresses, holds it up as its
# heartbeats go on, and the cluster converges; twice over; then another
# node restarted (its saved table) holds the last addresses too.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 3
it_wait_converged

# addr_on AT ID FIELD: FIELD (peer_addr, client_addr) of member ID in node AT's table
addr_on() {
    "$RINGKV" -H "$(it_client_addr "$1")" status --json | python3 -c '
import json, sys
print([m[sys.argv[2]] for m in json.load(sys.stdin)["members"] if m["id"] == sys.argv[1]][0])' "$2" "$3"
}
# held: nodes n1 and n2 list n3 at its current peer and client addresses
held() {
    for at in n1 n2; do
        [ "$(addr_on "$at" n3 peer_addr)" = "$(it_peer_addr n3)" ] || return 1
        [ "$(addr_on "$at" n3 client_addr)" = "$(it_client_addr n3)" ] || return 1
    done
}

for round in 1 2; do
    old=$(it_peer_addr n3)
    it_stop n3 TERM
    it_expect_eq "n3's exit status" "$IT_STATUS" 0
    it_setvar n3 PEER ""
    it_setvar n3 CLIENT ""
    it_node n3 --rack r3 --seeds "$(it_peer_addr n1)"
    it_wait_ping n3
    it_log "round $round: n3 moved from $old to $(it_peer_addr n3)"
    IT_WAIT=$(it_rounds_s 60) it_wait held ||
        it_fail "round $round: n3's new addresses not held by n1 and n2: $(addr_on n1 n3 peer_addr 2>&1), $(addr_on n2 n3 peer_addr 2>&1)"
    it_wait_converged
    # heartbeats at the new address keep it up over more rounds
    sleep "$(it_rounds_s 20)"
    held || it_fail "round $round: n3's address changed back"
    it_wait_converged
done

# n1 restarted: n3 at its last addresses
it_stop n1 TERM
it_expect_eq "n1's exit status" "$IT_STATUS" 0
it_node n1 --rack r1
it_wait_ping n1
held || it_fail "n1's saved table lost n3's addresses"
it_wait_converged
for id in n1 n2 n3; do
    it_stop "$id" TERM
    it_expect_eq "$id's exit status" "$IT_STATUS" 0
done
it_pass
