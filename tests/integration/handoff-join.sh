#!/bin/sh
# A node joins a loaded cluster under load (4 nodes in racks r1 r2 r3 r1,
# rf 3, on addresses of their own): 20,000 keys are loaded, `ringkv
# workload` runs through the four, and n5 (rack r2) starts with --seeds.
# It is joining until it has pulled every arc it gains, then normal; and:
#
#   - `ringkv verify` of the workload's history: nothing acknowledged was
#     lost, and every loaded key reads back with its value;
#   - while the workload is quiet and before anything reads it, every
#     replica of every workload key holds the same version (RINGKV
#     REPLICAS): the writes made during the copy reached n5 too;
#   - n5's share of the keys is what its place in the ring predicts (its
#     replica share in `ringkv ring --json` times the distinct keys, within
#     HANDOFF_SHARE_TOLERANCE_PCT), and its INFO moved_fraction says the
#     same share of the circle changed hands;
#   - only the arcs whose preference list changed moved: n5 received every
#     loaded key it holds and at most what it holds plus what the workload
#     wrote; the old nodes received nothing and sent, summed, what n5
#     received (HANDOFF_SENT_SLACK_PCT more at most: a batch sent again);
#   - once the change settled and the nodes cleaned up, every key's copies
#     are on exactly its rf preference-list nodes (SCAN of each node's own
#     store against RINGKV PREFLIST, every key), and the old nodes deleted
#     what n5 took from them.
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
# ±30% of n5's predicted share: a few hundred arcs of random tokens, 20,000 keys.
HANDOFF_SHARE_TOLERANCE_PCT=30
# A batch may be served twice (a pull retried after a timeout): 10%, and 100 keys.
HANDOFF_SENT_SLACK_PCT=10
# n5 pulls at 128 KB/s: its 650 kB (half the loaded keys) take 5 s of the workload.
HANDOFF_RATE=128KB
# n5 is normal within this (about 5 s here; 15 s on a sanitizer build).
CHANGE_WAIT_S=60
hist="$IT_DIR/history.jsonl"

it_cluster 4
# shellcheck disable=SC2046 # one port a word
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 4 $(it_ports 4) || it_fail "4 nodes did not converge"
# shellcheck disable=SC2046 # one address a word
python3 "$top_srcdir/tests/integration/handoff_check.py" load pre: "$KEYS" $(it_ports 4) ||
    it_fail "loading $KEYS keys"

is_normal() { [ "$(it_handoff_status "$1")" = normal ]; }

sent_before=$(it_info_sum ringkv_handoff_keys_sent n1 n2 n3 n4)
received_before=$(it_info_sum ringkv_handoff_keys_received n1 n2 n3 n4)
it_load_start n1 n2 n3 n4

it_setvar n5 PEER "$(it_free_port "$(it_addr n5)")"
it_node n5 --rack r2 --seeds "$(it_addr n4):$N4_PEER" --handoff-rate "$HANDOFF_RATE"
it_wait_ping n5
started=$(date +%s)
it_log "n5 started after $(it_load_lines) operations"
it_expect_eq "n5's status at start" "$(it_handoff_status n5)" joining
IT_WAIT=$CHANGE_WAIT_S it_wait is_normal n5 ||
    it_fail "n5 is not normal $CHANGE_WAIT_S s after it started: $(it_handoff_status n5)"
kill -0 "$IT_LOAD" 2> /dev/null || it_fail "the join outlasted the workload"
it_log "n5 normal after $(($(date +%s) - started)) s and $(it_load_lines) operations"

it_load_end "the join"
# shellcheck disable=SC2046
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 5 $(it_ports 5) || it_fail "5 nodes did not converge"

# Before anything reads the keys (a quorum read repairs): the replicas agree.
# shellcheck disable=SC2046
IT_WAIT=20 it_wait python3 "$top_srcdir/tests/integration/handoff_check.py" agree wl: $(it_ports 5) || {
    python3 "$top_srcdir/tests/integration/handoff_check.py" agree wl: $(it_ports 5)
    it_fail "replicas of the workload's keys disagree"
}

# shellcheck disable=SC2046
out=$("$RINGKV" verify $(printf -- '-H %s ' $(it_client_addrs n1 n2 n3 n4 n5)) "$hist") ||
    it_fail "verify: $out"
it_log "$(echo "$out" | tr '\n' ' ' | sed 's/  */ /g')"
# shellcheck disable=SC2046
python3 "$top_srcdir/tests/integration/handoff_check.py" check pre: "$KEYS" $(it_ports 5) ||
    it_fail "a loaded key does not read back"

# Settled and cleaned up: every key on exactly its preference-list nodes.
place="$IT_DIR/placement.out"
# shellcheck disable=SC2046
IT_WAIT=60 it_wait sh -c "python3 '$top_srcdir/tests/integration/handoff_check.py' placement 3 $(it_ports 5) > '$place'" || {
    cat "$place"
    it_fail "copies outside their preference lists 60 s after the join"
}
distinct=$(sed -n 's/^distinct //p' "$place")
n5_keys=$(sed -n 's/^node n5 \([0-9]*\) .*/\1/p' "$place")
n5_pre=$(sed -n 's/^node n5 [0-9]* //p' "$place")
it_log "$(tr '\n' ' ' < "$place")"

share=$("$RINGKV" -H "$(it_addr n1):$N1_CLIENT" ring --json |
    python3 -c 'import json, sys; print([m["replica"] for m in json.load(sys.stdin)["members"] if m["id"] == "n5"][0])')
moved=$(it_info_field n5 ringkv_handoff_moved_fraction)
python3 - "$share" "$moved" "$distinct" "$n5_keys" "$HANDOFF_SHARE_TOLERANCE_PCT" << 'PY' ||
import sys
share, moved, distinct, got, tol = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]) / 100
want = share * distinct
print("n5 holds %d of %d keys; its replica share %.4f predicts %.0f; moved fraction %.4f" %
      (got, distinct, share, want, moved))
sys.exit(0 if abs(got - want) <= tol * want and abs(moved - share) <= tol * share else 1)
PY
    it_fail "n5's share of the keys is off what the ring predicts"

writes=$(grep -c '"op":"\(set\|del\)"' "$hist")
received=$(it_info_field n5 ringkv_handoff_keys_received)
old_received=$(($(it_info_sum ringkv_handoff_keys_received n1 n2 n3 n4) - received_before))
sent=$(($(it_info_sum ringkv_handoff_keys_sent n1 n2 n3 n4) - sent_before))
cleaned=$(it_info_sum ringkv_handoff_cleanup_keys n1 n2 n3 n4)
it_log "n5 received $received keys ($(it_info_field n5 ringkv_handoff_bytes_received) bytes) (holds $n5_keys, $n5_pre loaded ones; the workload wrote $writes times); the old nodes sent $sent, received $old_received, deleted $cleaned"
[ "$received" -ge "$n5_pre" ] || it_fail "n5 holds $n5_pre loaded keys and received only $received"
[ "$received" -le $((n5_keys + writes)) ] ||
    it_fail "n5 received $received keys: more than it holds ($n5_keys) and the workload wrote ($writes)"
it_expect_eq "keys the old nodes received" "$old_received" 0
if [ "$sent" -lt "$received" ] || [ "$sent" -gt $((received + received * HANDOFF_SENT_SLACK_PCT / 100 + 100)) ]; then
    it_fail "the old nodes sent $sent keys and n5 received $received"
fi
[ "$cleaned" -gt 0 ] || it_fail "no old node deleted the arcs n5 took"
it_pass "n5 joined under load; nothing lost; copies only on their preference lists"
