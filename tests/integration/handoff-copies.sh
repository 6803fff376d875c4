#!/bin/sh
# No key has fewer than rf copies at any moment of a join, with real
# ringkvd processes on addresses of their own: three nodes of rf 3 in
# three racks hold KEYS keys; n4 joins in a fourth rack at --handoff-rate
# 64KB (so every old node loses arcs to it, and the copy takes seconds)
# while keys are written through n2 in chunks.  Round after round, from the
# join until the old nodes have deleted what they no longer replicate and
# a while after, each node's own copies are listed (KEYS, scan.c: the
# node's store, no coordinator involved) and counted:
#   - every key of the sample (SAMPLE_PATTERN of the loaded keys) and every
#     key written in an earlier round has at least 3 copies;
#   - some round sees 4 copies of a key (n4's copy counted, the old ones
#     still there), and at the end every one of them has exactly 3 (the
#     clean-up deleted the old extra copy, and only it).
# The nodes are listed in the order n1, n2, n3, n4: copies are only ever
# deleted from an old node, after n4 has every arc it gains, so a copy an
# old node lost before its listing is already on n4, listed after it.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
KEYS=8000
SAMPLE_PATTERN='hk:000*' # hk:000000 .. hk:000999
SAMPLE=1000
CHUNK=40
DEADLINE_S=150
flags="--handoff-rate 64KB"
# shellcheck disable=SC2086 # one flag a word
it_cluster 3 $flags
it_wait_converged
it_handoff load "$(it_client_addr n1)" hk: 0 "$KEYS" || it_fail "loading $KEYS keys"
it_log "$KEYS keys loaded through n1"
it_setvar n4 PEER "$(it_free_port "$(it_addr n4)")"
# shellcheck disable=SC2086
it_node n4 --rack r4 --seeds "$(it_peer_addr n1)" $flags
it_wait_ping n4

# copies PATTERN WANT: the copies of the keys matching PATTERN on n1..n4, in that order: c_keys,
# c_min, c_max, c_fewest (handoff.py copies); false unless the WANT keys each have one
c_keys=0 c_min=0 c_max=0 c_fewest=-
copies() {
    out=$(it_handoff copies "$1" "$(it_client_addr n1)" "$(it_client_addr n2)" \
        "$(it_client_addr n3)" "$(it_client_addr n4)") || return 1
    eval "$(echo "$out" | tr ' ' '\n' | sed 's/^/c_/')"
    [ "$c_keys" -eq "$2" ]
}

# cleaned: n1, n2 and n3 have each deleted the keys they no longer replicate
cleaned() {
    for n in n1 n2 n3; do
        [ "$(it_info_field "$n" ringkv_handoff_cleanup_keys)" -gt 0 ] || return 1
    done
}

round=0
written=0
seen4=0
normal_round=0
cleaned_round=0
deadline=$(($(date +%s) + DEADLINE_S))
# until the clean-up is done everywhere, and 5 rounds more
while [ "$cleaned_round" -eq 0 ] || [ "$round" -lt $((cleaned_round + 5)) ]; do
    [ "$(date +%s)" -lt "$deadline" ] ||
        it_fail "round $round: no clean-up after $DEADLINE_S s (n4 normal at round $normal_round)"
    round=$((round + 1))
    copies "$SAMPLE_PATTERN" "$SAMPLE" || it_fail "round $round: $SAMPLE keys, $c_keys held anywhere"
    [ "$c_min" -ge 3 ] || it_fail "round $round: $c_fewest has $c_min copies"
    [ "$c_max" -lt 4 ] || seen4=1
    if [ "$written" -gt 0 ]; then
        # the keys of the earlier rounds (a write is acknowledged by w = 2 replicas; the
        # third has had a round to take it)
        copies 'w:*' "$written" || it_fail "round $round: $written keys written, $c_keys held anywhere"
        [ "$c_min" -ge 3 ] || it_fail "round $round: written $c_fewest has $c_min copies"
    fi
    it_handoff load "$(it_client_addr n2)" w: "$written" "$CHUNK" || it_fail "round $round: writes through n2"
    written=$((written + CHUNK))
    # shellcheck disable=SC2046 # one port a word
    if [ "$normal_round" -eq 0 ] && it_ask status normal n4 $(it_ports 4) > /dev/null 2>&1; then
        normal_round=$round
        it_log "round $round: n4 normal on every node ($(it_info_field n4 ringkv_handoff_keys_received) keys received)"
    fi
    if [ "$normal_round" -gt 0 ] && [ "$cleaned_round" -eq 0 ] && cleaned; then
        cleaned_round=$round
        it_log "round $round: n1, n2 and n3 deleted $(it_info_sum ringkv_handoff_cleanup_keys n1 n2 n3) keys they no longer replicate"
    fi
done
[ "$normal_round" -gt 1 ] || it_fail "n4 normal at round $normal_round: no round during the join"
[ "$seen4" -eq 1 ] || it_fail "no round saw a fourth copy of a key"
copies "$SAMPLE_PATTERN" "$SAMPLE" || it_fail "after the clean-up: $SAMPLE keys, $c_keys held anywhere"
it_expect_eq "copies of the sample after the clean-up (fewest, most)" "$c_min $c_max" "3 3"
# the last chunk written gets the time a round gave the others
three_each() {
    copies 'w:*' "$written" && [ "$c_min" -eq 3 ] && [ "$c_max" -eq 3 ]
}
it_wait three_each ||
    it_fail "copies of the $written written keys after the clean-up: $c_keys held, fewest $c_min ($c_fewest), most $c_max, want 3"
it_handoff check "$(it_client_addr n3)" w: 0 "$written" 1 > /dev/null || it_fail "a written key does not read"
it_pass "$round rounds: at least 3 copies of every key, exactly 3 after the clean-up; $written keys written during the join"
