#!/bin/sh
# A node leaves a loaded cluster under load (4 nodes in racks r1 r2 r3 r1,
# rf 3, on addresses of their own): 20,000 keys are loaded, `ringkv
# workload` runs through all four, and `RINGKV LEAVE` is sent to n2, the
# only node of rack r2.  Its arcs go to n1 and n4 (with r2 gone, each
# key's three replicas are the three nodes left); n2 turns left once they
# have them and exits 0 on its own; and:
#
#   - n2 was leaving at once, its log says event=left and that it stopped
#     for that reason, and n1 and n4 received what they lacked: at least
#     the loaded keys they did not hold before, at most that plus what the
#     workload wrote; n3, which held every key already, received nothing;
#   - before anything reads the keys (a quorum read repairs), every key is
#     on all three nodes left (SCAN of each node's own store against RINGKV
#     PREFLIST; each DBSIZE is the distinct key count) and every replica
#     of every workload key holds the same version (RINGKV REPLICAS);
#   - `ringkv verify` of the history through the three: nothing
#     acknowledged was lost; and every loaded key reads back with its value.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
KEYS=20000
WL_KEYS=2000
# The workload runs until the change is done and WL_AFTER_OPS more operations are recorded
# (SIGTERM ends it cleanly), WL_SECONDS at most.
WL_SECONDS=120
WL_AFTER_OPS=800
WL_RATE=400
# The gainers pull at 128 KB/s: n1's and n4's share of n2's arcs (about 700 kB each) take
# a few seconds of the workload.
HANDOFF_RATE=128KB
# n2 turns left once n1 and n4 have its arcs, and stops 3 s later (TRANSFERS_LEFT_STOP_MS):
# 7 s here, 17 s on a sanitizer build.
LEAVE_WAIT_S=60
hist="$IT_DIR/history.jsonl"
handoff_py="$top_srcdir/tests/integration/handoff_check.py"

it_cluster 4 --handoff-rate "$HANDOFF_RATE"
# shellcheck disable=SC2046 # one port a word
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 4 $(it_ports 4) || it_fail "4 nodes did not converge"
# shellcheck disable=SC2046
python3 "$handoff_py" load pre: "$KEYS" $(it_ports 4) || it_fail "loading $KEYS keys"
# shellcheck disable=SC2046
IT_WAIT=20 it_wait sh -c "python3 '$handoff_py' placement 3 $(it_ports 4) > '$IT_DIR/before.out'" || {
    cat "$IT_DIR/before.out"
    it_fail "the loaded keys are not on their preference lists"
}
pre_before() { sed -n "s/^node $1 [0-9]* //p" "$IT_DIR/before.out"; }

gone() { ! it_alive "$1"; }

it_load_start n1 n2 n3 n4

it_expect_eq "RINGKV LEAVE on n2" "$(it_cli n2 RINGKV LEAVE)" OK
asked=$(date +%s)
it_expect_eq "n2's status after RINGKV LEAVE" "$(it_handoff_status n2)" leaving
it_log "n2 leaving after $(it_load_lines) operations"
IT_WAIT=$LEAVE_WAIT_S it_wait gone n2 || it_fail "n2 still runs $LEAVE_WAIT_S s after RINGKV LEAVE"
wait "$N2_PID"
it_expect_eq "n2's exit status" "$?" 0
it_log "n2 exited $(($(date +%s) - asked)) s after RINGKV LEAVE, after $(it_load_lines) operations"
kill -0 "$IT_LOAD" 2> /dev/null || it_fail "the leave outlasted the workload"
grep -q 'event=left .*from=leaving' "$IT_DIR/n2.log" || it_fail "n2's log has no event=left"
grep -q 'reason=left' "$IT_DIR/n2.log" || it_fail "n2's log does not say it stopped because it left"

it_load_end "the leave"
# shellcheck disable=SC2046
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 3 $(it_client_addrs n1 n3 n4) ||
    it_fail "n1, n3 and n4 did not converge without n2"

# Before anything reads the keys: each on all three nodes, every replica the same version.
place="$IT_DIR/placement.out"
# shellcheck disable=SC2046
IT_WAIT=20 it_wait sh -c "python3 '$handoff_py' placement 3 $(it_client_addrs n1 n3 n4) > '$place'" || {
    cat "$place"
    it_fail "keys not on all three nodes left"
}
it_log "$(tr '\n' ' ' < "$place")"
distinct=$(sed -n 's/^distinct //p' "$place")
for n in n1 n3 n4; do
    it_expect_eq "DBSIZE of $n" "$(it_cli "$n" DBSIZE)" "$distinct"
done
# shellcheck disable=SC2046
IT_WAIT=20 it_wait python3 "$handoff_py" agree wl: $(it_client_addrs n1 n3 n4) || {
    python3 "$handoff_py" agree wl: $(it_client_addrs n1 n3 n4)
    it_fail "replicas of the workload's keys disagree"
}

writes=$(grep -c '"op":"\(set\|del\)"' "$hist")
for n in n1 n4; do
    received=$(it_info_field "$n" ringkv_handoff_keys_received)
    lacked=$((KEYS - $(pre_before "$n")))
    it_log "$n received $received keys ($(it_info_field "$n" ringkv_handoff_bytes_received) bytes); it lacked $lacked loaded keys; the workload wrote $writes times"
    [ "$received" -ge "$lacked" ] || it_fail "$n lacked $lacked loaded keys and received $received"
    [ "$received" -le $((lacked + writes)) ] ||
        it_fail "$n received $received keys: more than it lacked ($lacked) and the workload wrote ($writes)"
done
it_expect_eq "keys n3 received" "$(it_info_field n3 ringkv_handoff_keys_received)" 0

# shellcheck disable=SC2046
out=$("$RINGKV" verify $(printf -- '-H %s ' $(it_client_addrs n1 n3 n4)) "$hist") ||
    it_fail "verify: $out"
it_log "$(echo "$out" | tr '\n' ' ' | sed 's/  */ /g')"
# shellcheck disable=SC2046
python3 "$handoff_py" check pre: "$KEYS" $(it_client_addrs n1 n3 n4) ||
    it_fail "a loaded key does not read back"
it_pass "n2 left under load; nothing lost; every key on the three nodes left"
